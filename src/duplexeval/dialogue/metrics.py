"""Spec 004's metrics, computed from per-case items only (pure functions, no I/O).

MiU (machine interrupts user), over the MiU cases with an outcome (run errors are counted and kept
as unknown in the selected bounds):
- ``ir_mid``, ``ir_end``, ``MIR``: shares of cases whose earliest turn-taking was mid-utterance, at
  the end, or never (they sum to 1; MIR counts only cases where the system never took the turn);
- ``PIR_mid`` / ``PRR_mid``: judged-appropriate timing / content over mid-utterance interruptions
  (null, not 0, when there are none);
- ``precision = PIR_mid * ir_mid + ir_end`` and ``recall = 1 - MIR``: the paper's definitions, not
  the standard binary formulas; precision gets a case-level bootstrap interval;
- ``FTED``: first output token minus the end of user speech, over the cases where the machine did
  not cut in mid-utterance (a case without a response is +inf: it stays in the denominator).
UiM (user interrupts machine): ``PRR_<reason>`` per reason and ``PRRavg``, their unweighted mean.
Directions and timings are never mixed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from duplexeval.dialogue.cases import REASONS
from duplexeval.jsontypes import JsonObject
from duplexeval.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    Estimate,
    Latency,
    Share,
    bootstrap_indices,
    percentile_interval,
)

MID, END, MISS, ERROR = "mid", "end", "miss", "error"
YIELDED, CONTINUED = "yielded", "continued"
NOTE = (
    "precision = PIR_mid * ir_mid + ir_end and recall = 1 - MIR are the definitions of Wang et al. 2024 "
    "(spec 004), not the standard binary precision and recall"
)


@dataclass(frozen=True)
class MiUItem:
    """One MiU case's evidence: outcome, judge scores (None: not judged / judge error), FTED."""

    outcome: str  # mid | end | miss | error
    timing: int | None = None
    content: int | None = None
    fted_us: int | None = None  # None: no output token within the horizon
    kind: str = ""  # the case's kind (error / informative / complete), for the outcome breakdown


@dataclass(frozen=True)
class UiMItem:
    """One UiM case's evidence: reason, outcome, the judge's 0/1 score (None: not judged)."""

    reason: str
    outcome: str  # yielded | continued | error
    score: int | None = None


def classify_miu(takes_us: Sequence[int], speech_end_us: int) -> str:
    """The outcome by priority mid > end > miss: any turn taken before the user finished is mid."""
    if not takes_us:
        return MISS
    return MID if min(takes_us) < speech_end_us else END


def _share(count: int, n: int, unknown: int, selected: int) -> Share:
    return Share(count, n, unknown=unknown, selected=selected)


def precision_interval(outcomes: Sequence[str], timing: Sequence[int | None]) -> tuple[float, float] | None:
    """Case-level percentile bootstrap of PIR_mid * ir_mid + ir_end (resamples with mid cases but
    none judged have no statistic and are skipped; resamples without mid cases give ir_end)."""
    n = len(outcomes)
    if n == 0:
        return None
    is_mid = np.array([o == MID for o in outcomes], dtype=float)
    is_end = np.array([o == END for o in outcomes], dtype=float)
    judged = np.array([o == MID and t is not None for o, t in zip(outcomes, timing)], dtype=float)
    ok = np.array([o == MID and t == 1 for o, t in zip(outcomes, timing)], dtype=float)
    idx = bootstrap_indices(n)
    mid_c, end_c, j_c, ok_c = is_mid[idx].sum(1), is_end[idx].sum(1), judged[idx].sum(1), ok[idx].sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        pir = np.where(j_c > 0, ok_c / np.where(j_c > 0, j_c, 1.0), np.nan)
        stat = np.where(mid_c == 0, end_c / n, pir * (mid_c / n) + end_c / n)
    return percentile_interval(stat)


PRECISION_DEFINITION = "PIR_mid * ir_mid + ir_end (the paper's, not the standard formula)"
RECALL_DEFINITION = "1 - MIR (the paper's, not the standard formula)"
PRRAVG_DEFINITION = "unweighted mean of PRR_noise, PRR_denial, PRR_affirmation, PRR_shift"


def _judged(js: dict[str, object], judge: str | None) -> dict[str, object]:
    """A judged number's JSON, naming its judge when there is one (every judged number of dialogue.json does)."""
    if judge is not None:
        js["judge"] = judge
    return js


