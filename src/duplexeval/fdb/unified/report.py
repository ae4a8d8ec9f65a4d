"""The printed unified report (rich): per subset, each metric's value, interval, count and selected bounds,
with the official numbers from summary.json under them when it was made from the same inputs.

summary.json is only displayed, never used for scoring; a missing or mismatched one leaves one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # the scorer imports this module
    from duplexeval.fdb.unified import UnifiedResult
    from duplexeval.fdb.unified.aggregate import Block

from duplexeval import stats
from duplexeval.artifacts import check_kind
from duplexeval.errors import InputError
from duplexeval.fdb.official.metric import NEEDS_JUDGE, needs_judge
from duplexeval.fdb.official.summary import SUMMARY_KIND, SUMMARY_SCHEMA_VERSION
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tree import SUMMARY_FILE
from duplexeval.jsonio import read_json
from duplexeval.jsontypes import JsonObject
from duplexeval.stats import NO_DATA, NOT_REACHED


@dataclass(frozen=True)
class Reference:
    """The reference column: the summary's subsets when usable, else a one-line reason it is left out."""

    subsets: JsonObject | None  # summary.json's `subsets` object
    message: str | None


def load_reference(tree: str | Path, manifest_sha256: str, asr_sha256: str) -> Reference:
    """Read TREE/summary.json for display; usable only when both of its input hashes match the current files."""
    path = Path(tree) / SUMMARY_FILE
    if not path.is_file():
        return Reference(None, "No summary.json, so no reference column (run `duplexeval fdb evaluate` first).")
    try:
        obj = read_json(path)
    except InputError as exc:
        return Reference(None, f"Reference column left out: {exc}")

    try:
        check_kind(obj, SUMMARY_KIND, path, SUMMARY_SCHEMA_VERSION)
    except InputError as exc:
        return Reference(None, f"Reference column left out: {exc}")
    if not isinstance(obj.get("subsets"), dict):
        return Reference(None, "Reference column left out: summary.json has no 'subsets' object.")
    changed = [
        name
        for name, key, current in (("manifest.json", "manifest_sha256", manifest_sha256),
                                   ("asr.json", "asr_sha256", asr_sha256))
        if obj.get(key) != current
    ]
    if changed:
        return Reference(
            None,
            f"Reference column left out: {' and '.join(changed)} changed since summary.json was written "
            "(rerun `duplexeval fdb evaluate`).",
        )
    return Reference(obj["subsets"], None)


def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return NO_DATA
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return f"{x:.{digits}f}"




def _iv(iv: Any) -> str:
    if iv is None:
        return NO_DATA
    lo, hi = iv
    return f"[{_num(lo) if lo is not None else NOT_REACHED}, {_num(hi) if hi is not None else NOT_REACHED}]"


def _latency_value(x: Any, n: int) -> str:
    if n == 0:
        return NO_DATA
    return NOT_REACHED if x is None else _num(x)


Row = tuple[str, str, str, str, str]
TypedValue = stats.Share | stats.PooledRatio | stats.Latency


def metric_rows(name: str, m: TypedValue | JsonObject, kind: type | None = None) -> list[Row]:
    """Table rows (metric, value, interval, count, selected bounds) for a share, pooled ratio or latency.

    `m` is a typed value, or its JSON (as a file holds it) with `kind` the typed value's class (a task's
    `metric_kinds`).
    """
    js: JsonObject
    if isinstance(m, (stats.Share, stats.PooledRatio, stats.Latency)):
        kind, js = type(m), cast(JsonObject, m.to_json())
    else:
        js = m
    if kind is None:
        raise ValueError(f"metric {name!r}: a JSON value needs its kind")
    if issubclass(kind, stats.Share):
        return [(name, _num(js["value"]), _iv(js["interval"]), f"{js['count']}/{js['n']}", _iv(js["selected_bounds"]))]
    if issubclass(kind, stats.Latency):  # median with its interval, then p90 (no interval)
        return [
            (f"{name} median", _latency_value(js["median"], js["n"]), _iv(js["median_interval"]), f"n={js['n']}", ""),
            (f"{name} p90", _latency_value(js["p90"], js["n"]), "", f"n={js['n']}", ""),
        ]
    if issubclass(kind, stats.PooledSeconds):
        count = f"{_num(js['numerator_s'], 2)}/{_num(js['denominator_s'], 2)}"
        return [(name, _num(js["value"]), _iv(js["interval"]), count, "")]
    if issubclass(kind, stats.PooledRatio):
        return [(name, _num(js["value"]), _iv(js["interval"]), f"{js['numerator']}/{js['denominator']}", "")]
    raise ValueError(f"metric {name!r}: no table rows for kind {kind.__name__}")


