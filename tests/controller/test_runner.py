"""Streaming runner: forcing conventions, frame levels, output checks, and the two baselines."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.controller.format.data import STATES
from duplexeval.controller.runtime import baselines
from duplexeval.controller.runtime.runner import Controller, frame_level_db, load_controller, run, split_frames
from duplexeval.errors import InputError

LISTEN, HOLD, SPEAK = 0, 1, 2


class Recorder:
    """Records what the runner feeds it; outputs depend on the inputs so the passes can be told apart."""

    def __init__(self):
        self.calls = []
        self.resets = 0

    def reset(self):
        self.resets += 1

    def step(self, user, agent, prev_state):
        self.calls.append((float(np.abs(user).max()), float(np.abs(agent).max()), prev_state, user.shape, user.dtype))
        p = np.zeros(4)
        p[prev_state] = 1.0
        return {"state_probs": p, "endpoint": float(np.abs(agent).max()), "yield": float(prev_state),
                "backchannel": 0.5}  # fmt: skip


def test_forcing_conventions():
    n = 5
    user = np.zeros(n * 1280 - 100, dtype=np.float32)  # last frame zero-padded
    user[::1280] = 0.25
    agent = np.full(n * 1280, 0.5, dtype=np.float32)
    truth = np.array([LISTEN, HOLD, SPEAK, SPEAK, 3], dtype=np.int8)
    c = Recorder()
    assert isinstance(c, Controller)
    res = run(c, user, agent, n, truth)
    assert c.resets == 2 and len(c.calls) == 2 * n
    state_pass, listen_pass = c.calls[:n], c.calls[n:]
    # state pass: real playback, previous state teacher-forced (LISTEN before frame 0)
    assert [x[2] for x in state_pass] == [LISTEN, LISTEN, HOLD, SPEAK, SPEAK]
    assert all(x[1] == 0.5 for x in state_pass)
    # listen pass: LISTEN forced, playback silent
    assert [x[2] for x in listen_pass] == [LISTEN] * n and all(x[1] == 0.0 for x in listen_pass)
    assert all(x[3] == (1280,) and x[4] == np.float32 for x in c.calls)
    assert res.yield_.tolist() == [0, 0, 1, 2, 2]
    assert res.endpoint.tolist() == [0.0] * n  # endpoint comes from the listen pass (silent agent)
    assert res.state_probs.shape == (n, 4) and res.state_probs[2].tolist() == [0, 1, 0, 0]
    assert res.backchannel.tolist() == [0.5] * n


def test_without_truth_only_listen_pass():
    c = Recorder()
    res = run(c, np.zeros(1280 * 3, np.float32), None, 3, None)
    assert len(c.calls) == 3 and res.state_probs is None and res.yield_ is None and res.endpoint is not None


def test_bad_outputs_name_the_frame():
    class Bad:
        def reset(self):
            pass

        def step(self, user, agent, prev):
            return {"endpoint": float("nan")}

    with pytest.raises(InputError, match="listen pass frame 0: endpoint is not finite"):
        run(Bad(), np.zeros(1280), None, 1)

    class Short:
        def reset(self):
            pass

        def step(self, user, agent, prev):
            return {"state_probs": [1, 0, 0]}

    with pytest.raises(InputError, match="state_probs must be 4"):
        run(Short(), np.zeros(1280), None, 1, np.zeros(1, np.int8))


def test_frame_level_db():
    a = np.zeros(1280 * 3, dtype=np.float32)
    a[1280:2560] = 0.1  # constant 0.1: RMS 0.1 -> -20 dBFS
    t = np.arange(1280) / 16000
    a[2560:] = np.sin(2 * np.pi * 500 * t)  # full-scale sine: RMS 1/sqrt(2) -> -3.01 dB
    db = frame_level_db(a)
    assert db[0] == -np.inf and db[1] == pytest.approx(-20.0, abs=1e-4) and db[2] == pytest.approx(-3.0103, abs=1e-3)
    assert frame_level_db(a[:1300]).shape == (2,) and split_frames(a[:1300]).shape == (2, 1280)


def test_silence_baseline_streaming_equals_vectorised():
    rng = np.random.default_rng(3)
    voiced = rng.random(300) < 0.4
    voiced[:5] = False
    audio = np.where(np.repeat(voiced, 1280), 0.1, 0.0).astype(np.float32)
    c = baselines.SilenceTimeoutController(timeout_s=0.4)
    res = run(c, audio, None, 300)
    assert np.allclose(res.endpoint, baselines.silence_timeout_scores(voiced, 0.4))
    assert res.endpoint[:5].tolist() == [0] * 5  # nothing heard yet
    c.reset()
    playing = rng.random(300) < 0.5
    agent = np.where(np.repeat(playing, 1280), 0.2, 0.0).astype(np.float32)
    ys = [c.step(f, g, 0)["yield"] for f, g in zip(split_frames(audio), split_frames(agent))]
    assert np.allclose(ys, baselines.voiced_run_scores(voiced, 0.24, playing))
    assert max(ys) == 1.0 and min(ys) == 0.0


def test_silence_baseline_hand_values():
    v = np.array([0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0], dtype=bool)
    s = baselines.silence_timeout_scores(v, 0.32)  # 4 silent frames reach 1.0
    assert s.tolist() == pytest.approx([0, 0, 0, 0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 0, 0.25])
    y = baselines.voiced_run_scores(v, 0.24)
    assert y.tolist() == pytest.approx([0, 1 / 3, 2 / 3, 0, 0, 0, 0, 0, 0, 1 / 3, 0])
    playing = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)
    assert baselines.voiced_run_scores(v, 0.24, playing).tolist() == pytest.approx([0, 0, 2 / 3] + [0] * 6 + [1 / 3, 0])
    with pytest.raises(InputError):
        baselines.make("silence", timeout_s=0)
    with pytest.raises(InputError, match="unknown baseline"):
        baselines.make("nope")


def test_state_output_of_baseline():
    c = baselines.SilenceTimeoutController(timeout_s=0.16)
    loud, quiet = np.full(1280, 0.1, np.float32), np.zeros(1280, np.float32)
    states = [STATES[int(np.argmax(c.step(u, a, 0)["state_probs"]))] for u, a in
              [(loud, quiet), (quiet, quiet), (quiet, quiet), (quiet, loud)]]  # fmt: skip
    assert states == ["LISTEN", "HOLD", "LISTEN", "SPEAK"]


def test_silero_baseline_on_speech():
    from duplexeval.tts import synthesize

    sp = synthesize("hello there, how are you doing today", rate=170)
    audio = np.concatenate([np.zeros(8000, np.float32), sp.audio, np.zeros(32000, np.float32)])
    n = -(-audio.size // 1280)
    c = load_controller("baseline:silero", {"timeout_s": 0.5})
    res = run(c, audio, None, n)
    end_s = 0.5 + sp.words[-1].end_s
    first_full = int(np.argmax(res.endpoint >= 1.0))
    # full score 0.5 s of VAD silence after the speech end, plus Silero's release lag (< 0.4 s)
    assert end_s + 0.5 <= (first_full + 1) * 0.08 <= end_s + 0.5 + 0.4
    assert res.endpoint[: int(0.5 / 0.08)].max() == 0.0  # leading silence: nothing heard, no endpoint
    assert res.backchannel.max() == 0.0


def test_load_controller_specs(tmp_path, monkeypatch):
    (tmp_path / "myctl.py").write_text(
        "class C:\n    def __init__(self, k=1):\n        self.k = k\n    def reset(self):\n        pass\n"
        "    def step(self, u, a, p):\n        return {'endpoint': self.k}\n"
        "INSTANCE = C(3)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_controller("myctl:C", {"k": 2}).k == 2
    assert load_controller("myctl:INSTANCE").k == 3
    with pytest.raises(InputError, match="has no"):
        load_controller("myctl:D")
    with pytest.raises(InputError, match="expected"):
        load_controller("myctl")
    with pytest.raises(InputError, match="not found"):
        load_controller(str(tmp_path / "x.onnx"))


def test_unlabelled_previous_frame_forces_listen():
    c = Recorder()
    run(c, np.zeros(1280 * 3, np.float32), None, 3, np.array([2, -1, 1], np.int8))
    assert [x[2] for x in c.calls[:3]] == [LISTEN, SPEAK, LISTEN]
    with pytest.raises(InputError, match="truth_state has 2 frames"):
        run(c, np.zeros(1280 * 3, np.float32), None, 3, np.array([0, 0], np.int8))
