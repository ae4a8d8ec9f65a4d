"""The reference bot's pipecat pipeline: pipecat's own parts, with two stand-ins so that it runs offline.

```
transport.input() -> VADProcessor(SileroVADAnalyzer) -> UserTurnProcessor(start: VAD, stop: speech
timeout | Smart Turn v3) -> ScriptedResponder -> EspeakTTSService -> transport.output()
```

Everything that decides turn-taking is pipecat's code, unchanged: speech detection, when a user turn
starts and ends, when the bot is interrupted (`InterruptionFrame`, which the output transport turns into
the protocol's `clear`), the output transport's pacing. The stand-ins replace only what would need a
network or a GPU: `ScriptedResponder` plays an LLM that answers every finished user turn with a fixed
reply after `think_ms` (cancelled, as an LLM's response is, by an interruption), and `EspeakTTSService`
is a pipecat `TTSService` that speaks through duplexeval's espeak-ng.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import Any

import numpy as np
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.turns.user_start import VADUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy, TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

from duplexeval.audio import resample, to_pcm16
from duplexeval.systems.pipecat.stack import BotConfig
from duplexeval.tts import synthesize

TTS_CHUNK_S = 0.1  # the TTS service yields its audio in pieces this long (an interruption stops the rest)


@functools.lru_cache(maxsize=16)
def speech_pcm(text: str, voice: str, rate: int, sample_rate: int) -> bytes:
    """espeak-ng speech as PCM16 at `sample_rate` (whole-utterance soxr resampling; cached per text)."""
    audio = synthesize(text, voice=voice, rate=rate).audio
    if sample_rate != 16000:
        audio = resample(audio, 16000, sample_rate)
    return bytes(to_pcm16(np.asarray(audio)).astype("<i2").tobytes())


class EspeakTTSService(TTSService):
    """A pipecat TTS service that speaks through duplexeval's espeak-ng (offline, deterministic)."""

    def __init__(self, *, voice: str, rate: int, **kwargs: Any) -> None:
        super().__init__(push_start_frame=True, push_stop_frames=True,
                         settings=TTSSettings(model=None, voice=voice, language=None), **kwargs)
        self._voice = voice
        self._rate = rate

    def can_generate_metrics(self) -> bool:
        return False

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        pcm = speech_pcm(text, self._voice, self._rate, self.sample_rate)
        step = int(self.sample_rate * TTS_CHUNK_S) * 2
        for off in range(0, len(pcm), step):
            yield TTSAudioRawFrame(audio=pcm[off : off + step], sample_rate=self.sample_rate, num_channels=1,
                                   context_id=context_id)


class ScriptedResponder(FrameProcessor):
    """Stands in for the LLM: every finished user turn gets `reply` after `think_s`; an interruption cancels it."""

    def __init__(self, *, reply: str, think_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reply = reply
        self._think_s = think_s
        self._pending: asyncio.Task[None] | None = None
        self.turns = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame) and direction == FrameDirection.DOWNSTREAM:
            self.turns += 1
            await self._cancel()
            self._pending = self.create_task(self._respond(), f"{self}::respond")
        elif isinstance(frame, InterruptionFrame):
            await self._cancel()
        await self.push_frame(frame, direction)

    async def _respond(self) -> None:
        await asyncio.sleep(self._think_s)
        self._pending = None
        await self.push_frame(TTSSpeakFrame(self._reply))

    async def _cancel(self) -> None:
        if self._pending is not None:
            task, self._pending = self._pending, None
            await self.cancel_task(task)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._cancel()


class Warm:
    """Analyzers built before the call that uses each one (their model load is most of a pipeline's start).

    pipecat's `SileroVADAnalyzer` takes ~0.15 s to build and `LocalSmartTurnAnalyzerV3` ~0.2 s (their ONNX
    sessions; measured on the 2-core build machine), so 14 calls arriving together delayed the bot's first
    reaction by ~5 s on a loaded machine. A production bot keeps warm workers; this keeps `size` ready and
    builds a replacement in a background thread after each one is taken. Each object is used by one call only.
    """

    def __init__(self, factory: Callable[[], Any], size: int) -> None:
        self.factory = factory
        self.size = size
        self.ready: deque[Any] = deque()
        self._lock = threading.Lock()
        self._filling = False

    def fill(self) -> None:
        """Build until `size` are ready (call once at start; later fills run in the background)."""
        while True:
            with self._lock:
                if len(self.ready) >= self.size:
                    self._filling = False
                    return
            obj = self.factory()
            with self._lock:
                self.ready.append(obj)

    def take(self) -> Any:
        with self._lock:
            obj = self.ready.popleft() if self.ready else None
            refill = not self._filling and self.size > 0
            self._filling = self._filling or refill
        if refill:
            threading.Thread(target=self.fill, name="warm-analyzers", daemon=True).start()
        return obj if obj is not None else self.factory()


_WARM: dict[tuple[str, float], Warm] = {}


def warm(kind: str, cfg: BotConfig, size: int) -> Warm:
    """The pool of `kind` ('vad' or 'smart-turn') analyzers for `cfg` (one per process and setting)."""
    key = (kind, cfg.stop_secs if kind == "vad" else 0.0)
    pool = _WARM.get(key)
    if pool is None:
        if kind == "vad":
            stop_secs = cfg.stop_secs
            pool = Warm(lambda: SileroVADAnalyzer(params=VADParams(stop_secs=stop_secs)), size)
        else:
            from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

            pool = Warm(LocalSmartTurnAnalyzerV3, size)
        _WARM[key] = pool
    return pool


def turn_processors(cfg: BotConfig, warm_size: int = 0) -> list[FrameProcessor]:
    """pipecat's speech detection and user-turn handling for the configured stack."""
    vad = VADProcessor(vad_analyzer=warm("vad", cfg, warm_size).take())
    if cfg.turn == "smart-turn":
        stop: Any = TurnAnalyzerUserTurnStopStrategy(turn_analyzer=warm("smart-turn", cfg, warm_size).take(),
                                                     wait_for_transcript=False)
    else:
        stop = SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=cfg.speech_timeout_s, wait_for_transcript=False)
    start = VADUserTurnStartStrategy(enable_interruptions=cfg.allow_interruptions)
    turns = UserTurnProcessor(user_turn_strategies=UserTurnStrategies(start=[start], stop=[stop]))
    return [vad, turns]


def build_worker(cfg: BotConfig, transport: Any, warm_size: int = 0) -> PipelineWorker:
    """The whole pipeline on `transport` (a pipecat transport), ready for a `WorkerRunner`."""
    processors: list[FrameProcessor] = [
        transport.input(),
        *turn_processors(cfg, warm_size),
        ScriptedResponder(reply=cfg.reply, think_s=cfg.think_ms / 1000.0),
        EspeakTTSService(voice=cfg.voice, rate=cfg.rate),
        transport.output(),
    ]
    params = PipelineParams(audio_in_sample_rate=cfg.pipeline_rate, audio_out_sample_rate=cfg.pipeline_rate)
    return PipelineWorker(Pipeline(processors), params=params, idle_timeout_secs=None)


async def run_bot(cfg: BotConfig, transport: Any, warm_size: int = 0) -> None:
    """Run one conversation until the client goes away."""
    worker = build_worker(cfg, transport, warm_size)

    @transport.event_handler("on_client_disconnected")  # type: ignore[untyped-decorator]  # pipecat transport, Any
    async def _gone(*_: Any) -> None:
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
