"""eot-bench's policy sweep, vectorised: spans from predictions, first crossings, the threshold x action delay x
timeout grid, the VAD baseline, operating points, the mean frontier latency and the Pareto frontier.

The rules are eot-bench's (docs/eot.md, section "Rules"), with the same strictness and 1e-9 slack:
- spans: a span's duration is its largest ``silence_dur``; hold spans are kept when the duration is in
  [min_hold, max_hold] (both inclusive, EPS slack); EoT spans are always kept and must have a score;
- the detector fires at the first grid time with ``p_eot > threshold`` (``max`` mode) or at the score point if
  that one score is above the threshold (``score_point`` mode); fire time = max(action_delay, crossing);
- a hold span of duration d is a false cutoff if d > timeout + EPS, or it fired and d > fire time + EPS;
- an EoT span is detected if it fired and fire time <= timeout + EPS; its latency is the fire time, else the timeout.
Counting is done with sorted arrays and ``searchsorted`` per threshold (never a loop over spans); latency sums are
exact in integer microseconds, so equal latencies tie exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from duplexeval.eot.predictions import Predictions
from duplexeval.errors import InputError
from duplexeval.units import US_PER_S

EPS = 1e-9
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(np.round(np.arange(0.0, 1.01, 0.01), 2).tolist())
DEFAULT_ACTION_DELAYS: tuple[float, ...] = tuple(np.round(np.arange(0.2, 1.01, 0.1), 2).tolist())
DEFAULT_TIMEOUTS: tuple[float, ...] = tuple(np.round(np.arange(1.0, 3.51, 0.5), 2).tolist())
MIN_HOLD_S = 0.2
MAX_HOLD_S = 5.0
CUTOFF_BUDGETS: tuple[float, ...] = (0.02, 0.05, 0.10)
LATENCY_BUDGETS: tuple[float, ...] = (0.3, 0.6)
FRONTIER_BUDGETS: tuple[float, ...] = tuple(np.round(np.arange(0.0, 0.1 + 0.001, 0.001), 6).tolist())
SCORE_MODES = ("max", "score_point")


def budget_key(budget: float) -> str:
    """eot-bench's key of a cutoff budget: 0.05 -> '5pct'."""
    return f"{round(budget * 100)}pct"


def latency_key(budget: float) -> str:
    """Our key of a latency budget: 0.3 -> '300ms'."""
    return f"{round(budget * 1000)}ms"


def grid(values: Sequence[float], name: str) -> tuple[float, ...]:
    """A sweep grid: finite, non-empty, sorted, unique (as eot-bench validates them)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{name}: give at least one value")
    if not np.isfinite(arr).all():
        raise InputError(f"{name}: values must be finite numbers")
    return tuple(float(v) for v in np.unique(arr))


@dataclass(frozen=True)
class SweepConfig:
    """Grids, the hold filter and the score mode; everything that changes a sweep number."""

    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    action_delays: tuple[float, ...] = DEFAULT_ACTION_DELAYS
    timeouts: tuple[float, ...] = DEFAULT_TIMEOUTS
    min_hold_s: float = MIN_HOLD_S
    max_hold_s: float = MAX_HOLD_S
    score_mode: str = "max"
    score_point_s: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", grid(self.thresholds, "--thresholds"))
        object.__setattr__(self, "action_delays", grid(self.action_delays, "--action-delays"))
        object.__setattr__(self, "timeouts", grid(self.timeouts, "--timeouts"))
        for flag, v in (("--min-hold", self.min_hold_s), ("--max-hold", self.max_hold_s)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"{flag} must be a finite number of seconds >= 0, got {v!r}")
        if self.max_hold_s < self.min_hold_s:
            raise InputError(f"--max-hold {self.max_hold_s} is below --min-hold {self.min_hold_s}")
        for flag, g in (("--action-delays", self.action_delays), ("--timeouts", self.timeouts)):
            if min(g) < 0:
                raise InputError(f"{flag}: delays must be >= 0 s, got {min(g):g}")
            if min(g) < self.min_hold_s - EPS:
                raise InputError(f"{flag}: every value must be >= the shortest kept hold span (--min-hold "
                                 f"{self.min_hold_s:g} s); got {min(g):g}")
        if self.score_mode not in SCORE_MODES:
            raise InputError(f"--score-mode {self.score_mode!r}: use one of {', '.join(SCORE_MODES)}")
        if self.score_mode == "score_point":
            if self.score_point_s is None or not math.isfinite(self.score_point_s) or self.score_point_s < 0:
                raise InputError("score_point mode needs --score-point S (seconds of silence, >= 0)")
            if not any(d >= self.score_point_s - EPS for d in self.action_delays):
                raise InputError(f"--action-delays: none is >= the --score-point {self.score_point_s} s")
        elif self.score_point_s is not None:
            raise InputError("--score-point is only used with --score-mode score_point")

    @property
    def model_action_delays(self) -> tuple[float, ...]:
        """The delays the model rows use: in score-point mode only those at or after the score point."""
        if self.score_mode == "score_point":
            assert self.score_point_s is not None
            return tuple(d for d in self.action_delays if d >= self.score_point_s - EPS)
        return self.action_delays

    @property
    def vad_delays(self) -> tuple[float, ...]:
        """The VAD baseline's delays: the union of the two grids."""
        return tuple(sorted(set(self.action_delays) | set(self.timeouts)))

    def to_json(self) -> dict[str, object]:
        return {
            "thresholds": list(self.thresholds),
            "action_delays": list(self.action_delays),
            "timeouts": list(self.timeouts),
            "min_hold_span_duration": self.min_hold_s,
            "max_hold_span_duration": self.max_hold_s,
            "score_mode": self.score_mode,
            "score_point_s": self.score_point_s,
        }


