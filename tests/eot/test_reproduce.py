"""Acceptance: our sweep on eot-bench's own committed predictions gives eot-bench's own committed summaries.

eot-bench commits ``output/<dataset>/<lang>/<detector>/predictions.parquet`` with ``metrics/summary.json`` beside it.
Those parquet files are binary and not reachable from this offline machine, so the test runs only when
``DUPLEXEVAL_EOTBENCH_OUTPUT`` points at a checkout's ``output/`` folder (``git clone
https://github.com/livekit/eot-bench``); every summary found there is compared key by key.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

ROOT = os.environ.get("DUPLEXEVAL_EOTBENCH_OUTPUT")
CASES = sorted(Path(ROOT).glob("**/predictions.parquet")) if ROOT else []


@pytest.mark.skipif(not CASES, reason="set DUPLEXEVAL_EOTBENCH_OUTPUT to an eot-bench checkout's output/ folder "
                                      "(its predictions are binary parquet, not reachable offline here)")  # fmt: skip
@pytest.mark.parametrize("pred", CASES, ids=[str(p.parent.relative_to(ROOT)) for p in CASES] if ROOT else [])
def test_summary_equals_eotbench(pred):
    from duplexeval.eot.predictions import read_predictions
    from duplexeval.eot.sweep_engine import SweepConfig
    from duplexeval.eot.sweep_report import build_summary, compute

    ref_path = pred.parent / "metrics" / "summary.json"
    if not ref_path.is_file():
        pytest.skip(f"no metrics/summary.json beside {pred}")
    ref = json.loads(ref_path.read_text())
    cfg = SweepConfig(action_delays=tuple(ref["sweep_action_delays"]), timeouts=tuple(ref["sweep_timeouts"]),
                      min_hold_s=ref["min_hold_span_duration"], max_hold_s=ref["max_hold_span_duration"],
                      score_mode=ref["score_mode"], score_point_s=ref["score_point_s"])  # fmt: skip
    preds = read_predictions(pred)
    ours = build_summary(compute(preds, cfg), preds, "x", bootstrap=False)
    for k in ("n_spans", "n_hold_spans", "n_eot_spans", "n_scored_spans", "n_missing_scores", "sweep_delay_values"):
        assert ours[k] == ref[k], k
    for k in ("auc", "ap", "mean_frontier_latency_0_10"):
        if ref[k] is None or (isinstance(ref[k], float) and math.isnan(ref[k])):
            assert ours[k] is None
        else:
            assert ours[k] == pytest.approx(ref[k], abs=1e-9), k
    for b, rp in ref["operating_points"].items():
        op = ours["operating_points"][b]
        if rp is None:
            assert op is None, b
            continue
        for k in ("threshold", "action_delay", "timeout", "cutoff_rate", "mean_latency", "detect_rate", "timeout_rate"):
            assert op[k] == pytest.approx(rp[k], abs=1e-9), (b, k)
