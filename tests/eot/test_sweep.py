"""The eot-bench policy sweep: hand-computed known answers at every rule's edge, a loop-by-loop reference of the
rules (written from docs/eot.md, not from the vectorised code) on random predictions, and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval.eot.predictions import Predictions
from duplexeval.eot.sweep_engine import (
    EPS,
    SweepConfig,
    build_spans,
    classification,
    latency_budget_point,
    mean_frontier_latency,
    operating_point,
    pareto_mask,
    policy_outcomes,
    run_sweep,
)


def rows_for(turn: str, spans: list[tuple[str, float, list[float | None]]], step: float = 0.1) -> list[dict]:
    """Prediction rows of one turn: (label, duration, p_eot per grid time 0, step, ..., duration)."""
    out, t0 = [], 1.0
    for k, (label, dur, ps) in enumerate(spans):
        n = math.floor(dur / step + 1e-6)
        grid = [round(i * step, 6) for i in range(n + 1)]
        if grid[-1] < dur - 1e-6:
            grid.append(round(dur, 6))
        assert len(ps) == len(grid), (turn, k, len(grid))
        for sd, p in zip(grid, ps):
            out.append({"id": turn, "language": "en", "span_index": k, "timestamp": round(t0 + sd, 6),
                        "silence_dur": sd, "p_eot": p, "label": label})  # fmt: skip
        t0 += dur + 1.0
    return out


def small_cfg(**kw) -> SweepConfig:
    base = {"thresholds": (0.5,), "action_delays": (0.2, 0.3), "timeouts": (0.3, 0.5)}
    base.update(kw)
    return SweepConfig(**base)


def row_of(sw, thr, delay, timeout):
    k = np.flatnonzero(sw.is_model & (sw.threshold == thr) & (sw.action_delay == delay) & (sw.timeout == timeout))
    assert k.size == 1
    return int(k[0])


def test_fire_exactly_at_the_span_end_is_not_a_cutoff():
    # hold span of 0.3 s crosses at 0.3 (its last grid time = its end): d > fire + EPS is false
    rows = rows_for("a", [("hold", 0.3, [0, 0, 0, 0.9]), ("eot", 0.2, [0.9, 0.9, 0.9])])
    sp = build_spans(Predictions.from_rows(rows), small_cfg())
    sw = run_sweep(sp, small_cfg())
    k = row_of(sw, 0.5, 0.2, 0.5)
    assert sw.cutoff_count[k] == 0
    # the EoT span fires at 0.0 -> fire time = action delay 0.2
    assert sw.mean_latency[k] == pytest.approx(0.2) and sw.detect_count[k] == 1
    # one grid step earlier it is a cutoff
    rows = rows_for("a", [("hold", 0.3, [0, 0, 0.9, 0.9]), ("eot", 0.2, [0.9, 0.9, 0.9])])
    sw = run_sweep(build_spans(Predictions.from_rows(rows), small_cfg()), small_cfg())
    assert sw.cutoff_count[row_of(sw, 0.5, 0.2, 0.5)] == 1
    # ... unless the action delay holds it back to 0.3 = the span's end
    assert sw.cutoff_count[row_of(sw, 0.5, 0.3, 0.5)] == 0


def test_timeout_equal_to_a_span_duration():
    # hold 0.5 s never fires: d > timeout is false at timeout 0.5 (no cutoff), true at 0.3
    # eot fires at 0.5 = timeout: detected, latency 0.5
    rows = rows_for("a", [("hold", 0.5, [0] * 6), ("eot", 0.5, [0, 0, 0, 0, 0, 0.9])])
    cfg = small_cfg()
    sw = run_sweep(build_spans(Predictions.from_rows(rows), cfg), cfg)
    k = row_of(sw, 0.5, 0.2, 0.5)
    assert sw.cutoff_count[k] == 0 and sw.detect_count[k] == 1 and sw.mean_latency[k] == pytest.approx(0.5)
    k = row_of(sw, 0.5, 0.2, 0.3)
    assert sw.cutoff_count[k] == 1  # the timeout ends the hold span
    assert sw.detect_count[k] == 0 and sw.mean_latency[k] == pytest.approx(0.3)  # timed out at 0.3
    assert sw.timeout_rate[k] == 1.0


def test_timeout_below_action_delay_is_skipped_and_strict_threshold():
    rows = rows_for("a", [("hold", 0.2, [0.5, 0.5, 0.5]), ("eot", 0.2, [0.5, 0.5, 0.5])])
    cfg = small_cfg(action_delays=(0.2, 0.4), timeouts=(0.3,))
    sw = run_sweep(build_spans(Predictions.from_rows(rows), cfg), cfg)
    model = sw.is_model
    assert set(zip(sw.action_delay[model], sw.timeout[model])) == {(0.2, 0.3)}
    # p = 0.5 is not > 0.5: never fires, the timeout ends the EoT span
    k = row_of(sw, 0.5, 0.2, 0.3)
    assert sw.detect_count[k] == 0 and sw.mean_latency[k] == pytest.approx(0.3)
    # VAD rows on the union of the grids: 0.2 (hold of 0.2 is not > 0.2), 0.3, 0.4
    vad = ~model
    assert list(sw.action_delay[vad]) == [0.2, 0.3, 0.4]
    assert list(sw.cutoff_count[vad]) == [0, 0, 0]
    assert list(sw.mean_latency[vad]) == pytest.approx([0.2, 0.3, 0.4])


def test_hold_filter_counts_and_inclusive_edges():
    rows = []
    rows += rows_for("a", [("hold", 0.1, [0, 0]), ("hold", 0.2, [0] * 3), ("eot", 0.2, [1] * 3)])
    rows += rows_for("b", [("hold", 5.0, [0] * 51), ("hold", 5.1, [0] * 52), ("eot", 0.3, [1] * 4)])
    sp = build_spans(Predictions.from_rows(rows), SweepConfig())
    assert sp.filtered["hold_too_short"] == 1 and sp.filtered["hold_too_long"] == 1
    assert sorted(sp.dur[~sp.is_eot].tolist()) == [0.2, 5.0]
    assert sp.filtered["n_hold_spans_in"] == 4 and sp.filtered["n_eot_spans_in"] == 2


def test_operating_point_ties_go_to_lower_timeout_rate_then_shorter_timeout_delay_threshold():
    # every policy has the same latency and cutoff: the tie-break picks timeout 1.0, delay 0.2, threshold 0.0
    rows = rows_for("a", [("hold", 0.2, [0] * 3), ("eot", 0.2, [1] * 3)])
    cfg = SweepConfig(thresholds=(0.0, 0.5), action_delays=(0.2,), timeouts=(1.0, 2.0))
    sw = run_sweep(build_spans(Predictions.from_rows(rows), cfg), cfg)
    op = operating_point(sw, 0.05)
    assert op is not None and (op.threshold, op.action_delay, op.timeout) == (0.0, 0.2, 1.0)
    # latency budget: ties go to the HIGHER threshold
    lb = latency_budget_point(sw, 0.3)
    assert lb is not None and (lb.threshold, lb.action_delay, lb.timeout) == (0.5, 0.2, 1.0)
    assert latency_budget_point(sw, 0.1) is None  # nothing is faster than the 0.2 s action delay
    assert mean_frontier_latency(sw) == pytest.approx(0.2)


def test_operating_point_budget_has_eps_slack_and_none_when_infeasible():
    # 1 cutoff in 50 holds = exactly 2%
    turns = [rows_for(f"h{i}", [("hold", 0.3, [0] * 4), ("eot", 0.2, [1] * 3)]) for i in range(49)]
    turns.append(rows_for("x", [("hold", 0.3, [0, 1, 1, 1]), ("eot", 0.2, [1] * 3)]))
    rows = [r for t in turns for r in t]
    cfg = SweepConfig(thresholds=(0.5,), action_delays=(0.2,), timeouts=(1.0,))
    sw = run_sweep(build_spans(Predictions.from_rows(rows), cfg), cfg)
    op = operating_point(sw, 0.02)
    assert op is not None and op.cutoff_rate == 0.02
    assert operating_point(sw, 0.019) is None


def test_score_point_mode():
    # score at exactly 0.2 s; action delays below the score point are not used for model rows
    rows = rows_for("a", [("hold", 0.4, [0, 0, 0.9, 0, 0]), ("eot", 0.3, [0, 0, 0.8, 0])])
    cfg = SweepConfig(thresholds=(0.5,), action_delays=(0.1, 0.2, 0.3), timeouts=(1.0,), min_hold_s=0.1,
                      score_mode="score_point", score_point_s=0.2)  # fmt: skip
    sp = build_spans(Predictions.from_rows(rows), cfg)
    assert sp.score.tolist() == [0.9, 0.8]
    sw = run_sweep(sp, cfg)
    assert sorted(set(sw.action_delay[sw.is_model])) == [0.2, 0.3]
    k = row_of(sw, 0.5, 0.2, 1.0)
    assert sw.cutoff_count[k] == 1 and sw.mean_latency[k] == pytest.approx(0.2)
    k = row_of(sw, 0.5, 0.3, 1.0)
    assert sw.cutoff_count[k] == 1 and sw.mean_latency[k] == pytest.approx(0.3)
    assert 0.1 in set(sw.action_delay[~sw.is_model])  # the VAD baseline keeps the full grid


def test_policy_outcomes_commit_times():
    rows = rows_for("a", [("hold", 0.5, [0, 0, 0, 0.9, 0, 0]), ("eot", 0.4, [0] * 5)])
    cfg = SweepConfig(thresholds=(0.5,), action_delays=(0.2,), timeouts=(0.3, 1.0))
    sp = build_spans(Predictions.from_rows(rows), cfg)
    o = policy_outcomes(sp, cfg, 0.5, 0.2, 1.0)
    assert o["cut"].tolist() == [True, False] and o["commit_s"][0] == pytest.approx(0.3)
    assert o["detected"].tolist() == [False, False] and o["latency_us"][1] == 1_000_000
    o = policy_outcomes(sp, cfg, 0.5, 0.2, 0.3)
    assert o["commit_s"][0] == pytest.approx(0.3) and o["latency_us"][1] == 300_000


def reference_sweep(rows: list[dict], cfg: SweepConfig) -> dict[tuple, tuple]:
    """The rules, one span and one policy at a time."""
    spans: dict[tuple, dict] = {}
    for r in rows:
        s = spans.setdefault((r["id"], r["span_index"]), {"label": r["label"], "rows": []})
        s["rows"].append((r["silence_dur"], r["timestamp"], r["p_eot"]))
    kept = []
    for _key, s in sorted(spans.items()):
        d = max(sd for sd, _, _ in s["rows"])
        if s["label"] == "hold" and not (cfg.min_hold_s - EPS <= d <= cfg.max_hold_s + EPS):
            continue
        kept.append((s["label"], d, sorted(s["rows"])))
    out = {}
    for thr in cfg.thresholds:
        fires = []
        for label, d, rs in kept:
            f = next((sd for sd, _, p in rs if p is not None and p > thr), math.inf)
            fires.append((label, d, f))
        for delay in cfg.action_delays:
            for timeout in cfg.timeouts:
                if timeout + EPS < delay:
                    continue
                cut = det = 0
                lat = []
                for label, d, f in fires:
                    fire = max(delay, f)
                    if label == "hold":
                        cut += (d > timeout + EPS) or (f < math.inf and d > fire + EPS)
                    else:
                        ok = f < math.inf and fire <= timeout + EPS
                        det += ok
                        lat.append(fire if ok else timeout)
                out[(thr, delay, timeout)] = (cut, det, sum(lat) / len(lat))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_sweep_equals_the_rules_one_span_at_a_time(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(40):
        ns = int(rng.integers(1, 5))
        spans = []
        for s in range(ns):
            d = round(float(rng.choice([0.1, 0.2, 0.25, 0.5, 0.7, 1.0, 1.5, 2.2, 3.5, 5.0, 6.0])), 2)
            n = math.floor(d / 0.1 + 1e-6) + 1 + (1 if abs(d / 0.1 - round(d / 0.1)) > 1e-6 else 0)
            ps = [None if rng.random() < 0.05 else round(float(rng.random()), 2) for _ in range(n)]
            spans.append(("eot" if s == ns - 1 else "hold", d, ps))
        if spans[-1][2][0] is None:
            spans[-1][2][0] = 0.5
        rows += rows_for(f"t{t:02d}", spans)
    cfg = SweepConfig(thresholds=tuple(np.round(np.arange(0, 1.01, 0.05), 2)), action_delays=(0.2, 0.5, 1.0),
                      timeouts=(0.2, 0.5, 1.0, 2.0))  # fmt: skip
    sw = run_sweep(build_spans(Predictions.from_rows(rows), cfg), cfg)
    ref = reference_sweep(rows, cfg)
    model = np.flatnonzero(sw.is_model)
    assert len(model) == len(ref)
    for k in model:
        cut, det, lat = ref[(sw.threshold[k], sw.action_delay[k], sw.timeout[k])]
        assert (sw.cutoff_count[k], sw.detect_count[k]) == (cut, det)
        assert sw.mean_latency[k] == pytest.approx(lat, abs=1e-12)
    # Pareto rows: sorted by latency, strictly decreasing cutoff
    pm = pareto_mask(sw)
    pr = np.flatnonzero(pm)
    order = pr[np.argsort(sw.latency_sum_us[pr], kind="stable")]
    assert np.all(np.diff(sw.cutoff_rate[order]) < 0)


def test_classification_counts_missing_scores():
    rows = rows_for("a", [("hold", 0.2, [None, None, None]), ("eot", 0.2, [0.1, 0.9, None])])
    rows += rows_for("b", [("hold", 0.2, [0.3, 0.2, 0.1]), ("eot", 0.2, [0.2, 0.2, 0.2])])
    c = classification(build_spans(Predictions.from_rows(rows), SweepConfig()))
    assert c["n_missing_hold_scores"] == 1 and c["n_scored_spans"] == 3
    assert c["auc"] == 0.5  # eot 0.9 and 0.2 against the one scored hold span at 0.3


def _only_at(rows: list[dict], at: float) -> list[dict]:
    """The same rows scored at one silence only, as `eot predict --only-at` writes them (other rows: no score)."""
    return [{**r, "p_eot": r["p_eot"] if abs(r["silence_dur"] - at) < 1e-6 else None} for r in rows]


def test_only_at_predictions_in_max_mode_are_warned_and_b_keeps_its_own_mode():
    from duplexeval.eot.compare_stage import compare
    from duplexeval.eot.predictions import mode_warning, scored_only_at

    rows = []
    for t in range(6):
        rows += rows_for(f"t{t}",
                         [("hold", 0.5, [0, 0.1, 0.6, 0.2, 0.1, 0.1]), ("eot", 0.5, [0.2, 0.4, 0.9, 0.9, 0.9, 0.9])])
    a = Predictions.from_rows(rows, "a.jsonl")
    b = Predictions.from_rows(_only_at(rows, 0.2), "b.jsonl")
    assert scored_only_at(a) == () and scored_only_at(b) == (0.2,)
    assert mode_warning(a, "max", "a") is None and mode_warning(b, "score_point", "b") is None
    msg = mode_warning(b, "max", "b")
    assert msg is not None and "--score-mode score_point --score-point 0.2" in msg and "\n" not in msg
    cfg = SweepConfig(thresholds=(0.5,), action_delays=(0.2, 0.3), timeouts=(0.5, 1.0))
    c = compare(a, b, cfg, "0" * 64, "1" * 64, ("a", "b"))
    assert c["score_mode"] == {"a": "max", "b": "max"} and len(c["notes"]) == 1 and c["notes"][0] == msg
    own = compare(a, b, cfg, "0" * 64, "1" * 64, ("a", "b"),
                  SweepConfig(thresholds=(0.5,), action_delays=(0.2, 0.3), timeouts=(0.5, 1.0),
                              score_mode="score_point", score_point_s=0.2))
    assert own["score_mode"] == {"a": "max", "b": "score_point@0.2"} and own["notes"] == []
    assert "mode:score_point@0.2" in own["signature"]["compact"] and own["frontier"]["b"]
