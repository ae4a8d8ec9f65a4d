"""FDB v1.5 trees through the real stages: `fdb export` (two sessions per sample, every system type), `fdb asr`
(four transcripts), `fdb evaluate`, `fdb score`, `fdb compare` and the report, all through the task package."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import soundfile as sf

from duplexeval.cli import main
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.replay_stage import replay
from duplexeval.fdb.tasks.overlap import synth
from duplexeval.fdb.tasks.overlap.scenarios import USER_BACKCHANNEL, USER_INTERRUPTION
from duplexeval.jsonio import sha256_file
from duplexeval.systems.base import SampleInfo
from tests.helpers.net import SERVED, user_turn

# An energy "ASR" (a user's own backend by module:Class): one word per loud stretch, so the stages run fast.
LOUD = '''
import numpy as np
from duplexeval.asr.base import Word

class Loud:
    name = "loud"

    def signature(self):
        return {"name": self.name, "options": {"threshold": 0.05}}

    def transcribe(self, audio16k, offset_s=0.0):
        frames = np.abs(np.asarray(audio16k)[: len(audio16k) // 1600 * 1600]).reshape(-1, 1600).max(axis=1) > 0.05
        words, start = [], None
        for i, on in enumerate([*frames, False]):
            if on and start is None:
                start = i
            if not on and start is not None:
                words.append(Word("word", offset_s + start / 10, offset_s + i / 10))
                start = None
        return words
'''
FOUR = ("input.json", "clean_input.json", "output.json", "clean_output.json")


def run(args: list[str], capsys: pytest.CaptureFixture[str] | None = None) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr() if capsys is not None else None
    return int(e.value.code or 0), "" if out is None else out.out + out.err


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v1.5 set in the published layout (`v1_5/<subset>/<id>`), one sample of two scenarios."""
    d = tmp_path_factory.mktemp("v15stages")
    (d / "v15b_loud_asr.py").write_text(LOUD)
    sys.path.insert(0, str(d))
    synth.write_set(d / "data" / "v1_5", synth.small(1, (USER_INTERRUPTION, USER_BACKCHANNEL)))
    (d / "data" / "v1_5" / "dataset.json").unlink()  # as published: no listing, the release's declared sizes
    return d


@pytest.fixture(scope="module")
def tree(made: Path) -> Path:
    t = made / "tree"
    assert run(
        ["fdb", "export", "--system", "turn-based", "--dataset", str(made / "data"), "--out", str(t), "-q"])[0] == 0
    assert run(["fdb", "asr", str(t), "--backend", "v15b_loud_asr:Loud", "-q"])[0] == 0
    return t


def test_dataset_reads_the_published_layout_and_names_the_release(made: Path) -> None:
    ds = load_dataset(made / "data")
    assert ds.name == "fdb-v1.5" and [s.key for s in ds.samples()] == ["user_interruption/0", "user_backchannel/0"]
    assert ds.declared == {"user_interruption": 200, "user_backchannel": 99, "talking_to_other": 100,
                           "background_speech": 100}


