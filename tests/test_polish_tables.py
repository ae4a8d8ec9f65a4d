"""Issue 10 "polish a user notices": one symbol for not reached / no data, tables that do not wrap when
piped, the official rating that needs --judge, aligned controller comparison tables and the `*` explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_unified_score import SEGS, UI, _hand_tree

from duplexeval.jsonio import sha256_file, write_json


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def _unjudged_summary(root: Path) -> None:
    from duplexeval.fdb.official.metric import NOT_JUDGED

    write_json(root / "summary.json", {
        "kind": "duplexeval.fdb.summary", "schema_version": 1,
        "manifest_sha256": sha256_file(root / "manifest.json"), "asr_sha256": sha256_file(root / "asr.json"),
        "rules": {},
        "subsets": {UI: {"task": "user_interruption", "n_evaluated": 3, "counts": {},
                         "metrics": {"Average rating": {"value": None, "std": None, "n": 0, "note": NOT_JUDGED}},
                         "judge": {"label": "not judged"}, "samples": []}},
    })


def test_fdb_score_report_symbols_width_and_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval import vad_batched

    monkeypatch.setattr(vad_batched, "segment_files", lambda paths, jobs=None, limits=None: SEGS(paths))
    root = _hand_tree(tmp_path / "tree")
    rc, _out, err = run_cli(["fdb", "score", str(root), "-q"], capsys)
    assert rc == 0, err
    _unjudged_summary(root)
    rc, out, err = run_cli(["fdb", "score", str(root)], capsys)
    assert rc == 0, err
    assert "—" not in out  # one no-data symbol: stats.NO_DATA
    assert "n/r" in out  # turn taking p90: the sample that never responds
    # piped (not a TTY): the long counts line is not wrapped at 80 columns
    counts = [line for line in out.splitlines() if "selected 4 of 216 declared" in line]
    assert counts and "reasons: late_input 1" in counts[0] and len(counts[0]) > 80
    rating = [line for line in out.splitlines() if line.lstrip().startswith("Average rating")]
    assert rating and "needs --judge" in rating[0]
    # plain text lines are not wrapped either (rich soft wrap when piped)
    assert any(x.startswith("n/r = not reached") and x.rstrip().endswith("then yes.") for x in out.splitlines())
    assert err.startswith("score: done in ") and "s of audio" in err and "x real time" in err


def test_evaluate_summary_line_says_needs_judge() -> None:
    from duplexeval.fdb.evaluate_cli import format_summary
    from duplexeval.fdb.official.metric import NOT_JUDGED

    summary = {"rules": {"name": "v1.0", "backchannel_rules": "2025-06"}, "subsets": {UI: {
        "n_evaluated": 3, "counts": {"selected": 3, "declared": 200}, "judge": {"label": "not judged"},
        "metrics": {"Average rating": {"value": None, "std": None, "n": 0, "note": NOT_JUDGED},
                    "Average take turn": {"value": 1.0, "std": None, "n": 3, "note": None}}}}}
    lines = format_summary(summary)
    assert any("Average rating: needs --judge openai" in x for x in lines)
    assert any("Average take turn: 1.0000" in x for x in lines)


def test_evaluate_first_line_names_the_rules_of_the_evaluated_tasks_only() -> None:
    """The backchannel loop only when a backchannel subset was evaluated; v1.5's rules say what they reproduce."""
    from duplexeval.fdb.evaluate_cli import format_summary
    from duplexeval.fdb.tasks.overlap.official import REPRODUCES

    def first(tasks: dict[str, str], name: str = "fdb-v1.0-official", **rules: object) -> str:
        subsets = {s: {"task": t, "n_evaluated": 0, "counts": {"selected": 0, "declared": 1}, "metrics": {}}
                   for s, t in tasks.items()}
        return format_summary({"rules": {"name": name, "backchannel_rules": "2025-06", **rules}, "subsets": subsets})[0]

    v10 = {UI: "user_interruption", "icc_backchannel": "backchannel"}
    assert first(v10) == "official rules: fdb-v1.0-official (backchannel loop 2025-06)"
    assert first({UI: "user_interruption"}) == "official rules: fdb-v1.0-official"
    v15 = first({"user_interruption": "overlap"}, "fdb-v1.5-official", overlap={"reproduces": REPRODUCES})
    assert v15 == f"official rules: fdb-v1.5-official (reproduces {REPRODUCES})" and "backchannel" not in v15


