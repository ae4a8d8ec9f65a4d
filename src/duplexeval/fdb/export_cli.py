"""`duplexeval fdb export` (alias `reference-export`) and `duplexeval fdb import`: write an FDB v1.0 tree."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from duplexeval.executor_cli import DEFAULT_EXECUTOR, executor_options
from duplexeval.executors import ExecutorSpec
from duplexeval.exits import eligibility, finish, min_eligible_option

if TYPE_CHECKING:  # the stage modules load numpy and pydantic: imported when a command runs, not for --help
    from duplexeval.cli import CliApps  # (and duplexeval.cli imports this module)
    from duplexeval.fdb.tree_writer import TreeWritten
    from duplexeval.progress import StageClock

# What to do about each ineligibility reason (a reason without an entry gets the generic hint).
NEXT_STEP = {
    "missing_output": "put the model's output.wav at {outputs}/<subset>/<id>/output.wav (or the dataset's own nesting) and rerun",
    "length_mismatch": "output.wav must last T seconds (within 80 ms; T is the input's length): regenerate it at full length",
    "unreadable_output": "output.wav cannot be decoded: write it again as a 16 or 24 kHz WAV",
    "missing_annotation": "the dataset folder lacks this sample's annotation file: restore it from the FDB download",
    "missing_input": "the dataset folder lacks one of this sample's inputs (FDB v1.5: clean_input.wav): restore it",
    "annotation_hash_mismatch": "the annotation changed during the run: restore the dataset and rerun with --force",
    "system_error": "the system failed on this sample: see the sample's trace.json, fix the system, rerun",
    "input_pacing_late": "the system could not keep up with real-time input: rerun on a less loaded machine",
    "connect_failed": "the server could not be reached: check the url (and that the server runs), rerun",
    "server_error": "the server sent an error: its message is in the sample's trace.jsonl (first below)",
    "disconnected": "the server closed the connection before T: see its logs and the sample's trace.jsonl",
    "protocol_violation": "the server broke the protocol: the record that did is marked `violation` in trace.jsonl",
    "timeout": "the server stopped answering (from `stalled_from_s` in the sample's trace.json) or never answered in time (the first timeout line below)",
}
EXAMPLES = 3


def ineligible_lines(tree: Path, outputs: Path | None = None) -> list[str]:
    """Per ineligibility reason: how many samples, which ones (first few) and what to do next."""
    from duplexeval.fdb.tree import load_manifest

    manifest, _sha = load_manifest(tree)
    by_reason: dict[str, list[str]] = defaultdict(list)
    for e in manifest.samples:
        for r in e.reasons:
            by_reason[r].append(f"{e.subset}/{e.id}")
    lines = []
    for reason, keys in sorted(by_reason.items()):
        more = f" and {len(keys) - EXAMPLES} more" if len(keys) > EXAMPLES else ""
        hint = NEXT_STEP.get(reason, "see the sample's trace.json in the tree (and trace.jsonl for a network system)")
        lines.append(f"  ineligible, {reason}: {len(keys)} ({', '.join(keys[:EXAMPLES])}{more})")
        lines.append(f"    next: {hint.format(outputs=outputs if outputs is not None else '<outputs>')}")
    if by_reason:
        lines.append(f"  (every sample's reasons are in {tree / 'manifest.json'}; scoring counts them, never drops them)")
    return lines


def _finish(kind: str, result: TreeWritten, clock: StageClock, quiet: bool, min_eligible: float | None) -> None:
    """The timing line (every sample this run made, faults included; none when some were reused, since
    their time is not in this run's) and the status line with the --min-eligible rule."""
    from duplexeval.fdb.tree import tree_audio_s

    if not quiet:
        clock.say(tree_audio_s(result.tree, eligible_only=False) if result.reused == 0 else None)
    counts = {subset: (c["eligible"], c["selected"]) for subset, c in result.counts.items()}
    finish(kind, eligibility(counts, min_eligible))


def _summary(kind: str, result: TreeWritten, outputs: Path | None = None) -> None:
    sel = sum(c["selected"] for c in result.counts.values())
    elig = sum(c["eligible"] for c in result.counts.values())
    typer.echo(f"{kind}: {elig}/{sel} samples eligible ({result.ran} run, {result.reused} reused) -> {result.tree}")
    for subset, c in result.counts.items():
        typer.echo(f"  {subset}: {c['eligible']}/{c['selected']} eligible")
    if elig < sel:
        for line in ineligible_lines(Path(result.tree), outputs):
            typer.echo(line)
    if kind == "export":
        from duplexeval.fdb.tree import load_manifest
        from duplexeval.systems.net.summary import network_lines

        for line in network_lines(Path(result.tree), load_manifest(result.tree)[0].samples):
            typer.echo(line)


@executor_options
def export_command(
    system: str = typer.Option(..., "--system", help="NAME[:key=value,...], e.g. 'turn-based:silence_ms=700' (see docs/systems.md)."),
    dataset: str = typer.Option(..., "--dataset", help="An FDB v1.0 or v1.5 folder, a synth folder, or 'demo'."),
    out: Path = typer.Option(..., "--out", help="Tree folder to write (resumes an export of the same run: keeps its eligible samples, runs the others again)."),
    subset: list[str] | None = typer.Option(None, "--subset", help="Only this subset (repeatable)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N samples of each subset."),
    force: bool = typer.Option(False, "--force", help="Write into a tree made by another system/dataset, redoing every sample."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no timing line."),
    concurrency: int = typer.Option(
        1, "--concurrency", min=1, max=1024,
        help="Sessions open at once on one event loop. The default, 1, is a real-time run: a sample takes as long as "
             "its audio, for a network system. Give a network system 8 or more; an in-process system runs on a virtual "
             "clock and gains little. Not --jobs: no extra processes."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", min=0.001, max=86400,
                                       help="Seconds each call into the system (open_session, push_input, poll_output, "
                                            "close) may take before that sample fails with system_error."),
    min_eligible: float | None = min_eligible_option(),
    executor_spec: ExecutorSpec = DEFAULT_EXECUTOR,
) -> None:
    """Drive a system over a dataset: output.wav (FIFO playout, exactly T), annotations, trace.json, manifest.json.

    With --executor ray the sessions run on Ray workers, one sample per task (the tree must be on a shared path)."""
    from duplexeval.fdb.export_stage import export
    from duplexeval.progress import StageClock

    clock = StageClock("export")

    result = export(system, dataset, out, subsets=subset or None, limit=limit, force=force, progress=not quiet,
                    concurrency=concurrency, executor=executor_spec, call_timeout_s=call_timeout)
    _summary("export", result)
    _finish("export", result, clock, quiet, min_eligible)


def import_command(
    dataset: str = typer.Option(..., "--dataset", help="The FDB v1.0 or v1.5 folder (or 'demo') the outputs were made from."),
    outputs: Path = typer.Option(..., "--outputs", help="Folder with <subset>/<id>/output.wav (16 or 24 kHz; output.json optional; FDB v1.5: clean_output.wav and the other transcripts beside it); may be the dataset folder itself."),
    out: Path = typer.Option(..., "--out", help="Tree folder to write."),
    subset: list[str] | None = typer.Option(None, "--subset", help="Only this subset (repeatable)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N samples of each subset."),
    name: str = typer.Option("imported", "--name", help="A label for the system that made the outputs (recorded in the manifest)."),
    channel: str | None = typer.Option(None, "--channel", help="For multi-channel output.wav files: the model's channel (0-based N) or 'mean'; recorded. Without it such files are refused."),
    ignore_output_json: bool = typer.Option(
        False, "--ignore-output-json",
        help="Leave output.json files found next to the outputs behind (transcribe with `fdb asr` instead); recorded.",
    ),
    force: bool = typer.Option(False, "--force", help="Write into a tree made by another run, redoing every sample."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no timing line."),
    min_eligible: float | None = min_eligible_option(),
) -> None:
    """Adopt output.wav files made elsewhere: resample to 16 kHz, fix lengths within 80 ms, hash, write manifest.json."""
    from duplexeval.fdb.import_stage import import_outputs, parse_channel
    from duplexeval.progress import StageClock

    clock = StageClock("import")

    result = import_outputs(dataset, outputs, out, subsets=subset or None, limit=limit, name=name, force=force,
                            progress=not quiet, channel=parse_channel(channel),
                            ignore_output_json=ignore_output_json)
    _summary("import", result, outputs)
    _finish("import", result, clock, quiet, min_eligible)


def register(apps: CliApps) -> None:
    """Add `fdb export` (+ hidden alias `reference-export`) and `fdb import`."""
    apps.fdb.command("export")(export_command)
    apps.fdb.command("reference-export", hidden=True)(export_command)
    apps.fdb.command("import")(import_command)
