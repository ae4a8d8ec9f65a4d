"""sglang-omni's native realtime protocol as its sources define it, written down as data (our words).

The request side is a shape: nested dicts of allowed keys (a key ending in `!` is required), each with
its type; `check(obj, shape)` walks an object the way the upstream pydantic models do with
`strict=True` and `extra="forbid"` (an unknown key anywhere is an error, a bool is not an int, an int
is a float, a float is not an int). The server side is the events the upstream projection builds,
one example of each, with the fields it sets. Each shape names the upstream file it was read from.
"""

from __future__ import annotations

import base64
from typing import Any

STR, INT, FLOAT, BOOL, NONE = "str", "int", "float", "bool", "null"


def optional(shape: Any) -> tuple[str, Any]:
    return ("optional", shape)


# sglang-omni sglang_omni/serve/realtime/schema.py: AudioFormat (a total TypedDict: both keys required).
AUDIO_FORMAT = {"type!": STR, "rate!": INT}
# schema.py: TurnDetectionConfig, AudioInputConfig, AudioOutputConfig, AudioConfig (total=False).
TURN_DETECTION = {"type": STR, "threshold": optional(FLOAT), "prefix_padding_ms": optional(INT),
                  "silence_duration_ms": optional(INT), "eagerness": optional(STR), "interrupt_response": BOOL}
AUDIO = {"input": {"format": AUDIO_FORMAT, "turn_detection": optional(TURN_DETECTION)},
         "output": {"format": AUDIO_FORMAT}}
# schema.py: TimebaseConfig (microturn_ms and native_unit_ms only), SamplingConfig, SessionExtension.
TIMEBASE = {"microturn_ms": optional(FLOAT), "native_unit_ms": INT}
SAMPLING = {k: FLOAT for k in ("temperature", "top_p", "repetition_penalty", "listen_prob_scale",
                                "talker_temperature", "talker_repetition_penalty")} | {
    k: INT for k in ("top_k", "force_listen_count", "max_new_tokens_per_unit", "repetition_window_size")} | {
    "greedy": BOOL}
EXTENSION = {"interaction": ("native",), "tail_policy": ("flush", "pad", "reject"), "timebase": TIMEBASE,
             "sampling": SAMPLING, "reference_audio": {"media_type!": ("audio/wav",), "data!": STR},
             "tts_reference_audio": {"media_type!": ("audio/wav",), "data!": STR}, "max_slice_nums": INT}
# schema.py: SessionConfiguration (total=False) inside SessionUpdateRequest (strict, extra forbidden).
SESSION = {"type": ("realtime", "transcription"), "model": STR, "instructions": STR, "output_modalities": [STR],
           "audio": AUDIO, "sglang": EXTENSION}
# schema.py: ClientEvent (event_id: 1..256 characters) and its kinds, a union on `type`.
CLIENT_EVENTS = {
    "session.update": {"type!": ("session.update",), "event_id!": STR, "session!": SESSION},
    "input_audio_buffer.append": {"type!": ("input_audio_buffer.append",), "event_id!": STR, "audio!": STR,
                                  "sglang!": {"seq!": INT, "t_start_ms": optional(FLOAT)}},
    "sglang.input_image.append": {"type!": ("sglang.input_image.append",), "event_id!": STR, "image!": STR,
                                  "sglang!": {"t_ms!": FLOAT}},
    **{t: {"type!": (t,), "event_id!": STR} for t in ("input_audio_buffer.clear", "sglang.input_audio.end",
                                                       "session.close", "input_audio_buffer.commit",
                                                       "response.create")},
}
# negotiation.py (validate_audio): a format given must equal {type: audio/pcm, rate: the deployment's};
# a turn detection must be null; (validate_extension) the tail policy and native_unit_ms must equal the
# deployment's. types.py (Capabilities): the deployment's defaults are 16000 Hz in and out, 20 ms units,
# tail policy flush, text output.
DEPLOYMENT_DEFAULTS = {"input_rate": 16000, "output_rate": 16000, "native_unit_ms": 20, "tail_policy": "flush"}
ERRORS = {"format": ("invalid_request", "unsupported PCM format or sample rate"),
          "tail": ("invalid_request", "tail policy is unavailable"),
          "unit": ("invalid_request", "native cadence is fixed"),
          "config": ("invalid_request", "invalid session configuration"),
          "vad": ("not_applicable", "VAD is only available for turn-based sessions")}


