"""The native full-duplex JSON protocol of sglang-omni's `/v1/realtime` (`interaction: native`).

Flow: connect -> `session.created` (its `session.sglang.granted` is null) -> client `session.update` ->
`session.updated` whose `session.sglang.granted` lists what the deployment grants; then appends
`input_audio_buffer.append {audio, sglang: {seq, t_start_ms}}`, each acknowledged by
`sglang.input_audio.accepted {seq, accepted_end_ms}`; the deployment cuts the input into native units of
its own `native_unit_ms`, and per unit sends output deltas (`sglang: {unit_id: "unit_<n>", chunk_seq,
media_time}`) and `sglang.unit.done {unit_id}`; at T the client sends `sglang.input_audio.end`, the server
answers `sglang.input_audio.ended` then `sglang.input_audio.drained {consumed_ms, discarded_ms,
padding_ms}`; `session.close` -> `session.closed`. Every client event carries a non-empty `event_id`.

The models follow sglang-omni `sglang_omni/serve/realtime/schema.py` (client events and the session
configuration: strict types, unknown fields forbidden at every level, `native_unit_ms` only under
`sglang.timebase`), `projection.py` and `protocol.py` (what the server sends: string unit ids, float
milliseconds, `event_id` on every event) and `negotiation.py` (formats and the tail policy must equal the
deployment's; left out, the deployment's are granted). Client events are validated strictly here before
they are sent; server events are validated strictly in their types, extra fields allowed.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net.pcm import b64decode_pcm, b64encode

REALTIME_PATH = "/v1/realtime"
TAIL_POLICIES = ("flush", "pad", "reject")
MAX_EVENT_ID_LENGTH = 256
UNIT_ID = re.compile(r"^unit_(0|[1-9][0-9]*)$")


class NativeWireError(ProtocolViolation):
    """A message that breaks the native protocol (bad JSON, a bad field, a grant that does not match)."""


class _Client(BaseModel):
    """Client-side objects: exactly the fields the server accepts, strictly typed (as the server checks them)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class _Server(BaseModel):
    """Server events: strictly typed known fields; fields this client does not read are kept."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, allow_inf_nan=False)


# ---- the session configuration a client sends (schema.py SessionConfiguration) ----


class AudioFormat(_Client):
    type: Literal["audio/pcm"] = "audio/pcm"
    rate: int = Field(gt=0)


class AudioInputConfig(_Client):
    format: AudioFormat | None = None
    turn_detection: None = None  # native sessions refuse turn detection


class AudioOutputConfig(_Client):
    format: AudioFormat | None = None


class AudioConfig(_Client):
    input: AudioInputConfig = AudioInputConfig()
    output: AudioOutputConfig | None = None


class Timebase(_Client):
    native_unit_ms: int = Field(gt=0)


class SessionExtension(_Client):
    interaction: Literal["native"] = "native"
    tail_policy: Literal["flush", "pad", "reject"] | None = None
    timebase: Timebase | None = None


class SessionConfiguration(_Client):
    type: Literal["realtime"] = "realtime"
    output_modalities: list[Literal["audio"]] = ["audio"]
    audio: AudioConfig = AudioConfig()
    sglang: SessionExtension = SessionExtension()


# ---- client events (schema.py ClientEvent and its kinds) ----


class _ClientEvent(_Client):
    event_id: str = Field(min_length=1, max_length=MAX_EVENT_ID_LENGTH)


class SessionUpdate(_ClientEvent):
    type: Literal["session.update"] = "session.update"
    session: SessionConfiguration


class AppendMeta(_Client):
    seq: int = Field(ge=0)
    t_start_ms: float | None = None


class InputAudioAppend(_ClientEvent):
    type: Literal["input_audio_buffer.append"] = "input_audio_buffer.append"
    audio: str
    sglang: AppendMeta


class InputAudioEnd(_ClientEvent):
    type: Literal["sglang.input_audio.end"] = "sglang.input_audio.end"


class SessionClose(_ClientEvent):
    type: Literal["session.close"] = "session.close"


CLIENT_EVENTS: dict[str, type[_Client]] = {
    "session.update": SessionUpdate,
    "input_audio_buffer.append": InputAudioAppend,
    "sglang.input_audio.end": InputAudioEnd,
    "session.close": SessionClose,
}
# Accepted by the schema, refused in a native session (`not_applicable`); response.cancel is no client
# event at all there (`not_supported`).
REFUSED_IN_NATIVE = ("input_audio_buffer.commit", "response.create")


def dump(event: _Client) -> str:
    """Compact JSON of one client event without the fields left unset: leaving out what the client does
    not pin is how it asks for the deployment's value."""
    return event.model_dump_json(exclude_none=True)