@dataclass(frozen=True)
class MiUCounts:
    """How many MiU cases were selected, failed (errors), had an outcome (n), and of which outcome; how many of the
    mid-utterance ones the judge labelled for timing and for content."""

    selected: int
    errors: int
    n: int
    mid: int
    end: int
    miss: int
    mid_judged_timing: int
    mid_judged_content: int

    def to_json(self) -> dict[str, object]:
        return {"selected": self.selected, "errors": self.errors, "n": self.n, "mid": self.mid, "end": self.end,
                "miss": self.miss, "mid_judged_timing": self.mid_judged_timing,
                "mid_judged_content": self.mid_judged_content}


@dataclass(frozen=True)
class Recall:
    """The paper's recall, 1 - MIR: the share of cases where the system took the turn at all (the `Share` of them,
    its value computed as 1 - miss / n)."""

    share: Share
    value: float | None

    def to_json(self) -> dict[str, object]:
        js = self.share.to_json()
        js["value"] = self.value
        js["definition"] = RECALL_DEFINITION
        return js


@dataclass(frozen=True)
class Fted:
    """First-token delay after the end of user speech (seconds): the `Latency` of the cases the machine did not cut
    in mid-utterance (no response: +inf), the mean of those it responded to, and how many were left out as mid."""

    latency: Latency
    mean: float | None
    responded: int
    excluded_mid: int

    def to_json(self) -> dict[str, object]:
        return {**self.latency.to_json(), "mean": self.mean, "responded": self.responded,
                "excluded_mid": self.excluded_mid}


@dataclass(frozen=True)
class MiUMetrics:
    """Every MiU number with its counts and intervals; `to_json(judge)` is dialogue.json's MiU block (the judged
    numbers, PIR_mid, PRR_mid and precision, naming the judge)."""

    counts: MiUCounts
    outcomes_by_kind: Mapping[str, Mapping[str, int]]  # kind -> outcome -> cases, kinds sorted
    ir_mid: Share
    ir_end: Share
    MIR: Share
    PIR_mid: Share
    PRR_mid: Share
    precision: Estimate
    recall: Recall
    FTED_s: Fted

    def to_json(self, judge: str | None = None) -> JsonObject:
        return {
            "counts": self.counts.to_json(),
            "outcomes_by_kind": {k: dict(v) for k, v in self.outcomes_by_kind.items()},
            "ir_mid": self.ir_mid.to_json(),
            "ir_end": self.ir_end.to_json(),
            "MIR": self.MIR.to_json(),
            "PIR_mid": _judged(self.PIR_mid.to_json(), judge),
            "PRR_mid": _judged(self.PRR_mid.to_json(), judge),
            "precision": _judged(self.precision.to_json(), judge),
            "recall": self.recall.to_json(),
            "FTED_s": self.FTED_s.to_json(),
        }


def miu_metrics(items: Sequence[MiUItem]) -> MiUMetrics:
    """Every MiU number with its counts and intervals."""
    selected = len(items)
    valid = [it for it in items if it.outcome != ERROR]
    errors = selected - len(valid)
    n = len(valid)
    mid = sum(1 for it in valid if it.outcome == MID)
    end = sum(1 for it in valid if it.outcome == END)
    miss = n - mid - end
    mids = [it for it in valid if it.outcome == MID]
    t_judged = [it.timing for it in mids if it.timing is not None]
    c_judged = [it.content for it in mids if it.content is not None]
    pir = _share(sum(t_judged), len(t_judged), mid - len(t_judged), mid)
    prr = _share(sum(c_judged), len(c_judged), mid - len(c_judged), mid)
    ir_mid, ir_end, mir = (_share(k, n, errors, selected) for k in (mid, end, miss))
    if n == 0:
        precision = None
    elif mid == 0:
        precision = end / n  # ir_mid = 0: the product is 0 whatever PIR_mid would be
    elif pir.value is None:
        precision = None  # mid-utterance cut-ins, none judged
    else:
        precision = pir.value * (mid / n) + end / n
    recall = Recall(_share(mid + end, n, errors, selected), None if n == 0 else 1.0 - miss / n)
    fted = [it.fted_us if it.fted_us is not None else math.inf for it in valid if it.outcome != MID]
    finite = [v for v in fted if math.isfinite(v)]
    lat = Fted(Latency.of(fted, scale=1e6), (sum(finite) / len(finite) / 1e6) if finite else None, len(finite), mid)
    by_kind: dict[str, dict[str, int]] = {}
    for it in items:
        if it.kind:
            d = by_kind.setdefault(it.kind, {MID: 0, END: 0, MISS: 0, ERROR: 0})
            d[it.outcome] = d.get(it.outcome, 0) + 1
    return MiUMetrics(
        MiUCounts(selected, errors, n, mid, end, miss, len(t_judged), len(c_judged)),
        MappingProxyType({k: MappingProxyType(by_kind[k]) for k in sorted(by_kind)}),
        ir_mid, ir_end, mir, pir, prr,
        Estimate(
            precision,
            precision_interval([it.outcome for it in valid], [it.timing for it in valid]) if precision is not None
            else None,
            {"n": n, "definition": PRECISION_DEFINITION}),
        recall,
        lat,
    )