@dataclass
class SpanTable:
    """The kept spans (sorted by turn id, span index), their scores and every row sorted within its span."""

    turn_ids: list[str]
    turn: np.ndarray  # int: index into turn_ids, per span
    span_index: np.ndarray
    is_eot: np.ndarray  # bool
    dur: np.ndarray  # float seconds (largest silence_dur)
    start_abs: np.ndarray  # float seconds: timestamp - silence_dur of the span's first row
    language: list[str]
    score: np.ndarray  # the span's classification score (NaN: none)
    score_time: np.ndarray  # score-point mode: silence_dur of the score; NaN otherwise
    # rows of kept spans, sorted by (span, silence_dur, timestamp)
    row_span: np.ndarray
    row_sd: np.ndarray
    row_p: np.ndarray
    filtered: dict[str, int] = field(default_factory=dict)
    crossings: np.ndarray | None = None  # (n_spans, n_thresholds) first-crossing silences, set by prepare_crossings

    @property
    def n_spans(self) -> int:
        return int(self.turn.size)

    @property
    def n_turns(self) -> int:
        return len(self.turn_ids)


def build_spans(preds: Predictions, cfg: SweepConfig) -> SpanTable:
    """Group prediction rows into spans, check labels, apply the hold filter and attach one score per span."""
    src = preds.source
    if len(preds) == 0:
        raise InputError(f"{src}: no prediction rows")
    turn_ids, turn_code = np.unique(preds.id.astype(str), return_inverse=True)
    si = preds.span_index
    key = turn_code.astype(np.int64) * (int(si.max()) + 1) + si
    span_keys, span_code = np.unique(key, return_inverse=True)
    n_all = span_keys.size
    is_eot_row = preds.label == "eot"
    eot_min = np.ones(n_all, dtype=bool)
    eot_max = np.zeros(n_all, dtype=bool)
    np.logical_and.at(eot_min, span_code, is_eot_row)
    np.logical_or.at(eot_max, span_code, is_eot_row)
    if (eot_min != eot_max).any():
        s = int(np.flatnonzero(eot_min != eot_max)[0])
        row = int(np.flatnonzero(span_code == s)[0])
        raise InputError(f"{src}: conflicting labels (hold and eot) for turn {preds.id[row]!r} span {int(si[row])}")
    dur_all = np.full(n_all, -np.inf)
    np.maximum.at(dur_all, span_code, preds.silence_dur)
    is_eot_all = eot_max
    n_eot_per_turn = np.bincount(turn_code[np.unique(span_code, return_index=True)[1]][is_eot_all],
                                 minlength=turn_ids.size)
    if (n_eot_per_turn > 1).any():
        t = int(np.flatnonzero(n_eot_per_turn > 1)[0])
        raise InputError(f"{src}: turn {turn_ids[t]!r} has {int(n_eot_per_turn[t])} eot spans; a turn has one (its "
                         "last silence)")
    hold_all = ~is_eot_all
    too_short = hold_all & (dur_all < cfg.min_hold_s - EPS)
    too_long = hold_all & (dur_all > cfg.max_hold_s + EPS)
    keep_span = ~(too_short | too_long)
    if not keep_span.any():
        raise InputError(
            f"{src}: no spans remain after the hold-duration filter [{cfg.min_hold_s}, {cfg.max_hold_s}] s")
    # rows of kept spans, sorted by (span, silence_dur, timestamp)
    new_code = np.cumsum(keep_span) - 1
    row_keep = keep_span[span_code]
    order = np.lexsort((preds.timestamp[row_keep], preds.silence_dur[row_keep], new_code[span_code[row_keep]]))
    rk = np.flatnonzero(row_keep)[order]
    row_span = new_code[span_code[rk]]
    row_sd = preds.silence_dur[rk]
    row_p = preds.p_eot[rk]
    n = int(keep_span.sum())
    first_row = np.searchsorted(row_span, np.arange(n), side="left")
    span_turn_all = np.empty(n_all, dtype=np.int64)
    span_turn_all[span_code] = turn_code
    span_si_all = np.empty(n_all, dtype=np.int64)
    span_si_all[span_code] = si
    kept = np.flatnonzero(keep_span)
    turn = span_turn_all[kept]
    used_turns, turn = np.unique(turn, return_inverse=True)
    language = [str(preds.language[rk[first_row[k]]]) for k in range(n)]
    start_abs = preds.timestamp[rk[first_row]] - row_sd[first_row]
    score = np.full(n, np.nan)
    score_time = np.full(n, np.nan)
    seg_end = np.append(first_row[1:], row_span.size)
    if cfg.score_mode == "max":
        has = ~np.isnan(row_p)
        pv = np.where(has, row_p, -np.inf)
        mx = np.maximum.reduceat(pv, first_row)
        score = np.where(np.isfinite(mx) | (mx == np.inf), mx, np.nan)
        missing_eot = is_eot_all[kept] & np.isnan(score)
        if missing_eot.any():
            k = int(np.flatnonzero(missing_eot)[0])
            raise InputError(f"{src}: turn {turn_ids[used_turns[turn[k]]]!r} eot span {int(span_si_all[kept][k])} has "
                             "no score (p_eot null on every row)")
    else:
        sp = cfg.score_point_s
        assert sp is not None
        big = row_span.size
        cand = np.where(row_sd >= sp - EPS, np.arange(row_span.size), big)
        firsts = np.minimum.reduceat(cand, first_row)
        firsts = np.where(firsts < seg_end, firsts, big)
        has_row = firsts < big
        idx = np.where(has_row, firsts, 0)
        st = np.where(has_row, row_sd[idx], np.nan)
        pv = np.where(has_row, row_p[idx], np.nan)
        dur_k = dur_all[kept]
        expected = dur_k >= sp - EPS
        missing = expected & np.isnan(pv)
        eot_k = is_eot_all[kept]
        if (missing | (eot_k & np.isnan(pv))).any():
            k = int(np.flatnonzero(missing | (eot_k & np.isnan(pv)))[0])
            what = "eot" if eot_k[k] else "hold"
            raise InputError(f"{src}: turn {turn_ids[used_turns[turn[k]]]!r} {what} span {int(span_si_all[kept][k])} "
                             f"has no score at the score point {sp} s")
        wrong = has_row & ~np.isnan(pv) & ~np.isclose(st, sp, atol=EPS)
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            raise InputError(f"{src}: turn {turn_ids[used_turns[turn[k]]]!r} span {int(span_si_all[kept][k])}: first "
                             f"score at or after {sp} s is at {st[k]} s, not at the score point")
        score = np.where(np.isnan(pv), np.nan, pv)
        score_time = np.where(np.isnan(pv), np.nan, st)
    filtered = {
        "n_spans_in": int(n_all),
        "n_hold_spans_in": int(hold_all.sum()),
        "n_eot_spans_in": int(is_eot_all.sum()),
        "hold_too_short": int(too_short.sum()),
        "hold_too_long": int(too_long.sum()),
        "n_turns_in": int(turn_ids.size),
        "n_turns_kept": int(used_turns.size),
    }
    return SpanTable(
        turn_ids=[str(turn_ids[t]) for t in used_turns],
        turn=turn,
        span_index=span_si_all[kept],
        is_eot=is_eot_all[kept],
        dur=dur_all[kept],
        start_abs=start_abs,
        language=language,
        score=score,
        score_time=score_time,
        row_span=row_span,
        row_sd=row_sd,
        row_p=row_p,
        filtered=filtered,
    )


