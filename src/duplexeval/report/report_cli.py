"""`duplexeval report PATH... --out report.html` and `duplexeval fdb show TREE SUBSET/ID [--out PNG]`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.cli_options import jobs_option, one_per_cpu
from duplexeval.errors import InputError, clip
from duplexeval.fdb.tree import validate_sample_id, validate_subset

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def report_command(
    paths: list[Path] = typer.Argument(..., help="Scored FDB trees (folders), or report JSON files: controller "
                                                 "evaluate/compare, eot score, eot sweep summary.json, eot compare, "
                                                 "fdb compare."),
    out: Path = typer.Option(Path("report.html"), "--out", help="Where to write the HTML page."),
    label: list[str] | None = typer.Option(None, "--label",
                                           help="A system's name on the page, one per input in order (repeat it); "
                                                "default: the system spec."),
    baseline: str | None = typer.Option(None, "--baseline",
                                        help="The system the others are compared with: a label, folder or system name "
                                             "(default: the first input)."),
    audio: str = typer.Option("auto", "--audio", help="auto (inline up to 30 min of audio, else link), inline (Ogg "
                                                      "Vorbis inside the page), link (players point at the trees' and "
                                                      "dataset's WAV files, relative to the page) or none."),
    dataset: str | None = typer.Option(None, "--dataset", help="The dataset the trees were exported from (folder, or "
                                                               "'demo'), for the user's input waveform and audio; demo "
                                                               "trees find it by themselves."),
    jobs: int = jobs_option(0, "Processes reading and encoding the samples"),
) -> None:
    """One self-contained HTML page (inline CSS, SVG and script; no network) made from the files only."""
    from duplexeval.report.build import ReportOptions, write_report

    opts = ReportOptions(tuple(label or ()), baseline, audio, dataset, one_per_cpu(jobs))
    typer.echo(str(write_report(paths, out, options=opts)))


def show_command(
    tree: Path = typer.Argument(..., help="A scored tree."),
    sample: str = typer.Argument(..., help="The sample as SUBSET/ID, e.g. candor_turn_taking/3."),
    out: Path | None = typer.Option(None, "--out", help="PNG to write (default: SUBSET-ID.png here)."),
    dataset: str | None = typer.Option(
        None, "--dataset", help="The dataset the tree was exported from (folder, or 'demo'), to draw the input "
                                "waveform too."
    ),
) -> None:
    """Draw one sample's timeline (output envelope, VAD, ASR words, annotation marks, outcome) as a PNG."""
    from duplexeval.fdb.results import load_scored
    from duplexeval.report.timeline import load_view, open_sample, show_png

    subset, slash, sid = sample.partition("/")
    if not slash:
        raise InputError(f"SAMPLE {clip(repr(sample), 80)}: expected SUBSET/ID, e.g. candor_turn_taking/3")
    validate_subset(subset, "SAMPLE")
    validate_sample_id(sid, "SAMPLE")
    if out is None:  # the default name is an output too: refused inside the tree (or the dataset) it reads
        from duplexeval.overwrite import Input, Output, check_outputs

        out = Path(f"{subset}-{sid}.png")
        check_outputs([Output("--out (default)", out)],
                      [Input("TREE", tree)] + ([Input("--dataset", Path(dataset))] if dataset else []))
    scored = load_scored(tree)
    entry = scored.entry(subset, sid)
    if entry is None:
        raise InputError(f"{tree}: sample {sample} is not in manifest.json")
    asr = scored.asr.samples.get(entry.key)
    view = load_view(open_sample(scored.root, entry, asr.output_json if asr else None),
                     scored.rows.get(subset, {}).get(sid))
    audio = None
    if dataset is not None:
        from duplexeval.fdb.selection import resolve_dataset
        from duplexeval.fdb.tree_writer import dataset_mismatch

        ds = resolve_dataset(dataset)
        match = [s for s in ds.samples(subset) if s.id == sid]
        if not match:
            raise InputError(f"--dataset {dataset}: has no sample {sample}")
        problem = dataset_mismatch(match[0], entry.dir(scored.root), entry.T)
        if problem is not None:
            raise InputError(
                f"--dataset {dataset}: sample {sample}: {problem}; the tree was not made from this dataset")
        audio = match[0].read_input_16k()
    path = show_png(view, out, audio)
    typer.echo(f"{path}: {sample}: {view.outcome}")
    if audio is None:
        typer.echo("(the tree holds no input audio: pass --dataset to draw the input waveform above)", err=True)


def register(apps: CliApps) -> None:
    """Add the top-level `report` and `fdb show`."""
    apps.root.command("report")(report_command)
    apps.fdb.command("show")(show_command)
