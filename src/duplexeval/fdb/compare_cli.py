"""`duplexeval fdb compare TREE_A TREE_B [...]`: paired differences B - A, written to compare.json and printed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from duplexeval.cli_options import emit_json, json_option, json_to_stdout
from duplexeval.exits import (
    Gate,
    Status,
    check_gates,
    combine,
    eligibility,
    fail_over_option,
    fail_under_option,
    finish,
    metric_values,
    parse_gates,
)
from duplexeval.fdb.compare_text import metric_cells, pairing_line
from duplexeval.jsonio import write_json
from duplexeval.jsontypes import JsonObject

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps


def render(compare: JsonObject, console: Console | None = None) -> None:
    """Print each comparison (every tree against the first) as one rich table per subset, then the signature.

    It reads the compare.json document as written, so what is printed and what is in the file cannot disagree.
    """
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: do not squeeze the tables into 80 columns
            console = Console(width=160)
    trees = compare["trees"]
    for note in compare["notes"]:
        console.print(f"note: {note}")
    for comp in compare["comparisons"]:
        a, b = trees[comp["a"]], trees[comp["b"]]
        console.print(f"\n[bold]B - A[/bold]: A = {a['path']}, B = {b['path']} (paired 95% bootstrap; McNemar "
                      "A-only/B-only)")
        for subset, block in comp["subsets"].items():
            console.print(f"\n[bold]{subset}[/bold]: {pairing_line(block)}", soft_wrap=True)
            t = Table(show_edge=False, pad_edge=False)
            for col in ("metric", "A", "B", "B - A", "95% interval", "pairs", "McNemar"):
                t.add_column(col, no_wrap=col != "metric", overflow="fold")
            for name, m in block["metrics"].items():
                t.add_row(f"{name} median" if m["kind"] == "median" else name, *metric_cells(m))
            console.print(t)
    console.print(f"\nsignature: {compare['signature']['compact']}", soft_wrap=True, highlight=False)


def compare_command(
    trees: list[Path] = typer.Argument(..., help="Two or more scored trees; each is compared to the first (B - A)."),
    out: Path = typer.Option(Path("compare.json"), "--out", "-o", help="Where to write compare.json (a compare.json of "
                             "other trees or settings there is refused; the same comparison is rewritten)."),
    no_write: bool = typer.Option(False, "--no-write", help="Print only; write no compare.json."),
    force: bool = typer.Option(False, "--force", help="Replace a compare.json made from other trees or settings."),
    json_out: Path | None = json_option("compare.json"),
    allow_different_asr: bool = typer.Option(
        False, "--allow-different-asr", help="Compare trees transcribed by different ASR backends (noted in "
                                             "compare.json)."
    ),
    min_eligible: float | None = typer.Option(
        None, "--min-eligible", min=0.0, max=1.0, metavar="FRACTION",
        help="Exit 1 unless every subset has at least this share of its samples paired (eligible in both trees; "
             "default: at least one pair in every subset; 0: never)."),
    fail_under: list[str] | None = fail_under_option(),
    fail_over: list[str] | None = fail_over_option(),
) -> None:
    """Paired comparison of scored trees on the samples eligible in both (spec 000).

    Gates judge each difference B - A (its point estimate) as SUBSET.METRIC, e.g. a regression gate
    --fail-under candor_turn_taking.response_rate_1s=-0.05 (B may lose at most 5 points) or
    --fail-over candor_turn_taking.response_latency_s=0.2 (B's median latency at most 200 ms slower)."""
    from duplexeval.fdb.compare_stage import check_out, compare

    gates = parse_gates(fail_under, fail_over)
    result = compare(trees, allow_different_asr=allow_different_asr).to_json()
    status = compare_status(result, gates, min_eligible)
    if not no_write:
        check_out(out, result, force)
        write_json(out, result)  # an OS error is already one InputError line naming the file
    emit_json(json_out, result)
    if not json_to_stdout(json_out):
        render(result)
        if not no_write:
            typer.echo(f"wrote {out}")
    finish("compare", status)


def compare_status(result: JsonObject, gates: list[Gate], min_eligible: float | None) -> Status:
    """Every comparison's pairs per subset against --min-eligible, and its differences against the gates."""
    trees = result["trees"]
    parts: list[Status] = []
    for comp in result["comparisons"]:
        b = trees[comp["b"]]["path"]
        blocks = comp["subsets"]
        pairs = {name: (bl["pairing"]["paired"], bl["pairing"]["selected_both"]) for name, bl in blocks.items()}
        diffs = metric_values({name: bl["metrics"] for name, bl in blocks.items()})
        for st in (eligibility(pairs, min_eligible, "paired"), check_gates(gates, diffs, " in compare.json")):
            parts.append(
                Status(st.code, f"B = {b}: {st.reason}" if len(result["comparisons"]) > 1 and st.reason else st.reason))
    return combine(*parts)


def register(apps: CliApps) -> None:
    """Add `fdb compare`."""
    apps.fdb.command("compare")(compare_command)