def test_dataset_refuses_a_missing_clean_input_and_a_window_past_the_input(made: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(made / "data", bad)
    sample = bad / "v1_5" / USER_BACKCHANNEL / "0"
    (sample / "clean_input.wav").unlink()
    with pytest.raises(InputError, match=r"clean_input.wav: sample user_backchannel/0: missing clean_input.wav"):
        load_dataset(bad)
    shutil.copy(made / "data" / "v1_5" / USER_BACKCHANNEL / "0" / "clean_input.wav", sample)
    md = json.loads((sample / "metadata.json").read_text())
    md["timestamps"] = [1.0, 99.0]
    (sample / "metadata.json").write_text(json.dumps(md))
    with pytest.raises(InputError, match=r"metadata.json: sample user_backchannel/0: overlap ends at 99.0 s"):
        load_dataset(bad)


def test_export_plays_both_inputs_in_two_sessions(tree: Path) -> None:
    man = json.loads((tree / "manifest.json").read_text())
    assert man["dataset"]["name"] == "fdb-v1.5" and len(man["samples"]) == 2
    for e in man["samples"]:
        d = tree / e["subset"] / e["id"]
        assert set(e["files"]) == {"output.wav", "clean_output.wav", "input.wav", "clean_input.wav", "metadata.json"}
        assert e["eligible"] and e["export"]["sessions"]["clean_output.wav"]["reasons"] == []
        assert (d / "output.wav").read_bytes() != (d / "clean_output.wav").read_bytes()  # two sessions, two outputs
        clean = e["export"]["sessions"]["clean_output.wav"]
        assert sf.info(str(d / "clean_output.wav")).frames == round(clean["T"] * 16000)
        trace = json.loads((d / "trace.json").read_text())
        assert set(trace["sessions"]) == {"clean_output.wav"} and trace["sessions"]["clean_output.wav"]["items"]
    dataset = tree.parent / "data" / "v1_5" / USER_INTERRUPTION / "0"
    assert (tree / USER_INTERRUPTION / "0" / "input.wav").read_bytes() == (dataset / "input.wav").read_bytes()


def test_asr_writes_four_transcripts_none_overwriting_another(tree: Path) -> None:
    rec = json.loads((tree / "asr.json").read_text())
    for key, r in rec["samples"].items():
        d = tree / key
        assert set(r["transcripts"]) == {"input.json", "clean_input.json", "clean_output.json"}
        hashes = {"output.json": r["output.json"], **r["transcripts"]}
        for name, sha in hashes.items():
            assert sha256_file(d / name) == sha
        assert len(set(hashes.values())) == 4  # four different audio files, four different transcripts


def test_evaluate_score_compare_and_report(tree: Path, made: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["fdb", "evaluate", str(tree), "-q"], capsys)
    assert code == 0, out
    summary = json.loads((tree / "summary.json").read_text())
    assert summary["rules"]["name"] == "fdb-v1.5-official" and summary["rules"]["overlap"]["silero"]["silero"] == "v5"
    assert "silero:v5@2623a295" in summary["signature"]["compact"]
    sub = summary["subsets"][USER_INTERRUPTION]
    assert sub["task"] == "overlap" and sub["n_evaluated"] == 1 and sub["metrics"]["post_wpm"]["value"] > 0
    assert "not judged" in sub["metrics"]["behavior_C_RESPOND_ratio"]["note"]
    d = tree / USER_INTERRUPTION / "0"
    split = json.loads((d / "general_split.json").read_text())
    assert split == sub["samples"][0]["general_split"] and "latency_stop_list" in json.loads(
        (d / "latency_intervals.json").read_text())

    code, out = run(["fdb", "score", str(tree), "-q"], capsys)
    assert code == 0, out
    uni = json.loads((tree / "unified.json").read_text())
    assert uni["definitions"] == "fdb-v1.5-unified-1"
    block = uni["subsets"][USER_INTERRUPTION]
    assert block["task"] == "overlap" and block["counts"]["scored"] == 1 and "good_rate" in block["metrics"]
    rows = [json.loads(x) for x in (tree / "unified-samples.jsonl").read_text().splitlines()]
    assert [r["behaviour"] in ("responded", "resumed", "continued", "asked_to_repeat", "silent")
            for r in rows] == [True] * 2

    silent = made / "tree-silent"
    assert run(["fdb", "export", "--system", "silent", "--dataset", str(made / "data"), "--out", str(silent), "-q"],
               capsys)[0] == 0
    for stage in (["asr", str(silent), "--backend", "v15b_loud_asr:Loud"], ["evaluate", str(silent)],
                  ["score", str(silent)]):
        assert run(["fdb", *stage, "-q"], capsys)[0] == 0
    code, out = run(["fdb", "compare", str(tree), str(silent), "--out", str(made / "compare.json")], capsys)
    assert code == 0, out
    cmp = json.loads((made / "compare.json").read_text())
    silent_rate = cmp["comparisons"][0]["subsets"][USER_BACKCHANNEL]["metrics"]["silent_rate"]
    assert (silent_rate["a"], silent_rate["b"], silent_rate["n_pairs"]) == (0.0, 1.0, 1)
    # B never spoke
    assert cmp["comparisons"][0]["subsets"][USER_BACKCHANNEL]["metrics"]["stop_latency_s"]["n_pairs"] == 0
    code, out = run(["report", str(tree), str(silent), "--out", str(made / "r.html")], capsys)
    assert code == 0, out
    page = (made / "r.html").read_text()
    assert "v1.5 overlap: user interruption" in page and "said nothing after the overlap" in page
    assert "duplexeval report: Full-Duplex-Bench v1.5" in page and "What each system did after the overlap" in page


def test_import_adopts_both_outputs_and_the_four_transcripts(tree: Path, made: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Outputs made elsewhere, in the official layout (beside the inputs): the same numbers as the export's tree."""
    assert run(["fdb", "evaluate", str(tree), "-q"], capsys)[0] == 0
    outputs = made / "outputs"
    for key in (f"{USER_INTERRUPTION}/0", f"{USER_BACKCHANNEL}/0"):
        (outputs / key).mkdir(parents=True)
        for name in ("output.wav", "clean_output.wav", *FOUR):
            shutil.copy(tree / key / name, outputs / key / name)
    imp = made / "imported"
    code, out = run(["fdb", "import", "--dataset", str(made / "data"), "--outputs", str(outputs), "--out", str(imp)],
                    capsys)
    assert code == 0, out
    e = json.loads((imp / "manifest.json").read_text())["samples"][0]
    assert {"output.wav", "clean_output.wav", "input.wav", "clean_input.wav"} <= set(e["files"]) and e["eligible"]
    assert set(e["import"]["transcripts"]) == {"input.json", "clean_input.json", "clean_output.json"}
    code, out = run(["fdb", "asr", str(imp), "--backend", "import", "--declare", "loud"], capsys)
    assert code == 0, out
    code, out = run(["fdb", "evaluate", str(imp), "-q"], capsys)
    assert code == 0, out
    mine = json.loads((imp / "summary.json").read_text())["subsets"]
    theirs = json.loads((tree / "summary.json").read_text())["subsets"]
    assert {k: v["metrics"] for k, v in mine.items()} == {k: v["metrics"] for k, v in theirs.items()}
    (outputs / USER_BACKCHANNEL / "0" / "clean_output.wav").unlink()
    again = made / "imported2"
    run(["fdb", "import", "--dataset", str(made / "data"), "--outputs", str(outputs), "--out", str(again)], capsys)
    e = json.loads((again / "manifest.json").read_text())["samples"][1]
    assert (e["reasons"] == ["missing_output"]
            and e["import"]["sessions"]["clean_output.wav"]["reasons"] == ["missing_output"])


def test_resume_redoes_a_sample_whose_clean_input_changed(made: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(made / "data", data)
    out = tmp_path / "tree"
    first = export("turn-based", data, out, progress=False)
    assert (first.ran, first.reused) == (2, 0)
    again = export("turn-based", data, out, progress=False)
    assert (again.ran, again.reused) == (0, 2)
    clean = data / "v1_5" / USER_BACKCHANNEL / "0" / "clean_input.wav"
    audio, sr = sf.read(str(clean), dtype="float32")
    sf.write(str(clean), audio * 0.5, sr, subtype="PCM_16")
    third = export("turn-based", data, out, progress=False)
    assert (third.ran, third.reused) == (1, 1)


class FailsOnShortInput:
    """An in-process system whose session fails on an input shorter than `min_s` (here: the clean one)."""

    name = "fails-on-short"

    def __init__(self, min_s: float) -> None:
        self.min_s = min_s

    def params(self) -> dict[str, float]:
        return {"min_s": self.min_s}

    def version(self) -> str:
        return "1"

    async def open_session(self, info: SampleInfo) -> object:
        if info.T < self.min_s:
            raise RuntimeError("input too short")
        from duplexeval.systems.registry import make_system

        return await make_system("silent").open_session(info)


def _tiny_set(root: Path, T: float, T_clean: float) -> Path:
    """One v1.5-shaped sample with noise-burst inputs (short, so wall-clock sessions stay fast)."""
    d = root / USER_INTERRUPTION / "0"
    d.mkdir(parents=True)
    sf.write(str(d / "input.wav"), user_turn(T, ((0.1, 0.5), (0.7, 0.9))), 16000, subtype="PCM_16")
    sf.write(str(d / "clean_input.wav"), user_turn(T_clean, ((0.1, 0.5),)), 16000, subtype="PCM_16")
    (d / "metadata.json").write_text(
        json.dumps({"context_text": "", "current_turn_text": "hi", "timestamps": [0.7, 0.9]}))
    return root


def test_a_session_that_fails_makes_the_sample_ineligible_with_its_reason(tmp_path: Path) -> None:
    data = _tiny_set(tmp_path / "data", 2.0, 1.0)
    res = export(FailsOnShortInput(1.5), data, tmp_path / "tree", progress=False)  # type: ignore[arg-type]
    e = json.loads((tmp_path / "tree" / "manifest.json").read_text())["samples"][0]
    assert res.counts[USER_INTERRUPTION]["eligible"] == 0 and e["reasons"] == ["system_error"]
    clean = e["export"]["sessions"]["clean_output.wav"]
    assert clean["reasons"] == ["system_error"] and "input too short" in clean["error"] and e["export"]["error"] is None


LOOP = "loopback:protocol=ws-pcm,serve=" + SERVED.replace(",", ";") + ",in_process=true"


def test_network_export_writes_each_session_s_wire_trace_and_resumes(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = _tiny_set(tmp_path / "data", 1.6, 1.0)
    tree = tmp_path / "tree"
    res = export(LOOP + ",faults=disconnect@1.3", data, tree, progress=False, concurrency=2)
    e = json.loads((tree / "manifest.json").read_text())["samples"][0]
    assert {"trace.jsonl", "trace.pcm", "clean_trace.jsonl", "clean_trace.pcm"} <= set(e["files"])
    head = json.loads((tree / USER_INTERRUPTION / "0" / "clean_trace.jsonl").read_text().splitlines()[0])
    assert head["pcm"] == "clean_trace.pcm" and head["T"] == 1.0
    # the fault comes after the clean input's end: only the first session is cut off
    assert "disconnected" in e["export"]["network"]["reasons"] and "disconnected" in e["reasons"]
    assert e["export"]["sessions"]["clean_output.wav"]["network"]["reasons"] == []
    assert not e["eligible"] and res.counts[USER_INTERRUPTION]["eligible"] == 0
    again = export(LOOP + ",faults=disconnect@1.3", data, tree, progress=False, concurrency=2)
    assert (again.ran, again.reused) == (1, 0)  # a rerun retries the ineligible sample (both sessions)
    before = {p.name: p.read_bytes() for p in (tree / USER_INTERRUPTION / "0").iterdir()}
    assert replay(tree, check=True).replayed == 1  # both sessions rebuilt from their wire traces, byte for byte
    (tree / USER_INTERRUPTION / "0" / "clean_output.wav").unlink()
    res = replay(tree)
    assert res.changed == {f"{USER_INTERRUPTION}/0": ["clean_output.wav"]}
    assert {p.name: p.read_bytes() for p in (tree / USER_INTERRUPTION / "0").iterdir()} == before
    ok = tmp_path / "ok"
    assert export(LOOP, data, ok, progress=False).counts[USER_INTERRUPTION]["eligible"] == 1
    manifest = (ok / "manifest.json").read_bytes()
    assert replay(ok, check=True).replayed == 1 and (ok / "manifest.json").read_bytes() == manifest
    capsys.readouterr()
    with pytest.raises(SystemExit) as ex:  # one sample is "1 sample", on stdout and in the last line
        main(["fdb", "replay", str(ok), "--check"])
    out = capsys.readouterr()
    assert ex.value.code in (0, None), out.err
    assert out.out.startswith("replay: checked 1 sample from their traces: 1 identical")
    assert "1 sample rebuilt from their traces" in out.err + out.out


def test_help_names_the_v15_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["fdb", "evaluate", "--help"], capsys)
    assert code == 0 and "--silero" in out and "--behavior-prompt" in out


def test_the_behaviour_judge_through_fdb_evaluate(tree: Path, made: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`--judge openai` asks the v1.5 behaviour judge (its own model and prompt, the judge's endpoint); a rerun asks
    nothing again; the key is in no file; `fdb score` reports the tags beside our class."""
    from tests.helpers.judge import ScriptedServer

    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    key = "sk-v15b-stage-secret"
    monkeypatch.setenv("V15B_KEY", key)
    judged = made / "judged"
    shutil.copytree(tree, judged)
    prompt = made / "behavior.txt"
    prompt.write_text("You tag behaviour.\n")
    reply = 'ok { "behaviour": ["C_RESUME"] }'
    with ScriptedServer([("status", 503), ("good", reply), ("good", reply)]) as srv:
        args = ["fdb", "evaluate", str(judged), "-q", "--force", "--behavior-prompt", str(prompt),
                "--judge", f"openai:base_url={srv.url},api_key_env=V15B_KEY"]
        code, out = run(args, capsys)
        assert code == 0, out
        assert [r["body"]["seed"] for r in srv.requests] == [1, 2, 1]  # a failed first attempt, retried with seed 2
        assert {r["body"]["model"] for r in srv.requests} == {"gpt-4o-2024-08-06"}
        code, out = run(args[:-2] + ["--judge", f"openai:base_url={srv.url},api_key_env=V15B_KEY"], capsys)
        assert code == 0 and len(srv.requests) == 3  # nothing asked twice
    sub = json.loads((judged / "summary.json").read_text())["subsets"][USER_INTERRUPTION]
    assert sub["metrics"]["behavior_C_RESUME_ratio"]["value"] == 1.0 and sub["judge"]["model"] == "gpt-4o-2024-08-06"
    assert json.loads((judged / USER_INTERRUPTION / "0" / "content_tag.json").read_text())["behaviour"] == ["C_RESUME"]
    assert not [p for p in judged.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert run(["fdb", "score", str(judged), "-q"], capsys)[0] == 0
    block = json.loads((judged / "unified.json").read_text())["subsets"][USER_INTERRUPTION]
    assert block["metrics"]["judge_C_RESUME_rate"]["count"] == 1 and "agreement_rate" in block["metrics"]
    # a tag made from other transcripts (asr ran again since) is not taken for this sample's
    tag = judged / USER_INTERRUPTION / "0" / "content_tag.json"
    obj = json.loads(tag.read_text())
    obj["duplexeval"]["transcripts_sha256"] = "0" * 64
    tag.write_text(json.dumps(obj))
    assert run(["fdb", "score", str(judged), "-q"], capsys)[0] == 0
    row = next(json.loads(x) for x in (judged / "unified-samples.jsonl").read_text().splitlines()
               if json.loads(x)["subset"] == USER_INTERRUPTION)
    assert row["judge_tags"] is None and "made from other transcripts" in row["judge_error"]


def test_a_transcript_changed_after_asr_is_refused(tree: Path, made: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed = made / "changed"
    shutil.copytree(tree, changed)
    (changed / USER_BACKCHANNEL / "0" / "clean_output.json").write_text('{"text": "", "chunks": []}')
    code, out = run(["fdb", "score", str(changed), "-q"], capsys)
    assert code == 2 and "clean_output.json" in out and "user_backchannel/0" in out and "Traceback" not in out
    code, out = run(["fdb", "evaluate", str(changed), "-q", "--force"], capsys)
    assert code == 2 and "clean_output.json" in out and "user_backchannel/0" in out


def test_demo_part_runs_every_stage_reuses_and_prints_one_table(made: Path, tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from duplexeval.fdb.tasks.overlap import demo

    lines: list[str] = []
    res = demo.run(tmp_path, ["silent", "turn-based"], say=lines.append, asr_backend="v15b_loud_asr:Loud")
    assert [r.stages for r in res.runs] == [{"export": "done", "asr": "done", "evaluate": "done", "score": "done"}] * 2
    assert json.loads((res.runs[0].tree / "manifest.json").read_text())["kind"] == "duplexeval.fdb.tree"
    again = demo.run(tmp_path, ["silent"], say=lines.append, asr_backend="v15b_loud_asr:Loud")
    assert again.runs[0].stages == {"all": "reused"}
    buf = io.StringIO()
    demo.print_report(res, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "user interruption (respond)" in text and "signature v1.5 unified (turn-based): fdb-v1.5-unified-1|" in text
    assert "wpm before -> after (official)" in text