def test_table_console_is_wide_when_piped(tmp_path: Path) -> None:
    from duplexeval.progress import PIPED_WIDTH, table_console

    with open(tmp_path / "log.txt", "w") as f:
        assert table_console(file=f).width == PIPED_WIDTH


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
    rep = {"data": {"clips": 1, "groups": 1}, "frame_metrics": {"endpoint": {"scored": 3, "positives": 0, "roc_auc": None,
                                                                             "average_precision": None}},
           "event_metrics": {"endpoint": {"primary_mode": "head_only", "head_only": ep, "fallback_on": ep},
                             "dense_scan": {"user_pauses": 0},
                             "yield": {"detection": share, "latency": {**lat, "n": 2}, "false_events": {"per_hour": None}}}}
    text = format_report(rep)
    assert "n/a" not in text
    assert " *endpoint[head_only]" in text
    assert "* = the primary endpoint mode (head_only" in text
    assert "ROC-AUC -  AP -" in text
    assert "median latency n/r" in text  # latencies exist but the median is not reached
    assert "n/r = not reached, - = no data" in text


def test_controller_demo_out_option_and_deprecated_positional(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--conversations", "1", "--exchanges", "1"]
    rc, out, err = run_cli(["controller", "demo", "--out", str(tmp_path / "a"), *args], capsys)
    assert rc == 0, err
    assert (tmp_path / "a" / "compare.json").is_file() and "deprecated" not in err
    assert "* = the primary endpoint mode" in out and "B - A" in out
    rc, out, err = run_cli(["controller", "demo", str(tmp_path / "b"), *args], capsys)
    assert rc == 0 and "a positional OUT is deprecated; use --out DIR" in err
    assert json.loads((tmp_path / "b" / "compare.json").read_text()) == json.loads((tmp_path / "a" / "compare.json").read_text())
    rc, _out, err = run_cli(["controller", "demo", str(tmp_path / "c"), "--out", str(tmp_path / "d"), *args], capsys)
    assert rc == 2 and "unexpected extra argument" in err


def test_controller_demo_out_keeps_the_output_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a-file"
    f.write_text("x")
    for argv in (["--out", str(f)], [str(f)]):
        rc, _out, err = run_cli(["controller", "demo", *argv, "--conversations", "1"], capsys)
        lines = [line for line in err.splitlines() if "is deprecated" not in line]  # the positional's note
        assert rc == 2 and len(lines) == 1 and "a-file" in err, (argv, err)


def test_controller_label_takes_out_option_as_well_as_the_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.controller.labels.conversations import write_conversations

    manifest = write_conversations(tmp_path / "conv", 1, seed=0, exchanges=1)
    rc, out, err = run_cli(["controller", "label", "--out", str(tmp_path / "a"), "--conversations", str(manifest)], capsys)
    assert rc == 0 and "wrote" in out, err
    rc, out, err = run_cli(["controller", "label", str(tmp_path / "b"), "--conversations", str(manifest)], capsys)
    assert rc == 0 and "a positional OUT is deprecated; use --out DIR" in err
    assert (tmp_path / "a" / "clips.jsonl").read_bytes() == (tmp_path / "b" / "clips.jsonl").read_bytes()
    rc, _out, err = run_cli(["controller", "label", "--conversations", str(manifest)], capsys)
    assert rc == 2 and "--out" in err and err.count("\n") == 1
