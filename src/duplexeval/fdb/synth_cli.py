"""`duplexeval fdb synth`: build FDB-v1.0-shaped stimuli from a script, or build/locate the demo set."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from duplexeval.errors import InputError
from duplexeval.exits import Status, finish

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def synth(
    script: str | None = typer.Argument(
        None, help="YAML/JSON synth script (format: docs/synth.md), or 'demo' for the built-in demo set."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output folder (required for a script; for the demo, "
                                                              "write there instead of the cache)."),
    demo: bool = typer.Option(False, "--demo", help="Build or locate the built-in demo set and print its path."),
    force: bool = typer.Option(False, "--force", help="Replace an existing synth output folder (or rebuild the "
                                                      "cached demo)."),
    v15: int | None = typer.Option(
        None, "--v15", min=1,
        help="Make FDB v1.5 overlap stimuli instead: N samples of each of the four scenarios (499: the "
             "published sizes).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the v1.5 stimuli (texts and gaps)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines and no timing line on stderr."),
) -> None:
    """Generate FDB v1.0 input folders (input.wav + annotation + transcription.json) with espeak-ng; prints the folder."""  # noqa: E501 - typer prints this line as the summary
    from duplexeval.fdb import synth as S
    from duplexeval.progress import StageClock, wav_seconds

    clock = StageClock("synth")

    if v15 is not None:
        from duplexeval.fdb.tasks.overlap import synth as V15

        if script is not None or demo:
            raise InputError("--v15 makes its own stimuli: give no script and no --demo")
        if out is None:
            raise InputError("--out DIR is required with --v15")
        if out.exists() and any(out.iterdir()):
            if not force:
                raise InputError(f"{out}: not empty; pass --force to replace it")
            shutil.rmtree(out)
        path = V15.write_set(out, V15.full_size() if v15 == 499 else V15.small(v15), seed=seed)
        typer.echo(str(path))
        if not quiet:
            clock.say(wav_seconds(sorted(Path(path).rglob("input.wav"))))
        finish("synth", Status(0, f"the v1.5 set is in {path} (no rule beyond bad input)"))
        return

    if demo or script == "demo":
        if demo and script not in (None, "demo"):
            raise InputError("give either a script or --demo, not both")
        if out is None:
            cached = not force and S.verify(S.cache_dir() / f"demo-{S.demo_key(S.load_script(S.DEMO_SCRIPT))}")
            path = S.ensure_demo(force=force, progress=not quiet)
            if cached:  # nothing was synthesized: no real-time factor to report
                clock.stage = "synth (demo set already cached)"
        else:
            path = _synthesize(S.load_script(S.DEMO_SCRIPT), out, force, quiet, clock)
    else:
        if script is None:
            raise InputError("give a synth script (YAML/JSON) or 'demo'; see docs/synth.md")
        if out is None:
            raise InputError("--out DIR is required when synthesizing a script")
        path = _synthesize(S.load_script(script), out, force, quiet, clock)
    typer.echo(str(path))
    if not quiet:
        clock.say(None if clock.stage != "synth" else wav_seconds(sorted(Path(path).rglob("input.wav"))))
    finish("synth", Status(0, f"the dataset is in {path} (no rule beyond bad input)"))


def _synthesize(script: Any, out: Path, force: bool, quiet: bool, clock: Any) -> Path:
    """`synthesize_dataset`, saying so when the folder was up to date (no real-time factor for nothing done)."""
    from duplexeval.fdb import synth as S

    if not force and S.up_to_date(script, out):
        clock.stage = "synth (up to date: the same script and generator made it)"
    return Path(S.synthesize_dataset(script, out, force=force, progress=not quiet))


def register(apps: CliApps) -> None:
    """Add `duplexeval fdb synth`."""
    apps.fdb.command("synth")(synth)
