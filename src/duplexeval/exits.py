"""The exit contract of every stage (docs/cli.md section 6): which rule decided the status, in one last line.

0: everything held; 1: the stage ran but too few units were eligible (`--min-eligible`), some failed, or
a gate (`--fail-under` / `--fail-over`) failed; 2: bad input (raised as `errors.InputError` elsewhere).
A stage computes its `Status` from its own counts and numbers with the pure functions here and ends
with `finish(stage, status)`, which prints `STAGE: exit CODE: REASON` on stderr and exits with CODE.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import typer

from duplexeval.errors import InputError

DEFAULT_RULE = "default: at least 1 per subset"
SHOWN_NAMES = 12  # metric names listed in the error for an unknown one


@dataclass(frozen=True)
class Status:
    """An exit code (0 or 1) and the rule that decided it, as the status line says it."""

    code: int
    reason: str


def _rule(min_eligible: float | None) -> str:
    return f"--min-eligible ({DEFAULT_RULE})" if min_eligible is None else f"--min-eligible {min_eligible:g}"


def eligibility(counts: Mapping[str, tuple[int, int]], min_eligible: float | None, unit: str = "eligible") -> Status:
    """Per subset (eligible, selected): every subset with selected units needs at least one eligible unit
    (`min_eligible` None) or a share of at least `min_eligible`; a stage that selected nothing fails."""
    used = {k: v for k, v in counts.items() if v[1] > 0}
    rule = _rule(min_eligible)
    if not used:
        return Status(1, f"no units selected ({rule})")
    low = [(k, e, n) for k, (e, n) in used.items()
           if (e < 1 if min_eligible is None else e < min_eligible * n - 1e-9)]
    if low:
        listed = ", ".join(f"{k}: {e}/{n} {unit}" for k, e, n in low)
        return Status(1, f"{listed}, below {rule}")
    total_e, total_n = sum(e for e, _ in used.values()), sum(n for _, n in used.values())
    return Status(0, f"{total_e}/{total_n} {unit} in {len(used)} subset{'s' * (len(used) != 1)}, every one at or "
                     f"above {rule}")


def failures(n_failed: int, n_total: int, what: str) -> Status:
    """Units the stage itself could not process (an ASR crash, a worker lost past its retries): any is exit 1."""
    if n_failed:
        return Status(1, f"{n_failed} of {n_total} {what} failed (every one must succeed)")
    return Status(0, f"{n_total} {what}, none failed")


@dataclass(frozen=True)
class Gate:
    """`--fail-under METRIC=VALUE` (the metric must be at least VALUE) or `--fail-over` (at most VALUE)."""

    flag: str
    metric: str
    limit: float

    def holds(self, value: float) -> bool:
        return value >= self.limit if self.flag == "--fail-under" else value <= self.limit

    def text(self) -> str:
        return f"{self.flag} {self.metric}={self.limit:g}"


_GATE = re.compile(r"^\s*([A-Za-z0-9_.:\-]+)\s*=\s*(\S+)\s*$")


def parse_gates(under: Iterable[str] | None, over: Iterable[str] | None) -> list[Gate]:
    """The gates of the command line; one-line InputError for a malformed one."""
    out: list[Gate] = []
    for flag, items in (("--fail-under", under), ("--fail-over", over)):
        for item in items or ():
            m = _GATE.match(item)
            try:
                limit = float(m.group(2)) if m else math.nan
            except ValueError:
                limit = math.nan
            if m is None or not math.isfinite(limit):
                raise InputError(f"{flag} {item!r}: expected METRIC=NUMBER, e.g. "
                                 "candor_turn_taking.response_rate_1s=0.8")
            out.append(Gate(flag, m.group(1), limit))
    return out


def metric_values(doc: Any, prefix: str = "") -> dict[str, float | None]:
    """Every number a gate may name in a result document, by dotted path: a `stats` value's `value` (a share,
    a ratio), a latency's `median` (and `.p90`; a quantile not reached is +infinity, a time that never came),
    a paired difference's `diff`, and plain numbers; the header (kind, signature, inputs) is skipped."""
    out: dict[str, float | None] = {}
    if isinstance(doc, Mapping):
        if "value" in doc and _number_or_none(doc["value"]):
            out[prefix] = doc["value"]
            return out
        for diff in ("diff", "diff_b_minus_a"):
            if diff in doc and _number_or_none(doc[diff]):
                out[prefix] = doc[diff]
                return out
        if "median" in doc and _number_or_none(doc["median"]):
            out[prefix] = _reached(doc["median"], doc.get("median_reached"))
            if "p90" in doc:
                out[f"{prefix}.p90"] = _reached(doc["p90"], doc.get("p90_reached"))
            return out
        for key, sub in doc.items():
            if not prefix and key in ("kind", "schema_version", "duplexeval", "signature", "inputs", "definitions"):
                continue
            out.update(metric_values(sub, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool) and prefix:
        out[prefix] = float(doc)
    return out


def _number_or_none(x: Any) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))