# ---- server events (projection.py / protocol.py) ----


class _ServerEvent(_Server):
    event_id: str | None = None


class WireFormat(_Server):
    type: str
    rate: int = Field(gt=0)


class Rejection(_Server):
    field: str
    reason: str


class Granted(_Server):
    """What the deployment granted (`session.sglang.granted` of `session.updated`)."""

    interaction: Literal["native"]
    native_full_duplex: bool
    native_unit_ms: int = Field(gt=0)
    first_unit_ms: int = Field(ge=0)
    tail_policy: Literal["flush", "pad", "reject"]
    input_audio_format: WireFormat
    output_audio_format: WireFormat
    output_modalities: list[str] = []
    supports_server_interrupt: bool = False
    supports_truncate: bool = False
    supports_resume: bool = False
    partial_style: str | None = None
    limits: dict[str, int | float] = {}
    rejections: list[Rejection] = []


class CreatedExtension(_Server):
    granted: None = None


class CreatedSession(_Server):
    id: str
    sglang: CreatedExtension | None = None


class SessionCreated(_ServerEvent):
    type: Literal["session.created"]
    session: CreatedSession


class UpdatedExtension(_Server):
    granted: Granted


class UpdatedSession(_Server):
    id: str
    sglang: UpdatedExtension


class SessionUpdated(_ServerEvent):
    type: Literal["session.updated"]
    client_event_id: str | None = None
    session: UpdatedSession


class MediaTime(_Server):
    t_start_ms: float = Field(ge=0)
    duration_ms: float = Field(ge=0)


class DeltaMeta(_Server):
    unit_id: str = Field(pattern=UNIT_ID.pattern)
    chunk_seq: int = Field(ge=0)
    media_time: MediaTime


class OutputAudioDelta(_ServerEvent):
    type: Literal["response.output_audio.delta"]
    response_id: str
    item_id: str
    output_index: int
    content_index: int
    delta: str
    sglang: DeltaMeta


class OutputAudioDone(_ServerEvent):
    type: Literal["response.output_audio.done"]
    response_id: str
    item_id: str
    sglang: DeltaMeta | None = None


class TextDelta(_ServerEvent):
    type: Literal["response.output_audio_transcript.delta", "response.output_text.delta"]
    response_id: str
    item_id: str
    delta: str
    sglang: DeltaMeta | None = None


class TextDone(_ServerEvent):
    type: Literal["response.output_audio_transcript.done", "response.output_text.done"]
    response_id: str
    item_id: str
    sglang: DeltaMeta | None = None


class ResponseObject(_Server):
    id: str
    status: str


class ResponseCreated(_ServerEvent):
    type: Literal["response.created"]
    response: ResponseObject


class ResponseDone(_ServerEvent):
    type: Literal["response.done"]
    response: ResponseObject


class ErrorBody(_Server):
    type: str
    code: str | None = None
    message: str = ""
    param: str | None = None


class ErrorMeta(_Server):
    fatal: bool = False


class ErrorEvent(_ServerEvent):
    type: Literal["error"]
    error: ErrorBody
    sglang: ErrorMeta = ErrorMeta()


class Accepted(_ServerEvent):
    type: Literal["sglang.input_audio.accepted"]
    seq: int = Field(ge=0)
    accepted_end_ms: float = Field(ge=0)
    client_event_id: str | None = None


class Cleared(_ServerEvent):
    type: Literal["input_audio_buffer.cleared"]


class Ended(_ServerEvent):
    type: Literal["sglang.input_audio.ended"]
    accepted_end_ms: float = Field(ge=0)
    tail_policy: Literal["flush", "pad", "reject"]


class Drained(_ServerEvent):
    type: Literal["sglang.input_audio.drained"]
    accepted_end_ms: float = Field(ge=0)
    consumed_ms: float = Field(ge=0)
    discarded_ms: float = Field(ge=0)
    padding_ms: float = Field(ge=0)


class UnitDone(_ServerEvent):
    type: Literal["sglang.unit.done"]
    unit_id: str = Field(pattern=UNIT_ID.pattern)


class ImageAccepted(_ServerEvent):
    type: Literal["sglang.input_image.accepted"]
    unit_id: str


class SessionClosed(_ServerEvent):
    type: Literal["session.closed"]
    reason: str | None = None


def _type_of(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields["type"].annotation.__args__)  # type: ignore[union-attr]


SERVER_EVENTS: dict[str, type[_Server]] = {
    t: m
    for m in (SessionCreated, SessionUpdated, OutputAudioDelta, OutputAudioDone, TextDelta, TextDone,
              ResponseCreated, ResponseDone, ErrorEvent, Accepted, Cleared, Ended, Drained, UnitDone,
              ImageAccepted, SessionClosed)
    for t in _type_of(m)
}


