"""A corpus of malformed inputs across the commands: each must end with ONE line naming the file
(and sample) and the problem, exit 2, no traceback, nothing written half-way, nothing dropped silently.

Every case here failed before the fix it documents (a traceback, a wrong acceptance or a misleading line).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duplexeval.cli import main
from tests.helpers.fdb import FixtureSample, pause_ann, turn_ann, write_tree

TT, P, UI, BC = "candor_turn_taking", "candor_pause_handling", "synthetic_user_interruption", "icc_backchannel"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    code, _out, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("duplexeval: error: "), err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------ builders


def _wav(path: Path, seconds: float, sr: int = 16000, channels: int = 1, fill: float = 0.1,
         subtype: str = "PCM_16") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(round(seconds * sr)) / sr
    x = (fill * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    sf.write(str(path), np.stack([x] * channels, axis=1) if channels > 1 else x, sr, subtype=subtype)


def synth_set(root: Path) -> Path:
    """A synth-style dataset (dataset.json lists its samples): two turn-taking samples, one pause sample."""
    rows = []
    for subset, sid, ann_name, ann in (
        (TT, "1", "turn_taking.json", turn_ann(1.0)),
        (TT, "2", "turn_taking.json", turn_ann(1.0)),
        (P, "1", "pause.json", pause_ann((1.0, 1.5))),
    ):
        d = root / subset / sid
        _wav(d / "input.wav", 3.0)
        (d / ann_name).write_text(json.dumps(ann))
        rows.append({"subset": subset, "id": sid, "T": 3.0})
    declared = {TT: 2, P: 1}
    (root / "dataset.json").write_text(json.dumps({"name": "mini", "declared": declared, "samples": rows}))
    return root


def outputs_for(ds: Path, out: Path, **kw: object) -> Path:
    for wav in ds.rglob("input.wav"):
        rel = wav.parent.relative_to(ds)
        _wav(out / rel / "output.wav", 3.0, **kw)  # type: ignore[arg-type]
    return out


def scored_tree(root: Path, **edit: object) -> Path:
    return write_tree(root, [FixtureSample(TT, "1", 5.0, turn_ann(1.0), [("a", 1.2, 1.5)]),
                             FixtureSample(P, "1", 5.0, pause_ann((1.0, 2.0)), [("b", 3.0, 3.4)])])


def edit_manifest(tree: Path, fn: Callable[[dict], None]) -> None:
    """Edit manifest.json and re-point asr.json at it, so only the edit itself can fail."""
    from duplexeval.jsonio import sha256_file

    m = json.loads((tree / "manifest.json").read_text())
    fn(m)
    (tree / "manifest.json").write_text(json.dumps(m))
    asr = json.loads((tree / "asr.json").read_text())
    asr["manifest_sha256"] = sha256_file(tree / "manifest.json")
    (tree / "asr.json").write_text(json.dumps(asr))


def controller_data(root: Path, lines: list[dict] | None = None) -> Path:
    from duplexeval.controller.format.data import (
        Clip,
        ClipFrames,
        ClipMeta,
        PauseProbe,
        TurnProbe,
        write_data,
    )

    n = 50
    fr = ClipFrames(n, endpoint=np.linspace(0, 1, n), level_db=np.full(n, -30.0))
    meta = ClipMeta("c1", n, group="g", turn_probes=[TurnProbe(2.0)], pause_probes=[PauseProbe(1.0, 1.5)], floor_s=4.0)
    write_data(root, [Clip(meta, fr)])
    if lines is not None:
        (root / "clips.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def conversations(root: Path, lines: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    p = root / "m.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


CONV = {"id": "c1", "duration_s": 6.0, "user": {"segments": [[0.0, 1.0], [1.5, 2.5]]},
        "agent": {"segments": [[3.0, 4.0]]}}


# ------------------------------------------------------------------ the corpus

Case = Callable[[Path], tuple[list[object], tuple[str, ...]]]


def _renamed_subset(tmp: Path):
    ds = synth_set(tmp / "ds")
    (ds / TT).rename(ds / "Candor_turn_taking")
    return (["fdb", "export", "--system", "silent", "--dataset", ds, "--out", tmp / "t", "-q"],
            ("Candor_turn_taking", "case"))


def _deleted_sample(tmp: Path):
    ds = synth_set(tmp / "ds")
    shutil.rmtree(ds / TT / "2")
    return (["fdb", "export", "--system", "silent", "--dataset", ds, "--out", tmp / "t", "-q"],
            (f"sample {TT}/2", "missing"))


def _id_newline_manifest(tmp: Path):
    t = scored_tree(tmp / "t")
    edit_manifest(t, lambda m: m["samples"][0].update(id="1\n"))
    return ["fdb", "score", t], ("manifest.json", "'1\\n' is not allowed")


def _id_newline_dataset(tmp: Path):
    ds = synth_set(tmp / "ds")
    (ds / P / "1").rename(ds / P / "1\n")
    return (["fdb", "export", "--system", "silent", "--dataset", ds, "--out", tmp / "t", "-q"],
            ("'1\\n' is not allowed",))


def _id_newline_synth(tmp: Path):
    (tmp / "s.json").write_text(json.dumps({"samples": [{"subset": TT, "id": "1\n", "text": "hi"}]}))
    return ["fdb", "synth", tmp / "s.json", "--out", tmp / "o"], ("s.json", "'1\\n' is not allowed")


def _id_newline_clip(tmp: Path):
    d = controller_data(tmp / "d")
    line = json.loads((d / "clips.jsonl").read_text())
    line["id"] = "c1\n"
    (d / "clips.jsonl").write_text(json.dumps(line) + "\n")
    return ["controller", "evaluate", d], ("clips.jsonl", "line 1", "'c1\\n' is not allowed")


def _stereo_import(tmp: Path):
    ds = synth_set(tmp / "ds")
    outs = outputs_for(ds, tmp / "outs", channels=2)
    return ["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp / "t", "-q"], (
        "output.wav", f"sample {P}/1", "2 channels", "--channel")


def _nan_import(tmp: Path):
    ds = synth_set(tmp / "ds")
    outs = outputs_for(ds, tmp / "outs", subtype="FLOAT")
    wav = outs / TT / "1" / "output.wav"
    x, sr = sf.read(str(wav), dtype="float32")
    x[100] = np.nan
    x[200] = np.inf
    sf.write(str(wav), x, sr, subtype="FLOAT")
    return ["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp / "t", "-q"], (
        str(wav), f"sample {TT}/1", "2 samples are NaN or infinite")


def _out_is_file(cmd: str) -> Case:
    def case(tmp: Path):
        ds = synth_set(tmp / "ds")
        f = tmp / "file"
        f.write_text("x")
        if cmd == "export":
            argv = ["fdb", "export", "--system", "silent", "--dataset", ds, "--out", f, "-q"]
        elif cmd == "import":
            argv = ["fdb", "import", "--dataset", ds, "--outputs", outputs_for(ds, tmp / "o"), "--out", f, "-q"]
        elif cmd == "synth":
            (tmp / "s.json").write_text(json.dumps({"samples": [{"subset": TT, "id": 1, "text": "hi"}]}))
            argv = ["fdb", "synth", tmp / "s.json", "--out", f]
        else:
            argv = ["controller", "label", "--out", f, "--conversations", conversations(tmp / "c", [CONV])]
        return argv, (str(f), "existing file")
    return case


def _out_under_file(tmp: Path):
    f = tmp / "file"
    f.write_text("x")
    ds = synth_set(tmp / "ds")
    return ["fdb", "export", "--system", "silent", "--dataset", ds, "--out", f / "t", "-q"], (str(f), "is a file")


def _json_is_dir(cmd: str) -> Case:
    def case(tmp: Path):
        d = tmp / "dir"
        d.mkdir()
        if cmd == "eot":
            (tmp / "p.csv").write_text("true_turn_end_s,detector_commit_s\n1,1.2\n")
            return ["eot", "score", tmp / "p.csv", "--json", d], (str(d), "existing folder")
        data = controller_data(tmp / "data")
        if cmd == "evaluate-json":
            return ["controller", "evaluate", data, "--json", d], (str(d), "existing folder")
        if cmd == "evaluate-rows":
            return ["controller", "evaluate", data, "--rows", d], (str(d), "existing folder")
        return (["controller", "calibrate", data, "--out", d, "--pause-cutin-ceiling", "0.5"],
                (str(d), "existing folder"))
    return case


def _summary_is_dir(tmp: Path):
    t = scored_tree(tmp / "t")
    (t / "summary.json").mkdir()
    return ["fdb", "evaluate", t, "-q"], ("summary.json", "cannot write", "existing folder")


def _broken_source_wav(tmp: Path):
    ds = synth_set(tmp / "ds")
    outs = outputs_for(ds, tmp / "outs")
    (outs / TT / "1" / "output.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    return ["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp / "t", "-q"], ()


def _absurd_T(tmp: Path):
    t = scored_tree(tmp / "t")
    edit_manifest(t, lambda m: m["samples"][0].update(T=1e303))
    return ["fdb", "score", t], ("manifest.json", f"sample {TT}/1", "'T' must be a positive finite number")


def _absurd_pause_end(tmp: Path):
    t = write_tree(tmp / "t", [FixtureSample(P, "1", 5.0, pause_ann((1.0, 1e303)), [("b", 3.0, 3.4)])])
    return ["fdb", "score", t], ("pause.json", f"sample {P}/1", "outside the accepted range")


def _absurd_word(tmp: Path):
    t = write_tree(tmp / "t", [FixtureSample(TT, "1", 5.0, turn_ann(1.0), [("a", 1e303, None)])])
    return ["fdb", "evaluate", t, "-q"], ("output.json", f"sample {TT}/1", "outside the accepted range")


def _absurd_pairs(tmp: Path):
    (tmp / "p.csv").write_text("true_turn_end_s,detector_commit_s\n1,1e308\n")
    return ["eot", "score", tmp / "p.csv"], ("p.csv", "line 2", "detector_commit_s is outside the accepted range")


def _subset_list_manifest(tmp: Path):
    t = scored_tree(tmp / "t")
    edit_manifest(t, lambda m: m["samples"][0].update(subset=[TT]))
    return ["fdb", "score", t], ("manifest.json", "unknown subset ['candor_turn_taking']")


def _subset_list_synth(tmp: Path):
    (tmp / "s.json").write_text(json.dumps({"samples": [{"subset": [TT], "id": 1, "text": "hi"}]}))
    return ["fdb", "synth", tmp / "s.json", "--out", tmp / "o"], ("s.json", "unknown subset")


def _npz(kind: str) -> Case:
    def case(tmp: Path):
        d = controller_data(tmp / "d")
        f = d / "frames" / "c1.npz"
        if kind == "truncated":
            f.write_bytes(f.read_bytes()[:200])
        elif kind == "npy":
            buf = tmp / "x.npy"
            np.save(buf, np.zeros(3))
            f.write_bytes(buf.read_bytes())
        else:
            f.write_text("hello, I am text\n")
        return ["controller", "evaluate", d], (str(f), "clip c1", "not an .npz" if kind != "truncated" else "npz")
    return case


def _zero_frame_backchannel(tmp: Path):
    t = write_tree(tmp / "t", [FixtureSample(BC, "1", 3.0, None, [("mm", 1.0, 1.2)])])
    wav = t / BC / "1" / "output.wav"
    sf.write(str(wav), np.zeros(0, np.float32), 16000, subtype="PCM_16")
    from duplexeval.jsonio import sha256_file

    edit_manifest(t, lambda m: m["samples"][0]["files"].update({"output.wav": sha256_file(wav)}))
    (t / "icc_gt_distribution.json").write_text(json.dumps({"1": [0.5, 0.5]}))
    return ["fdb", "evaluate", t, "-q"], ("output.wav", f"sample {BC}/1")


def _grid(text: str, needle: str) -> Case:
    def case(tmp: Path):
        d = controller_data(tmp / "d")
        return (["controller", "calibrate", d, "--out", tmp / "p.json", "--pause-cutin-ceiling", "0.5", "--grid", text],
                ("--grid", needle))
    return case


def _rule(text: str) -> Case:
    def case(tmp: Path):
        return (["controller", "label", "--out", tmp / "o", "--conversations", conversations(tmp / "c", [CONV]),
                 "--rule", text], (f"--rule {text.split('=')[0]}", "finite"))
    return case


def _huge_conversation(tmp: Path):
    m = conversations(tmp / "c", [{**CONV, "duration_s": 1e12}])
    return ["controller", "label", "--out", tmp / "o", "--conversations", m], ("m.jsonl", "line 1", "duration_s")


def _dup_conversations(tmp: Path):
    m = conversations(tmp / "c", [CONV, CONV])
    return (["controller", "label", "--out", tmp / "o", "--conversations", m],
            ("m.jsonl", "line 2", "duplicate conversation id 'c1'"))


def _conv_problem(tmp: Path):
    m = conversations(tmp / "c", [CONV, {**CONV, "id": "c2", "duration_s": 2.0}])  # user speech runs to 2.5 s
    return (["controller", "label", "--out", tmp / "o", "--conversations", m],
            ("m.jsonl", "line 2", "conversation c2", "after the conversation end"))


def _conv_missing_audio(tmp: Path):
    m = conversations(tmp / "c", [{**CONV, "user_audio": "nope.wav"}])
    return (["controller", "label", "--out", tmp / "o", "--conversations", m],
            ("m.jsonl: line 1: conversation c1", "nope.wav", "not found"))


def _judge_timeout(tmp: Path):
    t = scored_tree(tmp / "t")
    return ["fdb", "evaluate", t, "--judge", "openai:timeout_s=-1", "-q"], ("timeout_s", "positive")


def _dup_pairs(tmp: Path):
    (tmp / "p.csv").write_text("id,true_turn_end_s,detector_commit_s\na,1,1.2\na,2,2.2\n")
    return ["eot", "score", tmp / "p.csv"], ("p.csv", "line 3", "duplicate id 'a'")


def _negative_pairs(tmp: Path):
    (tmp / "p.jsonl").write_text('{"true_turn_end_s": -1, "detector_commit_s": 1}\n')
    return ["eot", "score", tmp / "p.jsonl"], ("p.jsonl", "line 1", "true_turn_end_s is outside the accepted range")


def _empty_pairs(tmp: Path):
    (tmp / "p.csv").write_text("true_turn_end_s,detector_commit_s\n")
    return ["eot", "score", tmp / "p.csv"], ("p.csv", "no pairs")


def _empty_manifest(tmp: Path):
    t = scored_tree(tmp / "t")
    edit_manifest(t, lambda m: m.update(samples=[]))
    return ["fdb", "score", t], ("manifest.json", "no samples")


def _zero_clips(tmp: Path):
    d = controller_data(tmp / "d", lines=[])
    return ["controller", "evaluate", d], ("clips.jsonl", "no clips")


def _out_inside_dataset(tmp: Path):
    ds = synth_set(tmp / "ds")
    return (["fdb", "export", "--system", "silent", "--dataset", ds, "--out", ds / "tree", "-q"],
            ("--out", "lies inside the input --dataset"))


def _parakeet_without_nemo(tmp: Path):
    import importlib.util

    if importlib.util.find_spec("nemo") is not None:  # pragma: no cover - NeMo is an optional extra
        pytest.skip("NeMo is installed here")
    t = write_tree(tmp / "t", [FixtureSample(TT, "1", 5.0, turn_ann(1.0), None)], asr=False)
    return ["fdb", "asr", t, "--backend", "parakeet", "-q"], ("needs NeMo", "not installed")


def _usage(argv: list[object], needle: str) -> Case:
    def case(tmp: Path):
        return argv, (needle, "--help")
    return case


CASES: dict[str, Case] = {
    "renamed-subset-folder": _renamed_subset,
    "deleted-declared-sample": _deleted_sample,
    "id-trailing-newline-manifest": _id_newline_manifest,
    "id-trailing-newline-dataset": _id_newline_dataset,
    "id-trailing-newline-clip": _id_newline_clip,
    "id-trailing-newline-synth": _id_newline_synth,
    "import-stereo-without-channel": _stereo_import,
    "import-nan-inf-audio": _nan_import,
    "export-out-is-file": _out_is_file("export"),
    "import-out-is-file": _out_is_file("import"),
    "synth-out-is-file": _out_is_file("synth"),
    "label-out-is-file": _out_is_file("label"),
    "out-under-a-file": _out_under_file,
    "eot-json-is-dir": _json_is_dir("eot"),
    "controller-json-is-dir": _json_is_dir("evaluate-json"),
    "controller-rows-is-dir": _json_is_dir("evaluate-rows"),
    "calibrate-out-is-dir": _json_is_dir("calibrate"),
    "evaluate-summary-is-dir": _summary_is_dir,
    "absurd-T": _absurd_T,
    "absurd-pause-end": _absurd_pause_end,
    "absurd-word-time": _absurd_word,
    "absurd-eot-pair": _absurd_pairs,
    "subset-list-manifest": _subset_list_manifest,
    "subset-list-synth": _subset_list_synth,
    "npz-truncated": _npz("truncated"),
    "npz-is-npy": _npz("npy"),
    "npz-is-text": _npz("text"),
    "backchannel-zero-frames": _zero_frame_backchannel,
    "grid-zero-step": _grid("0.1:0.9:0", "step"),
    "grid-nan": _grid("nan", "finite"),
    "rule-nan": _rule("ipu_gap_s=NaN"),
    "rule-infinity": _rule("max_pause_s=Infinity"),
    "conversation-huge-duration": _huge_conversation,
    "conversation-duplicate-id": _dup_conversations,
    "conversation-error-names-line": _conv_problem,
    "conversation-missing-audio-names-line": _conv_missing_audio,
    "judge-timeout-negative": _judge_timeout,
    "eot-duplicate-ids": _dup_pairs,
    "eot-negative-time": _negative_pairs,
    "eot-empty-file": _empty_pairs,
    "manifest-no-samples": _empty_manifest,
    "controller-zero-clips": _zero_clips,
    "out-inside-dataset": _out_inside_dataset,
    "parakeet-without-nemo": _parakeet_without_nemo,
    "usage-limit-0": _usage(["fdb", "export", "--system", "silent", "--dataset", "demo", "--out", "x", "--limit", "0"],
                            "--limit"),
    "usage-jobs-negative": _usage(["fdb", "score", "x", "--jobs", "-1"], "--jobs"),
    "usage-unknown-option": _usage(["eot", "score", "x.csv", "--nope"], "--nope"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_exit_2(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, needles = CASES[name](tmp_path)
    if name == "import-broken-source":  # pragma: no cover - listed separately below
        return
    one_line_error(argv, capsys, *needles)


# ------------------------------------------------------------------ cases that must run, but record what they did


def test_copied_sample_journal_is_not_trusted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two identical inputs and a copied sample folder: each sample is listed once, under its own id."""
    ds = synth_set(tmp_path / "ds")
    out = tmp_path / "t"
    assert run(["fdb", "export", "--system", "silent", "--dataset", ds, "--out", out, "-q"], capsys)[0] == 0
    shutil.rmtree(out / TT / "2")
    shutil.copytree(out / TT / "1", out / TT / "2")  # inputs 1 and 2 are byte-identical, so the hashes match
    assert run(["fdb", "export", "--system", "silent", "--dataset", ds, "--out", out, "-q"], capsys)[0] == 0
    m = json.loads((out / "manifest.json").read_text())
    assert [(s["subset"], s["id"]) for s in m["samples"]] == [(P, "1"), (TT, "1"), (TT, "2")]
    trace = json.loads((out / TT / "2" / "trace.json").read_text())
    assert (trace["id"], trace["result"]["id"]) == ("2", "2")


