"""Built-in baseline systems: silent, turn-based, talk-over and backchannel.

They listen through streaming Silero VAD (or a crude energy detector, for fast tests), speak with
espeak-ng, and run in-process on the virtual clock. Each decision is made when the 32 ms VAD frame
that triggers it ends, and output is emitted no earlier than that, so they are causal.
"""

from __future__ import annotations

import functools
from dataclasses import Field, asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from duplexeval import __version__
from duplexeval.audio import from_pcm16, to_pcm16
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import CLEAR_QUEUE, ControlEvent, OutputChunk, Received, SampleInfo
from duplexeval.systems.listener import VAD_FRAME_S, FrameProbs, Onset, UserSpeech, energy_prob
from duplexeval.tts import espeak_version, synthesize
from duplexeval.vad import SCORER_SETTINGS, StreamingVad, vad_signature

# No punctuation on purpose: espeak pauses at commas and full stops, and a sentence gap longer
# than 100 ms would split the VAD segment that decides whether an interruption cut into speech.
DEFAULT_REPLY = (
    "thanks for telling me about that I think the best thing to do is to take it one step at a time "
    "and start with the part that matters most to you and then we can look at the rest together"
)
LONG_REPLY = (
    "well actually let me tell you what I think about all of this because there is a lot to say and "
    "I have been thinking about it for a long time now so the first thing is that we should never "
    "rush into anything without looking at every side of the question and the second thing is that "
    "we should always ask the people who know the most about it before we decide anything at all"
)
VAD_CHOICES = ("silero", "energy")


@functools.lru_cache(maxsize=32)
def _speech_pcm(text: str, voice: str, rate: int) -> bytes:
    """espeak-ng speech as 16 kHz PCM16 bytes (cached: baselines say the same thing every time)."""
    return to_pcm16(synthesize(text, voice=voice, rate=rate).audio).astype("<i2").tobytes()


def _prob_source(kind: str) -> FrameProbs | Any:
    """A streaming speech-probability source: Silero (real) or energy (fast, for tests)."""
    if kind == "energy":
        return FrameProbs(energy_prob)

    return StreamingVad()


def _feed(source: Any, audio: np.ndarray) -> list[float]:
    out = source.feed(audio)
    return [float(p) for p in np.asarray(out, dtype=np.float64).ravel()]


class _AgentSession:
    """Shared machinery: VAD → user tracker → policy; an outbox of timed chunks and events."""

    def __init__(self, cfg: Any, info: SampleInfo) -> None:
        self.cfg = cfg
        self.info = info
        self.user = UserSpeech(cfg.threshold, cfg.min_speech_ms)
        self.source = _prob_source(cfg.vad)
        self.outbox: list[Received] = []
        self.pending: tuple[float, bytes, str] | None = None  # (emit at, pcm, what)
        self.playing_until = 0.0  # when the output committed so far ends (the system's own estimate)
        self.answered_mark = -1.0  # last_voice_end of the user turn already answered
        self.tau = 0.0

    async def push_input(self, frame: bytes, t_s: float) -> None:
        audio = from_pcm16(np.frombuffer(frame, dtype="<i2"))
        for p in _feed(self.source, audio):
            onset = self.user.update(p)
            self.tau = self.user.frames * VAD_FRAME_S
            self._commit(self.tau)
            self.step(self.tau, onset)

    async def poll_output(self, t_s: float) -> list[Received]:
        self._commit(t_s)
        ready = [x for x in self.outbox if x.emitted_at_s <= t_s + 1e-12]
        self.outbox = [x for x in self.outbox if x.emitted_at_s > t_s + 1e-12]
        return sorted(ready, key=lambda x: x.emitted_at_s)

    async def close(self) -> None:
        self.outbox = []
        self.pending = None

    # -- helpers for policies
    def _commit(self, t: float) -> None:
        if self.pending is not None and self.pending[0] <= t + 1e-12:
            at, pcm, what = self.pending
            self.pending = None
            self.emit(at, pcm)

    def emit(self, at: float, pcm: bytes) -> None:
        self.outbox.append(OutputChunk(pcm, 16000, at))
        self.playing_until = max(self.playing_until, at) + len(pcm) / 2 / 16000

    def speaking(self, t: float) -> bool:
        return t < self.playing_until - 1e-12

    def barge_in(self, onset: Onset) -> None:
        """The user started speaking over us: cancel what is pending; stop `barge_in_ms` after detection."""
        if self.pending is not None:
            self.pending = None
            return
        if self.speaking(onset.detected_at_s):
            stop = onset.detected_at_s + self.cfg.barge_in_ms / 1000.0
            if stop < self.playing_until:
                self.outbox.append(
                    ControlEvent(CLEAR_QUEUE, stop, {"reason": "barge_in", "user_onset_s": round(onset.start_s, 6),
                                                     "detected_at_s": round(onset.detected_at_s, 6)})
                )
                self.playing_until = stop

    def user_turn_waiting(self) -> bool:
        lv = self.user.last_voice_end
        return lv is not None and lv > self.answered_mark

    def schedule_reply(self, tau: float) -> None:
        self.answered_mark = self.user.last_voice_end or tau
        self.pending = (tau + self.cfg.think_ms / 1000.0, _speech_pcm(self.cfg.text, self.cfg.voice, self.cfg.rate),
                        "reply")

    def step(self, tau: float, onset: Onset | None) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class _TurnBasedSession(_AgentSession):
    def step(self, tau: float, onset: Onset | None) -> None:
        if onset is not None:
            self.barge_in(onset)
            return
        if self.pending is not None or self.speaking(tau):
            return
        if self.user_turn_waiting() and self.user.silence_s(tau) >= self.cfg.silence_ms / 1000.0 - 1e-9:
            self.schedule_reply(tau)