def fire_times(spans: SpanTable, cfg: SweepConfig, threshold_index: int) -> np.ndarray:
    """Per span: the silence at which the detector first fires for this threshold (inf = never)."""
    thr = cfg.thresholds[threshold_index]
    if cfg.score_mode == "score_point":
        ok = ~np.isnan(spans.score) & (np.nan_to_num(spans.score, nan=-np.inf) > thr)
        return np.where(ok, spans.score_time, np.inf)
    return prepare_crossings(spans, cfg)[:, threshold_index]


def prepare_crossings(spans: SpanTable, cfg: SweepConfig) -> np.ndarray:
    """First-crossing silences for every span and threshold (max mode), by one segmented running maximum.

    Each row gets k = the number of thresholds strictly below its p_eot (those it crosses); the running maximum of
    k within a span (offset by the span's rank so one global accumulate serves all spans) is sorted, so the first
    row crossing threshold j is one ``searchsorted``.
    """
    if spans.crossings is not None and spans.crossings.shape[1] == len(cfg.thresholds):
        return spans.crossings
    thr = np.asarray(cfg.thresholds)
    K = thr.size
    n = spans.n_spans
    if cfg.score_mode == "score_point":
        out = np.empty((n, K))
        for j in range(K):
            out[:, j] = fire_times(spans, cfg, j)
        spans.crossings = out
        return out
    p = spans.row_p
    k = np.where(np.isnan(p), 0, np.searchsorted(thr, np.nan_to_num(p, nan=0.0), side="left")).astype(np.int64)
    key = spans.row_span.astype(np.int64) * (K + 1) + k
    cm = np.maximum.accumulate(key)
    seg_end = np.append(np.searchsorted(spans.row_span, np.arange(1, n), side="left"), spans.row_span.size)
    out = np.empty((n, K))
    base = np.arange(n, dtype=np.int64) * (K + 1)
    sd_ext = np.append(spans.row_sd, np.inf)
    for j in range(K):
        pos = np.searchsorted(cm, base + j, side="right")
        out[:, j] = np.where(pos < seg_end, sd_ext[np.minimum(pos, sd_ext.size - 1)], np.inf)
    spans.crossings = out
    return out


