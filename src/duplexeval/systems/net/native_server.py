"""`duplexeval serve native-duplex`: a loopback native full-duplex `/v1/realtime` server, strict like sglang-omni.

It behaves as sglang-omni's realtime session does (read from `sglang_omni/serve/realtime/`: `schema.py`,
`negotiation.py`, `protocol.py`, `runtime.py`, `projection.py`, `types.py`) for a deployment whose
capabilities are the server options (`--option input_rate=16000,output_rate=24000,tail_policy=flush,
native_unit_ms=80`):

- `session.created` first (`session.sglang.granted` null). Client events are validated strictly, unknown
  fields forbidden at every level; every error is an `error` event (`sglang.fatal` false) and the session
  goes on: a bad event is `invalid_request` (an unknown type `not_supported`), a bad session
  configuration `invalid request` "invalid session configuration" with the field as `param` (so
  `session.sglang.native_unit_ms` is refused: the unit lives at `sglang.timebase.native_unit_ms`).
- Negotiation: a format must equal the deployment's exactly (`unsupported PCM format or sample rate`,
  `param` `session.audio.input.format` / `.output.format`); the tail policy and the native unit too
  (`tail policy is unavailable`, `native cadence is fixed`); turn detection must be null; left-out values
  are granted as the deployment's. `session.updated` carries the configuration and the full grant.
- Appends need an open session, the next `seq`, `t_start_ms` at the end of the audio so far (as float
  ms, within 1e-7 ms), strict base64 of whole PCM16 samples; each is answered by
  `sglang.input_audio.accepted`. The input is cut into native units; each runs the served system and gives
  one `response.output_audio.delta` (`sglang: {unit_id: "unit_<n>", chunk_seq, media_time}`) and
  `sglang.unit.done`. `sglang.input_audio.end` gives `ended`, the tail per the policy (`reject` with a
  partial unit is an error), an end-of-stream unit (empty when the input filled whole units), `drained`
  and the response's `output_audio.done` / `response.done`. `session.close` gives `session.closed` and
  the close. Every server event has an `event_id`.
- `input_audio_buffer.commit` and `response.create` are `not_applicable` in native mode; `response.cancel`
  is not a client event there (`not_supported`); binary frames and invalid JSON are `invalid_request`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from duplexeval.audio import from_pcm16
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ControlEvent, ProtocolViolation
from duplexeval.systems.net import native_wire as nw
from duplexeval.systems.net.frame_stream import FullDuplexOutput
from duplexeval.systems.net.moshi_wire import float_to_pcm16
from duplexeval.systems.net.pcm import b64decode_pcm
from duplexeval.systems.net.resample_stream import StreamResampler
from duplexeval.systems.net.server import ServerSession
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

# One native unit of 16 kHz PCM16 in -> the model's output for it (16 kHz int16, the unit's length).
Step = Callable[[bytes], Awaitable[np.ndarray]]

DEFAULT_CAPABILITIES = {"input_rate": "16000", "output_rate": "24000", "tail_policy": "flush", "native_unit_ms": "80"}
MODEL = "duplexeval-loopback"
MEDIA_TIME_TOLERANCE_MS = 1e-7


@dataclass(frozen=True)
class Deployment:
    """What the served deployment supports (the server options)."""

    input_rate: int = 16000
    output_rate: int = 24000
    tail_policy: str = "flush"
    native_unit_ms: int = 80
    output_modalities: tuple[str, ...] = ("audio",)

    @property
    def unit_samples(self) -> int:
        return self.input_rate * self.native_unit_ms // 1000

    def duration_ms(self, samples: int) -> float:
        return samples * 1000 / self.input_rate

    def granted(self, modalities: list[str]) -> JsonObject:
        """The `sglang.granted` object of a `session.updated` (wire JSON)."""
        return {
            "interaction": "native", "native_full_duplex": True, "proactive_output": False, "turn_control": [None],
            "client_commit": False, "input_modalities": ["audio"], "output_modalities": modalities,
            "input_audio_format": {"type": "audio/pcm", "rate": self.input_rate},
            "output_audio_format": {"type": "audio/pcm", "rate": self.output_rate},
            "native_unit_ms": self.native_unit_ms, "first_unit_ms": self.native_unit_ms, "microturn_ms": None,
            "tail_policy": self.tail_policy, "supports_server_interrupt": False, "supports_truncate": False,
            "supports_resume": False, "partial_style": "append_only", "pressure_policy": "reject",
            "strict_order": True, "sampling_parameters": [], "supports_reference_audio": False,
            "limits": {"max_input_bytes": 60 * self.input_rate * 2, "max_output_bytes": 4 * 1024 * 1024,
                       "max_output_events": 256, "max_history_chars": 64 * 1024, "cleanup_timeout_s": 30},
            "rejections": [],
        }


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class _Format(_Strict):
    type: str
    rate: int


class _TurnDetection(_Strict):
    type: str | None = None
    threshold: float | None = None
    prefix_padding_ms: int | None = None
    silence_duration_ms: int | None = None
    eagerness: str | None = None
    interrupt_response: bool | None = None


class _AudioInput(_Strict):
    format: _Format | None = None
    turn_detection: _TurnDetection | None = None


class _AudioOutput(_Strict):
    format: _Format | None = None


class _Audio(_Strict):
    input: _AudioInput | None = None
    output: _AudioOutput | None = None


class _Timebase(_Strict):
    microturn_ms: float | None = Field(default=None, gt=0)
    native_unit_ms: int | None = None


class _Extension(_Strict):
    interaction: Literal["native"] | None = None
    tail_policy: Literal["flush", "pad", "reject"] | None = None
    timebase: _Timebase | None = None
    sampling: dict[str, float | int | bool] | None = None
    max_slice_nums: int | None = Field(default=None, ge=1)


class _Session(_Strict):
    """The session configuration a deployment accepts (every field optional, nothing else allowed)."""

    type: Literal["realtime", "transcription"] | None = None
    model: str | None = None
    instructions: str | None = None
    output_modalities: list[str] | None = None
    audio: _Audio | None = None
    sglang: _Extension | None = None


class _Envelope(_Strict):
    """Every client event: its type and a non-empty event_id (the body is checked per type)."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)
    type: str
    event_id: str = Field(min_length=1, max_length=nw.MAX_EVENT_ID_LENGTH)