def test_wrong_shape_journal_is_redone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = synth_set(tmp_path / "ds")
    out = tmp_path / "t"
    assert run(["fdb", "export", "--system", "silent", "--dataset", ds, "--out", out, "-q"], capsys)[0] == 0
    first = (out / "manifest.json").read_bytes()
    for body in ("[]", '{"run_sha256": 1, "result": []}'):
        (out / TT / "1" / "trace.json").write_text(body)
        code, stdout, err = run(["fdb", "export", "--system", "silent", "--dataset", ds, "--out", out, "-q"], capsys)
        assert code == 0 and "1 run, 2 reused" in stdout, err
        assert (out / "manifest.json").read_bytes() == first


@pytest.mark.parametrize("channel, pick",
                         [("0", lambda x: x[:, 0]), ("1", lambda x: x[:, 1]), ("mean", lambda x: x.mean(axis=1))])
def test_import_channel_choice_is_applied_and_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str], channel,
                                                       pick) -> None:
    ds = synth_set(tmp_path / "ds")
    outs = tmp_path / "outs"
    rng = np.random.default_rng(0)
    for wav in ds.rglob("input.wav"):
        rel = wav.parent.relative_to(ds)
        (outs / rel).mkdir(parents=True)
        sf.write(str(outs / rel / "output.wav"), (0.2 * rng.standard_normal((48000, 2))).astype(np.float32), 16000,
                 subtype="PCM_16")
    code, _o, err = (
        run(["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp_path / "t", "--channel", channel, "-q"],
            capsys))
    assert code == 0, err
    m = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert m["system"]["params"]["channel"] == (channel if channel == "mean" else int(channel))
    for s in m["samples"]:
        assert (s["eligible"] and s["import"]["channels"] == 2
                and s["import"]["channel"] == m["system"]["params"]["channel"])
    src, _ = sf.read(str(outs / TT / "1" / "output.wav"), dtype="float32", always_2d=True)
    got, _ = sf.read(str(tmp_path / "t" / TT / "1" / "output.wav"), dtype="float32")
    assert np.abs(got - pick(src)).max() <= 1 / 32768 + 1e-7


def test_import_stereo_refusal_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = synth_set(tmp_path / "ds")
    outs = outputs_for(ds, tmp_path / "outs")
    _wav(outs / TT / "2" / "output.wav", 3.0, channels=2)  # only the last sample is stereo
    one_line_error(["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp_path / "t", "-q"], capsys,
                   f"sample {TT}/2", "2 channels")
    assert not (tmp_path / "t").exists()


def test_import_bad_channel_is_a_usage_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = synth_set(tmp_path / "ds")
    outs = outputs_for(ds, tmp_path / "outs", channels=2)
    one_line_error(["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp_path / "t", "--channel", "left"],
                   capsys, "--channel", "'left'")
    one_line_error(["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp_path / "t", "--channel", "2"],
                   capsys, "--channel 2", "only 2 channels")


def test_broken_source_wav_is_ineligible_with_a_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, _ = _broken_source_wav(tmp_path)
    code, _o, err = run(argv, capsys)
    assert code == 0, err
    m = json.loads((tmp_path / "t" / "manifest.json").read_text())
    bad = [s for s in m["samples"] if not s["eligible"]]
    assert [(s["id"], s["reasons"]) for s in bad] == [("1", ["unreadable_output"])] and len(m["samples"]) == 3
    assert "cannot read output.wav" in bad[0]["import"]["error"]


def test_unreadable_source_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A source the user may not read (permission denied; simulated, since tests may run as root)."""
    from duplexeval.fdb import import_stage as imp

    ds = synth_set(tmp_path / "ds")
    outs = outputs_for(ds, tmp_path / "outs")
    real = imp.sha256_file

    def denied(path):
        if Path(path).name == "output.wav" and Path(path).parent.name == "2":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(imp, "sha256_file", denied)
    one_line_error(["fdb", "import", "--dataset", ds, "--outputs", outs, "--out", tmp_path / "t", "-q"], capsys,
                   str(outs / TT / "2" / "output.wav"), f"sample {TT}/2", "Permission denied")


def test_csv_with_a_utf8_bom_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "excel.csv"
    f.write_bytes("\ufefftrue_turn_end_s,detector_commit_s\n1.0,1.25\n".encode())
    code, _out, err = run(["eot", "score", f, "--json", tmp_path / "r.json"], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["score"]["n"] == 1


def test_fdb_help_lists_stages_in_pipeline_order_and_flags_have_no_type(capsys: pytest.CaptureFixture[str]) -> None:
    _code, out, _err = run(["fdb", "--help"], capsys)
    names = [line.split()[1] for line in out.splitlines() if line.startswith("│ ") and line.split()[1].isalpha()]
    stages = [n for n in names if n in ("synth", "export", "import", "asr", "evaluate", "score")]
    assert stages == ["synth", "export", "import", "asr", "evaluate", "score"], out
    for argv in (["fdb", "export", "--help"], ["controller", "label", "--help"], ["--help"]):
        _code, out, _err = run(argv, capsys)
        assert "<bool>" not in out and "--help" in out


def test_usage_errors_are_one_line_on_every_group(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, needle in ((["nope"], "nope"), (["fdb", "export"], "--system"), (["controller", "evaluate"], "'data'")):
        line = one_line_error(argv, capsys, needle)
        assert line.endswith("--help')")


def test_unwritable_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder without write permission (simulated through os.access, since root may write anywhere)."""
    from duplexeval import jsonio

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.geteuid() == 0:
        real = os.access
        monkeypatch.setattr(jsonio.os, "access", lambda p, mode: False if Path(p) == ro else real(p, mode))
    (tmp_path / "p.csv").write_text("true_turn_end_s,detector_commit_s\n1,1.2\n")
    one_line_error(["eot", "score", tmp_path / "p.csv", "--json", ro / "r.json"], capsys, str(ro), "not writable")
    one_line_error(["controller", "label", "--out", ro / "out", "--conversations",
                    conversations(tmp_path / "c", [CONV])], capsys, "not writable")
    assert not list(ro.iterdir())