def block_rows(block: JsonObject) -> list[Row]:
    """Every metric's rows of a subset block as unified.json holds it, each by the kind its task declares."""
    rules = get_task(block["task"]).unified
    kinds = rules.metric_kinds if rules is not None else {}
    return [row for name, m in block["metrics"].items() for row in metric_rows(name, m, kinds.get(name))]


def _counts_line(block: Block) -> str:
    c = block.counts
    cov = block.coverage
    parts = [
        f"selected {c.selected} of {c.declared if c.declared is not None else '?'} declared",
        f"eligible {c.eligible}" + (f" (coverage {cov:.3f})" if cov is not None else ""),
        f"ineligible {c.ineligible}",
    ]
    if c.ineligible_reasons:
        parts.append("reasons: " + ", ".join(f"{k} {v}" for k, v in c.ineligible_reasons.items()))
    extra = [f"{k} {v if isinstance(v, int) else dict(v)}" for k, v in c.extra.items()]
    if extra:
        parts.append(", ".join(extra))
    if block.min_observable_s is not None:
        parts.append(f"min_observable_s {block.min_observable_s:.3f}")
    return "; ".join(parts)


def _reference_title(ref: JsonObject) -> str:
    title = f"  reference column: official rules (summary.json), {ref.get('n_evaluated', '?')} evaluated"
    if "judge" in ref:
        title += f"; judge: {(ref.get('judge') or {}).get('label', 'not judged')}"
    return title


def _reference_table(ref: JsonObject) -> Table:
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("official metric", overflow="fold")
    for col in ("value", "std", "n"):
        t.add_column(col, no_wrap=True)
    t.add_column("note", overflow="fold")
    for name, m in (ref.get("metrics") or {}).items():
        if isinstance(m, dict):
            value = NEEDS_JUDGE if needs_judge(m) else _num(m.get("value"))
            t.add_row(name, value, _num(m.get("std")), str(m.get("n", "")), str(m.get("note") or ""))
    return t


def render(result: UnifiedResult, reference: Reference, console: Console | None = None) -> None:
    """Print every subset's unified metrics (and the reference column when usable) with rich tables."""
    console = console or Console()
    u = result.to_json()
    console.print(f"[bold]Unified FDB metrics[/bold] ({u['definitions']}), tree {result.tree}")
    for subset, block in result.blocks.items():
        console.print()
        console.print(f"[bold]{subset}[/bold] ({block.task}): {_counts_line(block)}")
        if block.metrics:
            t = Table(show_edge=False, pad_edge=False)
            t.add_column("metric", overflow="fold")
            for col in ("value", "95% interval", "count", "selected bounds"):
                t.add_column(col, no_wrap=True)
            for row in block_rows(u["subsets"][subset]):  # the numbers as written (intervals computed once)
                t.add_row(*row)
            console.print(t)
        else:
            console.print(f"  counted only: no unified metric ({get_task(block.task).render.counted_note})")
        if reference.subsets is not None and isinstance(reference.subsets.get(subset), dict):
            ref = reference.subsets[subset]
            console.print(_reference_title(ref))
            console.print(_reference_table(ref))
    console.print()
    console.print(
        f"{NOT_REACHED} = not reached: the quantile falls on a sample that never responded (or never stopped). "
        "Shares are over eligible samples (interruption: exercised); selected bounds count unknown outcomes "
        "as no, then yes."
    )
    if reference.message:
        console.print(reference.message)
    if "signature" in u:
        console.print(f"signature: {u['signature']['compact']}", soft_wrap=True, highlight=False)
