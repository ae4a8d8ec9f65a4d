"""`openai-realtime`: the turn-based OpenAI Realtime protocol (GA and beta dialects), client adapter and loopback server.

Client (`OpenAIRealtime`): waits for `session.created`, sends one `session.update` in its dialect,
reads the granted input/output format from `session.updated` (a format other than PCM16 is a
protocol violation), then appends 80 ms of input resampled to the granted rate (exact frames, `pcm.StreamResampler`). On
`input_audio_buffer.speech_started` it does what a careful client does: `clear_queue` at the
receipt time, `conversation.item.truncate` of the item that was playing at the milliseconds its
live FIFO playout actually PLAYED (no truncate when nothing of it was played), and `response.cancel`
only when the server does not interrupt by itself (`interrupt_response=false`). The API key is read
from the environment variable named by `api_key_env` and sent only as the Authorization header.

Server (`RealtimeServerSession`): `session.created` at once; `session.update` checked against the
dialect's fields (`unknown_parameter` otherwise); `session.updated` with the effective config and the
granted rate; VAD events from the served system's own listener and barge-in decisions; a response per
output chunk, streamed as deltas at `speed` x real time; `interrupt_response` cancels a response at
barge-in; truncate offsets validated ("already shorter than", 0 ms on an item without audio);
commit refused while server VAD is on (and under 100 ms of audio); `response.cancel` without an
active response is an error.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from duplexeval import redaction
from duplexeval.systems.base import INPUT_SAMPLE_RATE, ProtocolViolation, SampleInfo
from duplexeval.systems.net.live import LivePlayout, played_ms
from duplexeval.systems.net.pcm import StreamResampler, b64decode_pcm, b64encode, json_message
from duplexeval.systems.net.server import ServerSession, check_option_values, resample_pcm16
from duplexeval.systems.net.session import HandshakeAborted, NetSession, NetSystem, with_query

DIALECTS = ("ga", "beta")
TURN_DETECTION = ("server_vad", "semantic_vad", "none")
EAGERNESS = ("low", "medium", "high", "auto")
DEFAULT_RATE = 24000

# Event names that differ between the dialects.
AUDIO_DELTA = {"ga": "response.output_audio.delta", "beta": "response.audio.delta"}
AUDIO_DONE = {"ga": "response.output_audio.done", "beta": "response.audio.done"}
ITEM_ADDED = {"ga": "conversation.item.added", "beta": "conversation.item.created"}


def _turn_detection(cfg: OpenAIRealtime) -> dict[str, Any] | None:
    if cfg.turn_detection == "none":
        return None
    td: dict[str, Any] = {"type": cfg.turn_detection, "create_response": cfg.create_response,
                          "interrupt_response": cfg.interrupt_response}
    if cfg.turn_detection == "server_vad":
        td.update(threshold=cfg.threshold, prefix_padding_ms=cfg.prefix_padding_ms,
                  silence_duration_ms=cfg.silence_duration_ms)
    else:
        td["eagerness"] = cfg.eagerness
    return td


def session_update(cfg: OpenAIRealtime) -> dict[str, Any]:
    """The client's one `session.update`, in its dialect."""
    td = _turn_detection(cfg)
    if cfg.dialect == "beta":
        sess: dict[str, Any] = {"modalities": ["audio", "text"], "voice": cfg.voice,
                                "input_audio_format": "pcm16", "output_audio_format": "pcm16", "turn_detection": td}
    else:
        sess = {"type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": cfg.rate}, "turn_detection": td},
                          "output": {"format": {"type": "audio/pcm", "rate": cfg.rate}, "voice": cfg.voice}}}
        if cfg.model:
            sess["model"] = cfg.model
    if cfg.instructions:
        sess["instructions"] = cfg.instructions
    return {"type": "session.update", "session": sess}


def granted_rates(dialect: str, session: Any) -> tuple[int, int]:
    """(input rate, output rate) a `session.updated` grants; ProtocolViolation when it is not PCM16."""
    if not isinstance(session, dict):
        raise ProtocolViolation("session.updated without a session object")
    if dialect == "beta":
        for key in ("input_audio_format", "output_audio_format"):
            if session.get(key, "pcm16") != "pcm16":
                raise ProtocolViolation(f"grant does not match: {key} is {session.get(key)!r}, asked for pcm16")
        return DEFAULT_RATE, DEFAULT_RATE
    rates = []
    for side in ("input", "output"):
        fmt = ((session.get("audio") or {}).get(side) or {}).get("format") or {}
        if not isinstance(fmt, dict) or fmt.get("type", "audio/pcm") != "audio/pcm":
            raise ProtocolViolation(f"grant does not match: audio.{side}.format is {fmt!r}, asked for audio/pcm")
        rate = fmt.get("rate", DEFAULT_RATE)
        if not isinstance(rate, int) or isinstance(rate, bool) or not (8000 <= rate <= 48000):
            raise ProtocolViolation(f"grant does not match: audio.{side}.format.rate is {rate!r}")
        rates.append(rate)
    return rates[0], rates[1]


