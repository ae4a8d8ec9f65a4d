"""Benchmark of `duplexeval eot`: the full default policy grid (101 thresholds x 9 action delays x 6 timeouts) on
100,000 spans, and detector inference speed (silero, smart-turn) in predictions per second.

    PYTHONPATH=src python benchmarks/eot_sweep.py [--spans 100000] [--skip-detectors]

The spans are synthetic (a fixed seed): turns of 1-4 silences on eot-bench's 0.1 s grid, the last one the true
end, with p_eot rising faster in EoT spans. Timing is wall clock on this machine, one process.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic_predictions(n_spans: int, seed: int = 0):
    from duplexeval.eot.predictions import Predictions

    rng = np.random.default_rng(seed)
    spans_per_turn = rng.integers(1, 5, size=n_spans)  # more than enough turns
    turn_of_span = np.repeat(np.arange(n_spans), spans_per_turn)[:n_spans]
    first = np.r_[True, turn_of_span[1:] != turn_of_span[:-1]]
    last = np.r_[turn_of_span[1:] != turn_of_span[:-1], True]
    span_index = np.arange(n_spans) - np.maximum.accumulate(np.where(first, np.arange(n_spans), 0))
    dur = np.where(last, 3.5, np.round(rng.choice([0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.2, 3.5, 6.0], size=n_spans), 1))
    n_rows = (np.floor(dur / 0.1 + 1e-6).astype(int) + 1)
    span_of_row = np.repeat(np.arange(n_spans), n_rows)
    k = np.arange(span_of_row.size) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows)
    sd = np.round(k * 0.1, 6)
    slope = np.where(last, rng.uniform(0.5, 2.0, n_spans), rng.uniform(0.0, 0.8, n_spans))[span_of_row]
    p = np.clip(rng.normal(0.1, 0.1, sd.size) + slope * sd, 0, 1)
    ids = np.asarray([f"t{t:06d}" for t in turn_of_span], dtype=object)[span_of_row]
    labels = np.where(last, "eot", "hold").astype(object)[span_of_row]
    start = np.arange(n_spans) * 10.0
    return Predictions(ids, np.full(sd.size, "en", dtype=object), span_index[span_of_row].astype(np.int64),
                       np.round(start[span_of_row] + sd, 6), sd, p, labels, "synthetic")  # fmt: skip


def bench_sweep(n_spans: int) -> None:
    from duplexeval.eot.predictions import read_predictions, write_predictions
    from duplexeval.eot.sweep_engine import SweepConfig, build_spans, run_sweep
    from duplexeval.eot.sweep_report import build_summary, compute

    preds = synthetic_predictions(n_spans)
    cfg = SweepConfig()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.parquet"
        write_predictions(path, preds, {"kind": "benchmark"})
        t0 = time.perf_counter()
        loaded = read_predictions(path)
        t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    spans = build_spans(loaded, cfg)
    t_spans = time.perf_counter() - t0
    t0 = time.perf_counter()
    sw = run_sweep(spans, cfg)
    t_sweep = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = compute(loaded, cfg)
    summary = build_summary(res, loaded, "benchmark", bootstrap=True, selection_aware=False)
    t_summary = time.perf_counter() - t0
    print(f"sweep: {len(loaded):,} prediction rows, {spans.n_spans:,} spans kept "
          f"({spans.filtered['hold_too_short']:,} short and {spans.filtered['hold_too_long']:,} long holds filtered) "
          f"in {spans.n_turns:,} turns; {int(sw.is_model.sum()):,} policies")
    boot = ("skipped: " + summary["intervals"]["skipped"] if "skipped" in summary["intervals"]
            else "turn bootstrap included")
    print(f"  read parquet {t_read:.2f} s | spans + crossings {t_spans:.2f} s | sweep {t_sweep:.2f} s | "
          f"whole summary (spans, sweep, operating points, frontier, AUC/AP, spec 003; intervals {boot}) "
          f"{t_summary:.2f} s")
    op = summary["operating_points"]["5pct"]
    if op is not None:
        print(f"  5% operating point: threshold {op['threshold']}, delay {op['action_delay']}, timeout "
              f"{op['timeout']}, latency {op['mean_latency'] * 1000:.0f} ms")


def bench_selection(n_turns: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root: tests.helpers
    from duplexeval.eot import intervals
    from duplexeval.eot.predictions import Predictions
    from duplexeval.eot.sweep_engine import CUTOFF_BUDGETS, LATENCY_BUDGETS, SweepConfig
    from duplexeval.eot.sweep_report import compute
    from tests.helpers.eot import random_rows

    res = compute(Predictions.from_rows(random_rows(0, n_turns)), SweepConfig())
    t0 = time.perf_counter()
    intervals.selection_aware(res.spans, res.cfg, res.sweep, CUTOFF_BUDGETS, LATENCY_BUDGETS, res.points)
    print(f"selection-aware interval (2000 resamples x 5,454 policies x 5 budgets) on {n_turns} turns: "
          f"{time.perf_counter() - t0:.2f} s")


def bench_detectors() -> None:
    from duplexeval.eot.demo import demo_spans
    from duplexeval.eot.detectors import smart_turn_available
    from duplexeval.eot.predict_stage import PredictSettings, TurnTask, predict_turn_task

    spans = demo_spans()
    turns = spans.turns[:4]
    for name in ("silero", "smart-turn"):
        if name == "smart-turn" and (why := smart_turn_available()) is not None:
            print(f"{name}: skipped ({why})")
            continue
        predict_turn_task(TurnTask(name, "{}", turns[0], PredictSettings()))  # load the model once
        t0 = time.perf_counter()
        n = sum(len(predict_turn_task(TurnTask(name, "{}", t, PredictSettings()))) for t in turns)
        el = time.perf_counter() - t0
        audio = sum(t.duration_s for t in turns)
        print(f"{name}: {n} predictions on {len(turns)} espeak-ng turns ({audio:.1f} s of audio) in {el:.2f} s = "
              f"{n / el:.1f} predictions/s (1 process, 1 thread)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=100_000)
    ap.add_argument("--bootstrap-spans", type=int, default=10_000,
                    help="a second run small enough for the turn bootstrap")
    ap.add_argument("--selection-turns", type=int, default=400)
    ap.add_argument("--skip-detectors", action="store_true")
    a = ap.parse_args()
    if a.spans < 2 or math.isnan(a.spans):
        raise SystemExit("--spans must be at least 2")
    bench_sweep(a.spans)
    bench_sweep(a.bootstrap_spans)
    bench_selection(a.selection_turns)
    if not a.skip_detectors:
        bench_detectors()


if __name__ == "__main__":
    main()
