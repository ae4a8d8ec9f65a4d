"""Spec 003 end-of-turn pair scoring: exact edge semantics, the report, the reader and the CLI."""

from __future__ import annotations

import json
import math

import pytest

from duplexeval.eot.io import read_pairs
from duplexeval.eot.pairs import (
    EOTPair,
    false_cutoff_rate,
    hang_rate,
    median_latency_s,
    score,
)
from duplexeval.eot.report import build_report
from duplexeval.stats import wilson_interval

P = EOTPair


def test_false_cutoff_is_strict_at_tolerance():
    # latency exactly -tolerance is not a cutoff; one binary fraction step earlier is
    pairs = [P(1.0, 0.5), P(1.0, 0.25), P(1.0, 1.0), P(1.0, 3.0)]
    assert false_cutoff_rate(pairs, tolerance_s=0.5) == 0.25
    assert false_cutoff_rate(pairs, tolerance_s=0.0) == 0.5
    assert false_cutoff_rate(pairs, tolerance_s=0.75) == 0.0


def test_hang_is_strict_at_budget():
    pairs = [P(1.0, 1.5), P(1.0, 1.75), P(1.0, 0.0)]
    assert hang_rate(pairs, latency_budget_s=0.5) == pytest.approx(1 / 3)
    assert hang_rate(pairs, latency_budget_s=0.25) == pytest.approx(2 / 3)
    assert hang_rate(pairs, latency_budget_s=0.75) == 0.0
    assert hang_rate(pairs, latency_budget_s=0.0) == pytest.approx(2 / 3)


def test_empty_gives_zero_even_with_negative_arguments():
    assert false_cutoff_rate([], tolerance_s=-1.0) == 0.0
    assert hang_rate([], latency_budget_s=-1.0) == 0.0
    assert median_latency_s([]) == 0.0
    assert score([]) == {"n": 0, "median_latency_ms": 0.0, "false_cutoff_rate": 0.0,
                         "hang_rate_at_ms": {300: 0.0, 600: 0.0, 1200: 0.0}}  # fmt: skip


def test_negative_arguments_raise_on_nonempty():
    with pytest.raises(ValueError):
        false_cutoff_rate([P(0, 0)], tolerance_s=-0.001)
    with pytest.raises(ValueError):
        hang_rate([P(0, 0)], latency_budget_s=-0.001)
    with pytest.raises(ValueError):
        score([P(0, 0)], tolerance_ms=-1)
    with pytest.raises(ValueError):
        score([P(0, 0)], latency_bands_ms=(300, -1))


def test_median_is_signed_and_interpolates_for_even_n():
    assert median_latency_s([P(1.0, 0.5), P(1.0, 1.25), P(1.0, 3.0)]) == 0.25
    assert median_latency_s([P(1.0, 0.5), P(1.0, 1.5)]) == 0.0
    assert median_latency_s([P(0.0, 0.25), P(0.0, 0.75)]) == 0.5


def test_score_accepts_a_one_shot_iterator_and_custom_bands():
    pairs = [P(0.0, -0.25), P(0.0, 0.125), P(0.0, 0.5), P(0.0, 2.0)]
    s = score(iter(pairs), latency_bands_ms=(100, 1000), tolerance_ms=50)
    assert s == {"n": 4, "median_latency_ms": 312.5, "false_cutoff_rate": 0.25,
                 "hang_rate_at_ms": {100: 0.75, 1000: 0.25}}  # fmt: skip


def test_report_counts_intervals_quantiles():
    pairs = [P(0.0, x) for x in (-0.25, 0.125, 0.5, 2.0, 0.0)]
    rep = build_report(pairs)
    assert rep["false_cutoff"]["count"] == 1 and rep["false_cutoff"]["n"] == 5
    assert rep["false_cutoff"]["interval"] == list(wilson_interval(1, 5))
    assert rep["hang_at_ms"]["300"]["count"] == 2
    assert rep["hang_at_ms"]["1200"]["count"] == 1
    q = rep["latency_ms"]["quantiles"]
    # sorted ms: -250, 0, 125, 500, 2000; Q(q) = ceil(q*5)-th
    assert q["q10"] == -250.0 and q["q25"] == 0.0 and q["q50"] == 125.0 and q["q75"] == 500.0
    assert q["q90"] == 2000.0 and q["q95"] == 2000.0
    assert rep["score"]["median_latency_ms"] == 125.0
    assert rep["latency_ms"]["median"] == 125.0


