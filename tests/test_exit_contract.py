"""The exit contract of docs/cli.md section 6: 0 / 1 / 2, --min-eligible, --fail-under / --fail-over, and a
last stderr line `STAGE: exit CODE: REASON` that names the rule which decided."""

from __future__ import annotations

import math
import socket
from pathlib import Path

import pytest

from duplexeval.errors import InputError
from duplexeval.exits import Gate, Status, check_gates, combine, eligibility, metric_values, parse_gates
from tests.helpers.cli import run_cli as run
from tests.helpers.fdb import FixtureSample, turn_ann, write_tree
from tests.helpers.systems import Dataset, small_dataset

TT = "candor_turn_taking"


def status_line(err: str) -> str:
    return err.strip().splitlines()[-1]


# -- the rules, as pure functions ---------------------------------------------------------------------------
def test_default_rule_needs_one_eligible_sample_in_every_selected_subset() -> None:
    assert eligibility({"a": (1, 14), "b": (3, 3)}, None).code == 0
    dead = eligibility({"a": (0, 14), "b": (3, 3)}, None)
    assert dead == Status(1, "a: 0/14 eligible, below --min-eligible (default: at least 1 per subset)")
    assert eligibility({"a": (0, 0)}, None).code == 1  # nothing selected is nothing measured
    assert eligibility({"a": (0, 14)}, 0.0).code == 0
    assert eligibility({"a": (9, 10)}, 0.9).code == 0 and eligibility({"a": (8, 10)}, 0.9).code == 1
    assert eligibility({"a": (10, 10)}, 1.0).code == 0 and eligibility({"a": (9, 10)}, 1.0).code == 1


def test_gates_hold_fail_and_name_the_metric() -> None:
    values = {"s.rate": 0.62, "s.latency": 0.9, "s.never": math.inf, "s.empty": None}
    under, over = parse_gates(["s.rate=0.8"], ["s.latency=1.2"])
    assert under == Gate("--fail-under", "s.rate", 0.8) and over == Gate("--fail-over", "s.latency", 1.2)
    assert check_gates([under, over], values) == Status(1, "--fail-under s.rate=0.8: s.rate is 0.62, below 0.8")
    assert check_gates(parse_gates(["s.rate=0.5"], ["s.latency=1"]), values) == Status(0, "2 gates held")
    assert check_gates(parse_gates([], ["s.never=5"]), values).reason == ("--fail-over s.never=5: s.never is not "
                                                                          "reached, over 5")
    assert check_gates(parse_gates(["s.empty=0"], []), values).reason == ("--fail-under s.empty=0: s.empty is null "
                                                                          "(nothing to measure)")
    with pytest.raises(InputError, match=r"^--fail-under nope: no such metric; available: s.empty, s.latency, "
                                         r"s.never, s.rate$"):
        check_gates(parse_gates(["nope=1"], []), values)
    for bad in ("s.rate", "s.rate=high", "s.rate=nan", "=1"):
        with pytest.raises(InputError, match="expected METRIC=NUMBER"):
            parse_gates([bad], [])


def test_metric_values_read_every_shape_of_number() -> None:
    doc = {"kind": "x", "signature": {"compact": "s"}, "inputs": {"a": "h"},
           "t": {"share": {"value": 0.5, "count": 1, "n": 2}, "lat": {"median": 0.7, "p90": 2.0, "median_reached": True,
                                                                     "p90_reached": False},
                 "d": {"a": 0.1, "b": 0.2, "diff": 0.1}, "c": {"diff_b_minus_a": -0.2}, "n": 3, "flag": True}}
    assert metric_values(doc) == {"t.share": 0.5, "t.lat": 0.7, "t.lat.p90": math.inf, "t.d": 0.1, "t.c": -0.2,
                                  "t.n": 3.0}


def test_combine_reports_every_failing_rule() -> None:
    assert combine(Status(0, "a"), Status(1, "b"), Status(1, "c")) == Status(1, "b; c")
    assert combine(Status(0, "a"), Status(0, "")) == Status(0, "a")


# -- the stages ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return small_dataset(tmp_path_factory.mktemp("dataset"))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens here once the socket is closed


