"""One typed schema layer for every file format (pydantic v2, strict, finite, range-checked at load).

`base` holds the settings, shared field types and the single `load(path, Model)` / `validate(obj, Model,
where)`; each family's formats live in their own module: `fdb` (annotations, output.json, manifest.json,
asr.json), `eot` (end-of-turn pairs), `controller` (clip lines and policies). See docs/architecture.md.
"""

from duplexeval.schemas.base import (
    MAX_TIME_S,
    OpenRecord,
    Record,
    check_number,
    fail,
    has_control,
    in_range,
    is_safe_id,
    load,
    parse_json,
    validate,
)

__all__ = ["MAX_TIME_S", "OpenRecord", "Record", "check_number", "fail", "has_control", "in_range", "is_safe_id",
           "load", "parse_json", "validate"]
