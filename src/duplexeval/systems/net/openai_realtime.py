"""`openai-realtime`: the client of the turn-based OpenAI Realtime protocol, GA and beta dialects.

`OpenAIRealtime` waits for `session.created`, sends one `session.update` in its dialect, reads the
granted format from `session.updated`, then appends 80 ms of input resampled from 16 kHz to 24 kHz (exact
frames, `pcm.StreamResampler`). Both dialects carry PCM16 at 24 kHz only (the GA types allow `rate: 24000`
and nothing else; beta's `pcm16` is 24 kHz): any other granted format or rate is a protocol violation, and
a `rate` parameter other than 24000 is refused with one line. Every event it sends is built by one of the
`*_event` functions below, which the conformance tests validate strictly against the `openai` SDK. On
`input_audio_buffer.speech_started` it does what a careful client does: `clear_queue` at the
receipt time, `conversation.item.truncate` of the item that was playing at the milliseconds its
live FIFO playout actually PLAYED (no truncate when nothing of it was played), and `response.cancel`
only when the server does not interrupt by itself (`interrupt_response=false`). The API key is read
from the environment variable named by `api_key_env` and sent only as the Authorization header. The
loopback server is `openai_realtime_server.py`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from duplexeval import redaction
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation, SampleInfo
from duplexeval.systems.net.live import LivePlayout, played_ms
from duplexeval.systems.net.pcm import StreamResampler, b64decode_pcm, b64encode, json_message
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem, with_query
from duplexeval.systems.net.trace import TraceRecord
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

DIALECTS = ("ga", "beta")
TURN_DETECTION = ("server_vad", "semantic_vad", "none")
EAGERNESS = ("low", "medium", "high", "auto")
DEFAULT_RATE = 24000

# Event names that differ between the dialects.
AUDIO_DELTA = {"ga": "response.output_audio.delta", "beta": "response.audio.delta"}
AUDIO_DONE = {"ga": "response.output_audio.done", "beta": "response.audio.done"}


def _turn_detection(cfg: OpenAIRealtime) -> JsonObject | None:
    if cfg.turn_detection == "none":
        return None
    td: JsonObject = {"type": cfg.turn_detection, "create_response": cfg.create_response,
                          "interrupt_response": cfg.interrupt_response}
    if cfg.turn_detection == "server_vad":
        td.update(threshold=cfg.threshold, prefix_padding_ms=cfg.prefix_padding_ms,
                  silence_duration_ms=cfg.silence_duration_ms)
    else:
        td["eagerness"] = cfg.eagerness
    return td


def session_update(cfg: OpenAIRealtime) -> JsonObject:
    """The client's one `session.update`, in its dialect."""
    td = _turn_detection(cfg)
    if cfg.dialect == "beta":
        sess: JsonObject = {"modalities": ["audio", "text"], "voice": cfg.voice,
                                "input_audio_format": "pcm16", "output_audio_format": "pcm16", "turn_detection": td}
    else:
        fmt = {"type": "audio/pcm", "rate": DEFAULT_RATE}
        sess = {"type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": fmt, "turn_detection": td},
                          "output": {"format": dict(fmt), "voice": cfg.voice}}}
        if cfg.model:
            sess["model"] = cfg.model
    if cfg.instructions:
        sess["instructions"] = cfg.instructions
    return {"type": "session.update", "session": sess}


def append_event(pcm16: bytes) -> JsonObject:
    """`input_audio_buffer.append` of 24 kHz PCM16."""
    return {"type": "input_audio_buffer.append", "audio": b64encode(pcm16)}


def truncate_event(item_id: str, audio_end_ms: int) -> JsonObject:
    """`conversation.item.truncate` of an assistant item at the milliseconds played."""
    return {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0, "audio_end_ms": audio_end_ms}


def cancel_event() -> JsonObject:
    return {"type": "response.cancel"}


def create_event() -> JsonObject:
    return {"type": "response.create"}


