"""`duplexeval serve pipecat --turn smart-turn --stop-secs 0.5 --allow-interruptions false` over telephony: the
options reach pipecat's turn stack. The bot announces them; it answers only after VAD's 0.5 s stop and the
think time; and with interruptions off pipecat sends no `clear` at all (with them on it sends one at every
user-turn start, tests/systems/pipecat/test_bot_e2e.py) and keeps talking while the user speaks over its reply."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("pipecat")

from duplexeval.audio import to_pcm16  # noqa: E402
from duplexeval.systems.base import SampleInfo  # noqa: E402
from duplexeval.systems.net.trace import verdict  # noqa: E402
from duplexeval.systems.pipecat.process import BotProcess  # noqa: E402
from duplexeval.systems.pipecat.stack import BotConfig  # noqa: E402
from duplexeval.systems.registry import make_system  # noqa: E402
from duplexeval.tts import synthesize  # noqa: E402

SR = 16000
T = 10.0
FIRST_AT = 0.4
SECOND = (6.0, 7.6)  # the user talks over the bot's reply (about 7 s long, from about 3.3 s)


def _speech(text: str) -> np.ndarray:
    return to_pcm16(synthesize(text, voice="en-us", rate=170).audio)


def _input() -> tuple[np.ndarray, float]:
    """The user's two utterances, and where the first one's speech really ends (espeak pads with silence)."""
    pcm = np.zeros(int(T * SR), dtype=np.int16)
    first = _speech("hello there, how are you doing today?")
    i = int(FIRST_AT * SR)
    pcm[i : i + first.shape[0]] = first
    loud = np.flatnonzero(np.abs(first.astype(np.int32)) > 300)
    end = FIRST_AT + (loud[-1] + 1) / SR
    second = _speech("wait, I have one more question for you about that")[: int((SECOND[1] - SECOND[0]) * SR)]
    j = int(SECOND[0] * SR)
    pcm[j : j + second.shape[0]] = second
    return pcm, end


def test_the_turn_options_reach_pipecat() -> None:
    cfg = BotConfig(transport="telephony", turn="smart-turn", stop_secs=0.5, allow_interruptions=False)
    pcm, end = _input()
    with BotProcess(cfg, warm=1) as bot:
        system = make_system(bot.client("stall_s=5"))
        trace = asyncio.run(run(system, pcm))
        log = bot.stderr_tail()
    reasons = set(verdict(trace.wire.records, T, 5.0).reasons)
    records = [r.to_json() for r in trace.wire.records]
    if reasons == {"input_pacing_late"}:  # the shared machine starved the call: its timing says nothing of the bot
        pytest.skip("the call was starved by the machine's load (input_pacing_late)")
    assert reasons == set(), f"{reasons}\n{log}"
    audio = sorted(r["t"] for r in records if r["dir"] == "recv" and "audio" in r)
    assert audio, f"no reply\n{log}"
    # VAD decides the user stopped 0.5 s after the speech, then Smart Turn, then the responder's 0.3 s
    assert audio[0] > end + 0.5 + 0.3 - 0.05, (audio[0], end)
    assert [r for r in records if r.get("control") == "clear_queue"] == []  # interruptions off: never a clear
    a, b = SECOND[0] + 0.4, SECOND[1]
    over = sum(r["audio"][1] / 2 / r["audio"][2] for r in records
               if r["dir"] == "recv" and "audio" in r and a <= r["t"] <= b)
    assert over >= 0.8 * (b - a), over  # its audio kept coming, at real time, while the user spoke over it
    assert "(telephony, smart-turn stop_secs=0.5, interruptions off, think 300 ms, 8000 Hz)" in bot.announced


async def run(system, pcm):  # noqa: ANN001, ANN201
    from duplexeval.systems.runner import run_session_async

    return await run_session_async(system, pcm, SampleInfo("synthetic_user_interruption", "options", T, pcm.shape[0]))
