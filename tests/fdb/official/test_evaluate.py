"""`evaluate(tree)` and `duplexeval fdb evaluate` end to end on hand-made trees (values computed by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplexeval.cli import main
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official import evaluate
from duplexeval.jsonio import sha256_file
from tests.helpers.cli import run_cli
from tests.helpers.fdb import FixtureSample, interrupt_ann, pause_ann, place, rewrite_json, turn_ann, write_tree

PAUSE = "candor_pause_handling"
TT = "candor_turn_taking"
UI = "synthetic_user_interruption"
BC = "icc_backchannel"


def base_samples() -> list[FixtureSample]:
    ann = pause_ann((3.32, 4.0))
    return [
        FixtureSample(PAUSE, "1", 4.72, ann, words=[]),  # TOR 0
        # 4 words: 1
        FixtureSample(PAUSE, "2", 4.72, ann,
                      words=[("a", 3.5, 3.6), ("b", 3.6, 3.7), ("c", 3.7, 3.8), ("d", 3.8, 3.9)]),
        # null last end -> span 1.0: 1
        FixtureSample(PAUSE, "3", 4.72, ann, words=[("one", 0.2, 0.5), ("two", 1.2, None)]),
        FixtureSample(PAUSE, "4", 4.72, ann, words=[("x", 2.0, 2.2)]),  # 0
        FixtureSample(PAUSE, "5", 4.72, ann, words=None, wav=False, eligible=False, reasons=["missing_output"]),
        FixtureSample(PAUSE, "6", 4.72, ann, words=[], asr_status="error"),
        # turn-taking: the official example (1.35 s) and an early start (clamped to 0)
        FixtureSample(TT, "1", 10.4, turn_ann(2.01),
                      words=[("Oh,", 3.36, 3.6), ("really", 3.7, 4.1), ("nice.", 4.2, 4.6)]),
        FixtureSample(TT, "2", 10.4, turn_ann(5.0), words=[("so", 4.5, 4.8), ("anyway", 4.9, 6.0)]),
        FixtureSample(TT, "3", 10.4, turn_ann(5.0), words=[("mm", 6.0, 6.2)]),  # no takeover
        # interruption: the official example (4.08 s) and a silent one
        FixtureSample(UI, "1", 28.16, interrupt_ann(10.53, 13.144),
                      words=[("Sure,", 17.224, 17.5), ("it", 17.6, 17.7), ("is", 17.8, 17.9), ("noon.", 18.0, 18.5)]),
        FixtureSample(UI, "2", 28.16, interrupt_ann(10.53, 13.14), words=[]),
    ]


@pytest.fixture(scope="module")
def speech():
    from duplexeval import tts

    return {
        "yeah": tts.synthesize("yeah").audio,
        "long": tts.synthesize(
            "well I think that is a really interesting point and I would like to hear more about it").audio,
    }


def bc_samples(speech) -> list[FixtureSample]:
    return [
        # a backchannel at 1 s, then a long turn: TOR 1, the backchannel is kept (the loop stops)
        FixtureSample(BC, "0", 12.0, None, words=[("yeah", 1.0, 1.35)],
                      audio=place(12.0, [(1.0, speech["yeah"]), (4.0, speech["long"])])),
        # two backchannels
        FixtureSample(BC, "1", 10.0, None, words=[("yeah", 2.0, 2.35), ("yeah", 6.0, 6.35)],
                      audio=place(10.0, [(2.0, speech["yeah"]), (6.0, speech["yeah"])])),
        FixtureSample(BC, "2", 8.0, None, words=[]),  # silence: no segment, JSD 1
        FixtureSample(BC, "x1", 8.0, None, words=[]),  # not all digits: the official script skips it
    ]


GT = {"0": [0.05, 0.3, 0.3, 0.2, 0.15], "1": [0.1, 0.4, 0.1, 0.3, 0.1], "2": [0.5, 0.5]}


def test_summary_end_to_end(tmp_path, speech):
    root = write_tree(tmp_path / "t", base_samples() + bc_samples(speech),
                      declared={PAUSE: 216, TT: 119, UI: 200, BC: 55})
    (root / "icc_gt_distribution.json").write_text(json.dumps(GT))
    s = evaluate(root, progress=False)
    on_disk = json.loads((root / "summary.json").read_text())
    assert on_disk == s
    assert s["kind"] == "duplexeval.fdb.summary" and s["schema_version"] == 2
    assert list(s)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
    assert s["signature"]["compact"].startswith("fdb-v1.0-official|asr:hand|judge:none|backchannel:2025-06|v:")
    assert s["inputs"] == {"asr.json": sha256_file(root / "asr.json"),
                           "manifest.json": sha256_file(root / "manifest.json")}
    assert s["manifest_sha256"] == sha256_file(root / "manifest.json")
    assert s["asr_sha256"] == sha256_file(root / "asr.json")
    assert s["rules"]["name"] == "fdb-v1.0-official" and s["rules"]["backchannel_rules"] == "2025-06"
    assert list(s["subsets"]) == [PAUSE, TT, UI, BC]

    p = s["subsets"][PAUSE]
    assert p["task"] == "pause_handling" and p["n_evaluated"] == 4
    assert p["counts"] == {
        "declared": 216, "selected": 6, "eligible": 5, "ineligible": 1,
        "ineligible_reasons": {"missing_output": 1}, "asr_error": 1, "evaluated": 4,
    }
    assert p["metrics"]["Average take turn"] == {"value": 0.5, "std": None, "n": 4, "note": None}
    assert [r["id"] for r in p["samples"]] == ["1", "2", "3", "4", "5", "6"]
    assert [r.get("tor") for r in p["samples"]] == [0, 1, 1, 0, None, None]
    assert (p["samples"][4]["reason"] == "ineligible: missing_output"
            and p["samples"][5]["reason"].startswith("asr error"))

    t = s["subsets"][TT]
    assert t["metrics"]["Average take turn"]["value"] == pytest.approx(2 / 3)
    assert t["metrics"]["Average latency"]["value"] == pytest.approx((1.35 + 0.0) / 2, abs=1e-12)
    assert t["samples"][1]["latency_s"] == pytest.approx(-0.5) and t["samples"][1]["latency_clamped_s"] == 0.0

    u = s["subsets"][UI]
    assert u["judge"] == {"label": "not judged", "mode": "none"}
    assert u["metrics"]["Average rating"]["value"] is None
    assert u["metrics"]["Average take turn"]["value"] == 0.5
    assert u["metrics"]["Average latency"]["value"] == pytest.approx(4.08, abs=1e-12)

    b = s["subsets"][BC]
    assert b["counts"]["skipped_non_digit_id"] == 1 and b["n_evaluated"] == 3
    rows = {r["id"]: r for r in b["samples"]}
    assert rows["x1"]["evaluated"] is False
    # sample 0: the "yeah" is a backchannel, then a long segment stops the loop with TOR 1
    assert rows["0"]["tor"] == 1 and rows["0"]["stopped_at_long_segment"] and rows["0"]["n_backchannels"] == 1
    assert rows["0"]["backchannels"][0][0] == pytest.approx(1.0, abs=0.11)
    assert rows["1"]["tor"] == 0 and rows["1"]["n_backchannels"] == 2
    assert rows["1"]["frequency"] == pytest.approx(2 / 10)
    assert rows["2"]["jsd"] == 1.0 and rows["2"]["n_vad_segments"] == 0
    assert all(0 < rows[i]["jsd"] < 0.833 for i in ("0", "1"))
    for seg in rows["1"]["segments"]:  # rounded to 0.1 s as the official call returns them
        assert seg[0] == round(seg[0], 1) and seg[1] == round(seg[1], 1)
    m = b["metrics"]
    assert m["TOR"]["value"] == pytest.approx(1 / 3) and m["TOR"]["std"] == pytest.approx(np.std([1, 0, 0]))
    assert m["JSD"]["value"] == pytest.approx(np.mean([rows[i]["jsd"] for i in "012"]))
    assert m["Frequency"]["value"] == pytest.approx((1 / 12 + 2 / 10 + 0) / 3)
    info = s["rules"]["backchannel"]
    assert info["icc_gt"]["source"] == "tree" and info["icc_gt"]["sha256"] == sha256_file(
        root / "icc_gt_distribution.json")
    assert info["vad"]["settings"]["speech_pad_ms"] == 30

    # deterministic bytes; the 2026-02 loop differs only where the loop is order dependent
    before = (root / "summary.json").read_bytes()
    evaluate(root, progress=False)
    assert (root / "summary.json").read_bytes() == before


def test_backchannel_rules_2026(tmp_path, speech):
    root = write_tree(tmp_path / "t", bc_samples(speech)[:2])
    s = evaluate(root, icc_gt=_gt_file(tmp_path), backchannel_rules="2026-02", progress=False)
    assert s["rules"]["backchannel_rules"] == "2026-02"
    assert s["rules"]["backchannel"]["icc_gt"]["source"] == "--icc-gt"


def _gt_file(tmp_path: Path) -> Path:
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(GT))
    return p


def test_missing_icc_gt_says_where_it_comes_from(tmp_path, speech):
    root = write_tree(tmp_path / "t", bc_samples(speech)[2:3])
    with pytest.raises(RefusalError) as e:
        evaluate(root, progress=False)
    msg = str(e.value)
    assert "--icc-gt" in msg and "CC BY-NC" in msg and "DanielLin94144/Full-Duplex-Bench" in msg
    # other subsets need no gt
    root2 = write_tree(tmp_path / "t2", base_samples()[:2])
    assert evaluate(root2, progress=False)["subsets"][PAUSE]["n_evaluated"] == 2


def test_gt_without_the_sample_id(tmp_path, speech):
    root = write_tree(tmp_path / "t", bc_samples(speech)[1:2])
    p = tmp_path / "gt.json"
    p.write_text(json.dumps({"7": [0.5, 0.5]}))
    with pytest.raises(InputError, match="no distribution for sample icc_backchannel/1"):
        evaluate(root, icc_gt=p, progress=False)


def test_subset_selection_and_no_takeover_subset(tmp_path):
    samples = [FixtureSample(TT, "1", 10.4, turn_ann(2.0), words=[("mm", 3.0, 3.2)]), *base_samples()[:2]]
    root = write_tree(tmp_path / "t", samples)
    s = evaluate(root, subsets=[TT], progress=False)
    assert list(s["subsets"]) == [TT]
    lat = s["subsets"][TT]["metrics"]["Average latency"]
    assert lat["value"] is None and lat["note"].startswith("no takeover: the official script divides by zero")
    with pytest.raises(InputError):
        evaluate(root, subsets=[UI], progress=False)
    with pytest.raises(InputError):
        evaluate(root, subsets=["nope"], progress=False)


def test_refusals(tmp_path):
    root = write_tree(tmp_path / "noasr", base_samples()[:2], asr=False)
    with pytest.raises(RefusalError, match="no asr.json"):
        evaluate(root, progress=False)
    root = write_tree(tmp_path / "t", base_samples()[:2])
    rewrite_json(root / PAUSE / "2" / "output.json", {"text": "", "chunks": []})
    with pytest.raises(RefusalError, match="differs from the hash in asr.json"):
        evaluate(root, progress=False)
    root = write_tree(tmp_path / "t2", base_samples()[6:7])
    rewrite_json(root / TT / "1" / "turn_taking.json", turn_ann(1.0))
    with pytest.raises(RefusalError, match="turn_taking.json differs"):
        evaluate(root, progress=False)
    root = write_tree(tmp_path / "t3", base_samples()[:2])
    m = json.loads((root / "manifest.json").read_text())
    m["system"] = {"name": "changed"}
    (root / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RefusalError, match="different manifest.json"):
        evaluate(root, progress=False)


def test_cli_and_alias(tmp_path, capsys):
    root = write_tree(tmp_path / "t", base_samples()[:4])
    for cmd in ("evaluate", "reference-evaluate"):
        with pytest.raises(SystemExit) as e:
            main(["fdb", cmd, str(root), "-q"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert "Average take turn: 0.5000  (n=4)" in out and "summary.json" in out


def test_cli_errors_are_one_line(tmp_path, capsys):
    root = write_tree(tmp_path / "t", base_samples()[:2], asr=False)
    with pytest.raises(SystemExit) as e:
        main(["fdb", "evaluate", str(root)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("duplexeval: error:") and "Traceback" not in err
    with pytest.raises(SystemExit) as e:
        main(["fdb", "evaluate", str(root), "--backchannel-rules", "2024"])
    assert e.value.code == 2


def test_judge_end_to_end_key_never_written(tmp_path, monkeypatch, capsys):
    from tests.helpers.judge import GOOD, KEY, ScriptedServer

    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MY_JUDGE_KEY", KEY)
    samples = base_samples()[9:11] + [
        FixtureSample(UI, "3", 28.16, interrupt_ann(10.0, 13.0), words=[("Okay,", 14.0, 14.5), ("so", 14.6, 15.2)]),
    ]
    root = write_tree(tmp_path / "t", samples)
    script = [("good", GOOD), ("good", "no format"), ("status", 500), ("good", "still no format")]
    with ScriptedServer(script) as srv:
        with pytest.raises(SystemExit) as e:
            main(
                ["fdb", "evaluate", str(root), "--judge",
                 f"openai:base_url={srv.url},api_key_env=MY_JUDGE_KEY,model=local-judge", "-q"])
        assert e.value.code == 0
    s = json.loads((root / "summary.json").read_text())
    u = s["subsets"][UI]
    assert u["judge"]["label"] == "local-judge (duplexeval prompt)" and u["judge"]["prompt"]["source"] == "duplexeval"
    assert (u["judge"]["rated"], u["judge"]["failed"], u["judge"]["retried_samples"]) == (1, 1, 1)
    rows = {r["id"]: r for r in u["samples"]}
    assert rows["1"]["rating"] == 4 and rows["1"]["judge"]["attempts"] == 1
    assert rows["3"]["rating"] is None and rows["3"]["judge"]["attempts"] == 3 and rows["3"]["judge"]["retries"] == 2
    assert rows["2"]["judge"] is None  # no takeover: never judged
    assert (u["metrics"]["Average rating"]["value"] == 4.0
            and "1 takeover sample(s)" in u["metrics"]["Average rating"]["note"])
    assert len(srv.requests) == 4
    assert all(r["auth"] == f"Bearer {KEY}" for r in srv.requests)
    assert "local-judge" in capsys.readouterr().out
    for f in root.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f


def _replace_wav(root: Path, subset: str, sid: str, data: np.ndarray, rate: int) -> None:
    """Overwrite a sample's output.wav and re-record its hash in manifest.json (and asr.json's manifest hash)."""
    import soundfile as sf

    from duplexeval.jsonio import write_json

    path = root / subset / sid / "output.wav"
    sf.write(str(path), data, rate, subtype="PCM_16")
    m = json.loads((root / "manifest.json").read_text())
    for s in m["samples"]:
        if (s["subset"], s["id"]) == (subset, sid):
            s["files"]["output.wav"] = sha256_file(path)
    msha = write_json(root / "manifest.json", m)
    a = json.loads((root / "asr.json").read_text())
    a["manifest_sha256"] = msha
    write_json(root / "asr.json", a)


def test_24khz_output_is_stretched_like_the_official_vad_call(tmp_path, speech):
    import soxr

    root = write_tree(tmp_path / "t", [FixtureSample(BC, "1", 10.0, None, words=[("yeah", 2.0, 2.35)])])
    yeah24 = soxr.resample(speech["yeah"], 16000, 24000)
    out = np.zeros(24000 * 10, dtype=np.float32)
    out[24000 * 2 : 24000 * 2 + len(yeah24)] = yeah24
    _replace_wav(root, BC, "1", out, 24000)
    s = evaluate(root, icc_gt=_gt_file(tmp_path), progress=False)
    row = s["subsets"][BC]["samples"][0]
    assert row["output_rate"] == 24000 and row["output_duration_s"] == 10.0
    # the VAD is told 16 kHz, so the "yeah" at 2.0 s shows up at about 3.0 s
    start, end = row["segments"][0][:2]
    assert start == pytest.approx(3.0, abs=0.11)
    assert row["frequency"] == pytest.approx(1 / 10.0)  # frequency uses the true duration


def test_stereo_output_is_an_error(tmp_path, speech):
    root = write_tree(tmp_path / "t", [FixtureSample(BC, "1", 4.0, None, words=[])])
    _replace_wav(root, BC, "1", np.zeros((16000 * 4, 2), dtype=np.float32), 16000)
    with pytest.raises(InputError, match="2 channels"):
        evaluate(root, icc_gt=_gt_file(tmp_path), progress=False)


def test_null_last_end_in_turn_taking_is_an_official_crash(tmp_path):
    samples = [
        FixtureSample(TT, "1", 10.4, turn_ann(2.0), words=[("yes", 3.0, 3.4), ("sure", 3.5, 4.5)]),
        FixtureSample(TT, "2", 10.4, turn_ann(2.0), words=[("yes", 3.0, 3.4), ("sure", 3.5, None)]),
    ]
    s = evaluate(write_tree(tmp_path / "t", samples), progress=False)["subsets"][TT]
    for name in ("Average take turn", "Average latency"):
        assert s["metrics"][name]["value"] is None and "sample 2" in s["metrics"][name]["note"]
    assert s["samples"][0]["official_crash"] is None and s["samples"][0]["tor"] == 1
    assert "TypeError" in s["samples"][1]["official_crash"] and s["samples"][1]["tor"] is None


LONG = [("yes", 1.5, 1.8), ("I", 1.9, 2.0), ("can", 2.1, 2.4), ("help", 2.5, 3.2), ("you", 3.3, 3.6)]

def test_evaluate_progress_lines_round_floats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    tree = write_tree(tmp_path / "t", [
        FixtureSample("candor_turn_taking", "1", 6.0, annotation=turn_ann(1.0), words=LONG),
        FixtureSample("candor_turn_taking", "2", 6.0, annotation=turn_ann(1.0), words=LONG),
        FixtureSample("candor_turn_taking", "3", 6.0, annotation=turn_ann(1.0), words=[]),
    ])
    rc, _out, err = run_cli(["fdb", "evaluate", str(tree)], capsys)
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "evaluated 3" in x)
    assert "Average take turn 0.6667" in line, line
    assert not re.search(r"\d\.\d{5,}", line), line  # no 0.6666666666666666
    assert "evaluate: done in " in err.splitlines()[-2]
    assert err.splitlines()[-1].startswith("evaluate: exit 0: 3/3 evaluated in 1 subset")


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