def granted_rates(dialect: str, session: Any) -> tuple[int, int]:
    """(input rate, output rate) a `session.updated` grants; ProtocolViolation when it is not PCM16."""
    if not isinstance(session, dict):
        raise ProtocolViolation("session.updated without a session object")
    if dialect == "beta":
        for key in ("input_audio_format", "output_audio_format"):
            if session.get(key, "pcm16") != "pcm16":
                raise ProtocolViolation(f"grant does not match: {key} is {session.get(key)!r}, asked for pcm16")
        return DEFAULT_RATE, DEFAULT_RATE
    for side in ("input", "output"):
        fmt = ((session.get("audio") or {}).get(side) or {}).get("format") or {}
        if not isinstance(fmt, dict) or fmt.get("type", "audio/pcm") != "audio/pcm":
            raise ProtocolViolation(f"grant does not match: audio.{side}.format is {fmt!r}, asked for audio/pcm")
        rate = fmt.get("rate", DEFAULT_RATE)
        if rate != DEFAULT_RATE or isinstance(rate, bool):
            raise ProtocolViolation(f"grant does not match: audio.{side}.format.rate is {rate!r}; "
                                    f"the GA dialect carries audio/pcm at {DEFAULT_RATE} Hz only")
    return DEFAULT_RATE, DEFAULT_RATE


@dataclass(frozen=True)
class Truncation:
    """A `conversation.item.truncate` this client asked for: the item, the milliseconds and 16 kHz samples played of
    it, and when (input-timeline seconds)."""

    item_id: str
    audio_end_ms: int
    played_samples_16k: int
    t: float


class RealtimeSession(NetSession):
    """The client side of one conversation (see the module docstring)."""

    system: OpenAIRealtime

    def __init__(self, system: OpenAIRealtime, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.in_rate = self.out_rate = DEFAULT_RATE
        self.resample: StreamResampler | None = None
        self.live = LivePlayout()
        self.active_response: str | None = None
        self.last_audio_item: str | None = None
        self.audio_done: set[str] = set()  # items whose audio the server finished sending
        self.truncated: list[Truncation] = []  # what this client asked to truncate
        self._tasks: list[asyncio.Task[Any]] = []

    # ---------------------------------------------------------- handshake
    async def handshake(self) -> None:
        self.expect("session.created")
        if not await self.wait_for("session.created"):
            raise HandshakeAborted("no session.created")
        self.expect("session.updated")
        await self.send("session.update", json.dumps(session_update(self.system)))
        if not await self.wait_for("session.updated"):
            raise HandshakeAborted("no session.updated")
        self.resample = StreamResampler(INPUT_SAMPLE_RATE, self.in_rate)

    # ---------------------------------------------------------- input
    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        assert self.resample is not None
        return "input_audio_buffer.append", json.dumps(append_event(self.resample(frame)))

    async def finish_input(self) -> None:
        for task in self._tasks:
            if not task.done():
                await asyncio.wait_for(task, timeout=self.system.drain_s)

    # ---------------------------------------------------------- receive
    def _spawn_send(self, kind: str, payload: JsonObject) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(self.send(kind, json.dumps(payload))))

    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        msg = json_message(data, "type")
        kind = msg["type"]
        rec.kind = kind
        for key in ("item_id", "response_id"):
            if isinstance(msg.get(key), str):
                rec.fields[key] = msg[key][:80]
        d = self.system.dialect
        other = "beta" if d == "ga" else "ga"
        if kind == "session.created":
            self.signal("session.created", rec)
        elif kind == "session.updated":
            self.in_rate, self.out_rate = granted_rates(d, msg.get("session"))
            rec.fields["granted_rates"] = [self.in_rate, self.out_rate]
            self.signal("session.updated", rec)
        elif kind == "error":
            err: JsonObject = msg["error"] if isinstance(msg.get("error"), dict) else {}
            rec.fields["code"] = str(err.get("code"))[:80] if err.get("code") is not None else None
            self.server_error(rec, str(err.get("message", "")))
        elif kind == AUDIO_DELTA[d]:
            pcm = b64decode_pcm(msg.get("delta"), kind)
            item = str(msg.get("item_id", ""))
            self.output_audio(rec, pcm, self.out_rate)
            self.live.add(item, pcm, self.out_rate, float(rec.t))
            self.last_audio_item = item
        elif kind == AUDIO_DONE[d]:
            self.audio_done.add(str(msg.get("item_id", "")))
        elif kind == AUDIO_DELTA[other]:
            raise ProtocolViolation(f"{kind} is a {other} event; this client speaks dialect={d}")
        elif kind == "response.created":
            resp: JsonObject = msg["response"] if isinstance(msg.get("response"), dict) else {}
            rid = str(resp.get("id", ""))
            self.active_response = rid
            self.signal("response", rec)
            self.expect(f"response.done {rid}")
        elif kind == "response.done":
            done: JsonObject = msg["response"] if isinstance(msg.get("response"), dict) else {}
            rid = str(done.get("id", ""))
            rec.fields["status"] = str(done.get("status"))[:40]
            self.signal(f"response.done {rid}", rec)
            if self.active_response == rid:
                self.active_response = None
        elif kind == "input_audio_buffer.speech_started":
            self._barge_in(rec)
        elif kind == "input_audio_buffer.speech_stopped":
            t = float(rec.t)
            if self.system.turn_detection != "none" and not self.live.busy(t):
                if not self.system.create_response:
                    self._spawn_send("response.create", create_event())
                self.expect("response")

    def _barge_in(self, rec: TraceRecord) -> None:
        """speech_started: stop playback now, truncate what was played, cancel if the server will not."""
        t = float(rec.t)
        self.signal("response", rec)  # the user spoke again: no response is owed for the last turn
        # the item being heard: its audio is still queued, or more of it is on the way (a playback underrun)
        last = self.last_audio_item
        playing = self.live.playing_at(t)
        if playing is None and last is not None and last not in self.audio_done:
            playing = last
        self.clear_queue(rec, reason="speech_started")
        if playing is not None:
            self.audio_done.add(playing)  # interrupted: nothing more of it will be heard
            played = self.live.played_samples(playing, t)
            ms = played_ms(played)
            if ms > 0:
                self.truncated.append(Truncation(playing, ms, played, t))
                self._spawn_send("conversation.item.truncate", truncate_event(playing, ms))
        self.live.clear(t)
        if self.active_response is not None and not self.system.interrupt_response:
            self._spawn_send("response.cancel", cancel_event())


