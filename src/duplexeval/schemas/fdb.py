"""FDB file formats as typed records: the annotation list base, output.json, manifest.json, asr.json.

These are the *shape* rules every reader shares (types, finiteness, the load-time range check, ids);
rules that depend on a sample's length T or on the other samples stay with the stage that applies them.
Messages keep the wording the stages used before, one per fault.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import (
    MAX_TIME_S,
    OpenRecord,
    PositiveTime,
    Sha256,
    Time,
    fail,
    finite,
    has_control,
    is_safe_id,
)
from duplexeval.schemas.fdb_names import MANIFEST_KIND, MANIFEST_SCHEMA_VERSION, OUTPUT_WAV, SUBSETS

Timestamp = Annotated[list[Time], Field(min_length=2, max_length=2)]



def id_problem(sample_id: object) -> str:
    """The one message for an id that is not a safe folder name."""
    return (f"sample id {sample_id!r} is not allowed (letters, digits, '.', '_', '-' only; "
            "no path separators, control characters or '..')")


def subset_problem(subset: object) -> str:
    """The one message for a subset that is not in the subset table."""
    return f"unknown subset {subset!r} (expected one of {', '.join(SUBSETS)})"


def _out_of_range(value: Any) -> bool:
    return finite(value) and abs(value) > MAX_TIME_S


# ---------------------------------------------------------------- annotations


class AnnotationList(RootModel[Any]):
    """An annotation file that is a non-empty JSON list of items (a task's model subclasses it with its `root`
    item type and `file`); `label(i)` names item i in messages, `text_fields` are the items' string fields."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, frozen=True)
    file: ClassVar[str]
    text_fields: ClassVar[tuple[str, ...]] = ()
    empty: ClassVar[str] = "annotation must be a non-empty list of objects"

    @classmethod
    def label(cls, i: int) -> str:
        return f"{cls.file}[{i}]"

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: ErrorDetails) -> str | None:
        if not loc or not isinstance(loc[0], int):
            return None
        i = loc[0]
        item = raw[i] if isinstance(raw, list) and i < len(raw) else None
        label = cls.label(i)
        if len(loc) == 1:
            return f"{label} (item {i}) must be an object"
        key = loc[1]
        if key == "timestamp":
            if err["type"] == "missing":
                hint = (" (found 'timestamps'; v1.0 files use 'timestamp')"
                        if isinstance(item, dict) and "timestamps" in item else "")
                return (f"{label} needs 'timestamp': [start, end] with two finite numbers; item {i} has no "
                        f"'timestamp'{hint}")
            ts = item.get("timestamp") if isinstance(item, dict) else None
            if isinstance(ts, list) and any(_out_of_range(v) for v in ts):
                return f"{label} 'timestamp' {ts!r} is outside the accepted range (|t| <= {MAX_TIME_S:g} s)"
            return f"{label} needs 'timestamp': [start, end] with two finite numbers, got {ts!r}"
        if key in cls.text_fields:
            return f"item {i} needs a string '{key}'"
        return None

    @model_validator(mode="before")
    @classmethod
    def _non_empty(cls, data: Any) -> Any:
        if not isinstance(data, list) or not data:
            raise fail(cls.empty)
        return data

    @property
    def items(self) -> list[Any]:
        return list(self.root)


# ---------------------------------------------------------------- output.json


class Chunk(OpenRecord):
    """One transcript word: `timestamp = [start, end]`, `end` may be null (CrisperWhisper-era files)."""

    text: str
    timestamp: Annotated[list[Time | None], Field(min_length=2, max_length=2)]

    @field_validator("timestamp")
    @classmethod
    def _start_given(cls, v: list[float | None]) -> list[float | None]:
        if v[0] is None:
            raise ValueError("start is null")
        return v


