"""The typed-schema core: strict pydantic v2 settings, shared field types, and one `load`/`validate`.

Every file format's model subclasses `Record` (extra keys forbidden) or `OpenRecord` (extra keys kept,
for formats that keep them). Numbers are strict (no strings, no booleans), finite (no NaN/Infinity)
and range-checked at load (`MAX_TIME_S`), so an absurd finite value fails here, naming the file, the
sample and the field, instead of overflowing in a later stage. The first validation error becomes one
`InputError` line: ``<file>: sample <key>: <field>: <problem>``.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainValidator,
    ValidationError,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from duplexeval.errors import InputError
from duplexeval.jsonio import parse_json_text, read_text

# Any time, length or duration in seconds must lie within one day; a larger finite number is a broken
# file (1e303 overflows integer microseconds; 1e12 s of audio would be 90 TiB).
MAX_TIME_S = 86_400.0
# Milliseconds, likewise.
MAX_TIME_MS = MAX_TIME_S * 1000.0

STRICT = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid", frozen=True)
OPEN = ConfigDict(strict=True, allow_inf_nan=False, extra="allow", frozen=True)

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FAIL = "duplexeval"  # error type of a check that writes its own message


def fail(message: str) -> PydanticCustomError:
    """A validation error whose message is shown as written (for checks with their own wording)."""
    return PydanticCustomError(_FAIL, message)


def has_control(text: str) -> bool:
    """True when the text holds any control character (newline, tab, NUL, DEL, C1 controls ...)."""
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def is_safe_id(value: object) -> bool:
    """A sample or clip id usable as a folder name: the *whole* string matches (no trailing newline), no '..'."""
    return isinstance(value, str) and _SAFE_ID.fullmatch(value) is not None and ".." not in value


def _sha256(v: str) -> str:
    if _SHA256.fullmatch(v) is None:
        raise fail("must be a lowercase hex SHA-256")
    return v


def _no_control(v: str) -> str:
    if has_control(v):
        raise fail(f"must not contain control characters, got {v!r}")
    return v


def number_problem(v: Any, lo: float = -MAX_TIME_S, hi: float = MAX_TIME_S, *, lo_open: bool = False,
                   integer: bool = False) -> tuple[str, str] | None:
    """The one finite-number check: (error kind, problem) when `v` is not a number (bools are not), not finite,
    or outside [lo, hi] ((lo, hi] with `lo_open`); None when it is fine."""
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type:
        return "not_number", "must be an integer" if integer else "must be a finite number"
    if not math.isfinite(v):
        return "not_number", "must be a finite number"
    if v > hi or v < lo or (lo_open and v == lo):
        return "out_of_range", f"is outside the accepted range {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    return None


def check_number(v: Any, where: str, name: str, lo: float = -MAX_TIME_S, hi: float = MAX_TIME_S, *,
                 lo_open: bool = False, integer: bool = False) -> Any:
    """`number_problem` for code that is not (yet) a schema: InputError `<where>: <name> <problem>, got <v>`."""
    bad = number_problem(v, lo, hi, lo_open=lo_open, integer=integer)
    if bad is not None:
        raise InputError(f"{where}: {name} {bad[1]}, got {v!r}")
    return v


def in_range(lo: float, hi: float, *, lo_open: bool = False, integer: bool = False) -> PlainValidator:
    """The validator of a JSON number field (``Annotated[float, in_range(0, 1)]``): `number_problem`; the value is
    kept as written (an int stays an int, so messages quote it)."""

    def check(v: Any) -> Any:
        bad = number_problem(v, lo, hi, lo_open=lo_open, integer=integer)
        if bad is not None:
            raise PydanticCustomError(bad[0], bad[1])
        return v

    return PlainValidator(check)


Time = Annotated[float, in_range(-MAX_TIME_S, MAX_TIME_S)]
"""A finite time in seconds within +-MAX_TIME_S (sign checked by the rule that uses it)."""
NonNegTime = Annotated[float, in_range(0.0, MAX_TIME_S)]
PositiveTime = Annotated[float, in_range(0.0, MAX_TIME_S, lo_open=True)]
Sha256 = Annotated[str, AfterValidator(_sha256)]
Text = Annotated[str, AfterValidator(_no_control)]


class Record(BaseModel):
    """A strict record: exact types, finite numbers, unknown keys refused."""

    model_config = STRICT
    # How many leading `loc` parts the sample label stands for (("samples", 0) in a manifest: 2).
    sample_depth: ClassVar[int] = 0
    # Messages quote the field name ('T') unless a format's own wording does not.
    quote_fields: ClassVar[bool] = True
    # Where in the file a validation error at `loc` is, e.g. "sample <subset>/<id>" (None: the file as a whole).
    sample_of: ClassVar[Callable[[Any, tuple[Any, ...]], str | None] | None] = None


class OpenRecord(Record):
    """A strict record of a format that keeps unknown keys (they round-trip in `model_extra`)."""

    model_config = OPEN


M = TypeVar("M", bound=BaseModel)

_MESSAGES = {
    "float_type": "must be a number",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "finite_number": "must be a finite number",
    "missing": "is missing",
    "extra_forbidden": "is not a known field",
}


def field_path(loc: Sequence[Any]) -> str:
    """`('samples', 0, 'T')` -> `samples[0].T`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _problem(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == _FAIL:
        return str(err["msg"])
    what = str(err["msg"]) if kind in ("not_number", "out_of_range") else _MESSAGES.get(kind)
    if what is None:
        what = str(err["msg"]).lower() if err["msg"][:1].isupper() else str(err["msg"])
    if kind in ("missing",):
        return what
    value = err.get("input")
    shown = repr(value)
    return f"{what}, got {shown[:60]}{'...' if len(shown) > 60 else ''}"


def describe(exc: ValidationError, model: type[BaseModel], raw: Any) -> str:
    """The first error of `exc` as `[sample <key>: ]'<field>' <problem>` (custom messages shown as written)."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    sample_of = getattr(model, "sample_of", None)
    sample = sample_of(raw, loc) if sample_of is not None else None
    field = field_path(loc[getattr(model, "sample_depth", 0):] if sample else loc)
    explain = getattr(model, "explain", None)
    custom = explain(raw, loc, err) if explain is not None and err["type"] != _FAIL else None
    shown = f"'{field}'" if getattr(model, "quote_fields", True) else field
    if custom is not None:
        body = custom
    elif err["type"] == _FAIL:  # a check's own wording; one that starts "must" is about its field
        msg = str(err["msg"])
        body = f"{shown} {msg}" if field and msg.startswith("must ") else msg
    else:
        body = f"{shown} {_problem(err)}" if field else _problem(err)
    return f"{sample}: {body}" if sample else body


def validate(obj: Any, model: type[M], where: str | os.PathLike[str]) -> M:
    """Validate a parsed object; InputError `<where>: <first problem>` (one line) on failure."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe(exc, model, obj)}") from None


def parse_json(text: str, path: str | os.PathLike[str]) -> Any:
    """JSON text to objects; NaN/Infinity literals and bad JSON are one-line InputErrors naming the file."""
    return parse_json_text(text, path)


def load(path: str | os.PathLike[str], model: type[M], where: str | None = None) -> M:
    """Read a JSON file and validate it as `model`; errors name the file (or `where`), the sample and the field."""
    text = read_text(path)
    return validate(parse_json(text, where or path), model, where or Path(path))


def finite(x: object) -> bool:
    """A JSON number (not a bool) that is finite."""
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
