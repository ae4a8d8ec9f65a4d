"""`duplexeval serve openai-realtime`: the loopback OpenAI Realtime server, GA and beta dialects.

Every event it sends is one of the `openai` SDK's server events with the fields the API returns, for the
dialect the client speaks (`--option dialect=auto`: beta when the client sends `OpenAI-Beta: realtime=v1`):

- `session.created` at once and `session.updated` with the whole effective session (GA: `type`, `model`,
  `instructions`, `output_modalities`, `tools`, `tool_choice`, `max_output_tokens`, `tracing`, `prompt`,
  `truncation`, `include`, `expires_at`, `audio.input` {format, transcription, noise_reduction,
  turn_detection}, `audio.output` {format, voice, speed}; beta: its flat fields). `session.update` takes
  every field the SDK's session declares for the dialect; an unknown one is `unknown_parameter`. Audio is
  PCM16 at 24 kHz in both dialects (the GA types allow no other rate): another format or rate is refused.
- From the served system's own listener: `input_audio_buffer.speech_started` / `speech_stopped`, then
  `committed` (with `previous_item_id`) and the user item (`conversation.item.added` and `.done` in GA,
  `conversation.item.created` in beta). A manual `input_audio_buffer.commit` (turn detection off) does the
  same; it is refused while server VAD is on or with under 100 ms of audio.
- A response per output chunk: `response.created`, `rate_limits.updated`, `response.output_item.added`,
  the assistant item added, `response.content_part.added`, the audio deltas at `speed` x real time and a
  transcript delta, then `output_audio.done`, `output_audio_transcript.done`, `content_part.done`,
  `output_item.done`, (GA) `conversation.item.done` and `response.done` with the item in `output` and
  `usage`. A response cancelled (barge-in with `interrupt_response`, or `response.cancel`) ends with the
  same done events at the cancel time (the item `incomplete`, the response `cancelled` with its reason).
  Beta names: `response.audio.delta/.done`, `response.audio_transcript.delta/.done`.
- `conversation.item.truncate` is validated as the API does ("already shorter than", 0 ms on an item
  without audio), answered by `conversation.item.truncated`; `response.cancel` without an active response
  is an error. The loopback server has no transcript of the served system's audio: transcripts are empty.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ControlEvent, ProtocolViolation
from duplexeval.systems.net.pcm import StreamResampler, b64decode_pcm, b64encode
from duplexeval.systems.net.server import ServerEvent, ServerSession, check_option_values, resample_pcm16
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

DIALECTS = ("ga", "beta")
RATE = 24000  # PCM16 at 24 kHz: the only PCM rate of both dialects
# Event names that differ between the dialects.
NAMES = {
    "ga": {"item_added": "conversation.item.added", "audio_delta": "response.output_audio.delta",
           "audio_done": "response.output_audio.done", "transcript_delta": "response.output_audio_transcript.delta",
           "transcript_done": "response.output_audio_transcript.done"},
    "beta": {"item_added": "conversation.item.created", "audio_delta": "response.audio.delta",
             "audio_done": "response.audio.done", "transcript_delta": "response.audio_transcript.delta",
             "transcript_done": "response.audio_transcript.done"},
}
# The session fields `session.update` takes: the SDK's RealtimeSessionCreateRequest (GA) and the beta
# SessionUpdateEvent's session (tests check these against the installed SDK).
GA_FIELDS = frozenset({"type", "audio", "include", "instructions", "max_output_tokens", "model", "output_modalities",
                       "parallel_tool_calls", "prompt", "reasoning", "tool_choice", "tools", "tracing", "truncation"})
BETA_FIELDS = frozenset({"client_secret", "input_audio_format", "input_audio_noise_reduction",
                         "input_audio_transcription", "instructions", "max_response_output_tokens", "modalities",
                         "model", "output_audio_format", "speed", "temperature", "tool_choice", "tools", "tracing",
                         "turn_detection", "voice"})
SERVER_OPTIONS = {"dialect": "auto", "speed": "2.0", "delta_ms": "100"}  # the defaults
DEFAULT_TD: JsonObject = {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                              "silence_duration_ms": 500, "idle_timeout_ms": None, "create_response": True,
                              "interrupt_response": True}
SESSION_TTL_S = 1800


@dataclass
class _Item:
    """An assistant item of one response, and what has been sent of it."""

    item_id: str
    response_id: str
    start_s: float  # input time its response starts
    previous_item_id: str | None
    sent_ms: float = 0.0
    audio_ms: float = 0.0
    truncated: int | None = None
    transcript: str = ""
    done: bool = False  # its response.done is on the wire (nothing left to cancel)


@dataclass
class _Session:
    """The effective session (what session.updated reports)."""

    dialect: str
    model: str = "gpt-realtime"
    voice: str = "alloy"
    instructions: str = ""
    td: JsonObject | None = field(default_factory=lambda: dict(DEFAULT_TD))
    extra: JsonObject = field(default_factory=dict)  # other fields as the client set them


class RealtimeServerSession(ServerSession):
    """The openai-realtime loopback server (see the module docstring). Options: dialect, speed, delta_ms."""

    protocol: ClassVar[str] = "openai-realtime"
    default_path: ClassVar[str] = "/v1/realtime"

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        """dialect (auto | ga | beta), speed and delta_ms (> 0); audio is PCM16 at 24 kHz, no rate option."""
        check_option_values(cls.protocol, options, {
            "dialect": lambda v: v in ("auto", *DIALECTS), "speed": lambda v: float(v) > 0,
            "delta_ms": lambda v: float(v) > 0})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opts = {**SERVER_OPTIONS, **self.config.options}
        header = (self.ws.request.headers.get("OpenAI-Beta", "") if self.ws.request is not None else "")
        self.dialect = opts["dialect"] if opts["dialect"] != "auto" else ("beta" if "realtime=v1" in header else "ga")
        self.names = NAMES[self.dialect]
        self.speed = float(opts["speed"])
        self.delta_s = float(opts["delta_ms"]) / 1000.0
        self.sess = _Session(self.dialect, td=self._vad(dict(DEFAULT_TD)))
        self.n = 0
        self.sid = f"sess_{self.number:04d}"
        self.conversation_id = f"conv_{self.number:04d}"
        self.items: dict[str, _Item] = {}
        self.last_item: str | None = None  # the conversation's last item (previous_item_id of the next)
        self.free_at = 0.0  # input time when the response being streamed has been sent
        self.playing_until = 0.0  # the server's estimate of when the client's playback ends
        self.active: _Item | None = None  # the response still streaming
        self.active_until = 0.0
        self.user_item: str | None = None
        self.user_open = False
        self.create_tokens = 0
        self.held: list[tuple[bytes, float]] = []
        self.buffered_ms = 0.0
        self.server_events = self.server.events

    @property
    def td(self) -> JsonObject | None:
        return self.sess.td

    def _vad(self, td: JsonObject) -> JsonObject:
        """The turn detection as the dialect reports it (beta's has no `idle_timeout_ms`)."""
        return {k: v for k, v in td.items() if not (self.dialect == "beta" and k == "idle_timeout_ms")}

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:04d}"

    # ---------------------------------------------------------- objects
    def _event(self, kind: str, **fields: Any) -> str:
        return json.dumps({"type": kind, "event_id": self._id("event"), **fields})

    def error_message(self, text: str, code: str = "server_error", param: str | None = None,
                      etype: str = "server_error", event_id: str | None = None) -> str:
        return self._event("error", error={"type": etype, "code": code, "message": text, "param": param,
                                           "event_id": event_id})

    def oversize_message(self, nbytes: int) -> str | bytes:
        return json.dumps({"type": self.names["audio_delta"], "item_id": "item_oversize", "delta": "A" * nbytes})

    def _format(self) -> Any:
        return {"type": "audio/pcm", "rate": RATE} if self.dialect == "ga" else "pcm16"

    def _session_json(self) -> JsonObject:
        s = self.sess
        if self.dialect == "beta":
            return {"id": self.sid, "model": s.model, "modalities": ["audio", "text"], "instructions": s.instructions,
                    "voice": s.voice, "input_audio_format": "pcm16", "output_audio_format": "pcm16",
                    "input_audio_transcription": None, "input_audio_noise_reduction": None, "turn_detection": s.td,
                    "tools": [], "tool_choice": "auto", "temperature": 0.8, "max_response_output_tokens": "inf",
                    "speed": 1.0, "tracing": None, **{k: v for k, v in s.extra.items() if k not in ("client_secret",)}}
        out = {"id": self.sid, "object": "realtime.session", "type": "realtime", "model": s.model,
               "output_modalities": ["audio"], "instructions": s.instructions, "tools": [], "tool_choice": "auto",
               "max_output_tokens": "inf", "tracing": None, "truncation": "auto", "prompt": None, "include": None,
               "expires_at": SESSION_TTL_S,
               "audio": {"input": {"format": self._format(), "transcription": None, "noise_reduction": None,
                                   "turn_detection": s.td},
                         "output": {"format": self._format(), "voice": s.voice, "speed": 1.0}}}
        out.update({k: v for k, v in s.extra.items() if k not in ("parallel_tool_calls",)})
        return out

    def _response(self, rid: str, status: str, output: list[JsonObject], reason: str | None = None,
                  audio_ms: float = 0.0) -> JsonObject:
        details = None if status == "in_progress" else {"type": status, "reason": reason}
        usage = None
        if status != "in_progress":
            out_tokens = round(audio_ms / 50)  # about 20 audio tokens a second
            usage = {"total_tokens": out_tokens, "input_tokens": 0, "output_tokens": out_tokens,
                     "input_token_details": {"text_tokens": 0, "audio_tokens": 0, "cached_tokens": 0},
                     "output_token_details": {"text_tokens": 0, "audio_tokens": out_tokens}}
        base = {"id": rid, "object": "realtime.response", "status": status, "status_details": details, "output": output,
                "conversation_id": self.conversation_id, "max_output_tokens": "inf", "usage": usage, "metadata": None}
        if self.dialect == "beta":
            return {**base, "modalities": ["audio", "text"], "output_audio_format": "pcm16", "voice": self.sess.voice,
                    "temperature": 0.8}
        return {**base, "output_modalities": ["audio"],
                "audio": {"output": {"format": self._format(), "voice": self.sess.voice}}}

    def _assistant_item(self, item: _Item, status: str, with_content: bool) -> JsonObject:
        content = [{"type": "output_audio" if self.dialect == "ga" else "audio", "transcript": item.transcript}]
        return {"id": item.item_id, "object": "realtime.item", "type": "message", "status": status, "role": "assistant",
                "content": content if with_content else []}

    def _user_item(self, iid: str) -> JsonObject:
        return {"id": iid, "object": "realtime.item", "type": "message", "status": "completed", "role": "user",
                "content": [{"type": "input_audio", "transcript": None}]}

    def _part(self, item: _Item) -> JsonObject:
        return {"type": "audio", "transcript": item.transcript}

    def _refuse(self, text: str, code: str, param: str | None = None, event_id: str | None = None) -> Any:
        return self.send_now(self.error_message(text, code, param, "invalid_request_error", event_id))

    # ---------------------------------------------------------- the client's events
    async def run(self) -> None:
        await self.send_now(self._event("session.created", session=self._session_json()))
        to16k = StreamResampler(RATE, INPUT_SAMPLE_RATE)
        async for message in self.ws:
            if self.server.record_sends:
                self.server.received.append((self.number, time.monotonic(), message))
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
            eid = msg.get("event_id") if isinstance(msg.get("event_id"), str) else None
            if kind == "input_audio_buffer.append":
                try:
                    pcm = b64decode_pcm(msg.get("audio"), kind)
                except ProtocolViolation as exc:
                    await self._refuse(str(exc), "invalid_audio", "audio", eid)
                    continue
                self.input_audio(len(pcm) / 2 / RATE)
                self.buffered_ms += len(pcm) / 2 / RATE * 1000.0
                await self.driver.feed(to16k(pcm))
            elif kind == "session.update":
                await self._update(msg.get("session"), eid)
            elif kind == "input_audio_buffer.commit":
                await self._commit(eid)
            elif kind == "input_audio_buffer.clear":
                self.buffered_ms = 0.0
                await self.send_now(self._event("input_audio_buffer.cleared"))
            elif kind == "conversation.item.truncate":
                await self._truncate(msg, eid)
            elif kind == "response.create":
                self._response_create()
            elif kind == "response.cancel":
                await self._response_cancel(eid)
            else:
                await self._refuse(f"Invalid value: '{kind}'. Supported values are the client events.", "invalid_value",
                                   "type", eid)

    async def _update(self, sess: Any, eid: str | None) -> None:
        if not isinstance(sess, dict):
            await self._refuse("session.update needs a session object", "invalid_value", "session", eid)
            return
        allowed = BETA_FIELDS if self.dialect == "beta" else GA_FIELDS
        for key in sess:
            if key not in allowed:
                await self._refuse(f"Unknown parameter: 'session.{key}'.", "unknown_parameter", f"session.{key}", eid)
                return
        if self.dialect == "ga" and sess.get("type") != "realtime":
            await self._refuse("Missing required parameter: 'session.type'.", "missing_required_parameter",
                               "session.type", eid)
            return
        problem = self._check_audio(sess)
        if problem is not None:
            await self._refuse(problem[0], "invalid_value", problem[1], eid)
            return
        if self.dialect == "beta":
            td = sess.get("turn_detection", self.td)
            voice = sess.get("voice", self.sess.voice)
        else:
            audio = sess.get("audio") or {}
            td = (audio.get("input") or {}).get("turn_detection", self.td)
            voice = (audio.get("output") or {}).get("voice", self.sess.voice)
        if td is not None and (not isinstance(td, dict) or td.get("type") not in ("server_vad", "semantic_vad")):
            await self._refuse("turn_detection.type must be server_vad or semantic_vad (or null)", "invalid_value",
                               "session.turn_detection", eid)
            return
        if td is not None:
            base = dict(DEFAULT_TD) if td.get("type") == "server_vad" else {"type": "semantic_vad", "eagerness": "auto",
                                                                             "create_response": True,
                                                                             "interrupt_response": True}
            td = self._vad({**base, **td})
        self.sess.td = td
        self.sess.voice = str(voice)
        if isinstance(sess.get("model"), str):
            self.sess.model = sess["model"]
        if isinstance(sess.get("instructions"), str):
            self.sess.instructions = sess["instructions"]
        skip = {"type", "audio", "model", "instructions", "turn_detection", "voice", "input_audio_format",
                "output_audio_format", "modalities", "output_modalities"}
        self.sess.extra.update({k: v for k, v in sess.items() if k not in skip})
        await self.send_now(self._event("session.updated", session=self._session_json()))

    def _check_audio(self, sess: JsonObject) -> tuple[str, str] | None:
        """(message, param) when the session asks for audio other than PCM16 at 24 kHz."""
        if self.dialect == "beta":
            for key in ("input_audio_format", "output_audio_format"):
                if sess.get(key, "pcm16") != "pcm16":
                    return f"this server speaks pcm16 only ({key})", f"session.{key}"
            return None
        audio = sess.get("audio") or {}
        for side in ("input", "output"):
            fmt = (audio.get(side) or {}).get("format") if isinstance(audio, dict) else None
            if fmt is None:
                continue
            if not isinstance(fmt, dict) or fmt.get("type", "audio/pcm") != "audio/pcm":
                return f"this server speaks audio/pcm only (audio.{side}.format)", f"session.audio.{side}.format"
            if fmt.get("rate", RATE) != RATE:
                return (f"Invalid 'session.audio.{side}.format.rate': {fmt.get('rate')!r}. Supported values are: "
                        "24000.",
                        f"session.audio.{side}.format.rate")
        return None

    async def _commit(self, eid: str | None) -> None:
        if self.td is not None:
            await self._refuse("input_audio_buffer.commit is not allowed while server VAD is on", "commit_not_allowed",
                               event_id=eid)
        elif self.buffered_ms < 100.0:
            await self._refuse(f"buffer too small: expected at least 100ms of audio, have {self.buffered_ms:.0f}ms",
                               "input_audio_buffer_commit_empty", event_id=eid)
        else:
            self.buffered_ms = 0.0
            for msg in self._user_turn(self._id("item")):
                await self.send_now(msg)

    def _user_turn(self, iid: str) -> list[str]:
        """committed and the user item (its previous item is the conversation's last)."""
        prev, self.last_item = self.last_item, iid
        item = self._user_item(iid)
        out = [self._event("input_audio_buffer.committed", item_id=iid, previous_item_id=prev),
               self._event(self.names["item_added"], item=item, previous_item_id=prev)]
        if self.dialect == "ga":
            out.append(self._event("conversation.item.done", item=item, previous_item_id=prev))
        return out

    async def _truncate(self, msg: JsonObject, eid: str | None) -> None:
        item = self.items.get(str(msg.get("item_id")))
        ms = msg.get("audio_end_ms")
        self.server_events.append(ServerEvent("truncate", self.now_s(), item_id=msg.get("item_id"), audio_end_ms=ms))
        if item is None:
            await self._refuse(f"item {msg.get('item_id')!r} does not exist", "item_not_found", "item_id", eid)
        elif not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
            await self._refuse("audio_end_ms must be a whole number of milliseconds >= 0", "invalid_value",
                               "audio_end_ms", eid)
        elif item.sent_ms <= 0:
            await self._refuse("cannot truncate an item without audio", "invalid_value", "audio_end_ms", eid)
        elif ms > item.sent_ms + 1e-6:
            await self._refuse(f"Audio content of {item.sent_ms:.0f}ms is already shorter than {ms}ms", "invalid_value",
                               "audio_end_ms", eid)
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

    async def _response_cancel(self, eid: str | None) -> None:
        now = self.now_s()
        self.server_events.append(ServerEvent("cancel", now))
        if not self._cancellable(now):
            await self._refuse("Cancellation failed: no active response found", "response_cancel_not_active",
                               event_id=eid)
            return
        assert self.active is not None
        self._cancel(self.active, now, "client_cancelled")

    def _cancellable(self, at_s: float) -> bool:
        """A response is streaming at input time `at_s` and its response.done is not out yet."""
        return self.active is not None and not self.active.done and at_s < self.active_until

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
        """One response, every event at its input time; the done events are withdrawn if it is cancelled."""
        at = max(at_s, self.free_at)
        rid, iid = self._id("resp"), self._id("item")
        item = _Item(iid, rid, at, self.last_item)
        self.last_item = iid
        self.items[iid] = item
        pcm = resample_pcm16(pcm16k, INPUT_SAMPLE_RATE, RATE)
        item.audio_ms = len(pcm) / 2 / RATE * 1000.0
        where = {"response_id": rid, "item_id": iid, "output_index": 0, "content_index": 0}
        self.deliver(at, self._event("response.created", response=self._response(rid, "in_progress", [])), rid)
        self.deliver(at, self._event("rate_limits.updated", rate_limits=self._rate_limits()), rid)
        added = self._assistant_item(item, "in_progress", with_content=False)
        self.deliver(at, self._event("response.output_item.added", response_id=rid, output_index=0, item=added), rid)
        self.deliver(at, self._event(self.names["item_added"], item=added, previous_item_id=item.previous_item_id), rid)
        self.deliver(at, self._event("response.content_part.added", **where, part=self._part(item)), rid)
        step = max(2, round(self.delta_s * RATE) * 2)
        t = at
        for off in range(0, len(pcm), step):
            chunk = pcm[off : off + step]
            ms = len(chunk) / 2 / RATE * 1000.0

            def sent(item: _Item = item, ms: float = ms) -> None:
                item.sent_ms += ms

            self.deliver(t, self._event(self.names["audio_delta"], **where, delta=b64encode(chunk)), rid, sent)
            if off == 0:  # the transcript streams with the audio (the loopback server has no words: empty)
                self.deliver(t, self._event(self.names["transcript_delta"], **where, delta=item.transcript), rid)
            t += ms / 1000.0 / self.speed
        finish = self._finish(item, "completed", None, item.audio_ms)
        for msg in finish[:-1]:
            self.deliver(t, msg, rid)

        def finished(item: _Item = item) -> None:
            item.done = True

        self.deliver(t, finish[-1], rid, finished)
        self.active, self.active_until = item, t
        self.free_at = t
        self.playing_until = max(self.playing_until, at) + item.audio_ms / 1000.0

    def _finish(self, item: _Item, status: str, reason: str | None, audio_ms: float) -> list[str]:
        """The done events of a response: its audio, transcript, part, item and the response itself."""
        where = {"response_id": item.response_id, "item_id": item.item_id, "output_index": 0, "content_index": 0}
        done = self._assistant_item(item, "completed" if status == "completed" else "incomplete", with_content=True)
        out = [self._event(self.names["audio_done"], **where),
               self._event(self.names["transcript_done"], **where, transcript=item.transcript),
               self._event("response.content_part.done", **where, part=self._part(item)),
               self._event("response.output_item.done", response_id=item.response_id, output_index=0, item=done)]
        if self.dialect == "ga":
            out.append(self._event("conversation.item.done", item=done, previous_item_id=item.previous_item_id))
        out.append(self._event("response.done", response=self._response(item.response_id, status, [done], reason,
                                                                         audio_ms)))
        return out

    def _rate_limits(self) -> list[JsonObject]:
        return [{"name": "requests", "limit": 5000, "remaining": 4999, "reset_seconds": 0.012},
                {"name": "tokens", "limit": 400000, "remaining": 399000, "reset_seconds": 0.15}]

    def _cancel(self, item: _Item, at_s: float, reason: str) -> None:
        self.cancel(item.response_id, at_s)
        self.server_events.append(ServerEvent("cancelled", at_s, response_id=item.response_id, reason=reason))
        if at_s >= item.start_s - 1e-9:  # it had started: its done events say what became of it
            sent_ms = min(item.audio_ms, (at_s - item.start_s) * 1000.0 * self.speed)
            for msg in self._finish(item, "cancelled", reason, sent_ms):
                self.deliver(at_s, msg)
        self.active = None
        self.free_at = at_s
        self.playing_until = at_s

    def _speech_started(self, at_s: float, start_s: float) -> None:
        self.user_item = self._id("item")
        self.user_open = True
        self.deliver(at_s, self._event("input_audio_buffer.speech_started",
                                       audio_start_ms=int(max(0.0, start_s) * 1000), item_id=self.user_item))

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        """The served system yields to the user: speech_started, and a cancel when interrupt_response is on."""
        if self.td is None:
            return
        self._speech_started(at_s, float(event.detail.get("user_onset_s", at_s)))
        if self.td.get("interrupt_response", True) and self._cancellable(at_s):
            assert self.active is not None
            self._cancel(self.active, at_s, "turn_detected")
        self.playing_until = min(self.playing_until, at_s)

    def on_user(self, kind: str, at_s: float, audio_s: float) -> None:
        if self.td is None:
            return
        if kind == "started" and at_s >= self.playing_until:
            self._speech_started(at_s, float(audio_s))
        elif kind == "stopped" and self.user_open and self.user_item is not None:
            self.user_open = False
            end_ms = int(float(audio_s) * 1000)
            self.deliver(at_s, self._event("input_audio_buffer.speech_stopped", audio_end_ms=end_ms,
                                           item_id=self.user_item))
            for msg in self._user_turn(self.user_item):
                self.deliver(at_s, msg)
