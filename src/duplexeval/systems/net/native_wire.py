"""The native full-duplex JSON protocol of `/v1/realtime` servers with `interaction: native` (sglang-omni style).

Flow: connect -> `session.created` -> client `session.update` -> `session.updated` whose
`session.sglang.granted` lists the granted capabilities; then 80 ms appends with `sglang.seq` and
`sglang.t_start_ms`, each acknowledged by `sglang.input_audio.accepted`; output audio deltas per
unit (`sglang.unit_id`, `chunk_seq`, `media_time`) and `sglang.unit.done`; at T the client sends
`sglang.input_audio.end`, the server answers `ended` then `drained {consumed_ms, discarded_ms,
padding_ms}`; `session.close` -> `session.closed`. `commit`, `response.create` and
`response.cancel` are never sent in native mode. Pydantic models here; the accounting in `NativeLedger`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net.pcm import b64decode_pcm, b64encode

REALTIME_PATH = "/v1/realtime"
UNIT_MS = 80
TAIL_POLICIES = ("flush", "pad", "reject")


class NativeWireError(ProtocolViolation):
    """A message that breaks the native protocol (bad JSON, a bad field, a grant that does not match)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _Strict(BaseModel):
    """Client events: exactly the fields we mean to send."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- shared pieces ----


class AudioFormat(_Model):
    type: Literal["audio/pcm"] = "audio/pcm"
    rate: int = Field(gt=0)


class SglangRequest(_Strict):
    interaction: Literal["native"] = "native"
    native_unit_ms: int = UNIT_MS
    tail_policy: Literal["flush", "pad", "reject"] = "flush"


class AudioIn(_Strict):
    format: AudioFormat
    turn_detection: None = None


class AudioOutCfg(_Strict):
    format: AudioFormat


class AudioCfg(_Strict):
    input: AudioIn
    output: AudioOutCfg


class SessionRequest(_Strict):
    type: Literal["realtime"] = "realtime"
    output_modalities: list[Literal["audio"]] = ["audio"]
    audio: AudioCfg
    sglang: SglangRequest = SglangRequest()


# ---- client events ----


class SessionUpdate(_Strict):
    type: Literal["session.update"] = "session.update"
    event_id: str = Field(min_length=1)
    session: SessionRequest


class AppendMeta(_Strict):
    seq: int = Field(ge=0)
    t_start_ms: int = Field(ge=0)


class InputAudioAppend(_Strict):
    type: Literal["input_audio_buffer.append"] = "input_audio_buffer.append"
    event_id: str = Field(min_length=1)
    audio: str
    sglang: AppendMeta


class InputAudioEnd(_Strict):
    type: Literal["sglang.input_audio.end"] = "sglang.input_audio.end"
    event_id: str = Field(min_length=1)


class SessionClose(_Strict):
    type: Literal["session.close"] = "session.close"
    event_id: str = Field(min_length=1)


CLIENT_EVENTS: dict[str, type[_Strict]] = {
    "session.update": SessionUpdate,
    "input_audio_buffer.append": InputAudioAppend,
    "sglang.input_audio.end": InputAudioEnd,
    "session.close": SessionClose,
}
# Refused in native mode (the loopback server answers them with an error).
REFUSED_IN_NATIVE = ("input_audio_buffer.commit", "response.create", "response.cancel")


# ---- server events ----


class Limits(_Model):
    max_session_ms: int | None = None
    max_append_ms: int | None = None


class Rejection(_Model):
    field: str
    reason: str


class Granted(_Model):
    """What the server granted; the client checks it against what it asked for (`check_grant`)."""

    interaction: str
    native_full_duplex: bool
    native_unit_ms: int = Field(gt=0)
    first_unit_ms: int = Field(ge=0)
    tail_policy: Literal["flush", "pad", "reject"]
    supports_server_interrupt: bool = False
    supports_truncate: bool = False
    supports_resume: bool = False
    partial_style: str | None = None
    input_audio_format: AudioFormat
    output_audio_format: AudioFormat
    limits: Limits = Limits()
    rejections: list[Rejection] = []


class SglangSession(_Model):
    granted: Granted


class UpdatedSession(_Model):
    sglang: SglangSession


class SessionCreated(_Model):
    type: Literal["session.created"]


class SessionUpdated(_Model):
    type: Literal["session.updated"]
    session: UpdatedSession


class MediaTime(_Model):
    t_start_ms: int = Field(ge=0)
    duration_ms: float = Field(ge=0)


class DeltaMeta(_Model):
    unit_id: int = Field(ge=0)
    chunk_seq: int = Field(ge=0)
    media_time: MediaTime


class OutputAudioDelta(_Model):
    type: Literal["response.output_audio.delta"]
    response_id: str
    delta: str
    sglang: DeltaMeta


class TranscriptDelta(_Model):
    type: Literal["response.output_audio_transcript.delta"]
    delta: str


class ResponseCreated(_Model):
    type: Literal["response.created"]


class ResponseDone(_Model):
    type: Literal["response.done"]
    response: dict[str, Any] = {}


class ErrorBody(_Model):
    type: str = "error"
    code: str | None = None
    message: str = ""


class ErrorMeta(_Model):
    fatal: bool = False


class ErrorEvent(_Model):
    type: Literal["error"]
    error: ErrorBody
    sglang: ErrorMeta = ErrorMeta()


class Accepted(_Model):
    type: Literal["sglang.input_audio.accepted"]
    seq: int = Field(ge=0)
    accepted_end_ms: int = Field(ge=0)


class Ended(_Model):
    type: Literal["sglang.input_audio.ended"]


class Drained(_Model):
    type: Literal["sglang.input_audio.drained"]
    consumed_ms: int = Field(ge=0)
    discarded_ms: int = Field(ge=0)
    padding_ms: int = Field(ge=0)


class UnitDone(_Model):
    type: Literal["sglang.unit.done"]
    unit_id: int = Field(ge=0)


class SessionClosed(_Model):
    type: Literal["session.closed"]


SERVER_EVENTS: dict[str, type[_Model]] = {
    m.model_fields["type"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (
        SessionCreated,
        SessionUpdated,
        OutputAudioDelta,
        TranscriptDelta,
        ResponseCreated,
        ResponseDone,
        ErrorEvent,
        Accepted,
        Ended,
        Drained,
        UnitDone,
        SessionClosed,
    )
}
# Server events a client may ignore (recorded in the trace, no rule attached).
IGNORED_SERVER_EVENTS = frozenset(
    {
        "rate_limits.updated",
        "input_audio_buffer.cleared",
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
    }
)


def _loads(text: str | bytes) -> dict[str, Any]:
    if isinstance(text, bytes):
        raise NativeWireError("binary frame on a JSON-only protocol")
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise NativeWireError(f"malformed JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise NativeWireError("message is not a JSON object with a string 'type'")
    return obj


def parse_server_event(text: str | bytes) -> _Model | dict[str, Any]:
    """Validate one server message; known types become models, ignorable ones stay dicts."""
    obj = _loads(text)
    model = SERVER_EVENTS.get(obj["type"])
    if model is None:
        if obj["type"] in IGNORED_SERVER_EVENTS:
            return obj
        raise NativeWireError(f"unknown server event {obj['type']!r}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise NativeWireError(f"bad {obj['type']}: {_first_error(exc)}") from None


def parse_client_event(text: str | bytes) -> _Strict | dict[str, Any]:
    """Validate one client message (for the loopback server); refused/unknown types stay dicts."""
    obj = _loads(text)
    model = CLIENT_EVENTS.get(obj["type"])
    if model is None:
        return obj
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise NativeWireError(f"bad {obj['type']}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    """The first problem, an unknown field first (servers answer those with `unknown_parameter`)."""
    errors = sorted(exc.errors(), key=lambda e: e.get("type") != "extra_forbidden")
    err = errors[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid"))


def dump(event: BaseModel) -> str:
    """Compact JSON text of one event (fields in declaration order)."""
    return event.model_dump_json(exclude_none=False)


def decode_pcm16(b64: str, what: str) -> bytes:
    """Base64 PCM16 -> bytes (`pcm.b64decode_pcm`'s checks); a violation is a NativeWireError."""
    try:
        return b64decode_pcm(b64, what)
    except ProtocolViolation as exc:
        raise NativeWireError(str(exc)) from None


encode_pcm16 = b64encode


# ---- what the client asked for, and whether the grant matches ----


def session_request(input_rate: int, output_rate: int, tail_policy: str = "flush") -> SessionRequest:
    return SessionRequest(
        audio=AudioCfg(
            input=AudioIn(format=AudioFormat(rate=input_rate)),
            output=AudioOutCfg(format=AudioFormat(rate=output_rate)),
        ),
        sglang=SglangRequest(tail_policy=tail_policy),  # type: ignore[arg-type]
    )


def check_grant(request: SessionRequest, granted: Granted) -> list[str]:
    """Every way the grant fails what the client needs; empty when it can go on.

    The output rate is the server's choice (any rate is resampled at playout); the input rate, the
    unit, the interaction mode and the tail policy must be exactly what was asked for.
    """
    problems = []
    if granted.interaction != "native":
        problems.append(f"interaction {granted.interaction!r} granted, 'native' asked")
    if not granted.native_full_duplex:
        problems.append("native_full_duplex not granted")
    if granted.native_unit_ms != request.sglang.native_unit_ms:
        problems.append(f"native_unit_ms {granted.native_unit_ms} granted, {request.sglang.native_unit_ms} asked")
    if granted.input_audio_format.rate != request.audio.input.format.rate:
        problems.append(
            f"input rate {granted.input_audio_format.rate} granted, {request.audio.input.format.rate} asked"
        )
    if granted.tail_policy != request.sglang.tail_policy:
        problems.append(f"tail_policy {granted.tail_policy!r} granted, {request.sglang.tail_policy!r} asked")
    return problems
