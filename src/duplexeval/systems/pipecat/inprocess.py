"""`pipecat`: the reference bot's pipeline run inside duplexeval's process, with no network and no codec.

```
--system 'pipecat:turn=vad|smart-turn,stop_secs=0.2,allow_interruptions=true[,speech_timeout_s=0,think_ms=300]'
```

The same pipecat pipeline as `duplexeval serve pipecat` (`pipeline.build_worker`), on a transport of its
own: `DirectInput` takes the input as 20 ms `InputAudioRawFrame`s at 16 kHz on the absolute schedule (as the
transports' clients send it), `DirectOutput` stamps each audio chunk pipecat's output transport writes when
it starts to play (a device that plays at real time: a write returns when its chunk's time has come) and
turns an `InterruptionFrame` into `clear_queue` at its time. This is the reference the transports are
compared with (benchmarks/pipecat_turn_stacks.py): what a transport adds to the numbers is the
difference.

It runs on the wall clock, not on duplexeval's virtual clock: pipecat paces its output, its speech
detection and its turn timeouts with asyncio's clock and runs its VAD in a worker thread
(`VADAnalyzer.analyze_audio` hands every chunk to a ThreadPoolExecutor), so the pipeline cannot be run
faster than real time without changing pipecat's code, which the reference must not. Slot 0 is when the
pipeline has started (its `StartFrame` reached the output), so the pipeline's start is in no latency.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from duplexeval.audio import audio_library_versions
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import CLEAR_QUEUE, ControlEvent, OutputChunk, Received, SampleInfo
from duplexeval.systems.baselines import DEFAULT_REPLY
from duplexeval.systems.pipecat.stack import TURNS, BotConfig

CHUNK_S = 0.02
RATE = 16000


class _Clock:
    """Seconds on the input timeline (0 = slot 0), the runner's clock for this session."""

    exact_receipt = False
    name = "wall"

    def __init__(self) -> None:
        self.origin = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.origin

    async def sleep_until(self, t_s: float) -> None:
        delay = t_s - self.now()
        if delay > 0:
            await asyncio.sleep(delay)


def _transport(session: _Session) -> Any:
    """A pipecat transport pair writing into `session` (built here: it subclasses pipecat's base transports)."""
    from pipecat.frames.frames import InputAudioRawFrame, InterruptionFrame, StartFrame
    from pipecat.processors.frame_processor import FrameDirection
    from pipecat.transports.base_input import BaseInputTransport
    from pipecat.transports.base_output import BaseOutputTransport
    from pipecat.transports.base_transport import BaseTransport, TransportParams

    class DirectInput(BaseInputTransport):
        async def start(self, frame: StartFrame) -> None:
            await super().start(frame)
            await self.set_transport_ready(frame)

        async def feed(self, pcm16: bytes) -> None:
            await self.push_audio_frame(InputAudioRawFrame(audio=pcm16, sample_rate=RATE, num_channels=1))

    class DirectOutput(BaseOutputTransport):
        _play_next = 0.0

        async def start(self, frame: StartFrame) -> None:
            await super().start(frame)
            await self.set_transport_ready(frame)
            session.started.set()

        async def process_frame(self, frame: Any, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, InterruptionFrame):
                t = session.clock.now()
                session.outbox.append(ControlEvent(CLEAR_QUEUE, t, {"reason": "InterruptionFrame"}, received_at_s=t))
                self._play_next = 0.0

        async def write_audio_frame(self, frame: Any) -> bool:
            clock = session.clock
            start = max(clock.now(), self._play_next)
            await clock.sleep_until(start)
            session.outbox.append(OutputChunk(bytes(frame.audio), int(frame.sample_rate), start, received_at_s=start))
            self._play_next = start + len(frame.audio) / 2 / frame.sample_rate
            return True

    class DirectTransport(BaseTransport):
        def __init__(self, params: TransportParams) -> None:
            super().__init__()
            self._in = DirectInput(params)
            self._out = DirectOutput(params)

        def input(self) -> DirectInput:
            return self._in

        def output(self) -> DirectOutput:
            return self._out

    return DirectTransport(TransportParams(audio_in_enabled=True, audio_out_enabled=True))


class _Session:
    def __init__(self, cfg: BotConfig, warm_size: int) -> None:
        self.cfg = cfg
        self.warm_size = warm_size
        self.clock = _Clock()
        self.outbox: list[Received] = []
        self.started = asyncio.Event()
        self.transport: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[Any] | None = None

    async def open(self) -> None:
        from pipecat.workers.runner import WorkerRunner

        from duplexeval.systems.pipecat.pipeline import build_worker

        self.transport = _transport(self)
        self.worker = build_worker(self.cfg, self.transport, self.warm_size)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(self.worker)
        self.task = asyncio.get_running_loop().create_task(runner.run())
        await asyncio.wait_for(self.started.wait(), timeout=60.0)
        self.clock.origin = time.monotonic()  # slot 0: the pipeline is running

    async def push_input(self, frame: bytes, t_s: float) -> None:
        step = int(RATE * CHUNK_S) * 2
        for j, off in enumerate(range(0, len(frame), step)):
            if j:
                await self.clock.sleep_until(t_s + j * CHUNK_S)
            await self.transport.input().feed(frame[off : off + step])

    async def poll_output(self, t_s: float) -> list[Received]:
        out, self.outbox = self.outbox, []
        return out

    async def close(self) -> None:
        if self.worker is not None:
            await self.worker.cancel()
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, timeout=10.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self.task.cancel()


@dataclass(frozen=True)
class PipecatInProcess:
    """The reference pipecat bot's pipeline in this process (no transport, no codec), on the wall clock."""

    name: ClassVar[str] = "pipecat"
    wall_clock: ClassVar[bool] = True

    turn: str = "vad"
    stop_secs: float = 0.2
    allow_interruptions: bool = True
    speech_timeout_s: float = 0.0
    think_ms: int = 300
    reply: str = DEFAULT_REPLY
    warm: int = 2

    def config(self) -> BotConfig:
        return BotConfig(transport="in-process", turn=self.turn, stop_secs=self.stop_secs,
                         allow_interruptions=self.allow_interruptions, speech_timeout_s=self.speech_timeout_s,
                         think_ms=self.think_ms, reply=self.reply, sample_rate=RATE)

    def params(self) -> JsonObject:
        return asdict(self)

    def version(self) -> str:
        import importlib.metadata as md

        from duplexeval import __version__
        from duplexeval.tts import espeak_version

        return (f"duplexeval {__version__}; pipecat-ai {md.version('pipecat-ai')}; in-process, {RATE} Hz; "
                f"espeak-ng {espeak_version()}; {audio_library_versions()}")

    def validate(self) -> None:
        if self.turn not in TURNS:
            raise ValueError(f"turn must be one of {', '.join(TURNS)}, got {self.turn!r}")
        if not (0 <= self.warm <= 64):
            raise ValueError(f"warm must be between 0 and 64, got {self.warm}")
        self.config().validate()
        try:
            import pipecat  # noqa: F401
        except ImportError:
            raise ValueError("the pipecat system needs the pipecat extra: pip install 'duplexeval[pipecat]'") from None

    async def open_session(self, info: SampleInfo) -> Any:
        from duplexeval.systems.pipecat.serve import configure_logging

        configure_logging(False)
        session = _Session(self.config(), self.warm)
        await session.open()
        return session
