"""`duplexeval demo`: the table cells, stale-result guard, and one small end-to-end run with real stages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.demo import comparison_rows, format_metric, run_demo, tree_name
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_file, write_json
from tests.helpers.systems import Dataset, pause, turn_taking


def test_cells_show_value_interval_and_count() -> None:
    share = {"value": 0.25, "count": 1, "n": 4, "interval": [0.0456, 0.6994], "selected_bounds": [0.25, 0.5]}
    assert format_metric(share) == "0.25 [0.05, 0.70] (1/4)"
    assert format_metric({"value": None, "count": 0, "n": 0, "interval": None, "selected_bounds": None}) == "- (0/0)"
    lat = {"n": 4, "median": 0.7125, "median_interval": [0.58, 0.76], "p90": None}
    assert format_metric(lat) == "0.71 s [0.58, 0.76] (4)"
    assert format_metric({"n": 4, "median": None, "median_interval": None, "p90": None}) == "n/r (4)"
    # a median interval whose upper end is not reached (a never-responded sample) says so
    assert (format_metric({"n": 4, "median": 0.7, "median_interval": [0.5, None], "p90": None})
            == "0.70 s [0.50, n/r] (4)")
    # the official rating without a judge says what it needs instead of a bare dash
    from duplexeval.fdb.official.metric import NOT_JUDGED

    assert format_metric({"value": None, "std": None, "n": 0, "note": NOT_JUDGED}) == "needs --judge (0)"
    assert format_metric({"value": 0.5, "std": 0.1, "n": 3, "note": None}) == "0.50 ± 0.10 (3)"
    assert format_metric(None) == "-"


def test_tree_names_and_bad_system_lists(tmp_path: Path) -> None:
    assert tree_name("turn-based") == "turn-based"
    assert tree_name("turn-based:silence_ms=700").startswith("turn-based-") and len(
        tree_name("turn-based:silence_ms=700")) == 19
    with pytest.raises(InputError, match="listed twice"):
        run_demo(tmp_path, ["silent", "silent"], say=lambda s: None)
    with pytest.raises(InputError, match="unknown system 'nope'"):
        run_demo(tmp_path, ["silent", "nope"], say=lambda s: None)


def _fake_tree(root: Path, value: float) -> Path:
    root.mkdir(parents=True)
    (root / "manifest.json").write_text("{}")
    (root / "asr.json").write_text("{}")
    m = {"value": value, "count": int(value * 4), "n": 4, "interval": [0.1, 0.9], "selected_bounds": [0.0, 1.0]}
    write_json(root / "unified.json", {
        "manifest_sha256": sha256_file(root / "manifest.json"), "asr_sha256": sha256_file(root / "asr.json"),
        "subsets": {"candor_turn_taking": {"metrics": {"early_start_rate": m}}}})
    return root


def test_rows_put_systems_side_by_side_and_ignore_stale_results(tmp_path: Path) -> None:
    a, b = _fake_tree(tmp_path / "a", 0.25), _fake_tree(tmp_path / "b", 0.75)
    rows = comparison_rows([a, b])
    assert rows[0] == ("turn-taking", "early_start_rate", ["0.25 [0.10, 0.90] (1/4)", "0.75 [0.10, 0.90] (3/4)"])
    assert [r[:2] for r in rows[1:]] == [("turn-taking", m) for m in
                                         ("response_rate_2s", "no_response_rate", "response_latency_s (median)")]
    assert all(r[2] == ["-", "-"] for r in rows[1:])  # metrics a tree lacks are shown as missing, not dropped
    (b / "asr.json").write_text('{"changed": 1}')  # transcribed again after scoring: b's numbers are stale
    assert comparison_rows([a, b])[0][2] == ["0.25 [0.10, 0.90] (1/4)", "-"]


def test_demo_end_to_end_on_a_tiny_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = Dataset("tiny", tmp_path / "ds")
    pause(ds, "1", "I went to the shop", "and bought some bread", gap_s=1.2)
    turn_taking(ds, "1", "What is the capital of France?", tail_s=4.0)
    lines: list[str] = []
    res = run_demo(tmp_path / "out", ["silent", "turn-based:vad=energy,text=Paris is the capital."],
                   progress=False, say=lines.append, dataset=ds)
    assert [r.stages for r in res.runs] == [
        {"export": "2 run, 0 reused", "asr": "done", "evaluate": "done", "score": "done"}] * 2
    rows = {(s, m): cells for s, m, cells in comparison_rows([r.tree for r in res.runs])}
    assert rows[("turn-taking", "no_response_rate")][0].startswith("1.00 ")
    assert rows[("turn-taking", "response_rate_2s")][1].startswith("1.00 ")
    assert rows[("pause (synthetic)", "pause_intrusion_rate")] == ["0.00 [0.00, 0.79] (0/1)", "1.00 [0.21, 1.00] (1/1)"]
    assert any(m.startswith("official: ") for _, m in rows)
    # a second run reuses everything and prints the same table
    again = run_demo(tmp_path / "out", ["silent", "turn-based:vad=energy,text=Paris is the capital."],
                     progress=False, say=lines.append, dataset=ds)
    assert [r.stages["export"] for r in again.runs] == ["0 run, 2 reused"] * 2
    assert [r.stages["asr"] for r in again.runs] == ["reused"] * 2
    # a tree of another run under the same name stops the demo (docs/cli.md section 4); --force redoes it
    from duplexeval.demo import DemoRefusal
    from duplexeval.fdb.export_stage import export

    export("turn-based:vad=energy", ds, tmp_path / "out" / "silent", force=True, progress=False)
    with pytest.raises(DemoRefusal, match="--force"):
        run_demo(tmp_path / "out", ["silent"], progress=False, say=lines.append, dataset=ds)
    redo = run_demo(tmp_path / "out", ["silent"], progress=False, say=lines.append, dataset=ds, force=True)
    assert redo.runs[0].stages["export"] == "2 run, 0 reused"
    from rich.console import Console

    from duplexeval.demo import print_report

    console = Console(width=200, record=True)
    print_report(again, console)
    text = console.export_text()
    assert "pause_intrusion_rate" in text and str(again.runs[1].tree) in text
    assert again.report == tmp_path / "out" / "report.html" and f"report: {again.report}" in text
    page = again.report.read_text(encoding="utf-8")
    assert 'class="forest"' in page and "candor_turn_taking/1" in page and "Paired comparison" in page
    assert "difference from turn-based-" in page  # the baseline is the turn-based system, not the silent one
    assert 'id="au-in-candor_turn_taking-1"' in page  # the demo's dataset gives the user's side
    assert json.loads((again.runs[0].tree / "manifest.json").read_text())["system"]["name"] == "silent"


def test_cli_demo_rejects_a_bad_system_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as err:
        main(["demo", "--out", str(tmp_path / "d"), "--systems", "silent", "--systems", "turn-based:nope=1", "-q"])
    assert err.value.code == 2
    msg = capsys.readouterr().err.strip()
    assert msg.startswith("duplexeval: error: --system 'turn-based:nope=1': turn-based has no parameter 'nope'")
    assert "\n" not in msg and not (tmp_path / "d").exists()
