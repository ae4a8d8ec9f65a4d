"""Controller data formats (spec 002) as typed records: one clips.jsonl line, and an evaluation policy.

The clip line's *shape* is checked here (known keys only, types, finite in-range numbers, a safe id);
rules between its values (events inside the clip, windows around probes) stay in controller/format/data.py.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal, TypeGuard

from pydantic import Field, field_validator, model_validator
from pydantic_core import ErrorDetails

from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import MAX_TIME_S, NonNegTime, Record, fail, in_range
from duplexeval.units import FRAME_S

MAX_FRAMES = int(MAX_TIME_S / FRAME_S)  # one day of 80 ms frames
_CLIP_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")

Times = list[NonNegTime | None]
CLIP_KEYS = (
    "id", "group", "source", "n_frames", "listen_s", "floor_s", "events_start_s", "events_end_s",
    "turn_probes", "pause_probes", "yield_onsets", "backchannel_onsets", "user_pauses", "extra",
)  # fmt: skip


def is_clip_id(value: object) -> TypeGuard[str]:
    """A clip id used as a file name: the whole string is letters, digits, '.', '_', '-' (no newline), no '..'."""
    return isinstance(value, str) and _CLIP_ID.fullmatch(value) is not None and ".." not in value


class ClipLine(Record):
    """One clips.jsonl object (docs/controller-data.md); unknown keys belong under `extra`."""

    quote_fields: ClassVar[bool] = False
    id: str
    n_frames: Annotated[int, in_range(0, MAX_FRAMES, integer=True)]
    group: str | None = None
    source: str | None = None
    listen_s: NonNegTime = 0.0
    floor_s: NonNegTime = 0.0
    events_start_s: NonNegTime = 0.0
    events_end_s: NonNegTime | None = None
    turn_probes: list[NonNegTime | Times] | None = None
    pause_probes: list[Times] | None = None
    yield_onsets: Times | None = None
    backchannel_onsets: Times | None = None
    user_pauses: list[Times] | None = None
    extra: JsonObject = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise fail("each line must be a JSON object")
        if not is_clip_id(data.get("id")):
            raise fail(f"clip id {data.get('id')!r} is not allowed (letters, digits, '.', '_', '-'; no '..', "
                       "no control characters)")
        unknown = sorted(set(data) - set(CLIP_KEYS))
        if unknown:
            raise fail(f"unknown field(s) {', '.join(unknown)} (put free-form data under 'extra')")
        return data

    sample_of: ClassVar[Any] = staticmethod(
        lambda raw, loc: f"clip {raw['id']}" if isinstance(raw, dict) and loc else None)

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: ErrorDetails) -> str | None:
        if loc[:1] == ("n_frames",):
            return (f"n_frames must be a non-negative integer (at most {MAX_FRAMES}, one day), "
                    f"got {raw.get('n_frames')!r}")
        if loc[:1] in (("group",), ("source",)):
            return f"{loc[0]} must be a string, got {raw.get(loc[0])!r}"
        if loc[:1] == ("extra",):
            return "extra must be an object"
        return None


class PolicyFields(Record):
    """An evaluation policy's settings (kind/schema_version removed); every key optional, defaults in policy.py."""

    quote_fields: ClassVar[bool] = False
    endpoint_threshold: Annotated[float, in_range(-math.inf, math.inf)] = 0.91
    yield_threshold: Annotated[float, in_range(-math.inf, math.inf)] = 0.93
    backchannel_threshold: Annotated[float, in_range(-math.inf, math.inf)] = 0.80
    debounce_frames: Annotated[int, in_range(1, 10**9, integer=True)] = 2
    warmup_frames: Annotated[int, in_range(0, 10**9, integer=True)] = 6
    vad_gate_db: Annotated[float, in_range(-math.inf, math.inf)] | None = -50.0
    min_voiced_ms: Annotated[int, in_range(0, 10**9, integer=True)] = 350
    fallback_silence_ms: Annotated[int, in_range(1, 10**9, integer=True)] = 1200
    endpoint_mode: Literal["head_only", "fallback_on"] = "fallback_on"
    backchannel_cooldown_frames: Annotated[int, in_range(0, 10**9, integer=True)] = 15
    miss_deadline_ms: Annotated[int, in_range(0, 10**9, integer=True)] = 1200
    notes: str = ""

    @field_validator("endpoint_mode", mode="before")
    @classmethod
    def _mode(cls, v: Any) -> Any:
        if v not in ("head_only", "fallback_on"):
            raise fail(f"endpoint_mode must be one of head_only, fallback_on, got {v!r}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise fail(f"unknown policy field(s) {', '.join(unknown)}")
        return data


__all__ = ["CLIP_KEYS", "MAX_FRAMES", "ClipLine", "PolicyFields", "is_clip_id"]