class _Update(_Strict):
    type: Literal["session.update"]
    event_id: str
    session: JsonObject  # the patch as sent: merged into the session JSON, then validated as `_Session`


class _AppendMeta(_Strict):
    seq: int
    t_start_ms: float | None = None


class _Append(_Strict):
    type: Literal["input_audio_buffer.append"]
    event_id: str
    audio: str
    sglang: _AppendMeta


class _Command(_Strict):
    type: Literal["input_audio_buffer.clear", "sglang.input_audio.end", "session.close",
                  "input_audio_buffer.commit", "response.create"]
    event_id: str


CLIENT_TYPES: dict[str, type[_Strict]] = {
    "session.update": _Update, "input_audio_buffer.append": _Append,
    **{t: _Command for t in ("input_audio_buffer.clear", "sglang.input_audio.end", "session.close",
                             "input_audio_buffer.commit", "response.create")},
}


class Refusal(Exception):
    """A protocol error: code, message, param (an `error` event; the session goes on unless fatal)."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.param = code, param


def _merge(current: JsonObject, patch: JsonObject) -> JsonObject:
    """`patch` merged into `current` as session.update merges (objects key by key, anything else replaced)."""
    out: JsonObject = json.loads(json.dumps(current))
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = json.loads(json.dumps(value))
    return out


def _loc(exc: ValidationError) -> str:
    return ".".join(str(p) for p in exc.errors()[0]["loc"])


@dataclass
class Reply:
    """Messages to send in answer to one client message, and whether the server then closes."""

    messages: list[str] = field(default_factory=list)
    close: bool = False


class NativeConversation:
    """One native full-duplex session's rules; `step` runs the model on one unit (16 kHz PCM16)."""

    def __init__(self, step: Step, session_id: str = "sess_1", deployment: Deployment | None = None) -> None:
        self.step = step
        self.dep = deployment or Deployment()
        self.session_id = session_id
        self.state = "CREATED"
        # The session JSON as the client patched it (what session.updated echoes; each update is validated as
        # `_Session` first) and the grant sent with it.
        self.config: JsonObject = {}
        self.granted: JsonObject | None = None
        self._n_events = 0
        self.next_seq = 0
        self.accepted_samples = 0
        self.consumed_samples = 0
        self.discarded_samples = 0
        self.padding_samples = 0
        self.pending = np.zeros(0, dtype=np.int16)  # accepted input (deployment rate) not cut into units yet
        self.units = 0
        self.ended = False
        self.response_id: str | None = None
        self._to16k = StreamResampler(self.dep.input_rate, INPUT_SAMPLE_RATE)
        self._out = StreamResampler(INPUT_SAMPLE_RATE, self.dep.output_rate)

    # ---- events
    def _event(self, type_: str, **fields: Any) -> str:
        self._n_events += 1
        return json.dumps({"type": type_, **fields, "event_id": f"evt_{self._n_events:032x}"},
                          separators=(",", ":"), allow_nan=False)

    def error(self, code: str, message: str, fatal: bool, event_id: str | None = None, param: str | None = None) -> str:
        return self._event("error", sglang={"fatal": fatal},
                           error={"type": "server_error" if fatal else "invalid_request_error", "code": code,
                                  "message": message, "event_id": event_id, "param": param})

    def created(self) -> str:
        return self._event("session.created", session={"id": self.session_id, "object": "realtime.session",
                                                       "type": "realtime", "model": MODEL, "sglang": {"granted": None}})

    def closed(self, reason: str, event_id: str | None = None) -> list[str]:
        """The end of the session: open responses finished as cancelled, then `session.closed`."""
        msgs = self._finish_response("cancelled", reason)
        self.state = "CLOSED"
        return [*msgs, self._event("session.closed", reason=reason, client_event_id=event_id)]

    def fail(self, code: str, message: str) -> list[str]:
        """A fatal failure: the error, the responses failed, `session.closed`."""
        msgs = [self.error(code, message, True)] + self._finish_response("failed", code)
        self.state = "CLOSED"
        return [*msgs, self._event("session.closed", reason=code, client_event_id=None)]

    # ---- dispatch
    async def on_message(self, data: str | bytes) -> Reply:
        event_id: str | None = None
        try:
            if isinstance(data, bytes):
                raise Refusal("invalid_request", "binary frames are unsupported")
            try:
                raw = json.loads(data, parse_constant=_reject_constant)
            except (ValueError, TypeError):
                raise Refusal("invalid_request", "invalid JSON") from None
            if (isinstance(raw, dict) and isinstance(raw.get("event_id"), str)
                and 0 < len(raw["event_id"]) <= nw.MAX_EVENT_ID_LENGTH):
                event_id = raw["event_id"]
            return await self._dispatch(raw, event_id)
        except Refusal as exc:
            return Reply([self.error(exc.code, str(exc), False, event_id, exc.param)])

    async def _dispatch(self, raw: Any, event_id: str | None) -> Reply:
        if not isinstance(raw, dict) or raw.get("type") not in CLIENT_TYPES:
            got = raw.get("type") if isinstance(raw, dict) else None
            raise Refusal("not_supported", f"Input tag {got!r} found using 'type' does not match any of the "
                                           "expected tags", "type")
        try:
            ev: Any = CLIENT_TYPES[raw["type"]].model_validate(raw)
            _Envelope.model_validate(raw)
        except ValidationError as exc:
            raise Refusal("invalid_request", str(exc.errors()[0]["msg"]), _loc(exc)) from None
        assert event_id is not None
        if isinstance(ev, _Update):
            return Reply([self._update(ev.session, event_id)])
        if isinstance(ev, _Append):
            return await self._append(ev, event_id)
        if ev.type == "input_audio_buffer.clear":
            self._require_open()
            cleared = int(self.pending.shape[0])
            self.pending = self.pending[:0]
            self.discarded_samples += cleared
            return Reply([self._event("input_audio_buffer.cleared", client_event_id=event_id,
                                      sglang={"discarded_ms": self.dep.duration_ms(cleared)})])
        if ev.type == "sglang.input_audio.end":
            return await self._end(event_id)
        if ev.type == "session.close":
            return Reply(self.closed("client_closed", event_id), close=True)
        self._require_open()
        raise Refusal("not_applicable", "manual turn commands are not granted")

    def _require_open(self) -> None:
        if self.state != "OPEN":
            raise Refusal("invalid_state", "session is not OPEN")

    # ---- negotiation
    def _update(self, patch: JsonObject, event_id: str) -> str:
        if self.state not in ("CREATED", "OPEN"):
            raise Refusal("invalid_state", "session is closing")
        merged = _merge(self.config, patch)
        try:
            cand = _Session.model_validate(merged)
        except ValidationError as exc:
            raise Refusal("invalid_request", "invalid session configuration", _loc(exc)) from None
        if self.state == "OPEN" and _admission(merged) != _admission(self.config):
            raise Refusal("invalid_state", "session field is frozen")
        if cand.model not in (None, MODEL):
            raise Refusal("invalid_request", "model differs from deployment")
        if cand.type not in (None, "realtime"):
            raise Refusal("invalid_request", "session type is unavailable")
        audio = cand.audio or _Audio()
        for side, fmt, rate in (("input", (audio.input or _AudioInput()).format, self.dep.input_rate),
                                ("output", (audio.output or _AudioOutput()).format, self.dep.output_rate)):
            if fmt is not None and (fmt.type, fmt.rate) != ("audio/pcm", rate):
                raise Refusal("invalid_request", "unsupported PCM format or sample rate",
                              f"session.audio.{side}.format")
        if audio.input is not None and audio.input.turn_detection is not None:
            raise Refusal("not_applicable", "VAD is only available for turn-based sessions")
        requested = cand.output_modalities if cand.output_modalities is not None else list(self.dep.output_modalities)
        modalities = [m for m in requested if m in self.dep.output_modalities][:1]
        if not modalities:
            raise Refusal("invalid_request", "no supported output combination")
        ext = cand.sglang or _Extension()
        if ext.sampling:
            raise Refusal("not_applicable", f"unsupported sampling parameters: {', '.join(sorted(ext.sampling))}",
                          "session.sglang.sampling")
        if ext.max_slice_nums is not None:
            raise Refusal("not_applicable", "image input is unavailable", "session.sglang.max_slice_nums")
        if (ext.tail_policy or self.dep.tail_policy) != self.dep.tail_policy:
            raise Refusal("invalid_request", "tail policy is unavailable")
        unit = (ext.timebase.native_unit_ms if ext.timebase is not None and ext.timebase.native_unit_ms is not None
                else None)
        if (unit or self.dep.native_unit_ms) != self.dep.native_unit_ms:
            raise Refusal("invalid_request", "native cadence is fixed")
        granted = self.dep.granted(modalities)
        micro = ext.timebase.microturn_ms if ext.timebase is not None else None
        if micro is not None:
            granted["rejections"].append({"field": "sglang.timebase.microturn_ms", "requested": micro,
                                          "reason": "external chunks are variable length; no fixed external cadence",
                                          "granted": None})
        if modalities != requested:
            granted["rejections"].append({"field": "output_modalities", "requested": requested,
                                          "reason": "deployment modalities", "granted": modalities})
        config = json.loads(json.dumps(merged))
        aud = config.setdefault("audio", {})
        aud.setdefault("input", {}).setdefault("format", {"type": "audio/pcm", "rate": self.dep.input_rate})
        aud.setdefault("output", {}).setdefault("format", {"type": "audio/pcm", "rate": self.dep.output_rate})
        config.update({"model": MODEL, "type": "realtime", "output_modalities": modalities})
        self.config, self.granted, self.state = config, granted, "OPEN"
        session = {**config, "id": self.session_id, "object": "realtime.session", "model": MODEL, "type": "realtime",
                   "sglang": {**config.get("sglang", {}), "granted": granted}}
        return self._event("session.updated", client_event_id=event_id, session=session)

    # ---- input
    async def _append(self, ev: _Append, event_id: str) -> Reply:
        try:
            pcm = b64decode_pcm(ev.audio, "input_audio_buffer.append")
        except ProtocolViolation:
            raise Refusal("invalid_request", "invalid base64 audio", "audio") from None
        self._require_open()
        meta = ev.sglang
        if self.ended:
            raise Refusal("invalid_state", "audio input has ended")
        if meta.seq != self.next_seq:
            raise Refusal("invalid_state", "audio seq must be contiguous")
        if not pcm:
            raise Refusal("invalid_request", "audio must contain whole PCM16 samples")
        if meta.t_start_ms is not None and not math.isclose(meta.t_start_ms,
                                                            self.dep.duration_ms(self.accepted_samples), rel_tol=0,
                                                            abs_tol=MEDIA_TIME_TOLERANCE_MS):
            raise Refusal("invalid_state", "input media time must be sample-contiguous")
        x = np.frombuffer(pcm, dtype="<i2").astype(np.int16)
        self.pending = np.concatenate([self.pending, x])
        self.accepted_samples += x.shape[0]
        self.next_seq += 1
        reply = Reply([self._event("sglang.input_audio.accepted", seq=meta.seq,
                                   accepted_end_ms=self.dep.duration_ms(self.accepted_samples),
                                   client_event_id=event_id)])
        while self.pending.shape[0] >= self.dep.unit_samples:
            reply.messages += await self._unit(eos=False)
        return reply

    async def _end(self, event_id: str) -> Reply:
        self._require_open()
        if self.ended:
            raise Refusal("invalid_state", "audio input already ended")
        if self.dep.tail_policy == "reject" and self.pending.shape[0] % self.dep.unit_samples:
            raise Refusal("invalid_state", "partial native unit; append more audio before EOS")
        self.ended = True
        reply = Reply([self._event("sglang.input_audio.ended",
                                   accepted_end_ms=self.dep.duration_ms(self.accepted_samples),
                                   tail_policy=self.dep.tail_policy, client_event_id=event_id)])
        reply.messages += await self._unit(eos=True)  # the end-of-stream unit: the tail, or empty
        reply.messages.append(self._event(
            "sglang.input_audio.drained", accepted_end_ms=self.dep.duration_ms(self.accepted_samples),
            consumed_ms=self.dep.duration_ms(self.consumed_samples),
            discarded_ms=self.dep.duration_ms(self.discarded_samples),
            padding_ms=self.dep.duration_ms(self.padding_samples), client_event_id=event_id))
        reply.messages += self._finish_response("completed", "turn_detected")
        return reply

    # ---- units
    async def _unit(self, eos: bool) -> list[str]:
        """Cut the next unit, run the model on it, and say so (deltas, then unit.done)."""
        n = self.dep.unit_samples
        start = self.accepted_samples - self.pending.shape[0]
        pcm, self.pending = self.pending[:n], self.pending[n:]
        real = int(pcm.shape[0])
        if real and real < n and self.dep.tail_policy == "pad":
            self.padding_samples += n - real
        unit_id = f"unit_{self.units}"
        self.units += 1
        msgs: list[str] = []
        if real:
            full = np.concatenate([pcm, np.zeros(n - real, dtype=np.int16)]) if real < n else pcm
            pcm16k = float_to_pcm16(self._to16k.process(from_pcm16(full)))
            out16 = await self.step(pcm16k)
            out = float_to_pcm16(self._out.process(from_pcm16(out16)))
            if self.response_id is None:
                self.response_id = f"resp_{self.session_id}"
                msgs.append(self._event("response.created",
                                        response={"id": self.response_id, "object": "realtime.response",
                                                  "status": "in_progress", "output": []}))
            media = {"t_start_ms": self.dep.duration_ms(start), "duration_ms": self.dep.duration_ms(real)}
            msgs.append(self._event("response.output_audio.delta", response_id=self.response_id, item_id=self._item(),
                                    output_index=0, content_index=0, delta=nw.encode_pcm16(out),
                                    sglang={"unit_id": unit_id, "chunk_seq": 0, "media_time": media}))
            self.consumed_samples += real
        msgs.append(self._event("sglang.unit.done", unit_id=unit_id))
        return msgs

    def _item(self) -> str:
        return f"item_{self.session_id}"

    def _finish_response(self, status: str, reason: str) -> list[str]:
        if self.response_id is None:
            return []
        rid, self.response_id = self.response_id, None
        done = self._event("response.output_audio.done", response_id=rid, item_id=self._item(), output_index=0,
                           content_index=0)
        message = {"id": self._item(), "object": "realtime.item", "type": "message", "role": "assistant",
                   "content": [{"type": "output_audio", "transcript": ""}]}
        return [done, self._event("response.done", response={"id": rid, "object": "realtime.response", "status": status,
                                                             "status_details": {"reason": reason}, "output": [message],
                                                             "usage": None})]


