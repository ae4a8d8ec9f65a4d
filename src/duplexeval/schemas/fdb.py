"""FDB v1.0 file formats as typed records: the three annotations, output.json, manifest.json, asr.json.

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

Timestamp = Annotated[list[Time], Field(min_length=2, max_length=2)]

SUBSET_NAMES = (
    "candor_pause_handling",
    "synthetic_pause_handling",
    "candor_turn_taking",
    "synthetic_user_interruption",
    "icc_backchannel",
)


def id_problem(sample_id: object) -> str:
    """The one message for an id that is not a safe folder name."""
    return (f"sample id {sample_id!r} is not allowed (letters, digits, '.', '_', '-' only; "
            "no path separators, control characters or '..')")


def subset_problem(subset: object) -> str:
    """The one message for a subset that is not one of the five."""
    return f"unknown subset {subset!r} (expected one of {', '.join(SUBSET_NAMES)})"


def _out_of_range(value: Any) -> bool:
    return finite(value) and abs(value) > MAX_TIME_S


# ---------------------------------------------------------------- annotations


class PauseItem(OpenRecord):
    """One `[PAUSE]` item: the pause is `timestamp = [start, end]` seconds."""

    timestamp: Timestamp


class TurnItem(OpenRecord):
    """The `[TURN-TAKING]` item: `timestamp[0]` is E, the end of the user's turn."""

    timestamp: Timestamp


class InterruptItem(OpenRecord):
    """The interruption item: the user's interrupt is `timestamp = [S, R]`; `context`/`interrupt` are its text."""

    timestamp: Timestamp  # first: a bad time is reported before missing text
    context: str
    interrupt: str


class _Annotation(RootModel[Any]):
    """A non-empty JSON list of items; `label(i)` names item i in messages."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, frozen=True)
    file: ClassVar[str]
    empty: ClassVar[str] = "annotation must be a non-empty list of objects"

    @classmethod
    def label(cls, i: int) -> str:
        return f"{cls.file}[{i}]"

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: dict[str, Any]) -> str | None:
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
                hint = " (found 'timestamps'; v1.0 files use 'timestamp')" if isinstance(item, dict) and "timestamps" in item else ""
                return f"{label} needs 'timestamp': [start, end] with two finite numbers; item {i} has no 'timestamp'{hint}"
            ts = item.get("timestamp") if isinstance(item, dict) else None
            if isinstance(ts, list) and any(_out_of_range(v) for v in ts):
                return f"{label} 'timestamp' {ts!r} is outside the accepted range (|t| <= {MAX_TIME_S:g} s)"
            return f"{label} needs 'timestamp': [start, end] with two finite numbers, got {ts!r}"
        if key in ("context", "interrupt"):
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


class PauseAnnotation(_Annotation):
    """pause.json: one item per pause."""

    root: list[PauseItem]
    file: ClassVar[str] = "pause.json"
    empty: ClassVar[str] = "pause.json lists no pause (must be a non-empty JSON list of objects)"

    @classmethod
    def label(cls, i: int) -> str:
        return f"pause {i}"

    def spans(self) -> list[tuple[float, float]]:
        return [(float(p.timestamp[0]), float(p.timestamp[1])) for p in self.root]


class TurnAnnotation(_Annotation):
    """turn_taking.json: E = `[0].timestamp[0]`."""

    root: list[TurnItem]
    file: ClassVar[str] = "turn_taking.json"

    @property
    def E(self) -> float:
        return float(self.root[0].timestamp[0])


class InterruptAnnotation(_Annotation):
    """interrupt.json: `[0].timestamp = [S, R]`."""

    root: list[InterruptItem]
    file: ClassVar[str] = "interrupt.json"

    @property
    def S(self) -> float:
        return float(self.root[0].timestamp[0])

    @property
    def R(self) -> float:
        return float(self.root[0].timestamp[1])


ANNOTATION_MODELS: dict[str, type[_Annotation]] = {
    "pause.json": PauseAnnotation,
    "turn_taking.json": TurnAnnotation,
    "interrupt.json": InterruptAnnotation,
}


class IccGroundTruth(RootModel[Any]):
    """icc_gt_distribution.json: {digit id: >= 2 finite non-negative numbers with a positive sum} (not empty).

    One rule for the dataset loader and the official evaluator (they used to disagree about one-number lists).
    """

    model_config = ConfigDict(strict=True, allow_inf_nan=False, frozen=True)
    root: dict[str, list[float]]

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data:
            raise fail("must be a non-empty JSON object {sample id: [probabilities]}")
        for k, v in data.items():
            if not isinstance(k, str) or not k.isdigit():
                raise fail(f"key {k!r} is not a digit string (backchannel ids are digits)")
            if (not isinstance(v, list) or len(v) < 2 or not all(finite(x) and 0 <= x <= 1e6 for x in v)
                    or not sum(v) > 0):
                raise fail(f"sample icc_backchannel/{k}: must be a list of at least 2 finite non-negative numbers "
                           f"with a positive sum, got {v!r}")
        return {k: [float(x) for x in v] for k, v in data.items()}

    def distributions(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.root.items()}


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
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: dict[str, Any]) -> str | None:
        if loc == () or (loc == ("chunks",) and err["type"] == "missing"):
            return "transcript must be a JSON object with 'text' and 'chunks'" if loc == () else "'chunks' must be a list"
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
    if not isinstance(v, str) or v not in SUBSET_NAMES:
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
            if k not in SUBSET_NAMES or isinstance(v, bool) or not isinstance(v, int) or v < 0:
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
    if isinstance(sub, str) and sub in SUBSET_NAMES and is_safe_id(sid):
        return f"sample {sub}/{sid}"
    return f"samples[{i}]" + (f" ({sub})" if isinstance(sub, str) and sub in SUBSET_NAMES else "")


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
        from duplexeval.fdb.tree import OUTPUT_WAV, SUBSETS  # lazy: fdb.tree imports this module (a cycle)

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
            if not isinstance(sub, str) or sub not in SUBSET_NAMES:
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
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: dict[str, Any]) -> str | None:
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
        from duplexeval.fdb.tree import MANIFEST_KIND, SCHEMA_VERSION  # lazy: fdb.tree imports this module

        if not isinstance(data, dict):
            raise fail("manifest must be a JSON object")
        if data.get("kind") != MANIFEST_KIND:
            raise fail(f"'kind' must be {MANIFEST_KIND!r}, got {data.get('kind')!r}")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise fail(f"unsupported schema_version {data.get('schema_version')!r} (this version reads {SCHEMA_VERSION})")
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
    backend: dict[str, Any]
    samples: dict[str, AsrSampleRecord]

    sample_depth: ClassVar[int] = 2
    sample_of: ClassVar[Any] = staticmethod(
        lambda raw, loc: f"sample {loc[1]}" if len(loc) >= 2 and loc[0] == "samples" else None)

    @classmethod
    def explain(cls, raw: Any, loc: tuple[Any, ...], err: dict[str, Any]) -> str | None:
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
            if parts[0] not in SUBSET_NAMES:
                raise fail(f"{key}: {subset_problem(parts[0])}")
            if not is_safe_id(parts[1]):
                raise fail(f"{key}: {id_problem(parts[1])}")
        return v


__all__ = [
    "ANNOTATION_MODELS", "AsrFile", "AsrSampleRecord", "Chunk", "DatasetInfo", "IccGroundTruth", "InterruptAnnotation",
    "InterruptItem", "ManifestFile", "ManifestSample", "OutputJson", "PauseAnnotation", "PauseItem", "SynthDatasetFile", "TurnAnnotation",
    "TurnItem", "id_problem", "subset_problem",
]
