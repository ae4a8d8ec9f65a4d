"""Spec 004's metrics, hand-computed on small item sets."""

from __future__ import annotations

import math

import pytest

from duplexeval.dialogue.metrics import (
    MiUItem,
    UiMItem,
    classify_miu,
    miu_metrics,
    precision_interval,
    uim_metrics,
)

WILSON_2_OF_5 = (0.1176, 0.7693)  # 95% Wilson interval of 2/5, from the formula by hand


def five():
    return [
        MiUItem("mid", timing=1, content=0),
        MiUItem("mid", timing=0, content=1),
        MiUItem("end", fted_us=500_000),
        MiUItem("miss"),
        MiUItem("end", fted_us=700_000),
    ]


def test_miu_shares_pir_prr_precision_recall():
    m = miu_metrics(five()).to_json()
    c = m["counts"]
    assert (c["n"], c["mid"], c["end"], c["miss"], c["errors"]) == (5, 2, 2, 1, 0)
    assert m["ir_mid"]["value"] == 0.4 and m["ir_end"]["value"] == 0.4 and m["MIR"]["value"] == 0.2
    assert m["ir_mid"]["value"] + m["ir_end"]["value"] + m["MIR"]["value"] == pytest.approx(1.0)
    assert m["ir_mid"]["interval"] == pytest.approx(WILSON_2_OF_5, abs=1e-4)
    assert (m["PIR_mid"]["value"], m["PIR_mid"]["count"], m["PIR_mid"]["n"]) == (0.5, 1, 2)
    assert (m["PRR_mid"]["value"], m["PRR_mid"]["n"]) == (0.5, 2)
    assert m["precision"]["value"] == pytest.approx(0.5 * 0.4 + 0.4)  # PIR_mid * ir_mid + ir_end = 0.6
    assert m["recall"]["value"] == pytest.approx(1 - 0.2)
    assert (m["recall"]["count"], m["recall"]["n"]) == (4, 5)
    lo, hi = m["precision"]["interval"]
    assert 0 <= lo <= 0.6 <= hi <= 1
    assert "not the standard" in m["precision"]["definition"] and "not the standard" in m["recall"]["definition"]


def test_fted_median_p90_mean_with_a_non_response():
    f = miu_metrics(five()).to_json()["FTED_s"]
    # over the 3 non-mid cases: 0.5, 0.7, never (+inf); median = 2nd smallest, p90 = 3rd = not reached
    assert f["n"] == 3 and f["responded"] == 2 and f["excluded_mid"] == 2
    assert f["median"] == 0.7 and f["median_reached"] is True
    assert f["p90"] is None and f["p90_reached"] is False
    assert f["mean"] == pytest.approx(0.6)
    lo, hi = f["median_interval"]
    assert lo == 0.5 and hi is None  # some resamples land on the non-response: not reached


def test_fted_quantile_rule_ranks():
    items = [MiUItem("end", fted_us=v * 100_000) for v in range(1, 11)]  # 0.1 .. 1.0 s
    f = miu_metrics(items).to_json()["FTED_s"]
    assert f["median"] == pytest.approx(0.5) and f["p90"] == pytest.approx(0.9)  # ceil(5), ceil(9): no interpolation
    assert f["mean"] == pytest.approx(0.55)


def test_no_mid_interruptions_pir_is_null_not_zero():
    m = miu_metrics([MiUItem("end", fted_us=800_000)] * 4).to_json()
    assert m["PIR_mid"]["value"] is None and m["PIR_mid"]["n"] == 0 and m["PIR_mid"]["interval"] is None
    assert m["PRR_mid"]["value"] is None
    assert m["precision"]["value"] == 1.0 and m["precision"]["interval"] == [1.0, 1.0]  # = ir_end
    assert m["ir_end"]["value"] == 1.0 and m["ir_end"]["interval"][1] == 1.0
    assert m["MIR"]["value"] == 0.0 and m["MIR"]["interval"][0] == 0.0
    assert m["FTED_s"]["median"] == 0.8 and m["FTED_s"]["median_interval"] == [0.8, 0.8]