class _TalkOverSession(_AgentSession):
    def step(self, tau: float, onset: Onset | None) -> None:
        if self.pending is not None or self.speaking(tau):
            return  # never yields
        if self.user_turn_waiting() and self.user.silence_s(tau) >= self.cfg.pause_ms / 1000.0 - 1e-9:
            self.schedule_reply(tau)


class _BackchannelSession(_AgentSession):
    acked_mark = -1.0

    def step(self, tau: float, onset: Onset | None) -> None:
        if onset is not None:
            self.barge_in(onset)
            return
        if self.pending is not None or self.speaking(tau) or not self.user_turn_waiting():
            return
        silence = self.user.silence_s(tau)
        if silence >= self.cfg.silence_ms / 1000.0 - 1e-9:
            self.schedule_reply(tau)
        elif silence >= self.cfg.ack_pause_ms / 1000.0 - 1e-9 and (self.user.last_voice_end or 0) > self.acked_mark:
            self.acked_mark = self.user.last_voice_end or tau
            self.emit(tau, _speech_pcm(self.cfg.ack_text, self.cfg.voice, self.cfg.rate))


class _SilentSession:
    async def push_input(self, frame: bytes, t_s: float) -> None:
        return None

    async def poll_output(self, t_s: float) -> list[Received]:
        return []

    async def close(self) -> None:
        return None


class _Baseline:
    """Common System methods for the dataclass baselines below."""

    name: ClassVar[str]
    _session: ClassVar[type]
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # every subclass is a dataclass

    def params(self) -> JsonObject:
        return asdict(self)

    def version(self) -> str:
        parts = [f"duplexeval {__version__}"]
        if self.name != "silent":
            parts.append(f"espeak-ng {espeak_version()}")
            if getattr(self, "vad", "") == "silero":
                parts.append(_silero_version())
        return "; ".join(parts)

    async def open_session(self, info: SampleInfo) -> Any:
        return self._session(self, info)

    def validate(self) -> None:
        """Check parameter ranges; raise ValueError naming the key."""
        for key, value in asdict(self).items():
            if key.endswith("_ms") and not (0 <= value <= 60000):
                raise ValueError(f"{key} must be between 0 and 60000, got {value}")
        if hasattr(self, "vad") and self.vad not in VAD_CHOICES:
            raise ValueError(f"vad must be one of {', '.join(VAD_CHOICES)}, got {self.vad!r}")
        if hasattr(self, "threshold") and not (0.0 < self.threshold < 1.0):
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        if hasattr(self, "rate") and not (80 <= self.rate <= 450):
            raise ValueError(f"rate must be between 80 and 450 words per minute, got {self.rate}")
        for key in ("text", "ack_text"):
            if hasattr(self, key) and not getattr(self, key).strip():
                raise ValueError(f"{key} must not be empty")
        if hasattr(self, "voice") and hasattr(self, "rate"):  # every baseline with a voice has a rate
            try:  # synthesize now: a bad voice fails before any sample runs (and the cache is warm)
                for key in ("text", "ack_text"):
                    if hasattr(self, key):
                        _speech_pcm(getattr(self, key), self.voice, self.rate)
            except InputError as exc:
                raise ValueError(str(exc)) from None


def _silero_version() -> str:
    try:
        sig = vad_signature(SCORER_SETTINGS)
        return (f"{sig.get('package', 'silero')} {sig.get('version', '?')} model "
                f"{str(sig.get('model_sha256', '?'))[:16]}")
    except Exception:  # noqa: BLE001 - version string only
        return "silero-vad (signature unavailable)"


@dataclass(frozen=True)
class Silent(_Baseline):
    """Never speaks: perfect pause handling, no responses, interruptions never exercised."""

    name: ClassVar[str] = "silent"
    _session: ClassVar[type] = _SilentSession

    async def open_session(self, info: SampleInfo) -> Any:
        return _SilentSession()


@dataclass(frozen=True)
class TurnBased(_Baseline):
    """Answers `silence_ms` after the user stops plus `think_ms`; stops `barge_in_ms` after the user talks over it."""

    name: ClassVar[str] = "turn-based"
    _session: ClassVar[type] = _TurnBasedSession
    silence_ms: int = 500
    think_ms: int = 200
    barge_in_ms: int = 150
    text: str = DEFAULT_REPLY
    voice: str = "en-us"
    rate: int = 170
    vad: str = "silero"
    threshold: float = 0.5
    min_speech_ms: int = 160


@dataclass(frozen=True)
class TalkOver(_Baseline):
    """Starts a long answer at the first short pause (`pause_ms`) and never yields."""

    name: ClassVar[str] = "talk-over"
    _session: ClassVar[type] = _TalkOverSession
    pause_ms: int = 120
    think_ms: int = 0
    text: str = LONG_REPLY
    voice: str = "en-us"
    rate: int = 170
    vad: str = "silero"
    threshold: float = 0.5
    min_speech_ms: int = 160


@dataclass(frozen=True)
class Backchannel(_Baseline):
    """Says `ack_text` after `ack_pause_ms` of silence; takes the turn after `silence_ms`; yields on barge-in."""

    name: ClassVar[str] = "backchannel"
    _session: ClassVar[type] = _BackchannelSession
    ack_pause_ms: int = 300
    ack_text: str = "yeah"
    silence_ms: int = 1200
    think_ms: int = 200
    barge_in_ms: int = 150
    text: str = DEFAULT_REPLY
    voice: str = "en-us"
    rate: int = 170
    vad: str = "silero"
    threshold: float = 0.5
    min_speech_ms: int = 160


BASELINES: dict[str, type[_Baseline]] = {c.name: c for c in (Silent, TurnBased, TalkOver, Backchannel)}
