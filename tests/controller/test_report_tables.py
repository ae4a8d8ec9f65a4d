"""The controller's printed tables: aligned comparison columns, what each cell is made of, the primary mode's `*`
explained, and the shared no-data / not-reached symbols."""

from __future__ import annotations

from pathlib import Path


def _metrics() -> dict:
    return {
        "state.macro_f1": {"a": 0.6057, "b": 0.6102, "diff_b_minus_a": 0.004436, "ci95": [0.0001187, 0.01044]},
        "endpoint.pause_false_endpoints_per_hour": {"a": 379.6, "b": 379.6, "diff_b_minus_a": 0.0, "ci95": [0.0, 0.0]},
        "yield.latency_median_ms": {"a": None, "b": 12.5, "diff_b_minus_a": None, "ci95": None},
        "backchannel.latency_median_ms": {"a": None, "b": None, "diff_b_minus_a": None, "ci95": None},
    }


def test_comparison_table_is_aligned() -> None:
    import re

    from duplexeval.controller.metrics.compare import format_comparison

    text = format_comparison(_metrics())
    lines = [x for x in text.splitlines() if x.strip() and not set(x.strip()) <= {"─"}]
    assert lines[0].split() == ["metric", "A", "B", "B", "-", "A", "95%", "interval"]
    body = lines[1:]
    assert len(body) == 3  # a metric with no data on either side is left out
    assert "n/a" not in text and body[2].split()[1] == "-"

    def cells(line: str) -> list[tuple[int, int]]:
        spans = [m.span() for m in re.finditer(r"\S+", line)]
        if line is lines[0]:  # "B - A" and "95% CI" are one header cell each
            spans = [spans[0], spans[1], spans[2], (spans[3][0], spans[5][1]), (spans[6][0], spans[7][1])]
        elif len(spans) > 5:  # "[lo, hi]" is one cell
            spans = [*spans[:4], (spans[4][0], spans[-1][1])]
        return spans

    rows = [cells(x) for x in lines]
    for col in (1, 2, 3):  # numbers: right-aligned, same end on every row and the header
        assert len({r[col][1] for r in rows}) == 1, (col, text)
    assert len({r[4][0] for r in rows}) == 1, text  # the interval column starts at one offset


def test_comparison_cells_say_what_each_value_is_made_of_and_round_as_the_other_families() -> None:
    from duplexeval.controller.metrics.compare import format_comparison

    m = _metrics()
    m["endpoint.early_cutin_rate"] = {"a": 0.5, "b": 0.25, "diff_b_minus_a": -0.25, "ci95": [-0.5, 0.0],
                                      "made_of_a": {"count": 2, "n": 4}, "made_of_b": {"count": 1, "n": 4}}
    m["endpoint.pause_false_endpoints_per_hour"] |= {"made_of_a": {"events": 2, "hours": 0.005269},
                                                      "made_of_b": {"events": 2, "hours": 0.005269}}
    text = format_comparison(m)
    assert "+0.004   [+0.000, +0.010]" in text  # not +0.004436 [+0.0001187, +0.01044]
    assert "0.500 (2/4)" in text and "0.250 (1/4)" in text and "-0.250   [-0.500, +0.000]" in text
    assert "379.60 (2 in 0.005269 h)" in text and "12.5" in text


def test_controller_report_explains_star_and_uses_the_shared_symbols(tmp_path: Path) -> None:
    from duplexeval.controller.metrics.report import format_report

    lat = {"n": 0, "mean_ms": None, "median_ms": None, "p90_ms": None}
    share = {"value": None, "count": 0, "n": 0, "interval": None}
    ep = {"latency": lat, "early_cutin": share, "no_endpoint": share, "miss_within_deadline": {**share, "censored": 0},
          "head": share, "fallback": share, "pause_false_endpoints": {**share, "per_hour": None}}
    rep = {"data": {"clips": 1, "groups": 1},
           "frame_metrics": {"endpoint": {"scored": 3, "positives": 0, "roc_auc": None, "average_precision": None}},
           "event_metrics": {"endpoint": {"primary_mode": "head_only", "head_only": ep, "fallback_on": ep},
                             "dense_scan": {"user_pauses": 0},
                             "yield": {"detection": share, "latency": {**lat, "n": 2},
                                       "false_events": {"per_hour": None}}}}
    text = format_report(rep)
    assert "n/a" not in text
    assert " *endpoint[head_only]" in text
    assert "* = the primary endpoint mode (head_only" in text
    assert "ROC-AUC -  AP -" in text
    assert "median latency n/r" in text  # latencies exist but the median is not reached
    assert "n/r = not reached, - = no data" in text