class OutputJson(OpenRecord):
    """output.json in the official shape: `{"text": ..., "chunks": [...]}`."""

    text: str | None = None
    chunks: list[Chunk]

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: ErrorDetails) -> str | None:
        if loc == () or (loc == ("chunks",) and err["type"] == "missing"):
            return ("transcript must be a JSON object with 'text' and 'chunks'" if loc == ()
                    else "'chunks' must be a list")
        if loc == ("chunks",):
            return "'chunks' must be a list"
        if len(loc) < 2 or loc[0] != "chunks" or not isinstance(loc[1], int):
            return None
        i = loc[1]
        ch = raw["chunks"][i]
        if len(loc) == 2:
            return f"chunks[{i}] must be an object"
        if loc[2] == "text":
            return f"chunks[{i}].text must be a string"
        if loc[2] != "timestamp":
            return None
        ts = ch.get("timestamp")
        text = ch.get("text")
        word = f" ({text.strip()!r})" if isinstance(text, str) else ""
        if not isinstance(ts, list) or len(ts) != 2:
            return f"chunks[{i}].timestamp must be [start, end]"
        start, end = ts
        if not finite(start):
            return f"chunks[{i}]{word} has a start that is not a finite number: {start!r}"
        if _out_of_range(start):
            return f"chunks[{i}]{word} has a start outside the accepted range (|t| <= {MAX_TIME_S:g} s): {start!r}"
        if _out_of_range(end):
            return f"chunks[{i}]{word} has an end outside the accepted range (|t| <= {MAX_TIME_S:g} s): {end!r}"
        return f"chunks[{i}]{word} has an end that is neither null nor a finite number: {end!r}"


# ---------------------------------------------------------------- dataset.json (a synth set)


def _checked_subset(v: Any) -> Any:
    if not isinstance(v, str) or v not in SUBSETS:
        raise fail(subset_problem(v))
    return v


def _checked_id(v: Any) -> Any:
    if not is_safe_id(v):
        raise fail(id_problem(v))
    return v


# A subset name and a sample id as every listing of samples (dataset.json, manifest.json) checks them.
SubsetName = Annotated[str, BeforeValidator(_checked_subset)]
SampleId = Annotated[str, BeforeValidator(_checked_id)]


class ListedSample(OpenRecord):
    """dataset.json `samples[i]`: which sample the set holds (T, voice, ... are kept as extras)."""

    subset: SubsetName
    id: SampleId


class SynthDatasetFile(OpenRecord):
    """A synth set's dataset.json: its name, declared size per subset and (when written by `fdb synth`) samples."""

    name: str | None = None
    declared: dict[str, int]
    samples: list[ListedSample] | None = None

    @model_validator(mode="before")
    @classmethod
    def _declared(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("declared"), dict):
            raise fail("not a duplexeval dataset description (needs 'declared')")
        for k, v in data["declared"].items():
            if k not in SUBSETS or isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise fail(f"bad declared entry {k!r}: {v!r}")
        return data


# ---------------------------------------------------------------- manifest.json


def _sample_label(raw: Any, i: Any) -> str | None:
    try:
        rs = raw["samples"][i]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(rs, dict):
        return None
    sub, sid = rs.get("subset"), rs.get("id")
    if isinstance(sub, str) and sub in SUBSETS and is_safe_id(sid):
        return f"sample {sub}/{sid}"
    return f"samples[{i}]" + (f" ({sub})" if isinstance(sub, str) and sub in SUBSETS else "")