def test_report_empty_is_null_not_zero():
    rep = build_report([])
    assert rep["false_cutoff"]["value"] is None and rep["false_cutoff"]["interval"] is None
    assert rep["latency_ms"]["quantiles"]["q50"] is None
    assert rep["score"]["false_cutoff_rate"] == 0.0  # spec 003 surface stays as defined


def test_read_csv_and_jsonl(tmp_path):
    c = tmp_path / "p.csv"
    c.write_text("id,true_turn_end_s,detector_commit_s\na,1.0,1.5\nb,2,1.5\n")
    pairs, ids = read_pairs(c)
    assert pairs == [P(1.0, 1.5), P(2.0, 1.5)] and ids == ["a", "b"]
    j = tmp_path / "p.jsonl"
    j.write_text('{"true_end_s": 1.0, "commit_s": 1.5}\n\n{"true_turn_end_s": 2, "detector_commit_s": 1.5}\n')
    assert read_pairs(j)[0] == [P(1.0, 1.5), P(2.0, 1.5)]


@pytest.mark.parametrize(
    "name,text,msg",
    [
        ("p.csv", "true_turn_end_s,detector_commit_s\n1,2\n1,x\n", "line 3: detector_commit_s is not a number"),
        ("p.csv", "true_turn_end_s,commit\n1,2\n", "line 2: missing column detector_commit_s"),
        ("p.csv", "true_turn_end_s,detector_commit_s\n1,nan\n", "line 2: detector_commit_s must be a finite number"),
        ("p.jsonl", '{"true_turn_end_s": 1, "detector_commit_s": 2}\n{bad\n', "line 2: invalid JSON"),
        ("p.jsonl", '[1, 2]\n', "line 1: each line must be a JSON object"),
        ("p.txt", "x", "unknown pair file type"),
    ],
)
def test_reader_errors_name_the_line(tmp_path, name, text, msg):
    from duplexeval.errors import InputError

    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        read_pairs(f)


