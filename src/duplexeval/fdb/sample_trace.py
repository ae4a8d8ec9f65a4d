"""`<subset>/<id>/trace.json`: what `fdb export` or `fdb import` did for one sample, and the entry that lets a rerun
reuse it.

One record for both stages: the sample keys every trace starts with (which run, which sample, its length, the
hashes of its input and annotation), the stage's own details (export: the received items and playout; import:
nothing more), and last `result`, the sample's manifest.json entry. Written last, so a trace on disk means the
sample's other files were written first (docs/tree.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.fdb.run_journal import JournalEntry
from duplexeval.fdb.tree import SampleEntry, sample_key
from duplexeval.jsonio import read_json, write_json
from duplexeval.jsontypes import JsonObject

TRACE_FILE = "trace.json"
EXPORT_TRACE_KIND = "duplexeval.systems.trace"
IMPORT_TRACE_KIND = "duplexeval.fdb.import"
TRACE_SCHEMA_VERSION = 1


def entry_json(e: SampleEntry) -> JsonObject:
    """A manifest entry as a trace's `result` (its stage's details under `extra`, not spread)."""
    return {"subset": e.subset, "id": e.id, "T": e.T, "eligible": e.eligible, "reasons": e.reasons,
            "files": e.files, "extra": e.extra}


def entry_from_json(obj: JsonObject) -> SampleEntry:
    """The inverse of `entry_json`; KeyError / TypeError / ValueError on a result of the wrong shape."""
    return SampleEntry(obj["subset"], obj["id"], float(obj["T"]), bool(obj["eligible"]), list(obj["reasons"]),
                       dict(obj["files"]), dict(obj.get("extra", {})))


@dataclass(frozen=True)
class TraceHead:
    """The sample keys every trace starts with: which run, which sample, its length and its input's hashes
    (`input_samples_16k`, the input's own length, is the export's; None: not written)."""

    run_sha256: str
    subset: str
    id: str
    T: float
    n_samples: int
    input_sha256: str
    annotation_sha256: str | None
    input_samples_16k: int | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"run_sha256": self.run_sha256, "subset": self.subset, "id": self.id, "T": self.T,
                               "n_samples": self.n_samples, "input_sha256": self.input_sha256}
        if self.input_samples_16k is not None:
            out["input_samples_16k"] = self.input_samples_16k
        out["annotation_sha256"] = self.annotation_sha256
        return out


HEAD_KEYS = ("kind", "schema_version", "run_sha256", "subset", "id", "T", "n_samples", "input_sha256",
             "input_samples_16k", "annotation_sha256", "result")


@dataclass
class Trace:
    """One sample's trace.json: its kind (export or import), head, the stage's own `details` (written in order
    between the head and `result`) and `result`, the sample's manifest entry."""

    kind: str
    head: TraceHead
    result: SampleEntry
    details: JsonObject = field(default_factory=dict)  # the stage's keys between head and result, as written
    schema_version: int = TRACE_SCHEMA_VERSION

    @property
    def key(self) -> str:
        """The `<subset>/<id>` the trace names (a trace copied into another sample's folder still names its own)."""
        return sample_key(self.head.subset, self.head.id)

    @property
    def journal_entry(self) -> JournalEntry:
        """What the trace says as the resume journal's entry: the files it vouches for are its result's."""
        h = self.head
        return JournalEntry(h.run_sha256, h.subset, h.id, h.input_sha256, self.result.files)

    def to_json(self) -> JsonObject:
        return {"kind": self.kind, "schema_version": self.schema_version, **self.head.to_json(), **self.details,
                "result": entry_json(self.result)}

    @classmethod
    def from_json(cls, obj: Any, path: str | Path) -> Trace:
        """Parse a trace.json object; InputError naming the file when it is not one."""
        if not isinstance(obj, dict) or not isinstance(obj.get("result"), dict):
            raise InputError(f"{path}: not a trace.json (expected an object with a 'result' object)")
        try:
            head = TraceHead(obj["run_sha256"], obj["subset"], obj["id"], obj["T"], obj["n_samples"],
                             obj["input_sha256"], obj["annotation_sha256"], obj.get("input_samples_16k"))
            return cls(str(obj["kind"]), head, entry_from_json(obj["result"]),
                       {k: v for k, v in obj.items() if k not in HEAD_KEYS}, obj["schema_version"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: not a trace.json ({type(exc).__name__}: {exc})") from None


def read_trace(sample_dir: Path) -> Trace:
    """The trace.json in a sample's folder; InputError naming the file when it is missing or malformed."""
    path = sample_dir / TRACE_FILE
    return Trace.from_json(read_json(path), path)


def write_trace(sample_dir: Path, trace: Trace) -> str:
    """Write the sample's trace.json atomically (last, after its other files); returns its SHA-256."""
    return write_json(sample_dir / TRACE_FILE, trace.to_json())