def test_judge_errors_are_unknown_not_dropped():
    items = [MiUItem("mid", 1, 1), MiUItem("mid", None, None), MiUItem("end", fted_us=1), MiUItem("error")]
    m = miu_metrics(items).to_json()
    assert m["counts"]["selected"] == 4 and m["counts"]["errors"] == 1 and m["counts"]["n"] == 3
    assert m["ir_mid"]["value"] == pytest.approx(2 / 3)
    assert m["ir_mid"]["selected_bounds"] == pytest.approx([2 / 4, 3 / 4])  # the run error could be anything
    pir = m["PIR_mid"]
    assert (pir["count"], pir["n"], pir["value"]) == (1, 1, 1.0)
    assert pir["selected_bounds"] == [0.5, 1.0]  # the unjudged mid case could go either way
    assert m["precision"]["value"] == pytest.approx(1.0 * 2 / 3 + 1 / 3)


def test_all_mid_unjudged_precision_is_null():
    m = miu_metrics([MiUItem("mid"), MiUItem("end", fted_us=1)]).to_json()
    assert m["precision"]["value"] is None and m["precision"]["interval"] is None


def test_precision_interval_is_deterministic_and_brackets():
    outcomes = ["mid"] * 30 + ["end"] * 50 + ["miss"] * 20
    timing = [1] * 10 + [0] * 20 + [None] * 70
    a, b = precision_interval(outcomes, timing), precision_interval(outcomes, timing)
    assert a == b
    value = (10 / 30) * 0.3 + 0.5
    assert a[0] < value < a[1]
    assert precision_interval([], []) is None


def test_classify_miu():
    assert classify_miu([], 1000) == "miss"
    assert classify_miu([1000], 1000) == "end"  # at the end of speech is not mid
    assert classify_miu([2000, 999], 1000) == "mid"


def test_uim_prr_per_reason_and_unweighted_average():
    items = (
        [UiMItem("noise", "continued", 1), UiMItem("noise", "yielded", 0)]
        + [UiMItem("denial", "yielded", 1)]
        + [UiMItem("affirmation", "continued", 0)]
        + [UiMItem("shift", "yielded", 1)] * 2
    )
    u = uim_metrics(items).to_json()
    assert [u[f"PRR_{r}"]["value"] for r in ("noise", "denial", "affirmation", "shift")] == [0.5, 1.0, 0.0, 1.0]
    assert u["PRRavg"]["value"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)  # unweighted, not 4/6
    lo, hi = u["PRRavg"]["interval"]
    assert lo <= 0.625 <= hi
    assert u["counts"]["noise"] == {"selected": 2, "errors": 0, "judged": 2, "yielded": 1, "continued": 1}


def test_uim_missing_reason_makes_prravg_null():
    u = uim_metrics([UiMItem("noise", "continued", 1)]).to_json()
    assert u["PRR_denial"]["value"] is None and u["PRRavg"]["value"] is None and u["PRRavg"]["interval"] is None


def test_uim_judge_errors_in_bounds():
    items = ([UiMItem(r, "yielded", 1) for r in ("noise", "denial", "affirmation", "shift")]
             + [UiMItem("shift", "yielded", None)])
    u = uim_metrics(items).to_json()
    assert u["PRR_shift"]["n"] == 1 and u["PRR_shift"]["selected_bounds"] == [0.5, 1.0]
    assert u["PRRavg"]["value"] == 1.0


def test_no_nan_or_inf_in_json():
    import json

    m = miu_metrics(five()).to_json()
    text = json.dumps(m, allow_nan=False)  # raises on NaN/inf
    assert "Infinity" not in text and not any(isinstance(v, float) and math.isnan(v) for v in m["FTED_s"].values()
                                              if isinstance(v, float))
