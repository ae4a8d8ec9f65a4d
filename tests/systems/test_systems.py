"""Runner, FIFO playout, registry and baseline behaviour (fast: energy VAD except where noted)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from duplexeval.audio import to_pcm16
from duplexeval.errors import InputError
from duplexeval.systems.base import CLEAR_QUEUE, ControlEvent, OutputChunk, SampleInfo
from duplexeval.systems.clock import VirtualClock, WallClock
from duplexeval.systems.playout import playout
from duplexeval.systems.registry import make_system, parse_system_spec
from duplexeval.systems.runner import ReceivedItem, run_session, run_session_async
from duplexeval.tts import synthesize
from tests.helpers import EXAMPLES
from tests.helpers.plugins import declare_entry_point

SR = 16000


def chunk(value: int, n: int, at: float, sr: int = SR) -> ReceivedItem:
    return ReceivedItem("audio", at, at, sr, np.full(n, value, dtype=np.int16))


def clear(at: float) -> ReceivedItem:
    return ReceivedItem(CLEAR_QUEUE, at, at)


# ---------------------------------------------------------------- playout


def test_playout_fifo_from_receipt_time_with_silent_gaps() -> None:
    pl = playout([chunk(1, 100, 160 / SR), chunk(2, 50, 168 / SR), chunk(3, 10, 400 / SR)], 1000)
    expected = np.zeros(1000, dtype=np.int16)
    expected[160:260] = 1
    expected[260:310] = 2  # queued behind the first chunk, not at its own receipt time
    expected[400:410] = 3
    assert np.array_equal(pl.audio, expected)
    assert pl.stats.first_playout_s == 0.01 and pl.stats.cropped_at_T_s == 0.0
    assert pl.stats.playing_at_T is False


def test_playout_clear_queue_stops_playback_and_drops_queued_audio() -> None:
    pl = playout([chunk(1, 1000, 0.0), chunk(2, 1000, 0.0), clear(320 / SR), chunk(3, 10, 500 / SR)], 3000)
    expected = np.zeros(3000, dtype=np.int16)
    expected[:320] = 1
    expected[500:510] = 3  # after the clear, new audio plays from its receipt time
    assert np.array_equal(pl.audio, expected)
    assert pl.stats.dropped_by_clear_s == (2000 - 320) / SR
    assert pl.stats.clear_queue_events == 1


def test_playout_crops_at_T_and_excludes_audio_received_after_T() -> None:
    pl = playout([chunk(1, 300, 900 / SR), chunk(2, 10, 1001 / SR)], 1000)
    assert pl.audio.shape == (1000,) and np.all(pl.audio[900:] == 1)
    assert pl.stats.cropped_at_T_s == 200 / SR
    assert pl.stats.playing_at_T is True
    assert pl.stats.received_after_T == 1


def test_playout_resamples_24k_chunks_to_16k() -> None:
    t = np.arange(24000) / 24000
    tone = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)
    pl = playout([ReceivedItem("audio", 0.5, 0.5, 24000, tone)], 32000)
    assert not np.any(pl.audio[:8000])
    (p,) = pl.placements
    assert (p.start, p.end) == (8000, 24000)
    assert np.sqrt(np.mean(pl.audio[8000:24000].astype(float) ** 2)) == pytest.approx(8000 / np.sqrt(2), rel=0.01)
    assert not np.any(pl.audio[24000:])
    assert pl.stats.played_s == pytest.approx(1.0, abs=0.002)


def test_playout_of_nothing_is_exact_silence() -> None:
    pl = playout([], 12345)
    assert pl.audio.shape == (12345,) and not np.any(pl.audio) and pl.stats.silent is True


# ---------------------------------------------------------------- runner


@dataclass
class Echo:
    """Emits each input frame back `delay` seconds after the frame ends (a perfect delay line)."""

    delay: float = 0.2
    name: str = "echo"

    def params(self) -> dict:
        return {"delay": self.delay}

    def version(self) -> str:
        return "test"

    async def open_session(self, info: SampleInfo) -> Echo._S:
        return Echo._S(self.delay)

    class _S:
        def __init__(self, delay: float) -> None:
            self.delay, self.out = delay, []

        async def push_input(self, frame: bytes, t_s: float) -> None:
            self.out.append(OutputChunk(frame, SR, t_s + 0.08 + self.delay))

        async def poll_output(self, t_s: float) -> list:
            ready = [c for c in self.out if c.emitted_at_s <= t_s]
            self.out = [c for c in self.out if c.emitted_at_s > t_s]
            return ready

        async def close(self) -> None:
            pass


def _noise(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-3000, 3000, size=n).astype(np.int16)


def test_runner_virtual_clock_gives_an_exact_delay_line() -> None:
    n = 16000 + 333  # not a whole number of frames: the last frame is zero-padded
    x = _noise(n)
    info = SampleInfo("candor_turn_taking", "1", n / SR, n)
    trace = run_session(Echo(0.2), x, info)
    assert trace.error is None and trace.pad_samples == 13 * 1280 - n and trace.n_frames == 13
    out = playout(trace.items, n).audio
    shift = int(round(0.28 * SR))
    assert np.array_equal(out[shift:], x[: n - shift])
    assert not np.any(out[:shift])
    # receipt time equals emission time on the virtual clock
    assert all(abs(it.received_at_s - it.emitted_at_s) < 1e-9 for it in trace.items)


class _Broken(Echo):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    async def open_session(self, info: SampleInfo):  # noqa: ANN201
        mode = self.mode

        class S(Echo._S):
            async def push_input(self, frame: bytes, t_s: float) -> None:
                if mode == "raise" and t_s >= 0.4:
                    raise RuntimeError("model crashed\nbadly")
                await super().push_input(frame, t_s)

            async def poll_output(self, t_s: float) -> list:
                if mode == "future":
                    return [OutputChunk(b"\0\0", SR, t_s + 1.0)]
                if mode == "odd":
                    return [OutputChunk(b"\0", SR, t_s)]
                if mode == "event":
                    return [ControlEvent("explode", t_s)]
                return await super().poll_output(t_s)

        return S(0.0)


@pytest.mark.parametrize(
    ("mode", "message"),
    [("raise", "RuntimeError: model crashed badly"), ("future", "returned by a poll"), ("odd", "whole PCM16"),
     ("event", "unknown control event")],
)
def test_runner_records_system_errors_instead_of_raising(mode: str, message: str) -> None:
    n = 16000
    trace = run_session(_Broken(mode), _noise(n), SampleInfo(None, None, 1.0, n))
    assert trace.error is not None and message in trace.error
    assert trace.error_at_s is not None and 0.0 <= trace.error_at_s <= 1.0


def test_runner_on_wall_clock_paces_frames_in_real_time() -> None:
    n = 6400  # 0.4 s
    clock = WallClock()
    trace = asyncio.run(run_session_async(Echo(0.0), _noise(n), SampleInfo(None, None, 0.4, n), clock))
    assert trace.error is None and trace.clock == "wall"
    assert trace.max_send_lateness_s < 0.08
    assert all(it.received_at_s >= it.emitted_at_s - 1e-9 for it in trace.items)


def test_virtual_clock_never_goes_back() -> None:
    c = VirtualClock()
    asyncio.run(c.sleep_until(2.0))
    asyncio.run(c.sleep_until(1.0))
    assert c.now() == 2.0


# ---------------------------------------------------------------- registry


def test_registry_parses_typed_params_and_keeps_commas_in_text() -> None:
    s = make_system("turn-based:silence_ms=700,text=hello, world,think_ms=0,threshold=0.6")
    p = s.params()
    assert (p["silence_ms"], p["text"], p["think_ms"], p["threshold"]) == (700, "hello, world", 0, 0.6)
    assert parse_system_spec("silent") == ("silent", {})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown system 'nope' (known: silent, turn-based, talk-over, backchannel, openai-realtime, ws-pcm, "
                 "loopback, moshi, native-duplex, telephony, pipecat-ws, webrtc, pipecat)"),
        ("turn-based:foo=1", "turn-based has no parameter 'foo'"),
        ("turn-based:silence_ms=fast", "silence_ms='fast' is not a valid int"),
        ("turn-based:silence_ms", "expected key=value"),
        ("turn-based:vad=webrtc", "vad must be one of silero, energy"),
        ("talk-over:pause_ms=-5", "pause_ms must be between 0 and 60000"),
        ("backchannel:ack_text= ", "ack_text must not be empty"),
        ("turn-based:threshold=nan", "is not a valid float"),
        ("turn-based:think_ms=1,think_ms=2", "think_ms given twice"),
        ("turn-based:voice=xx-nope", "espeak-ng has no voice 'xx-nope'"),
    ],
)
def test_registry_errors_are_one_clear_line(spec: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        make_system(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_every_baseline_records_its_params_and_version() -> None:
    for name in ("silent", "turn-based", "talk-over", "backchannel"):
        s = make_system(name)
        assert s.name == name and isinstance(s.params(), dict)
        assert s.version().startswith("duplexeval ")


# ---------------------------------------------------------------- baselines (energy VAD: fast, exact)


def _user(text: str, lead: float = 0.4, tail: float = 4.0, voice: str = "en-us") -> tuple[np.ndarray, float]:
    sp = synthesize(text, voice=voice)
    audio = np.concatenate([np.zeros(int(lead * SR), np.float32), sp.audio, np.zeros(int(tail * SR), np.float32)])
    return audio, lead + sp.words[-1].end_s


def _run(spec: str, audio: np.ndarray):  # noqa: ANN202
    n = len(audio)
    trace = run_session(make_system(spec), to_pcm16(audio), SampleInfo("candor_turn_taking", "1", n / SR, n))
    assert trace.error is None
    return trace, playout(trace.items, n)


def test_silent_never_emits() -> None:
    audio, _ = _user("Hello, is anybody there?")
    trace, pl = _run("silent", audio)
    assert trace.items == [] and pl.stats.silent is True


@pytest.mark.parametrize(("silence_ms", "think_ms"), [(500, 200), (800, 0), (300, 400)])
def test_turn_based_answers_silence_plus_think_after_the_user_stops(silence_ms: int, think_ms: int) -> None:
    audio, E = _user("What is the weather going to be like tomorrow?")
    trace, pl = _run(f"turn-based:vad=energy,silence_ms={silence_ms},think_ms={think_ms}", audio)
    audio_items = [it for it in trace.items if it.kind == "audio"]
    assert len(audio_items) == 1
    lag = audio_items[0].received_at_s - E - (silence_ms + think_ms) / 1000
    # energy VAD: the last voiced 32 ms frame ends within a frame of the last word's end
    assert -0.032 <= lag <= 0.064, lag


def test_turn_based_yields_barge_in_ms_after_the_user_talks_over_it() -> None:
    first, E = _user("Tell me a story.", tail=2.0)
    second = synthesize("No wait, stop, stop right there please.").audio
    audio = np.concatenate([first, second, np.zeros(3 * SR, np.float32)])
    user_back = len(first) / SR
    trace, pl = _run("turn-based:vad=energy,barge_in_ms=150", audio)
    clears = [it for it in trace.items if it.kind == CLEAR_QUEUE]
    assert len(clears) == 1
    detected = clears[0].detail["detected_at_s"]
    assert clears[0].received_at_s == pytest.approx(detected + 0.150, abs=1e-6)
    assert user_back <= detected <= user_back + 0.35
    stop = int(round(clears[0].received_at_s * SR))
    assert np.any(pl.audio[stop - 800 : stop]) and not np.any(pl.audio[stop : stop + 4000])
    assert pl.stats.dropped_by_clear_s > 1.0


def test_talk_over_starts_in_the_first_short_pause_and_never_yields() -> None:
    first = synthesize("Well, I was thinking, maybe we could go out tonight and see a film.").audio
    audio = np.concatenate([np.zeros(6400, np.float32), first, np.zeros(2 * SR, np.float32), first,
                            np.zeros(3 * SR, np.float32)])
    E = 0.4 + len(first) / SR
    trace, pl = _run("talk-over:vad=energy", audio)
    assert not any(it.kind == CLEAR_QUEUE for it in trace.items)
    assert trace.items[0].received_at_s < E - 1.0  # an early start, inside the user's turn
    assert pl.stats.dropped_by_clear_s == 0.0


def test_backchannel_acknowledges_pauses_then_takes_the_turn() -> None:
    a = synthesize("So I went to the shop").audio
    b = synthesize("and they had no bread left at all").audio
    gap = np.zeros(int(0.6 * SR), np.float32)
    audio = np.concatenate([np.zeros(6400, np.float32), a, gap, b, np.zeros(4 * SR, np.float32)])
    trace, pl = _run("backchannel:vad=energy,ack_pause_ms=300,silence_ms=1200", audio)
    audio_items = [it for it in trace.items if it.kind == "audio"]
    ack_len = len(synthesize("yeah", rate=170).audio)
    assert audio_items[0].n_samples == ack_len  # the acknowledgment in the 0.6 s pause
    assert 0.4 + len(a) / SR < audio_items[0].received_at_s < 0.4 + len(a) / SR + 0.6
    assert audio_items[-1].n_samples > 5 * SR  # then the full reply after the final silence


def test_turn_based_with_silero_vad_answers_close_to_silence_plus_think() -> None:
    audio, E = _user("Could you tell me what the weather will be like tomorrow in Paris?")
    trace, _ = _run("turn-based", audio)
    first = next(it for it in trace.items if it.kind == "audio")
    lag = first.received_at_s - E - 0.7
    assert 0.0 <= lag <= 0.2, lag  # Silero's probabilities fall some tens of ms after the last word


def test_user_speech_hysteresis_on_hand_made_probabilities() -> None:
    from duplexeval.systems.listener import UserSpeech

    u = UserSpeech(threshold=0.5, min_speech_ms=96, release_ms=100)  # 3 frames to confirm, 100 ms to release
    probs = [0.1, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.4, 0.4, 0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9]
    onsets = [(i, o) for i, p in enumerate(probs) if (o := u.update(p)) is not None]
    # a 2-frame run is not speech; the 3-frame run from frame 4 is (confirmed at the end of frame 6);
    # 0.4 keeps it going (>= 0.35); after 4 frames (128 ms) below 0.35 it is released; frame 13 starts a new one
    assert [(i, round(o.start_s, 3), round(o.detected_at_s, 3)) for i, o in onsets] == [
        (6, 0.128, 0.224), (15, 0.416, 0.512)]
    assert u.speaking and u.last_voice_end == pytest.approx(0.512)
    assert u.silence_s(0.6) == pytest.approx(0.088)


def test_wall_clock_records_late_input_pacing_of_a_slow_system() -> None:
    class Slow(Echo):
        async def open_session(self, info: SampleInfo):  # noqa: ANN201
            class S(Echo._S):
                async def push_input(self, frame: bytes, t_s: float) -> None:
                    if t_s == 0.0:
                        await asyncio.sleep(0.25)  # blocks the sender: the next frames go out late
                    await super().push_input(frame, t_s)

            return S(0.0)

    n = 6400
    trace = asyncio.run(run_session_async(Slow(), _noise(n), SampleInfo(None, None, 0.4, n), WallClock()))
    assert trace.error is None and trace.max_send_lateness_s > 0.08


def test_registering_a_system_keeps_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval.systems.registry import SYSTEMS, register_system, system_names

    @dataclass(frozen=True)
    class Custom:
        gain: float = 1.0
        name: str = "custom-test"

        def params(self) -> dict[str, float]:
            return {"gain": self.gain}

        def version(self) -> str:
            return "custom 1"

        async def open_session(self, info: SampleInfo) -> None:
            raise NotImplementedError

    SYSTEMS.names()  # the built-ins are registered first
    monkeypatch.setattr(SYSTEMS, "_items", dict(SYSTEMS._items))  # the registration ends with the test
    register_system("custom-test", Custom)
    assert "turn-based" in system_names() and system_names()[-1] == "custom-test"
    assert make_system("custom-test:gain=0.5").gain == 0.5
    with pytest.raises(ValueError, match="already registered"):
        register_system("custom-test", dataclass(frozen=True)(type("Other", (), {})))


def test_systems_list_names_each_built_in_s_kind(capsys: pytest.CaptureFixture[str]) -> None:
    """`pipecat` runs pipecat-ai's pipeline in this process: in-process, though imported on first use."""
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as ex:
        main(["systems", "list"])
    assert ex.value.code in (0, None)
    lines = capsys.readouterr().out.splitlines()
    assert "pipecat  (in-process)" in lines and "turn-based  (in-process)" in lines
    assert "openai-realtime  (network adapter)" in lines and "pipecat-ws  (network adapter)" in lines


