"""What eot-bench lacks: 95% intervals over whole turns, for a fixed policy and re-picking the policy per resample,
and spec 003's pair scores for the chosen policy's commits.

A turn's spans share a speaker, a recording and a detector state, so turns (not spans) are the resampling unit:
one ``stats.bootstrap_indices(n_turns)`` matrix (2000 resamples, a fresh ``default_rng(0)``), cutoff rate and
mean latency as pooled ratios of per-turn sums, endpoints at ranks 50 and 1950 (the shared conventions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duplexeval import stats
from duplexeval.eot.pairs import EOTPair
from duplexeval.eot.sweep_engine import (
    EPS,
    Selected,
    SpanTable,
    Sweep,
    SweepConfig,
    budget_key,
    latency_key,
    pick_sorted_min_cutoff,
    pick_sorted_min_latency,
    policy_grid,
    policy_outcomes,
    prepare_crossings,
)
from duplexeval.units import US_PER_S

SELECTION_MAX_TURNS = 2000  # the selection-aware interval holds (policies x turns) matrices; above this it is skipped
# the shared (2000 x turns) index matrix: 320 MB at this size; above it intervals are skipped
BOOTSTRAP_MAX_TURNS = 20000
_CHUNK = 250  # resamples per matrix product


def turn_starts(spans: SpanTable) -> np.ndarray:
    """Index of each turn's first span (spans are sorted by turn)."""
    return np.searchsorted(spans.turn, np.arange(spans.n_turns), side="left")


@dataclass(frozen=True)
class TurnCounts:
    """Per-turn sums for one policy: cutoffs, hold spans, latency (us), EoT spans, detections."""

    cut: np.ndarray
    n_hold: np.ndarray
    latency_us: np.ndarray
    n_eot: np.ndarray
    detected: np.ndarray


def turn_counts(spans: SpanTable, cfg: SweepConfig, pol: Selected) -> TurnCounts:
    o = policy_outcomes(spans, cfg, pol.threshold, pol.action_delay, pol.timeout)
    st = turn_starts(spans)
    hold = (~spans.is_eot).astype(np.int64)
    return TurnCounts(
        np.add.reduceat(o["cut"].astype(np.int64), st),
        np.add.reduceat(hold, st),
        np.add.reduceat(o["latency_us"].astype(np.int64), st),
        np.add.reduceat(spans.is_eot.astype(np.int64), st),
        np.add.reduceat(o["detected"].astype(np.int64), st),
    )


def ratio_intervals(idx: np.ndarray,
                    ratios: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple[float, float] | None]:
    """``stats.bootstrap_ratio_interval`` of several (numerators, denominators) over one index matrix.

    Every call of the shared function draws the same ``bootstrap_indices(n)`` matrix, so sharing it gives the same
    numbers (a test checks it) while drawing it once; sums are taken in chunks of resamples to bound memory.
    """
    out = []
    for num, den in ratios:
        ns = np.empty(idx.shape[0])
        ds = np.empty(idx.shape[0])
        for g in range(0, idx.shape[0], _CHUNK):
            ns[g : g + _CHUNK] = np.asarray(num, dtype=float)[idx[g : g + _CHUNK]].sum(axis=1)
            ds[g : g + _CHUNK] = np.asarray(den, dtype=float)[idx[g : g + _CHUNK]].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(ds > 0, ns / np.where(ds > 0, ds, 1.0), np.nan)
        out.append(stats.percentile_interval(r))
    return out


def fixed_policy_intervals(tc: TurnCounts, idx: np.ndarray | None = None) -> dict[str, list[float | None] | None]:
    """Bootstrap intervals (whole turns) of the cutoff rate and mean latency with the policy held fixed."""
    idx = stats.bootstrap_indices(tc.cut.size) if idx is None else idx
    cut, lat = ratio_intervals(idx, [(tc.cut, tc.n_hold), (tc.latency_us / US_PER_S, tc.n_eot)])
    return {"cutoff_rate": stats.json_interval(cut), "mean_latency": stats.json_interval(lat)}


def wilson_cutoff(tc: TurnCounts) -> list[float | None] | None:
    """The Wilson interval of the cutoff rate as if spans were independent (shown for contrast only)."""
    return stats.json_interval(stats.wilson_interval(int(tc.cut.sum()), int(tc.n_hold.sum())))


def _policy_turn_matrices(spans: SpanTable, cfg: SweepConfig) -> tuple[np.ndarray, ...]:
    """(cut, latency_us, timeouts) per model policy (grid order, as ``run_sweep``) and per turn, as float64."""
    cross = prepare_crossings(spans, cfg)
    st = turn_starts(spans)
    hold = ~spans.is_eot
    eot = spans.is_eot
    th, de, to = policy_grid(cfg)
    per_thr = th.size // len(cfg.thresholds)
    dv, tv = de[:per_thr, None], to[:per_thr, None]
    d = spans.dur[None, :]
    C, L, TO = [], [], []
    for j in range(len(cfg.thresholds)):
        f = cross[:, j][None, :]
        fire = np.maximum(dv, f)
        fin = np.isfinite(f)
        cut = hold & ((d > tv + EPS) | (fin & (d > fire + EPS)))
        det = eot & fin & (fire <= tv + EPS)
        lat = np.where(det, fire, tv)
        lat_us = np.where(eot, np.rint(np.where(eot, lat, 0.0) * US_PER_S), 0.0)
        C.append(np.add.reduceat(cut.astype(np.float64), st, axis=1))
        L.append(np.add.reduceat(lat_us, st, axis=1))
        TO.append(np.add.reduceat((eot & ~det).astype(np.float64), st, axis=1))
    return np.concatenate(C), np.concatenate(L), np.concatenate(TO), th, de, to