def check(obj: Any, shape: Any, where: str = "") -> list[str]:
    """Every way `obj` fails `shape` (empty: it validates)."""
    if isinstance(shape, tuple) and shape and shape[0] == "optional":
        return [] if obj is None else check(obj, shape[1], where)
    if isinstance(shape, tuple):
        return [] if isinstance(obj, str) and obj in shape else [f"{where}: {obj!r} not one of {shape}"]
    if isinstance(shape, list):
        if not isinstance(obj, list):
            return [f"{where}: not a list"]
        return [p for i, x in enumerate(obj) for p in check(x, shape[0], f"{where}.{i}")]
    if isinstance(shape, dict):
        if not isinstance(obj, dict):
            return [f"{where}: not an object"]
        keys = {k.rstrip("!"): k.endswith("!") for k in shape}
        out = [f"{where}.{k}: extra field" for k in obj if k not in keys]
        out += [f"{where}.{k}: missing" for k, req in keys.items() if req and k not in obj]
        for k, v in obj.items():
            if k in keys:
                out += check(v, shape[k + "!" if keys[k] else k], f"{where}.{k}")
        return out
    ok = {STR: isinstance(obj, str), BOOL: isinstance(obj, bool), NONE: obj is None,
          INT: isinstance(obj, int) and not isinstance(obj, bool),
          FLOAT: isinstance(obj, (int, float)) and not isinstance(obj, bool)}[shape]
    return [] if ok else [f"{where}: {obj!r} is not {shape}"]


def check_client_event(event: dict[str, Any]) -> list[str]:
    shape = CLIENT_EVENTS.get(event.get("type"))  # type: ignore[arg-type]
    if shape is None:
        return [f"type {event.get('type')!r} is no client event"]
    problems = check(event, shape)
    eid = event.get("event_id")
    if isinstance(eid, str) and not 0 < len(eid) <= 256:
        problems.append("event_id: 1..256 characters")
    return problems


