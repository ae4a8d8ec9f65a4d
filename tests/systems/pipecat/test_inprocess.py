"""The `pipecat` system: the reference bot's real pipecat pipeline in this process (no transport, no codec)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("pipecat")

from duplexeval.audio import to_pcm16  # noqa: E402
from duplexeval.errors import InputError  # noqa: E402
from duplexeval.systems.base import SampleInfo  # noqa: E402
from duplexeval.systems.registry import make_system  # noqa: E402
from duplexeval.systems.runner import run_session_async  # noqa: E402
from duplexeval.tts import synthesize  # noqa: E402

T = 5.0


def test_parameters_are_checked() -> None:
    with pytest.raises(InputError, match="turn must be one of vad, smart-turn"):
        make_system("pipecat:turn=llm")
    assert make_system("pipecat:stop_secs=0.5,allow_interruptions=false").params()["stop_secs"] == 0.5


def test_the_pipeline_answers_a_user_turn_in_process() -> None:
    speech = synthesize("hello there, how are you doing today?", voice="en-us", rate=170)
    pcm = np.zeros(int(T * 16000), dtype=np.int16)
    start = int(0.4 * 16000)
    x = to_pcm16(speech.audio)
    pcm[start : start + x.shape[0]] = x
    end_s = 0.4 + x.shape[0] / 16000
    system = make_system("pipecat:turn=vad,stop_secs=0.2,think_ms=300")
    trace = asyncio.run(run_session_async(system, pcm, SampleInfo("candor_turn_taking", "1", T, pcm.shape[0])))
    assert trace.error is None, trace.error
    audio = [it for it in trace.items if it.kind == "audio"]
    clears = [it for it in trace.items if it.kind == "clear_queue"]
    assert audio, "no reply"
    first = min(it.received_at_s for it in audio)
    # pipecat's VAD stops 0.2 s after the speech, then the responder's 0.3 s: the reply cannot come earlier
    assert end_s + 0.2 + 0.3 - 0.05 < first < end_s + 2.0
    # pipecat interrupts at every user-turn start (here: the bot is silent), before any reply audio
    assert clears and clears[0].received_at_s < first