def test_a_system_published_by_an_installed_package_is_usable_by_name(tmp_path: Path) -> None:
    """A distribution whose entry points declare `[duplexeval.systems] echo = in_process_system:EchoAgent`: the
    command line lists it and builds it by name with typed parameters; a broken entry point is one line."""
    env = declare_entry_point(tmp_path, "echo-agent", "duplexeval.systems", "echo", "in_process_system:EchoAgent")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(EXAMPLES)])
    listed = subprocess.run([sys.executable, "-m", "duplexeval", "systems", "list"], capture_output=True, text=True,
                            env=env, check=False)
    assert listed.returncode == 0, listed.stderr
    assert "echo  (installed plugin, entry point duplexeval.systems)" in listed.stdout.splitlines()
    code = ("from duplexeval.systems import make_system; s = make_system('echo:silence_ms=600'); "
            "print(type(s).__module__, type(s).__name__, s.silence_ms, s.params()['silence_ms'])")
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert built.returncode == 0, built.stderr
    assert built.stdout.split() == ["in_process_system", "EchoAgent", "600", "600"]
    bad = subprocess.run([sys.executable, "-c", code.replace("silence_ms=600", "silence_ms=soon")], capture_output=True,
                         text=True, env=env, check=False)
    assert "silence_ms='soon' is not a valid int" in bad.stderr

    broken = tmp_path / "broken"
    broken.mkdir()
    env = declare_entry_point(broken, "broken-agent", "duplexeval.systems", "broken", "no_such_module:Agent")
    run = subprocess.run([sys.executable, "-m", "duplexeval", "fdb", "export", "--system", "broken", "--dataset",
                          str(tmp_path / "nowhere"), "--out", str(tmp_path / "t")], capture_output=True, text=True,
                         env=env, check=False)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "broken" in run.stderr and "no_such_module" in run.stderr