# ---- what the server sends: sglang_omni/serve/realtime/projection.py (project_control / project_output),
# (the limits are types.py RuntimeLimits), with protocol.py (SharedRealtimeSession.send) adding `event_id` to every
# event and, to an event of a
# unit, `sglang: {unit_id, chunk_seq, media_time: {t_start_ms, duration_ms}}` in input milliseconds.
# Unit ids are "unit_<index>" (types.py Unit.unit_id); times are float milliseconds (types.py samples_to_ms).
def server_events(rate: int = 24000) -> dict[str, dict[str, Any]]:
    eid = "evt_0123456789abcdef0123456789abcdef"
    unit = {"unit_id": "unit_3", "chunk_seq": 0, "media_time": {"t_start_ms": 240.0, "duration_ms": 80.0}}
    granted = {"interaction": "native", "native_full_duplex": True, "proactive_output": False, "turn_control": [None],
               "client_commit": False, "input_modalities": ["audio"], "output_modalities": ["audio"],
               "input_audio_format": {"type": "audio/pcm", "rate": 16000},
               "output_audio_format": {"type": "audio/pcm", "rate": rate}, "native_unit_ms": 80,
               "first_unit_ms": 80, "microturn_ms": None, "tail_policy": "flush", "supports_server_interrupt": False,
               "supports_truncate": False, "supports_resume": False, "partial_style": "append_only",
               "pressure_policy": "reject", "strict_order": True, "sampling_parameters": [],
               "supports_reference_audio": False, "rejections": [],
               "limits": {"max_input_bytes": 1920000, "max_output_bytes": 4194304, "max_output_events": 256,
                          "max_history_chars": 65536, "cleanup_timeout_s": 30}}
    return {
        "session.created": {"type": "session.created", "session": {"id": "sess_1", "object": "realtime.session",
                                                                   "type": "realtime", "model": "m",
                                                                   "sglang": {"granted": None}}, "event_id": eid},
        "session.updated": {"type": "session.updated", "client_event_id": "c1",
                            "session": {"output_modalities": ["audio"], "audio": {
                                "input": {"format": {"type": "audio/pcm", "rate": 16000}},
                                "output": {"format": {"type": "audio/pcm", "rate": rate}}},
                                "id": "sess_1", "object": "realtime.session", "model": "m", "type": "realtime",
                                "sglang": {"interaction": "native", "granted": granted}}, "event_id": eid},
        "sglang.input_audio.accepted": {"type": "sglang.input_audio.accepted", "seq": 3, "accepted_end_ms": 320.0,
                                        "client_event_id": "c2", "event_id": eid},
        "response.created": {"type": "response.created", "response": {
            "id": "resp_1", "object": "realtime.response", "status": "in_progress", "output": []}, "event_id": eid},
        "response.output_audio.delta": {"type": "response.output_audio.delta", "response_id": "resp_1",
                                        "item_id": "item_1", "output_index": 0, "content_index": 0,
                                        "delta": base64.b64encode(bytes(2 * rate // 100)).decode(), "event_id": eid,
                                        "sglang": unit},
        "response.output_audio_transcript.delta": {"type": "response.output_audio_transcript.delta",
                                                   "response_id": "resp_1", "item_id": "item_1", "output_index": 0,
                                                   "content_index": 0, "delta": " hi", "event_id": eid, "sglang": unit},
        "sglang.unit.done": {"type": "sglang.unit.done", "unit_id": "unit_3", "event_id": eid,
                             "sglang": unit},
        "response.output_audio.done": {"type": "response.output_audio.done", "response_id": "resp_1",
                                       "item_id": "item_1", "output_index": 0, "content_index": 0, "event_id": eid},
        "response.output_audio_transcript.done": {"type": "response.output_audio_transcript.done",
                                                  "response_id": "resp_1", "item_id": "item_1", "output_index": 0,
                                                  "content_index": 0, "transcript": " hi", "event_id": eid},
        "response.done": {"type": "response.done", "response": {
            "id": "resp_1", "object": "realtime.response", "status": "completed", "status_details": {"reason": "eos"},
            "output": [{"id": "item_1", "object": "realtime.item", "type": "message", "role": "assistant",
                        "content": [{"type": "output_audio", "transcript": " hi"}]}], "usage": None}, "event_id": eid},
        "input_audio_buffer.cleared": {"type": "input_audio_buffer.cleared", "client_event_id": "c3",
                                       "sglang": {"discarded_ms": 40.0}, "event_id": eid},
        "sglang.input_audio.ended": {"type": "sglang.input_audio.ended", "accepted_end_ms": 320.0,
                                     "tail_policy": "flush", "client_event_id": "c4", "event_id": eid},
        "sglang.input_audio.drained": {"type": "sglang.input_audio.drained", "accepted_end_ms": 320.0,
                                       "consumed_ms": 320.0, "discarded_ms": 0.0, "padding_ms": 0.0,
                                       "client_event_id": "c4", "event_id": eid},
        "error": {"type": "error", "sglang": {"fatal": False}, "error": {
            "type": "invalid_request_error", "code": "invalid_request", "message": "invalid session configuration",
            "event_id": "c1", "param": "sglang.native_unit_ms"}, "event_id": eid},
        "session.closed": {"type": "session.closed", "reason": "client_closed", "client_event_id": "c5",
                           "event_id": eid},
    }
