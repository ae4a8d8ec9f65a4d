"""Parity with the official scripts themselves, run from a local checkout named by FDB_REFERENCE_SOURCE.

Skipped unless FDB_REFERENCE_SOURCE points at a checkout of DanielLin94144/Full-Duplex-Bench (CC BY-NC,
never shipped with duplexeval). The official functions are imported from that checkout and run on a
copy of a tree of ours; their printed numbers must equal ours. The interruption judge is a fake
client on their side and a loopback server on ours, both answering from the request text, so the
prompt we build from the checkout is compared message for message. Backchannel runs the official
loop and JSD code with the VAD call answered by our Silero port (real silero_vad/torchaudio are
used instead when they are installed).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from duplexeval.fdb.official import evaluate
from duplexeval.fdb.official.judge_config import JudgeConfig
from tests.helpers.fdb import FixtureSample, interrupt_ann, pause_ann, place, turn_ann, write_tree

REF = os.environ.get("FDB_REFERENCE_SOURCE")
pytestmark = pytest.mark.skipif(
    not REF, reason="needs FDB_REFERENCE_SOURCE=<local checkout of DanielLin94144/Full-Duplex-Bench>"
)

PAUSE, TT, UI, BC = "synthetic_pause_handling", "candor_turn_taking", "synthetic_user_interruption", "icc_backchannel"


def eval_dir() -> Path:
    for sub in ("evaluation", "v1_v1.5/evaluation"):
        d = Path(REF or "") / sub
        if (d / "eval_pause_handling.py").is_file():
            return d
    pytest.fail(f"FDB_REFERENCE_SOURCE={REF} has no evaluation/eval_pause_handling.py")


def load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"_fdb_official_{name}", eval_dir() / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def printed(fn, *args) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        fn(*args)
    return buf.getvalue()


def value(out: str, label: str) -> float:
    m = re.search(rf"^{re.escape(label)}:?\s+(\S+)\s*$", out, re.MULTILINE)
    assert m, f"{label!r} not printed:\n{out[-2000:]}"
    return float(m.group(1))


def random_words(rng: np.random.Generator, t0: float, null_last: bool = False) -> list:
    n = int(rng.integers(0, 7))
    words, t = [], t0 + float(rng.uniform(-1.0, 3.0))
    for i in range(n):
        d = float(rng.choice([0.08, 0.16, 0.24, 0.4]))
        words.append((f"w{i}", round(t, 2), round(t + d, 2)))
        t += d + float(rng.choice([0.0, 0.08, 0.3]))
    if words and null_last:
        words[-1] = (words[-1][0], words[-1][1], None)
    return words


def parity_tree(root: Path) -> Path:
    rng = np.random.default_rng(20250611)
    samples = []
    for i in range(40):
        samples.append(
            FixtureSample(PAUSE, str(i), 6.0, pause_ann((2.0, 3.0)),
                          words=random_words(rng, 1.0, null_last=i % 7 == 3)))
    for i in range(40):
        E = round(float(rng.uniform(2.0, 4.0)), 2)
        samples.append(FixtureSample(TT, str(i), 10.0, turn_ann(E), words=random_words(rng, E)))
    for i in range(30):
        R = round(float(rng.uniform(12.0, 14.0)), 3)
        words = [w for w in random_words(rng, R + 0.8) if w[1] >= R]
        samples.append(
            FixtureSample(UI, str(i), 28.0, interrupt_ann(R - 2.5, R, f"context {i}", f"interrupt {i}"), words=words))
    return write_tree(root, samples)


def fake_rating(user_text: str) -> str:
    n = sum(map(ord, user_text)) % 6
    if n == 5 and "w3" in user_text:
        n = 2
    return f"Analysis: deterministic.\nI would rate the AI's response as {n}"


def test_pause_turn_taking_interruption_match_the_official_scripts(tmp_path, monkeypatch):
    from tests.helpers.judge import ScriptedServer

    root = parity_tree(tmp_path / "ours")
    copy = tmp_path / "theirs"
    shutil.copytree(root, copy)

    for var in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PARITY_KEY", "k")
    script = [("fn", lambda body: fake_rating(body["messages"][1]["content"]))] * 100
    with ScriptedServer(script) as srv:
        ours = evaluate(root, judge=JudgeConfig(base_url=srv.url, api_key_env="PARITY_KEY", reference_source=REF),
                        progress=False)
    ours_msgs = {r["body"]["messages"][1]["content"]: r["body"]["messages"] for r in srv.requests}

    out = printed(load("eval_pause_handling").eval_pause_handling, str(copy / PAUSE))
    assert value(out, "Average take turn") == ours["subsets"][PAUSE]["metrics"]["Average take turn"]["value"]

    out = printed(load("eval_smooth_turn_taking").eval_smooth_turn_taking, str(copy / TT))
    m = ours["subsets"][TT]["metrics"]
    assert value(out, "Average take turn") == m["Average take turn"]["value"]
    assert value(out, "Average latency") == pytest.approx(m["Average latency"]["value"], abs=1e-12)

    their_msgs = []

    def create(model, messages, seed):
        assert (model, seed) == ("gpt-4-turbo", 0)
        their_msgs.append(messages)
        content = fake_rating(messages[1]["content"])
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=content))])

    client = types.SimpleNamespace(chat=types.SimpleNamespace(completions=types.SimpleNamespace(create=create)))
    out = printed(load("eval_user_interruption").eval_user_interruption, str(copy / UI), client)
    m = ours["subsets"][UI]
    assert m["judge"]["label"] == "official"
    assert value(out, "Average rating") == pytest.approx(m["metrics"]["Average rating"]["value"], abs=1e-12)
    assert value(out, "Average take turn") == m["metrics"]["Average take turn"]["value"]
    assert value(out, "Average latency") == pytest.approx(m["metrics"]["Average latency"]["value"], abs=1e-12)
    assert len(their_msgs) == len(ours_msgs) > 0
    for msgs in their_msgs:  # the prompt read from the checkout is sent byte for byte
        assert ours_msgs[msgs[1]["content"]] == msgs


def test_backchannel_matches_the_official_script(tmp_path, monkeypatch):
    from duplexeval import tts, vad

    yeah = tts.synthesize("yeah").audio
    mhm = tts.synthesize("right okay").audio
    short_turn = tts.synthesize("tell me more about that").audio  # about 1.5 s: a turn that is not long
    long = tts.synthesize("that is a really interesting point and I would like to hear more about it").audio
    layouts = [
        [(1.0, yeah), (3.0, long), (9.5, yeah)],
        [(1.0, yeah), (2.5, mhm), (4.0, yeah)],
        [(0.5, long)],
        [],
        [(2.0, yeah), (4.0, mhm), (5.5, mhm)],
        [(1.0, yeah), (3.0, short_turn), (6.0, yeah)],  # order dependence: the turn erases the first (2025-06)
        [(1.0, yeah), (3.0, yeah), (6.0, short_turn)],  # ... and the last segment decides the TOR
    ]
    samples = []
    for i, pieces in enumerate(layouts):
        words = ([("yeah", s, s + 0.38) for s, a in pieces if a is yeah]
                 + [("right", s, s + 0.3) for s, a in pieces if a is mhm]
                 + [("okay", s + 0.35, s + 0.7) for s, a in pieces if a is mhm])
        words += [(w, s + 0.3 * k, s + 0.3 * k + 0.25) for s, a in pieces if a is short_turn
                  for k, w in enumerate("tell me more about that".split())]
        samples.append(
            FixtureSample(BC, str(i), 12.0, None, words=sorted(words, key=lambda w: w[1]), audio=place(12.0, pieces)))
    root = write_tree(tmp_path / "ours", samples)
    rng = np.random.default_rng(3)
    gt = {str(i): list(rng.dirichlet(np.ones(40 + 5 * i))) for i in range(len(layouts))}
    (root / "icc_gt_distribution.json").write_text(json.dumps(gt))
    copy = tmp_path / "theirs"
    shutil.copytree(root, copy)

    try:
        import silero_vad  # noqa: F401
        import torchaudio  # noqa: F401
    except ImportError:  # answer the official VAD call with our port (same model, same settings)
        import soundfile as sf

        def fake_load(path):
            data, sr = sf.read(path, dtype="float32", always_2d=True)
            return data.T, sr

        def fake_timestamps(wav, model, return_seconds=False):
            a = np.asarray(wav)[0]
            return [{"start": s, "end": e}
                    for s, e in vad.load_vad().segments_s(a, vad.OFFICIAL_SETTINGS, official_rounding=True)]

        monkeypatch.setitem(sys.modules, "silero_vad",
                            types.SimpleNamespace(load_silero_vad=lambda: None, get_speech_timestamps=fake_timestamps))
        monkeypatch.setitem(sys.modules, "torchaudio", types.SimpleNamespace(load=fake_load))

    by_rules = {r: evaluate(root, backchannel_rules=r, progress=False)["subsets"][BC] for r in ("2025-06", "2026-02")}
    assert by_rules["2025-06"]["samples"] != by_rules["2026-02"]["samples"]  # the tree exercises the difference
    module = "eval_backchannel"
    v10_code = re.search(r"if TOR == 1:\s*\n\s*backchannel_prediction = \[\]",
                         (eval_dir() / f"{module}.py").read_text())
    # the checkout holds one of the two loops (v1.0 at f582595, or HEAD's); compare the one it has
    for rules in ["2025-06" if v10_code else "2026-02"]:
        ours = by_rules[rules]
        monkeypatch.chdir(copy)  # the script opens ./icc_gt_distribution.json
        out = printed(load(module).eval_backchannel, str(copy / BC))
        their_jsd = sorted(float(x) for x in re.findall(r"^JSD: (\S+)$", out, re.MULTILINE))
        assert their_jsd == pytest.approx(sorted(r["jsd"] for r in ours["samples"]), abs=1e-12)
        m = ours["metrics"]
        for label, key in (("JSD", "JSD"), ("TOR", "TOR"), ("Frequency", "Frequency")):
            mm = re.search(rf"^{label} - Mean: (\S+) ± (\S+)$", out, re.MULTILINE)
            assert mm, out[-1500:]
            assert float(mm.group(1)) == pytest.approx(m[key]["value"], abs=5e-5)
            assert float(mm.group(2)) == pytest.approx(m[key]["std"], abs=5e-5)


def test_official_example_data(tmp_path, monkeypatch):
    """The three example samples of the checkout: ours and theirs agree, and match the notes (1.35 s, 4.08 s)."""
    import soundfile as sf

    from tests.helpers.judge import GOOD, ScriptedServer

    ex = eval_dir() / "example_data"
    spec = [
        (PAUSE, "pause_handling_example", "pause.json"),
        (TT, "smooth_turn_taking_example", "turn_taking.json"),
        (UI, "user_interruption_example", "interrupt.json"),
    ]
    samples = []
    for subset, folder, ann in spec:
        d = ex / folder / "1"
        chunks = json.loads((d / "output.json").read_text())["chunks"]
        T = sf.info(str(d / "input.wav")).duration
        words = [(c["text"], c["timestamp"][0], c["timestamp"][1]) for c in chunks]
        samples.append(FixtureSample(subset, "1", T, json.loads((d / ann).read_text()), words=words))
    root = write_tree(tmp_path / "ours", samples)
    copy = tmp_path / "theirs"
    shutil.copytree(root, copy)
    monkeypatch.setenv("PARITY_KEY", "k")
    for var in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(var, raising=False)
    with ScriptedServer([("good", GOOD)]) as srv:
        ours = evaluate(root, judge=JudgeConfig(base_url=srv.url, api_key_env="PARITY_KEY", reference_source=REF),
                        progress=False)
    s = ours["subsets"]
    assert s[TT]["metrics"]["Average take turn"]["value"] == 1.0
    assert s[TT]["metrics"]["Average latency"]["value"] == pytest.approx(1.35, abs=1e-9)
    assert s[UI]["metrics"]["Average latency"]["value"] == pytest.approx(4.08, abs=1e-9)
    assert s[UI]["metrics"]["Average rating"]["value"] == 4.0

    out = printed(load("eval_pause_handling").eval_pause_handling, str(copy / PAUSE))
    assert value(out, "Average take turn") == s[PAUSE]["metrics"]["Average take turn"]["value"]
    out = printed(load("eval_smooth_turn_taking").eval_smooth_turn_taking, str(copy / TT))
    assert value(out, "Average latency") == s[TT]["metrics"]["Average latency"]["value"]
    reply = types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=GOOD))])
    client = (
        types.SimpleNamespace(chat=types.SimpleNamespace(completions=types.SimpleNamespace(create=lambda **kw: reply))))
    out = printed(load("eval_user_interruption").eval_user_interruption, str(copy / UI), client)
    for label in ("Average rating", "Average take turn", "Average latency"):
        assert value(out, label) == s[UI]["metrics"][label]["value"]