def _reached(value: float | None, reached: Any) -> float | None:
    if reached is False:
        return math.inf
    return value


def check_gates(gates: list[Gate], values: Mapping[str, float | None], where: str = "") -> Status:
    """Exit 1 naming every gate that failed (a null value fails: nothing was measured); InputError (exit 2)
    for a metric the document does not have, listing the ones it has."""
    if not gates:
        return Status(0, "")
    bad: list[str] = []
    for g in gates:
        if g.metric not in values:
            names = sorted(values)
            shown = ", ".join(names[:SHOWN_NAMES]) + (f" and {len(names) - SHOWN_NAMES} more"
                                                      if len(names) > SHOWN_NAMES else "")
            raise InputError(f"{g.flag} {g.metric}: no such metric{where}; available: {shown or 'none'}")
        v = values[g.metric]
        if v is None:
            bad.append(f"{g.text()}: {g.metric} is null (nothing to measure)")
        elif not g.holds(v):
            side = "below" if g.flag == "--fail-under" else "over"
            bad.append(f"{g.text()}: {g.metric} is {_fmt(v)}, {side} {g.limit:g}")
    if bad:
        return Status(1, "; ".join(bad))
    return Status(0, f"{len(gates)} gate{'s' * (len(gates) != 1)} held")


def _fmt(v: float) -> str:
    return "not reached" if v == math.inf else f"{v:.4g}"


def gated(stage: str, under: Iterable[str] | None, over: Iterable[str] | None, doc: Any, where: str) -> None:
    """The status line of a stage whose only rules are its gates, on the numbers of `doc` (metric_values)."""
    gates = parse_gates(under, over)
    status = check_gates(gates, metric_values(doc), where)
    finish(stage, status if gates else Status(0, "no gates given (--fail-under / --fail-over)"))


def combine(*statuses: Status) -> Status:
    """One status from several rules: exit 1 with every failing rule's reason, else 0 with every reason."""
    failed = [s.reason for s in statuses if s.code]
    if failed:
        return Status(1, "; ".join(failed))
    return Status(0, "; ".join(s.reason for s in statuses if s.reason))


def finish(stage: str, status: Status) -> None:
    """Print the status line on stderr (the stage's last line) and exit with its code when it is not 0."""
    print(f"{stage}: exit {status.code}: {status.reason}", file=sys.stderr, flush=True)
    if status.code:
        raise typer.Exit(status.code)


def min_eligible_option() -> Any:
    """`--min-eligible FRACTION` (docs/cli.md section 6)."""
    return typer.Option(None, "--min-eligible", min=0.0, max=1.0, metavar="FRACTION",
                        help="Exit 1 unless every selected subset has at least this share of eligible samples "
                             "(default: at least one eligible sample in every selected subset; 0: never).")


def fail_under_option(annotated: bool = False) -> Any:
    """`--fail-under METRIC=VALUE`, repeatable (docs/cli.md section 6); `annotated` for an `Annotated[...]`
    parameter."""
    return typer.Option(*(() if annotated else (None,)), "--fail-under", metavar="METRIC=VALUE",
                        help="Exit 1 when METRIC is below VALUE or null (repeatable); an unknown METRIC "
                             "lists the names.")


def fail_over_option(annotated: bool = False) -> Any:
    """`--fail-over METRIC=VALUE`, repeatable: the gate for numbers where lower is better (latencies, rates of
    faults)."""
    return typer.Option(*(() if annotated else (None,)), "--fail-over", metavar="METRIC=VALUE",
                        help="Exit 1 when METRIC is over VALUE or null (repeatable), e.g. a latency.")