def prr_avg_interval(by_reason: dict[str, list[UiMItem]]) -> tuple[float, float] | None:
    """Stratified percentile bootstrap of the mean of the four PRRs: cases resampled within each
    reason, from one fresh ``default_rng(0)`` drawing the reasons in order."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    per: list[np.ndarray] = []
    for reason in REASONS:
        its = [it for it in by_reason.get(reason, []) if it.outcome != ERROR]
        if not its:
            return None
        judged = np.array([it.score is not None for it in its], dtype=float)
        ok = np.array([it.score == 1 for it in its], dtype=float)
        idx = rng.integers(0, len(its), size=(BOOTSTRAP_RESAMPLES, len(its)))
        j, k = judged[idx].sum(1), ok[idx].sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            per.append(np.where(j > 0, k / np.where(j > 0, j, 1.0), np.nan))
    return percentile_interval(np.mean(np.vstack(per), axis=0))


@dataclass(frozen=True)
class ReasonCounts:
    """The UiM cases of one interruption reason: selected, failed (errors), judged, and how many yielded or
    continued."""

    selected: int
    errors: int
    judged: int
    yielded: int
    continued: int

    def to_json(self) -> dict[str, object]:
        return {"selected": self.selected, "errors": self.errors, "judged": self.judged, "yielded": self.yielded,
                "continued": self.continued}


@dataclass(frozen=True)
class UiMMetrics:
    """PRR per interruption reason (`Share`, Wilson, in `REASONS` order), PRRavg (stratified bootstrap) and the
    counts per reason; `to_json(judge)` is dialogue.json's UiM block (every PRR naming the judge)."""

    prr: Mapping[str, Share]  # reason -> PRR_<reason>
    PRRavg: Estimate
    counts: Mapping[str, ReasonCounts]

    def to_json(self, judge: str | None = None) -> JsonObject:
        out: JsonObject = {f"PRR_{reason}": _judged(sh.to_json(), judge) for reason, sh in self.prr.items()}
        out["PRRavg"] = _judged(self.PRRavg.to_json(), judge)
        out["counts"] = {reason: c.to_json() for reason, c in self.counts.items()}
        return out


def uim_metrics(items: Sequence[UiMItem]) -> UiMMetrics:
    """PRR per reason (Wilson), PRRavg (stratified bootstrap) and the yield counts per reason."""
    by_reason: dict[str, list[UiMItem]] = {r: [] for r in REASONS}
    for it in items:
        by_reason.setdefault(it.reason, []).append(it)
    prr: dict[str, Share] = {}
    counts: dict[str, ReasonCounts] = {}
    for reason in REASONS:
        its = by_reason[reason]
        errors = sum(1 for it in its if it.outcome == ERROR)
        scores = [it.score for it in its if it.outcome != ERROR and it.score is not None]
        prr[reason] = _share(sum(scores), len(scores), len(its) - len(scores), len(its))
        counts[reason] = ReasonCounts(len(its), errors, len(scores), sum(1 for it in its if it.outcome == YIELDED),
                                      sum(1 for it in its if it.outcome == CONTINUED))
    values = [sh.value for sh in prr.values()]
    avg = None if any(v is None for v in values) else sum(v for v in values if v is not None) / len(values)
    avg_est = Estimate(avg, prr_avg_interval(by_reason) if avg is not None else None,
                       {"definition": PRRAVG_DEFINITION})
    return UiMMetrics(MappingProxyType(prr), avg_est, MappingProxyType(counts))