def _resample_weights(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each turn appears in each resample row: (rows, n)."""
    b = idx.shape[0]
    flat = (np.arange(b)[:, None] * n + idx).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


@dataclass(frozen=True)
class SelectionAware:
    """Intervals with the policy re-picked inside every resample; ``same_policy`` = share of resamples that kept it.

    Not a `stats` value: it holds two intervals of one selection (cutoff rate, mean latency) and no point value (the
    point values are the chosen policy's own `stats` numbers)."""

    cutoff_rate: list[float | None] | None
    mean_latency: list[float | None] | None
    n_resamples_feasible: int
    same_policy: float | None

    def to_json(self) -> dict[str, object]:
        return {"label": "selection-aware: policy re-picked in each resample", "cutoff_rate": self.cutoff_rate,
                "mean_latency": self.mean_latency, "n_resamples_with_a_feasible_policy": self.n_resamples_feasible,
                "share_of_resamples_picking_the_same_policy": self.same_policy}  # fmt: skip


def selection_aware(
    spans: SpanTable, cfg: SweepConfig, sw: Sweep, cutoff_budgets: Sequence[float], latency_budgets: Sequence[float],
    chosen: dict[str, Selected | None],
) -> dict[str, SelectionAware]:
    """Re-run the operating-point rule in each of the 2000 turn resamples and take the chosen policy's numbers."""
    C, L, TO, th, de, to = _policy_turn_matrices(spans, cfg)
    nh_t = np.add.reduceat((~spans.is_eot).astype(np.float64), turn_starts(spans))
    ne_t = np.add.reduceat(spans.is_eot.astype(np.float64), turn_starts(spans))
    idx = stats.bootstrap_indices(spans.n_turns)
    model = np.flatnonzero(sw.is_model)
    keys = [("cutoff", b) for b in cutoff_budgets] + [("latency", b) for b in latency_budgets]
    vals = {k: (np.full(idx.shape[0], np.nan), np.full(idx.shape[0], np.nan), np.zeros(idx.shape[0], bool))
            for k in keys}
    # rows pre-sorted in each rule's static tie-break order, so the per-resample pick needs no reordering
    orders = {"cutoff": np.lexsort((th, de, to)), "latency": np.lexsort((to, de, -th))}
    mats = {kind: (C[o], L[o], TO[o]) for kind, o in orders.items()}
    for g in range(0, idx.shape[0], _CHUNK):
        W = _resample_weights(idx[g : g + _CHUNK], spans.n_turns).T  # (T, B)
        nh, ne = nh_t @ W, ne_t @ W
        cols = np.arange(W.shape[1])
        prods = {kind: (m[0] @ W, m[1] @ W, m[2] @ W) for kind, m in mats.items()}
        for kind, b in keys:
            cb, lb, tb = prods[kind]
            if kind == "cutoff":
                pick = pick_sorted_min_latency(cb, lb, tb, b, nh)
            else:
                pick = pick_sorted_min_cutoff(cb, lb, b, ne)
            ok = pick >= 0
            p = np.where(ok, pick, 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                cr = np.where(ok & (nh > 0), cb[p, cols] / np.where(nh > 0, nh, 1), np.nan)
                ml = np.where(ok & (ne > 0), lb[p, cols] / np.where(ne > 0, ne, 1) / US_PER_S, np.nan)
            key = (kind, b)
            ch = chosen.get(_name(kind, b))
            same = ok & (model[orders[kind][p]] == (ch.index if ch is not None else -1))
            vals[key][0][g : g + W.shape[1]] = cr
            vals[key][1][g : g + W.shape[1]] = ml
            vals[key][2][g : g + W.shape[1]] = same
    out = {}
    for kind, b in keys:
        cr, ml, same = vals[(kind, b)]
        feas = int((~np.isnan(cr)).sum())
        out[_name(kind, b)] = SelectionAware(stats.json_interval(stats.percentile_interval(cr)),
                                             stats.json_interval(stats.percentile_interval(ml)), feas,
                                             float(same.mean()) if feas else None)  # fmt: skip
    return out


def _name(kind: str, b: float) -> str:
    return budget_key(b) if kind == "cutoff" else latency_key(b)


def commit_pairs(spans: SpanTable, cfg: SweepConfig, pol: Selected) -> tuple[list[EOTPair], list[str], int]:
    """Spec 003 pairs of a policy: per turn with an EoT span, (true end, the first commit in the turn), absolute
    seconds. A commit in a hold span (a false cutoff) comes before the true end. Turns without an EoT span are
    counted, not paired."""
    o = policy_outcomes(spans, cfg, pol.threshold, pol.action_delay, pol.timeout)
    st = turn_starts(spans)
    first = np.minimum.reduceat(spans.start_abs + o["commit_s"], st)
    has_eot = np.add.reduceat(spans.is_eot.astype(np.int64), st) > 0
    true_end = np.full(spans.n_turns, np.nan)
    true_end[spans.turn[spans.is_eot]] = spans.start_abs[spans.is_eot]
    keep = np.flatnonzero(has_eot)
    pairs = [EOTPair(float(true_end[t]), float(first[t])) for t in keep]
    ids = [spans.turn_ids[t] for t in keep]
    return pairs, ids, int((~has_eot).sum())