@dataclass(frozen=True)
class OpenAIRealtime(NetSystem):
    """The OpenAI Realtime protocol (turn-based; GA or beta dialect) over WebSocket."""

    name: ClassVar[str] = "openai-realtime"
    protocol: ClassVar[str] = "openai-realtime"
    session_class: ClassVar[type[NetSession]] = RealtimeSession

    url: str = "wss://api.openai.com/v1/realtime"
    dialect: str = "ga"
    model: str = "gpt-realtime"
    voice: str = "alloy"
    instructions: str = ""
    turn_detection: str = "server_vad"
    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    interrupt_response: bool = True
    create_response: bool = True
    eagerness: str = "auto"
    rate: int = DEFAULT_RATE
    api_key_env: str = "OPENAI_API_KEY"

    def _key(self) -> str:
        return redaction.secret_from_env(self.api_key_env)

    def headers(self) -> dict[str, str]:
        h: dict[str, str] = {}
        key = self._key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        if self.dialect == "beta":
            h["OpenAI-Beta"] = "realtime=v1"
        return h

    def secrets(self) -> tuple[str, ...]:
        key = self._key()
        return (key,) if key else ()

    def connect_url(self, info: SampleInfo) -> str:
        if not self.model or "model=" in self.url:
            return self.url
        return with_query(self.url, "model", self.model)

    def validate(self) -> None:
        super().validate()
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {self.dialect!r}")
        if self.turn_detection not in TURN_DETECTION:
            raise ValueError(f"turn_detection must be one of {', '.join(TURN_DETECTION)}, got {self.turn_detection!r}")
        if self.eagerness not in EAGERNESS:
            raise ValueError(f"eagerness must be one of {', '.join(EAGERNESS)}, got {self.eagerness!r}")
        if not (0.0 <= self.threshold <= 1.0):
            raise ValueError(f"threshold must be in [0, 1], got {self.threshold}")
        for key in ("prefix_padding_ms", "silence_duration_ms"):
            if not (0 <= getattr(self, key) <= 10000):
                raise ValueError(f"{key} must be between 0 and 10000, got {getattr(self, key)}")
        if self.rate != DEFAULT_RATE:
            wire = ("audio/pcm at 24000 Hz only (its types allow no other rate)" if self.dialect == "ga"
                    else "pcm16, which is 24 kHz")
            raise ValueError(f"rate={self.rate}: dialect={self.dialect} carries {wire}; the 16 kHz input is resampled "
                             f"to it locally: leave rate unset")