class ManifestSample(OpenRecord):
    """manifest.json `samples[i]`; keys beyond the six fixed ones are kept."""

    subset: SubsetName
    id: SampleId
    T: PositiveTime
    eligible: bool
    reasons: list[str]
    files: dict[str, Sha256]

    @field_validator("T", mode="wrap")
    @classmethod
    def _T(cls, v: Any, handler: Any) -> Any:
        try:
            return handler(v)
        except ValidationError:
            raise fail(f"'T' must be a positive finite number of seconds (at most {MAX_TIME_S:g}), got {v!r}") from None

    @field_validator("reasons", mode="before")
    @classmethod
    def _reasons(cls, v: Any) -> Any:
        if not isinstance(v, list) or not all(isinstance(r, str) and r and not has_control(r) for r in v):
            raise fail("'reasons' must be a list of non-empty strings")
        return v

    @field_validator("files", mode="before")
    @classmethod
    def _files(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise fail("'files' must be an object {name: sha256}")
        for name, digest in v.items():
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", "..") or has_control(name):
                raise fail(f"bad file name {name!r} in 'files'")
            if not isinstance(digest, str):
                raise fail(f"files[{name!r}] must be a lowercase hex SHA-256")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ManifestSample:
        if not self.eligible and not self.reasons:
            raise fail("ineligible without a reason")
        if self.eligible and self.reasons:
            raise fail(f"eligible but has reasons {self.reasons}")
        if self.eligible:
            if OUTPUT_WAV not in self.files:
                raise fail(f"eligible sample has no {OUTPUT_WAV} hash in 'files'")
            ann = SUBSETS[self.subset].annotation
            if ann is not None and ann not in self.files:
                raise fail(f"eligible sample has no {ann} hash in 'files'")
        return self


class DatasetInfo(OpenRecord):
    """manifest.json `dataset`: the dataset's name and declared size per subset."""

    name: str
    declared: dict[str, Annotated[int, Field(ge=0)]]

    @field_validator("declared", mode="before")
    @classmethod
    def _declared(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise fail("'dataset.declared' must be an object {subset: size}")
        for sub, size in v.items():
            if not isinstance(sub, str) or sub not in SUBSETS:
                raise fail(subset_problem(sub))
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise fail(f"dataset.declared[{sub!r}] must be a non-negative integer, got {size!r}")
        return v


class ManifestFile(OpenRecord):
    """manifest.json as a whole (keys beyond kind/schema_version/dataset/samples are kept)."""

    kind: str
    schema_version: int
    dataset: DatasetInfo
    samples: list[ManifestSample]

    sample_depth: ClassVar[int] = 2
    sample_of: ClassVar[Any] = staticmethod(
        lambda raw, loc: _sample_label(raw, loc[1]) if len(loc) >= 2 and loc[0] == "samples" else None)

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: ErrorDetails) -> str | None:
        if loc == ():
            return "manifest must be a JSON object"
        if loc[0] == "dataset" and len(loc) == 1:
            return "'dataset' must be an object with a string 'name'"
        if loc[:2] == ("dataset", "name"):
            return "'dataset' must be an object with a string 'name'"
        if loc == ("samples",):
            return "'samples' must be a list"
        if len(loc) == 2 and loc[0] == "samples":
            return f"samples[{loc[1]}] must be an object"
        return None

    @model_validator(mode="before")
    @classmethod
    def _kind_first(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise fail("manifest must be a JSON object")
        if data.get("kind") != MANIFEST_KIND:
            raise fail(f"'kind' must be {MANIFEST_KIND!r}, got {data.get('kind')!r}")
        if data.get("schema_version") != MANIFEST_SCHEMA_VERSION:
            raise fail(f"unsupported schema_version {data.get('schema_version')!r} (this version reads "
                       f"{MANIFEST_SCHEMA_VERSION})")
        return data


# ---------------------------------------------------------------- asr.json


class AsrSampleRecord(OpenRecord):
    """asr.json `samples[<subset>/<id>]`: status ok with the transcript's hash, or error with a message."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow", frozen=True, populate_by_name=True)
    status: Literal["ok", "error"]
    output_json: str | None = Field(default=None, alias="output.json")
    error: str | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, v: Any) -> Any:
        if v not in ("ok", "error"):
            raise fail(f"'status' must be 'ok' or 'error', got {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> AsrSampleRecord:
        if self.status == "ok":
            if not isinstance(self.output_json, str) or len(self.output_json) != 64 or any(
                    c not in "0123456789abcdef" for c in self.output_json):
                raise fail("status ok needs an 'output.json' SHA-256")
        else:
            if self.output_json is not None:
                raise fail("status error must have 'output.json': null")
            if not self.error:
                raise fail("status error needs an 'error' message")
        return self


class AsrFile(OpenRecord):
    """asr.json as a whole: the manifest it was made from, the backend, and one record per sample key."""

    manifest_sha256: Sha256
    backend: JsonObject
    samples: dict[str, AsrSampleRecord]

    sample_depth: ClassVar[int] = 2
    sample_of: ClassVar[Any] = staticmethod(
        lambda raw, loc: f"sample {loc[1]}" if len(loc) >= 2 and loc[0] == "samples" else None)

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: ErrorDetails) -> str | None:
        if loc == ():
            return "asr.json must be a JSON object"
        if loc[0] == "manifest_sha256":
            return "'manifest_sha256' must be a lowercase hex SHA-256"
        if loc == ("backend",):
            return "'backend' must be an object"
        if loc == ("samples",):
            return "'samples' must be an object keyed by '<subset>/<id>'"
        if len(loc) == 2 and loc[0] == "samples":
            return "record must be an object"
        return None

    @field_validator("samples", mode="before")
    @classmethod
    def _keys(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        for key in v:
            parts = key.split("/") if isinstance(key, str) else []
            if len(parts) != 2:
                raise fail(f"sample key {key!r} must be '<subset>/<id>'")
            if parts[0] not in SUBSETS:
                raise fail(f"{key}: {subset_problem(parts[0])}")
            if not is_safe_id(parts[1]):
                raise fail(f"{key}: {id_problem(parts[1])}")
        return v


__all__ = [
    "AnnotationList", "AsrFile", "AsrSampleRecord", "Chunk", "DatasetInfo", "ManifestFile", "ManifestSample",
    "OutputJson", "SynthDatasetFile", "Timestamp", "id_problem", "subset_problem",
]