def _reject_constant(name: str) -> float:
    raise ValueError(f"nonfinite JSON number {name}")


def _admission(config: JsonObject) -> JsonObject:
    """The fields fixed once the session is open (all but the output modalities and turn detection)."""
    out: JsonObject = json.loads(json.dumps(config))
    out.pop("output_modalities", None)
    out.get("audio", {}).get("input", {}).pop("turn_detection", None)
    return out


async def flush_deliveries(session: ServerSession, bound_s: float = 2.0) -> None:
    """Wait (bounded) until the session's queued deliveries are on the wire."""
    waited = 0.0
    while session._heap and waited < bound_s and not session.stalled:
        await asyncio.sleep(0.01)
        waited += 0.01


class NativeServerSession(ServerSession):
    """The loopback native full-duplex server (see the module docstring)."""

    protocol: ClassVar[str] = "native-duplex"
    default_path: ClassVar[str] = nw.REALTIME_PATH

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output = FullDuplexOutput()
        self.deployment = deployment_of(self.config.options)
        self.conv = NativeConversation(self._step, f"sess_{self.server.connections:032x}", self.deployment)

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        """The deployment's capabilities: input_rate, output_rate (Hz), tail_policy, native_unit_ms."""
        deployment_of(options)

    @classmethod
    def refuse(cls, path: str, config: Any) -> tuple[int, str] | None:
        if urlsplit(path).path != nw.REALTIME_PATH:
            return 404, f"not found: this server serves {nw.REALTIME_PATH}\n"
        return None

    async def _step(self, unit: bytes) -> np.ndarray:
        await self.driver.feed(unit)
        return self.output.stream.next_frame(len(unit) // 2)

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        self.output.on_audio(pcm16k, at_s)

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        self.output.on_clear(at_s, event)

    def error_message(self, text: str) -> str | bytes:
        return self.conv.error("server_error", text, True)

    def oversize_message(self, nbytes: int) -> str | bytes:
        return self.conv._event("response.output_audio_transcript.delta", response_id="resp_x", item_id="item_x",
                                output_index=0, content_index=0, delta="x" * nbytes)

    async def run(self) -> None:
        await self.send_now(self.conv.created())
        async for message in self.ws:
            if self.stalled:
                continue
            units_before = self.conv.units
            before = self.conv.accepted_samples
            reply = await self.conv.on_message(message)
            if self.conv.accepted_samples > before:  # an accepted append: the session clock follows the input
                self.input_audio(self.deployment.duration_ms(self.conv.accepted_samples - before) / 1000.0)
            # Output of unit k goes out at its input time (now, in practice); the rest now.
            at = max(self.now_s(), units_before * self.deployment.native_unit_ms / 1000.0)
            if reply.close:  # the last words go out after everything queued, then the server closes
                await flush_deliveries(self)
                for msg in reply.messages:
                    await self.send_now(msg)
                return
            for msg in reply.messages:
                self.deliver(at, msg)


def deployment_of(options: dict[str, str]) -> Deployment:
    """The deployment the options describe; InputError naming a bad one."""
    opts = {**DEFAULT_CAPABILITIES, **{k: str(v) for k, v in options.items()}}
    for key in options:
        if key not in DEFAULT_CAPABILITIES:
            raise InputError(f"--option {key}: unknown native-duplex server option (known: "
                             f"{', '.join(DEFAULT_CAPABILITIES)})")
    try:
        dep = Deployment(int(opts["input_rate"]), int(opts["output_rate"]), opts["tail_policy"],
                         int(opts["native_unit_ms"]))
    except ValueError:
        raise InputError(
            f"--option: input_rate, output_rate and native_unit_ms are whole numbers, got {options}") from None
    if not (8000 <= dep.input_rate <= 48000 and 8000 <= dep.output_rate <= 48000):
        raise InputError(f"--option input_rate/output_rate: expected 8000..48000 Hz, got {dep.input_rate}, "
                         f"{dep.output_rate}")
    if dep.tail_policy not in nw.TAIL_POLICIES:
        raise InputError(f"--option tail_policy={dep.tail_policy!r}: expected one of {', '.join(nw.TAIL_POLICIES)}")
    if not (0 < dep.native_unit_ms <= 1000) or dep.input_rate * dep.native_unit_ms % 1000 \
            or INPUT_SAMPLE_RATE * dep.native_unit_ms % 1000 or (dep.unit_samples * INPUT_SAMPLE_RATE) % dep.input_rate:
        raise InputError(f"--option native_unit_ms={dep.native_unit_ms}: a unit must hold whole samples at "
                         f"{dep.input_rate} and 16000 Hz (1..1000 ms)")
    return dep