class RealtimeSession(NetSession):
    """The client side of one conversation (see the module docstring)."""

    system: OpenAIRealtime

    def __init__(self, system: OpenAIRealtime, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.in_rate = self.out_rate = system.rate
        self.resample: StreamResampler | None = None
        self.live = LivePlayout()
        self.active_response: str | None = None
        self.last_audio_item: str | None = None
        self.audio_done: set[str] = set()  # items whose audio the server finished sending
        self.truncated: list[dict[str, Any]] = []  # what this client asked to truncate (item, ms, played samples)
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
        pcm = self.resample(frame)
        return "input_audio_buffer.append", json.dumps({"type": "input_audio_buffer.append", "audio": b64encode(pcm)})

    async def finish_input(self) -> None:
        for task in self._tasks:
            if not task.done():
                await asyncio.wait_for(task, timeout=self.system.drain_s)

    # ---------------------------------------------------------- receive
    def _spawn_send(self, kind: str, payload: dict[str, Any]) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(self.send(kind, json.dumps(payload))))

    def on_message(self, rec: dict[str, Any], data: str | bytes) -> None:
        msg = json_message(data, "type")
        kind = msg["type"]
        rec["type"] = kind
        for key in ("item_id", "response_id"):
            if isinstance(msg.get(key), str):
                rec[key] = msg[key][:80]
        d = self.system.dialect
        other = "beta" if d == "ga" else "ga"
        if kind == "session.created":
            self.signal("session.created", rec)
        elif kind == "session.updated":
            self.in_rate, self.out_rate = granted_rates(d, msg.get("session"))
            rec["granted_rates"] = [self.in_rate, self.out_rate]
            self.signal("session.updated", rec)
        elif kind == "error":
            err: dict[str, Any] = msg["error"] if isinstance(msg.get("error"), dict) else {}
            rec["code"] = str(err.get("code"))[:80] if err.get("code") is not None else None
            self.server_error(rec, str(err.get("message", "")))
        elif kind == AUDIO_DELTA[d]:
            pcm = b64decode_pcm(msg.get("delta"), kind)
            item = str(msg.get("item_id", ""))
            self.output_audio(rec, pcm, self.out_rate)
            self.live.add(item, pcm, self.out_rate, float(rec["t"]))
            self.last_audio_item = item
        elif kind == AUDIO_DONE[d]:
            self.audio_done.add(str(msg.get("item_id", "")))
        elif kind == AUDIO_DELTA[other]:
            raise ProtocolViolation(f"{kind} is a {other} event; this client speaks dialect={d}")
        elif kind == "response.created":
            resp: dict[str, Any] = msg["response"] if isinstance(msg.get("response"), dict) else {}
            rid = str(resp.get("id", ""))
            self.active_response = rid
            self.signal("response", rec)
            self.expect(f"response.done {rid}")
        elif kind == "response.done":
            done: dict[str, Any] = msg["response"] if isinstance(msg.get("response"), dict) else {}
            rid = str(done.get("id", ""))
            rec["status"] = str(done.get("status"))[:40]
            self.signal(f"response.done {rid}", rec)
            if self.active_response == rid:
                self.active_response = None
        elif kind == "input_audio_buffer.speech_started":
            self._barge_in(rec)
        elif kind == "input_audio_buffer.speech_stopped":
            t = float(rec["t"])
            if self.system.turn_detection != "none" and not self.live.busy(t):
                if not self.system.create_response:
                    self._spawn_send("response.create", {"type": "response.create"})
                self.expect("response")

    def _barge_in(self, rec: dict[str, Any]) -> None:
        """speech_started: stop playback now, truncate what was played, cancel if the server will not."""
        t = float(rec["t"])
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
                self.truncated.append({"item_id": playing, "audio_end_ms": ms, "played_samples_16k": played, "t": t})
                self._spawn_send("conversation.item.truncate", {"type": "conversation.item.truncate", "item_id": playing,
                                                                "content_index": 0, "audio_end_ms": ms})
        self.live.clear(t)
        if self.active_response is not None and not self.system.interrupt_response:
            self._spawn_send("response.cancel", {"type": "response.cancel"})


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
        if self.rate not in (8000, 16000, 24000, 48000):
            raise ValueError(f"rate must be 8000, 16000, 24000 or 48000, got {self.rate}")
        if self.dialect == "beta" and self.rate != DEFAULT_RATE:
            raise ValueError("dialect=beta has no rate field (pcm16 is 24 kHz); leave rate=24000")