def unit_index(unit_id: str) -> int:
    """The n of `unit_<n>` (the models have checked the pattern)."""
    return int(unit_id.removeprefix("unit_"))


def _loads(text: str | bytes) -> JsonObject:
    if isinstance(text, bytes):
        raise NativeWireError("binary frame on a JSON-only protocol")
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise NativeWireError(f"malformed JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise NativeWireError("message is not a JSON object with a string 'type'")
    return obj


def _no_constant(name: str) -> float:
    raise ValueError(f"non-finite JSON number {name}")


def parse_server_event(text: str | bytes) -> _Server:
    """Validate one server message against its model; an unknown type or a bad field is a NativeWireError."""
    obj = _loads(text)
    model = SERVER_EVENTS.get(obj["type"])
    if model is None:
        raise NativeWireError(f"unknown server event {obj['type']!r}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise NativeWireError(f"bad {obj['type']}: {first_error(exc)}") from None


def first_error(exc: ValidationError) -> str:
    """The first problem, with where it is and what was there (`sglang.unit_id: ... (got 3)`)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    got = err.get("input")
    shown = "" if isinstance(got, (dict, list)) else f" (got {got!r})"[:80]
    return f"{where}: {err.get('msg', 'invalid')}{shown}" if where else str(err.get("msg", "invalid"))


def decode_pcm16(b64: str, what: str) -> bytes:
    """Base64 PCM16 -> bytes (`pcm.b64decode_pcm`'s checks); a violation is a NativeWireError."""
    try:
        return b64decode_pcm(b64, what)
    except ProtocolViolation as exc:
        raise NativeWireError(str(exc)) from None


encode_pcm16 = b64encode


# ---- what the client asks for, and what it adopts of the grant ----


def session_request(input_rate: int = 0, output_rate: int = 0, tail_policy: str = "auto",
                    native_unit_ms: int = 0) -> SessionConfiguration:
    """The session the client asks for: each value it pins (non-zero / not `auto`) is sent, the rest left out,
    so the deployment grants its own (negotiation.py fills left-out formats with the deployment's)."""
    audio = AudioConfig(
        input=AudioInputConfig(format=AudioFormat(rate=input_rate) if input_rate else None),
        output=AudioOutputConfig(format=AudioFormat(rate=output_rate)) if output_rate else None,
    )
    ext = SessionExtension(tail_policy=None if tail_policy == "auto" else tail_policy,  # type: ignore[arg-type]
                           timebase=Timebase(native_unit_ms=native_unit_ms) if native_unit_ms else None)
    return SessionConfiguration(audio=audio, sglang=ext)


# The format values a client can pin, by name (input_rate, output_rate, tail_policy, native_unit_ms).
FormatValues = dict[str, int | str | None]


def pinned(request: SessionConfiguration) -> FormatValues:
    """The values a request pins: {name: value} for input_rate, output_rate, tail_policy, native_unit_ms."""
    out: FormatValues = {}
    if request.audio.input.format is not None:
        out["input_rate"] = request.audio.input.format.rate
    if request.audio.output is not None and request.audio.output.format is not None:
        out["output_rate"] = request.audio.output.format.rate
    if request.sglang.tail_policy is not None:
        out["tail_policy"] = request.sglang.tail_policy
    if request.sglang.timebase is not None:
        out["native_unit_ms"] = request.sglang.timebase.native_unit_ms
    return out


def granted_values(granted: Granted) -> FormatValues:
    """The grant's values under the names `pinned` uses."""
    return {"input_rate": granted.input_audio_format.rate, "output_rate": granted.output_audio_format.rate,
            "tail_policy": granted.tail_policy, "native_unit_ms": granted.native_unit_ms}


def check_grant(request: SessionConfiguration, granted: Granted) -> list[str]:
    """Every way the grant fails what the client needs; empty when it can go on (the pinned values granted
    as asked, PCM both ways, audio out, native full duplex)."""
    problems = []
    if not granted.native_full_duplex:
        problems.append("native_full_duplex not granted")
    for side, fmt in (("input", granted.input_audio_format), ("output", granted.output_audio_format)):
        if fmt.type != "audio/pcm":
            problems.append(f"{side} format {fmt.type!r} granted, audio/pcm needed")
    if granted.output_modalities and "audio" not in granted.output_modalities:
        problems.append(f"output_modalities {granted.output_modalities} granted, audio needed")
    got = granted_values(granted)
    for key, want in pinned(request).items():
        if got[key] != want:
            problems.append(f"{key} {got[key]!r} granted, {want!r} asked")
    return problems