@dataclass
class Sweep:
    """Every policy row (model rows, then VAD rows) as column arrays, plus the span counts they came from."""

    policy_type: np.ndarray  # object: "model" | "vad"
    threshold: np.ndarray  # NaN for VAD rows
    action_delay: np.ndarray
    timeout: np.ndarray
    cutoff_count: np.ndarray  # int
    detect_count: np.ndarray  # int
    latency_sum_us: np.ndarray  # int
    n_hold: int
    n_eot: int
    score_mode: str
    score_point_s: float | None

    @property
    def cutoff_rate(self) -> np.ndarray:
        return self.cutoff_count / self.n_hold if self.n_hold else np.zeros(self.cutoff_count.size)

    @property
    def mean_latency(self) -> np.ndarray:
        return (self.latency_sum_us / self.n_eot) / US_PER_S

    @property
    def detect_rate(self) -> np.ndarray:
        return self.detect_count / self.n_eot

    @property
    def timeout_rate(self) -> np.ndarray:
        return (self.n_eot - self.detect_count) / self.n_eot

    @property
    def f1(self) -> np.ndarray:
        tp = self.detect_count.astype(float)
        fp = self.cutoff_count.astype(float)
        fn = self.n_eot - tp
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1), 0.0)
            rec = np.where(tp + fn > 0, tp / np.where(tp + fn > 0, tp + fn, 1), 0.0)
            return np.where(prec + rec > 0, 2 * prec * rec / np.where(prec + rec > 0, prec + rec, 1), 0.0)

    @property
    def is_model(self) -> np.ndarray:
        return np.asarray(self.policy_type == "model")

    def __len__(self) -> int:
        return int(self.threshold.size)