def test_cli_score_json_and_errors(tmp_path, capsys):
    from duplexeval.cli import main

    f = tmp_path / "p.csv"
    f.write_text("true_turn_end_s,detector_commit_s\n1.0,0.5\n1.0,1.25\n1.0,3.0\n")
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as e:
        main(["eot", "score", str(f), "--json", str(out), "--bands", "200,2000", "--tolerance-ms", "100"])
    assert e.value.code == 0
    rep = json.loads(out.read_text())
    assert rep["score"] == {"n": 3, "median_latency_ms": 250.0, "median_latency_reached": True,
                            "false_cutoff_rate": 1 / 3, "hang_rate_at_ms": {"200": 2 / 3, "2000": 0.0}}  # fmt: skip
    assert list(rep)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
    first = out.read_bytes()
    with pytest.raises(SystemExit):
        main(["eot", "score", str(f), "--json", str(out), "--bands", "200,2000", "--tolerance-ms", "100"])
    assert out.read_bytes() == first
    bad = tmp_path / "b.csv"
    bad.write_text("true_turn_end_s,detector_commit_s\n1,oops\n")
    capsys.readouterr()  # the earlier runs' status lines
    with pytest.raises(SystemExit) as e:
        main(["eot", "score", str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("duplexeval: error: ") and "line 2" in err[0]
    with pytest.raises(SystemExit) as e:
        main(["eot", "score", str(f), "--tolerance-ms", "-5"])
    assert e.value.code == 2
    assert math.isfinite(rep["latency_ms"]["quantiles"]["q50"])


# ------------------------------------------------------------------------------------ the report layer


def test_missed_commit_is_a_hang_at_every_band_and_not_reached(tmp_path):
    from duplexeval.eot.io import read_pair_rows

    f = tmp_path / "p.csv"
    f.write_text("id,true_turn_end_s,detector_commit_s\na,1.0,1.2\nb,2.0,\nc,3.0,3.1\n")
    rows = read_pair_rows(f)
    assert [r.missed for r in rows] == [False, True, False]
    j = tmp_path / "p.jsonl"
    j.write_text('{"id": "a", "true_end_s": 1.0, "commit_s": null}\n')
    assert read_pair_rows(j)[0].missed
    rep = build_report([r.pair for r in rows], ids=[r.id for r in rows])
    assert rep["n_missed_commits"] == 1
    assert all(h["count"] == 1 for h in rep["hang_at_ms"].values())  # the missed one hangs at every band
    assert rep["false_cutoff"]["count"] == 0
    assert rep["latency_ms"]["quantiles"]["q90"] is None and rep["latency_ms"]["reached"]["q90"] is False
    assert rep["latency_ms"]["median"] == 200.0  # sorted: 100, 200, inf -> Q(0.5) = 2nd
    # spec 003's own median over (100, 200, inf) is 200 too; with two pairs (100, inf) it is not reached
    rep2 = build_report([P(1.0, 1.1), P(2.0, math.inf)])
    assert rep2["score"]["median_latency_ms"] is None and rep2["score"]["median_latency_reached"] is False


def test_one_median_printed_and_microsecond_rounding():
    from duplexeval.eot.report import format_report

    # 0.46 s - 0.0 s in floats: 459.99999999999955 ms in spec 003's dict
    pairs = [P(1.54, 2.0), P(0.0, 0.46)]
    rep = build_report(pairs, ids=["x", "y"])
    assert rep["score"]["median_latency_ms"] == 460.0
    text = format_report(rep)
    assert text.count("median latency") == 1 and "Q(0.5)" in text
    assert "460.0 ms" in text


def test_rows_keep_ids_and_conversation_grouped_intervals(tmp_path, capsys):
    from duplexeval.cli import main
    from duplexeval.stats import bootstrap_ratio_interval

    f = tmp_path / "p.csv"
    lines = ["id,conversation,true_turn_end_s,detector_commit_s"]
    commits = [0.9, 1.3, 1.2, 0.5, 1.1, 1.6]
    for k, c in enumerate(commits):
        lines.append(f"t{k},conv{k // 2},1.0,{c}")
    f.write_text("\n".join(lines) + "\n")
    out, rows = tmp_path / "r.json", tmp_path / "rows.jsonl"
    with pytest.raises(SystemExit) as e:
        main(["eot", "score", str(f), "--json", str(out), "--rows", str(rows), "--show-pairs"])
    assert e.value.code == 0
    rep = json.loads(out.read_text())
    assert rep["grouping"] == {"unit": "conversation", "n_units": 3}
    early = [1, 0, 0, 1, 0, 0]  # 0.9 and 0.5 are more than 50 ms early
    want = bootstrap_ratio_interval([1, 1, 0], [2, 2, 2])
    assert rep["false_cutoff"]["count"] == sum(early) and rep["false_cutoff"]["interval"] == list(want)
    got = [json.loads(x) for x in rows.read_text().splitlines()]
    assert [g["id"] for g in got] == [f"t{k}" for k in range(6)]
    assert [g["false_cutoff"] for g in got] == [bool(x) for x in early]
    assert got[1]["latency_ms"] == 300.0 and got[5]["hang_at_ms"]["300"] is True
    assert got[4]["hang_at_ms"] == {"300": False, "600": False, "1200": False}
    assert "t3" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text,msg",
    [
        ("id,true_turn_end_s,detector_commit_s\na,1,2\na,2,3\n", "duplicate id 'a'"),
        ("true_turn_end_s,detector_commit_s\n-1,2\n", "outside the accepted range"),
        ("true_turn_end_s,detector_commit_s\n1,1e308\n", "outside the accepted range"),
        ("true_turn_end_s,detector_commit_s\n", "no pairs"),
    ],
)
def test_pair_file_refusals(tmp_path, text, msg):
    from duplexeval.errors import InputError

    f = tmp_path / "p.csv"
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        read_pairs(f)


def test_csv_with_a_bom_is_read(tmp_path):
    f = tmp_path / "p.csv"
    f.write_bytes("\ufefftrue_turn_end_s,detector_commit_s\n1,1.5\n".encode("utf-8"))
    assert read_pairs(f)[0] == [P(1.0, 1.5)]
