"""`duplexeval eot score PAIRS`: spec 003 report from a CSV/JSONL pair file."""

from __future__ import annotations

from pathlib import Path

import typer


def eot_score(
    pairs: Path = typer.Argument(..., help="CSV (header true_turn_end_s,detector_commit_s[,id]) or JSONL file of pairs."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the JSON report here."),
    bands: str = typer.Option("300,600,1200", "--bands", help="Comma-separated hang latency bands in ms."),
    tolerance_ms: int = typer.Option(50, "--tolerance-ms", help="Early-commit slack before a false cutoff, ms."),
) -> None:
    """Score end-of-turn (true end, commit) pairs: false cutoff, hang at latency bands, latency quantiles."""
    from duplexeval.eot.io import read_pairs
    from duplexeval.eot.report import build_report, format_report
    from duplexeval.errors import InputError
    from duplexeval.jsonio import write_json

    try:
        band_list = [int(b) for b in bands.split(",") if b.strip()]
    except ValueError:
        raise InputError(f"--bands: expected comma-separated integers in ms, got {bands!r}") from None
    if not band_list:
        raise InputError("--bands: give at least one band")
    if any(b < 0 for b in band_list):
        raise InputError(f"--bands: bands must be non-negative, got {bands!r}")
    if tolerance_ms < 0:
        raise InputError(f"--tolerance-ms must be non-negative, got {tolerance_ms}")
    plist, _ids = read_pairs(pairs)
    rep = build_report(plist, latency_bands_ms=band_list, tolerance_ms=tolerance_ms, source=str(pairs))
    typer.echo(format_report(rep))
    if json_out is not None:
        write_json(json_out, rep)


def register(apps) -> None:  # noqa: ANN001 - CliApps, imported lazily to avoid a cycle
    """Add `eot score`."""
    apps.eot.command("score")(eot_score)