def _us(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(np.rint(np.asarray(x, dtype=float) * US_PER_S), dtype=np.int64)


def policy_grid(cfg: SweepConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(threshold, action_delay, timeout) of every model row, in grid order; timeout < action delay skipped."""
    th, de, to = [], [], []
    for t in cfg.thresholds:
        for d in cfg.model_action_delays:
            for o in cfg.timeouts:
                if o + EPS < d:
                    continue
                th.append(t)
                de.append(d)
                to.append(o)
    return np.asarray(th), np.asarray(de), np.asarray(to)


def run_sweep(spans: SpanTable, cfg: SweepConfig) -> Sweep:
    """The joint sweep and the VAD baseline over the kept spans (needs both hold and EoT spans)."""
    hold = ~spans.is_eot
    n_h, n_e = int(hold.sum()), int(spans.is_eot.sum())
    if n_h == 0 or n_e == 0:
        raise InputError(f"the sweep needs both hold and eot spans; have {n_h} hold and {n_e} eot after filtering")
    cross = prepare_crossings(spans, cfg)
    d_h = spans.dur[hold]
    d_h_sorted = np.sort(d_h)
    delays = np.asarray(cfg.model_action_delays)
    touts = np.asarray(cfg.timeouts)
    pairs = [(i, j) for i in range(delays.size) for j in range(touts.size) if not touts[j] + EPS < delays[i]]
    di = np.asarray([p[0] for p in pairs], dtype=np.int64)
    tj = np.asarray([p[1] for p in pairs], dtype=np.int64)
    dv, tv = delays[di], touts[tj]
    timeout_cut = n_h - np.searchsorted(d_h_sorted, tv + EPS, side="right")
    dv_us, tv_us = _us(dv), _us(tv)
    K = len(cfg.thresholds)
    m = len(pairs)
    cut = np.empty((K, m), dtype=np.int64)
    det = np.empty((K, m), dtype=np.int64)
    lat = np.empty((K, m), dtype=np.int64)
    for j in range(K):
        fh = cross[hold, j]
        a = np.isfinite(fh) & (d_h > fh + EPS)
        da = np.sort(d_h[a])
        model_only = np.maximum(
            0, np.searchsorted(da, tv + EPS, side="right") - np.searchsorted(da, dv + EPS, side="right"))
        cut[j] = timeout_cut + model_only
        fe = np.sort(cross[spans.is_eot, j])
        fe_us = np.zeros(fe.size + 1, dtype=np.int64)
        fin = np.isfinite(fe)
        fe_us[1:][fin] = _us(fe[fin])
        pref = np.cumsum(fe_us)
        k2 = np.searchsorted(fe, tv + EPS, side="right")
        k1 = np.minimum(np.searchsorted(fe, dv, side="right"), k2)
        det[j] = k2
        lat[j] = dv_us * k1 + (pref[k2] - pref[k1]) + tv_us * (n_e - k2)
    thr = np.repeat(np.asarray(cfg.thresholds), m)
    vad = np.asarray(cfg.vad_delays)
    vad_cut = n_h - np.searchsorted(d_h_sorted, vad + EPS, side="right")
    n_model = K * m
    return Sweep(
        policy_type=np.asarray(["model"] * n_model + ["vad"] * vad.size, dtype=object),
        threshold=np.concatenate([thr, np.full(vad.size, np.nan)]),
        action_delay=np.concatenate([np.tile(dv, K), vad]),
        timeout=np.concatenate([np.tile(tv, K), vad]),
        cutoff_count=np.concatenate([cut.reshape(-1), vad_cut]).astype(np.int64),
        detect_count=np.concatenate([det.reshape(-1), np.full(vad.size, n_e)]).astype(np.int64),
        latency_sum_us=np.concatenate([lat.reshape(-1), _us(vad) * n_e]).astype(np.int64),
        n_hold=n_h,
        n_eot=n_e,
        score_mode=cfg.score_mode,
        score_point_s=cfg.score_point_s,
    )


# ------------------------------------------------------------------------------------------ selection rules


def pick_min_latency(
    cut: np.ndarray, lat: np.ndarray, tor: np.ndarray, threshold: np.ndarray, delay: np.ndarray, timeout: np.ndarray,
    budget: float, n_hold: np.ndarray | float,
) -> np.ndarray:
    """Index of the policy with the lowest latency among those with cutoff rate <= budget + EPS, per column.

    ``cut``/``lat``/``tor`` are (P,) or (P, B) counts or sums (cutoff count, latency sum, timeout count) that share
    one denominator per column, so equal sums are equal rates. Ties: lower cutoff, lower timeout rate, shorter
    timeout, shorter action delay, lower threshold (eot-bench's order). -1 where no policy meets the budget.
    """
    static = np.lexsort((threshold, delay, timeout))
    return _pick(cut / np.maximum(n_hold, 1) <= budget + EPS, (lat, cut, tor), static)


def pick_min_cutoff(
    cut: np.ndarray, lat: np.ndarray, threshold: np.ndarray, delay: np.ndarray, timeout: np.ndarray,
    budget: float, n_eot: np.ndarray | float,
) -> np.ndarray:
    """Index of the policy with the lowest cutoff count among those with mean latency <= budget + EPS.

    Ties: lower latency, higher threshold, shorter action delay, shorter timeout. -1 where none is feasible.
    """
    static = np.lexsort((timeout, delay, -threshold))
    return _pick((lat / np.maximum(n_eot, 1)) / US_PER_S <= budget + EPS, (cut, lat), static)


def _pick(feasible: np.ndarray, keys: tuple[np.ndarray, ...], static: np.ndarray | None) -> np.ndarray:
    """First row (in ``static`` order; None = rows already in that order) minimising ``keys`` in turn among feasible."""
    squeeze = feasible.ndim == 1
    cand = feasible.reshape(feasible.shape[0], -1)
    if static is not None:
        cand = cand[static]
    for key in keys:
        k = key.reshape(key.shape[0], -1)
        if static is not None:
            k = k[static]
        v = np.where(cand, k, np.inf)
        cand &= v == v.min(axis=0, keepdims=True)
    first = np.argmax(cand, axis=0)
    out = np.where(cand.any(axis=0), first if static is None else static[first], -1)
    return out[0] if squeeze else out


def pick_sorted_min_latency(cut: np.ndarray, lat: np.ndarray, tor: np.ndarray, budget: float,
                            n_hold: np.ndarray) -> np.ndarray:
    """``pick_min_latency`` on rows already in its static tie-break order (timeout, delay, threshold)."""
    return _pick(cut / np.maximum(n_hold, 1) <= budget + EPS, (lat, cut, tor), None)


def pick_sorted_min_cutoff(cut: np.ndarray, lat: np.ndarray, budget: float, n_eot: np.ndarray) -> np.ndarray:
    """``pick_min_cutoff`` on rows already in its static tie-break order (-threshold, delay, timeout)."""
    return _pick((lat / np.maximum(n_eot, 1)) / US_PER_S <= budget + EPS, (cut, lat), None)


@dataclass(frozen=True)
class Selected:
    """One chosen policy (an operating point) and its numbers; ``index`` into the sweep rows."""

    index: int
    threshold: float
    action_delay: float
    timeout: float
    cutoff_rate: float
    mean_latency: float
    detect_rate: float
    timeout_rate: float


def selected(sw: Sweep, index: int) -> Selected:
    return Selected(index, float(sw.threshold[index]), float(sw.action_delay[index]), float(sw.timeout[index]),
                    float(sw.cutoff_rate[index]), float(sw.mean_latency[index]), float(sw.detect_rate[index]),
                    float(sw.timeout_rate[index]))  # fmt: skip


def model_rows(sw: Sweep) -> np.ndarray:
    return np.flatnonzero(sw.is_model)


def operating_point(sw: Sweep, budget: float) -> Selected | None:
    """eot-bench's operating point at a cutoff budget (model rows only); None when no policy meets it."""
    rows = model_rows(sw)
    tor = sw.n_eot - sw.detect_count[rows]
    k = int(pick_min_latency(sw.cutoff_count[rows], sw.latency_sum_us[rows], tor, sw.threshold[rows],
                             sw.action_delay[rows], sw.timeout[rows], budget, sw.n_hold))  # fmt: skip
    return None if k < 0 else selected(sw, int(rows[k]))


def latency_budget_point(sw: Sweep, budget_s: float) -> Selected | None:
    """The lowest cutoff rate among model rows with mean latency <= budget (eot-bench's latency-budget helper)."""
    rows = model_rows(sw)
    k = int(pick_min_cutoff(sw.cutoff_count[rows], sw.latency_sum_us[rows], sw.threshold[rows],
                            sw.action_delay[rows], sw.timeout[rows], budget_s, sw.n_eot))  # fmt: skip
    return None if k < 0 else selected(sw, int(rows[k]))


def _vad_best(sw: Sweep, within: np.ndarray, budget: float, best: np.ndarray) -> Selected | None:
    """The VAD baseline row with `within <= budget` and the smallest `best` (ties: the shorter delay)."""
    rows = np.flatnonzero(~sw.is_model)
    ok = rows[within[rows] <= budget + EPS]
    if ok.size == 0:
        return None
    return selected(sw, int(ok[np.lexsort((sw.action_delay[ok], best[ok]))[0]]))


def vad_point(sw: Sweep, budget: float) -> Selected | None:
    """The VAD baseline's lowest-latency delay within a cutoff budget (ties: the shorter delay)."""
    return _vad_best(sw, sw.cutoff_rate, budget, sw.latency_sum_us)


def vad_latency_point(sw: Sweep, budget_s: float) -> Selected | None:
    """The VAD baseline's lowest cutoff within a latency budget."""
    return _vad_best(sw, sw.mean_latency, budget_s, sw.cutoff_count)


def mean_frontier_latency(sw: Sweep, budgets: Sequence[float] = FRONTIER_BUDGETS) -> float | None:
    """Mean over budgets 0.000..0.100 of the best feasible latency (budgets with no feasible policy are left out)."""
    vals = [p.mean_latency for b in budgets if (p := operating_point(sw, b)) is not None]
    return float(np.mean(vals)) if vals else None


def pareto_mask(sw: Sweep) -> np.ndarray:
    """Model rows on the frontier: sorted by (latency, cutoff, -threshold, delay, timeout), cutoff below every earlier
    row."""
    mask = np.zeros(len(sw), dtype=bool)
    rows = model_rows(sw)
    order = rows[np.lexsort((sw.timeout[rows], sw.action_delay[rows], -sw.threshold[rows],
                             sw.cutoff_rate[rows], sw.latency_sum_us[rows]))]  # fmt: skip
    c = sw.cutoff_rate[order]
    prev_best = np.concatenate([[np.inf], np.minimum.accumulate(c)[:-1]])
    mask[order[c < prev_best - EPS]] = True
    return mask


def classification(spans: SpanTable) -> dict[str, object]:
    """AUC and AP over spans with a score (diagnostics only) and eot-bench's span counts."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    has = ~np.isnan(spans.score)
    y = spans.is_eot[has].astype(int)
    s = spans.score[has]
    two = np.unique(y).size > 1
    hold = ~spans.is_eot
    return {
        "auc": float(roc_auc_score(y, s)) if two else None,
        "ap": float(average_precision_score(y, s)) if two else None,
        "n_spans": spans.n_spans,
        "n_hold_spans": int(hold.sum()),
        "n_eot_spans": int(spans.is_eot.sum()),
        "n_scored_spans": int(has.sum()),
        "n_scored_hold_spans": int((has & hold).sum()),
        "n_scored_eot_spans": int((has & spans.is_eot).sum()),
        "n_missing_scores": int((~has).sum()),
        "n_missing_hold_scores": int((~has & hold).sum()),
        "n_missing_eot_scores": int((~has & spans.is_eot).sum()),
    }


def policy_outcomes(spans: SpanTable, cfg: SweepConfig, threshold: float, action_delay: float,
                    timeout: float) -> dict[str, np.ndarray]:
    """Per span for one policy: ``cut`` (hold spans), ``detected`` and ``latency_us`` (EoT spans), ``commit_s``
    (silence at which the system takes the turn in this span: the fire time, the timeout, or inf if neither)."""
    j = int(np.searchsorted(np.asarray(cfg.thresholds), threshold))
    if j >= len(cfg.thresholds) or cfg.thresholds[j] != threshold:
        raise InputError(f"threshold {threshold} is not on the sweep grid")
    f = prepare_crossings(spans, cfg)[:, j]
    fire = np.maximum(action_delay, f)
    hold = ~spans.is_eot
    model_cut = np.isfinite(f) & (spans.dur > fire + EPS)
    cut = hold & ((spans.dur > timeout + EPS) | model_cut)
    detected = spans.is_eot & np.isfinite(f) & (fire <= timeout + EPS)
    lat = np.where(detected, fire, timeout)
    hold_commit = np.minimum(np.where(model_cut, fire, np.inf), np.where(spans.dur > timeout + EPS, timeout, np.inf))
    commit = np.where(spans.is_eot, lat, hold_commit)
    latency_us = np.where(spans.is_eot, _us(np.where(spans.is_eot, lat, 0.0)), 0)
    return {"cut": cut, "detected": detected, "latency_us": latency_us, "commit_s": commit}