def test_an_export_against_a_dead_agent_exits_1(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.export_stage as exp

    monkeypatch.setattr(exp, "resolve_dataset", lambda d: ds)
    port = _closed_port()
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    argv = ["fdb", "export", "--system", f"openai-realtime:url={url}", "--dataset", "x", "--subset", TT, "--limit", "1",
            "-q"]
    code, out, err = run([*argv, "--out", str(tmp_path / "dead")], capsys)
    assert code == 1 and "export: 0/1 samples eligible" in out
    assert status_line(err) == (f"export: exit 1: {TT}: 0/1 eligible, below --min-eligible (default: at least "
                                "1 per subset)")
    code, _out, err = run([*argv, "--out", str(tmp_path / "dead"), "--min-eligible", "0"], capsys)  # resumes: same run
    assert code == 0 and status_line(err).startswith("export: exit 0: 0/1 eligible in 1 subset, every one at or above "
                                                     "--min-eligible 0")
    # the agent comes up on that address: a rerun (no --force) runs the failed sample again, and it passes
    from duplexeval.systems.net.server import ServerThread, make_server

    with ServerThread(make_server("openai-realtime", "turn-based", port=port)):
        # the pre-pass path
        code, out, err = run([*argv, "--out", str(tmp_path / "dead"), "--concurrency", "2"], capsys)
    assert code == 0 and "export: 1/1 samples eligible (1 run, 0 reused)" in out, (out, err)
    # eligible now: reused, nothing to connect to
    code, out, err = run([*argv, "--out", str(tmp_path / "dead")], capsys)
    assert code == 0 and "export: 1/1 samples eligible (0 run, 1 reused)" in out, (out, err)


def _tree(root: Path, words: list[tuple[str, float, float]] | None) -> Path:
    return write_tree(root, [FixtureSample(TT, str(i), 6.0, annotation=turn_ann(1.0), words=words) for i in (1, 2, 3)])


def test_score_gates_and_min_eligible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path / "t", [("yes", 1.5, 1.8)])
    code, _out, err = run(["fdb", "score", str(tree), "-q"], capsys)
    assert code == 0 and status_line(err) == ("score: exit 0: 3/3 eligible in 1 subset, every one at or above "
                                              "--min-eligible (default: at least 1 per subset)")
    code, _out, err = run(["fdb", "score", str(tree), "-q", "--fail-under", f"{TT}.no_response_rate=0.5"], capsys)
    assert code == 1 and status_line(err) == (f"score: exit 1: --fail-under {TT}.no_response_rate=0.5: "
                                              f"{TT}.no_response_rate is 0, below 0.5")
    code, _out, err = run(["fdb", "score", str(tree), "-q", "--fail-over", f"{TT}.response_latency_s=2", "--json", "-"],
                          capsys)
    assert code == 0 and status_line(err).endswith("; 1 gate held")
    code, _out, err = run(["fdb", "score", str(tree), "-q", "--fail-under", "latency=1"], capsys)
    assert code == 2 and err.count("\n") == 1 and f"available: {TT}.early_start_rate" in err


def test_compare_gates_the_paired_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _tree(tmp_path / "a", [("yes", 1.5, 1.8)]), _tree(tmp_path / "b", [])
    for t in (a, b):
        assert run(["fdb", "score", str(t), "-q"], capsys)[0] == 0
    gate = f"{TT}.response_rate_5s=-0.05"
    code, _out, err = run(["fdb", "compare", str(a), str(b), "--no-write", "--fail-under", gate], capsys)
    assert code == 1 and status_line(err) == (f"compare: exit 1: --fail-under {gate}: {TT}.response_rate_5s is "
                                              "-1, below -0.05")
    code, _out, err = run(["fdb", "compare", str(a), str(a), "--no-write", "--fail-under", gate], capsys)
    assert code == 0 and status_line(err).startswith("compare: exit 0: 3/3 paired in 1 subset")


def test_eot_score_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pairs = tmp_path / "p.csv"
    pairs.write_text("true_turn_end_s,detector_commit_s\n1.0,1.2\n2.0,1.9\n3.0,\n4.0,4.7\n")
    code, _out, err = run(["eot", "score", str(pairs), "--fail-over", "false_cutoff_rate=0.1"], capsys)
    assert code == 1 and status_line(err) == ("eot score: exit 1: --fail-over false_cutoff_rate=0.1: false_cutoff_rate "
                                              "is 0.25, over 0.1")
    code, _out, err = run(["eot", "score", str(pairs)], capsys)
    assert code == 0 and status_line(err) == "eot score: exit 0: no gates given (--fail-under / --fail-over)"