# ====================================================================== loopback server

BETA_FIELDS = {"modalities", "instructions", "voice", "input_audio_format", "output_audio_format",
               "input_audio_transcription", "turn_detection", "tools", "tool_choice", "temperature",
               "max_response_output_tokens", "model", "input_audio_noise_reduction", "speed", "tracing"}
GA_FIELDS = {"type", "output_modalities", "instructions", "audio", "tools", "tool_choice", "max_output_tokens",
             "model", "tracing", "truncation", "prompt", "include"}
SERVER_OPTIONS = {"dialect": "auto", "speed": "2.0", "rate": str(DEFAULT_RATE), "delta_ms": "100"}


@dataclass
class _Item:
    item_id: str
    response_id: str
    sent_ms: float = 0.0
    audio_ms: float = 0.0
    truncated: int | None = None


class RealtimeServerSession(ServerSession):
    """The openai-realtime loopback server (see the module docstring). Options: dialect, speed, rate, delta_ms."""

    protocol: ClassVar[str] = "openai-realtime"
    default_path: ClassVar[str] = "/v1/realtime"

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_option_values(cls.protocol, options, {
            "dialect": lambda v: v in ("auto", *DIALECTS), "speed": lambda v: float(v) > 0,
            "rate": lambda v: int(v) in (8000, 16000, 24000, 48000), "delta_ms": lambda v: float(v) > 0})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opts = {**SERVER_OPTIONS, **self.config.options}
        header = (self.ws.request.headers.get("OpenAI-Beta", "") if self.ws.request is not None else "")
        self.dialect = opts["dialect"] if opts["dialect"] != "auto" else ("beta" if "realtime=v1" in header else "ga")
        self.speed = float(opts["speed"])
        self.rate = int(opts["rate"]) if self.dialect == "ga" else DEFAULT_RATE
        self.delta_s = float(opts["delta_ms"]) / 1000.0
        self.td: dict[str, Any] | None = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                                          "silence_duration_ms": 500, "create_response": True,
                                          "interrupt_response": True}
        self.n = 0
        self.items: dict[str, _Item] = {}
        self.free_at = 0.0  # input time when the response being streamed has been sent
        self.playing_until = 0.0  # the server's estimate of when the client's playback ends
        self.active: str | None = None  # response id still streaming
        self.active_until = 0.0
        self.user_item: str | None = None
        self.user_open = False
        self.create_tokens = 0
        self.held: list[tuple[bytes, float]] = []
        self.buffered_ms = 0.0
        self.server_events = self.server.events

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:04d}"

    # ---------------------------------------------------------- messages
    def _event(self, kind: str, **fields: Any) -> str:
        return json.dumps({"type": kind, "event_id": self._id("event"), **fields})

    def error_message(self, text: str, code: str = "server_error", param: str | None = None,
                      etype: str = "server_error") -> str:
        return self._event("error", error={"type": etype, "code": code, "message": text, "param": param})

    def oversize_message(self, nbytes: int) -> str | bytes:
        return json.dumps({"type": AUDIO_DELTA[self.dialect], "item_id": "item_oversize", "delta": "A" * nbytes})

    def _session_json(self) -> dict[str, Any]:
        if self.dialect == "beta":
            return {"id": "sess_loopback", "object": "realtime.session", "modalities": ["audio", "text"],
                    "voice": "alloy", "input_audio_format": "pcm16", "output_audio_format": "pcm16",
                    "turn_detection": self.td}
        return {"id": "sess_loopback", "type": "realtime", "object": "realtime.session", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": self.rate}, "turn_detection": self.td},
                          "output": {"format": {"type": "audio/pcm", "rate": self.rate}, "voice": "alloy"}}}

    def _refuse(self, text: str, code: str, param: str | None = None) -> Any:
        return self.send_now(self.error_message(text, code, param, "invalid_request_error"))

    async def run(self) -> None:
        await self.send_now(self._event("session.created", session=self._session_json()))
        to16k = StreamResampler(self.rate, INPUT_SAMPLE_RATE)
        async for message in self.ws:
            if self.stalled:
                continue
            if isinstance(message, bytes):
                await self._refuse("binary frames are not part of this protocol", "invalid_message")
                continue
            try:
                msg = json.loads(message)
                kind = msg["type"]
            except (json.JSONDecodeError, KeyError, TypeError):
                await self._refuse("the message is not a JSON event with a type", "invalid_json")
                continue
            if kind == "input_audio_buffer.append":
                try:
                    pcm = b64decode_pcm(msg.get("audio"), kind)
                except ProtocolViolation as exc:
                    await self._refuse(str(exc), "invalid_audio", "audio")
                    continue
                self.input_audio(len(pcm) / 2 / self.rate)
                self.buffered_ms += len(pcm) / 2 / self.rate * 1000.0
                await self.driver.feed(to16k(pcm))
            elif kind == "session.update":
                await self._update(msg.get("session"))
            elif kind == "input_audio_buffer.commit":
                await self._commit()
            elif kind == "input_audio_buffer.clear":
                self.buffered_ms = 0.0
                await self.send_now(self._event("input_audio_buffer.cleared"))
            elif kind == "conversation.item.truncate":
                await self._truncate(msg)
            elif kind == "response.create":
                self._response_create()
            elif kind == "response.cancel":
                await self._response_cancel()
            else:
                await self._refuse(f"unknown client event {kind!r}", "unknown_event", "type")

    async def _update(self, sess: Any) -> None:
        if not isinstance(sess, dict):
            await self._refuse("session.update needs a session object", "invalid_value", "session")
            return
        allowed = BETA_FIELDS if self.dialect == "beta" else GA_FIELDS
        for key in sess:
            if key not in allowed:
                await self._refuse(f"Unknown parameter: 'session.{key}'.", "unknown_parameter", f"session.{key}")
                return
        if self.dialect == "beta":
            td = sess.get("turn_detection", self.td)
            for key in ("input_audio_format", "output_audio_format"):
                if sess.get(key, "pcm16") != "pcm16":
                    await self._refuse(f"this server speaks pcm16 only ({key})", "invalid_value", f"session.{key}")
                    return
        else:
            audio = sess.get("audio") or {}
            td = ((audio.get("input") or {}).get("turn_detection", self.td)) if isinstance(audio, dict) else self.td
        if td is not None and (not isinstance(td, dict) or td.get("type") not in ("server_vad", "semantic_vad")):
            await self._refuse("turn_detection.type must be server_vad or semantic_vad (or null)", "invalid_value",
                               "session.turn_detection")
            return
        if td is not None:
            td = {"create_response": True, "interrupt_response": True, **td}
        self.td = td
        await self.send_now(self._event("session.updated", session=self._session_json()))

    async def _commit(self) -> None:
        if self.td is not None:
            await self._refuse("input_audio_buffer.commit is not allowed while server VAD is on", "commit_not_allowed")
        elif self.buffered_ms < 100.0:
            await self._refuse(f"buffer too small: expected at least 100ms of audio, have {self.buffered_ms:.0f}ms",
                               "input_audio_buffer_commit_empty")
        else:
            self.buffered_ms = 0.0
            await self.send_now(self._event("input_audio_buffer.committed", item_id=self._id("item")))

    async def _truncate(self, msg: dict[str, Any]) -> None:
        item = self.items.get(str(msg.get("item_id")))
        ms = msg.get("audio_end_ms")
        entry = {"event": "truncate", "item_id": msg.get("item_id"), "audio_end_ms": ms, "t": self.now_s()}
        self.server_events.append(entry)
        if item is None:
            await self._refuse(f"item {msg.get('item_id')!r} does not exist", "item_not_found", "item_id")
        elif not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
            await self._refuse("audio_end_ms must be a whole number of milliseconds >= 0", "invalid_value", "audio_end_ms")
        elif item.sent_ms <= 0:
            await self._refuse("cannot truncate an item without audio", "invalid_value", "audio_end_ms")
        elif ms > item.sent_ms + 1e-6:
            await self._refuse(f"Audio content of {item.sent_ms:.0f}ms is already shorter than {ms}ms", "invalid_value",
                               "audio_end_ms")
        else:
            item.truncated = ms
            await self.send_now(self._event("conversation.item.truncated", item_id=item.item_id, content_index=0,
                                            audio_end_ms=ms))

    def _response_create(self) -> None:
        self.create_tokens += 1
        if self.held:
            pcm, at = self.held.pop(0)
            self.create_tokens -= 1
            self._respond(pcm, max(at, self.now_s()))

    async def _response_cancel(self) -> None:
        now = self.now_s()
        self.server_events.append({"event": "cancel", "t": now})
        if self.active is None or now >= self.active_until:
            await self._refuse("there is no active response to cancel", "response_cancel_not_active")
            return
        self._cancel(self.active, now, "client_cancelled")

    # ---------------------------------------------------------- output from the served system
    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        auto = self.td is not None and self.td.get("create_response", True)
        if auto:
            self._respond(pcm16k, at_s)
        elif self.create_tokens > 0:
            self.create_tokens -= 1
            self._respond(pcm16k, at_s)
        else:
            self.held.append((pcm16k, at_s))

    def _respond(self, pcm16k: bytes, at_s: float) -> None:
        """One response: created, item added, deltas at `speed` x real time, done (all at their input times)."""
        d = self.dialect
        at = max(at_s, self.free_at)
        rid, iid = self._id("resp"), self._id("item")
        item = _Item(iid, rid)
        self.items[iid] = item
        pcm = resample_pcm16(pcm16k, INPUT_SAMPLE_RATE, self.rate)
        item.audio_ms = len(pcm) / 2 / self.rate * 1000.0
        resp = {"id": rid, "object": "realtime.response", "status": "in_progress", "output": []}
        self.deliver(at, self._event("response.created", response=resp), rid)
        self.deliver(at, self._event("response.output_item.added", response_id=rid, output_index=0,
                                     item={"id": iid, "type": "message", "role": "assistant"}), rid)
        self.deliver(at, self._event(ITEM_ADDED[d], item={"id": iid, "type": "message", "role": "assistant"}), rid)
        step = max(2, round(self.delta_s * self.rate) * 2)
        t = at
        for off in range(0, len(pcm), step):
            chunk = pcm[off : off + step]
            ms = len(chunk) / 2 / self.rate * 1000.0

            def sent(item: _Item = item, ms: float = ms) -> None:
                item.sent_ms += ms

            self.deliver(t, self._event(AUDIO_DELTA[d], response_id=rid, item_id=iid, output_index=0, content_index=0,
                                        delta=b64encode(chunk)), rid, sent)
            t += ms / 1000.0 / self.speed
        self.deliver(t, self._event(AUDIO_DONE[d], response_id=rid, item_id=iid, output_index=0, content_index=0), rid)
        done = dict(resp, status="completed", status_details=None)
        self.deliver(t, self._event("response.done", response=done), rid)
        self.active, self.active_until = rid, t
        self.free_at = t
        self.playing_until = max(self.playing_until, at) + item.audio_ms / 1000.0

    def _cancel(self, rid: str, at_s: float, reason: str) -> None:
        self.cancel(rid, at_s)
        done = {"id": rid, "object": "realtime.response", "status": "cancelled",
                "status_details": {"type": "cancelled", "reason": reason}}
        self.deliver(at_s, self._event("response.done", response=done))
        self.server_events.append({"event": "cancelled", "response_id": rid, "t": at_s, "reason": reason})
        self.active = None
        self.free_at = at_s
        self.playing_until = at_s

    def _speech_started(self, at_s: float, start_s: float) -> None:
        self.user_item = self._id("item")
        self.user_open = True
        self.deliver(at_s, self._event("input_audio_buffer.speech_started", audio_start_ms=int(max(0.0, start_s) * 1000),
                                       item_id=self.user_item))

    def on_clear(self, at_s: float, detail: dict[str, Any]) -> None:
        """The served system yields to the user: speech_started, and a cancel when interrupt_response is on."""
        if self.td is None:
            return
        self._speech_started(at_s, float(detail.get("user_onset_s", at_s)))
        if self.td.get("interrupt_response", True) and self.active is not None and at_s < self.active_until:
            self._cancel(self.active, at_s, "turn_detected")
        self.playing_until = min(self.playing_until, at_s)

    def on_user(self, kind: str, at_s: float, detail: dict[str, Any]) -> None:
        if self.td is None:
            return
        if kind == "started" and at_s >= self.playing_until:
            self._speech_started(at_s, float(detail.get("audio_start_s", at_s)))
        elif kind == "stopped" and self.user_open:
            self.user_open = False
            end_ms = int(float(detail.get("audio_end_s", at_s)) * 1000)
            self.deliver(at_s, self._event("input_audio_buffer.speech_stopped", audio_end_ms=end_ms, item_id=self.user_item))
            self.deliver(at_s, self._event("input_audio_buffer.committed", item_id=self.user_item, previous_item_id=None))
