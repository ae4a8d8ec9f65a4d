"""The FDB tree every stage shares: sample ids, `manifest.json` and `asr.json` (the subset table and the file
names live in `schemas.fdb_names`, re-exported here).

The formats are documented in docs/tree.md; this module is their single reader and writer, and
validates on load so every later stage can trust the records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import duplexeval.fdb.tasks  # noqa: F401 - the task registry fills the subset table with plugin tasks' rows
from duplexeval.artifacts import check_kind
from duplexeval.errors import DuplexEvalError, InputError, RefusalError
from duplexeval.fdb.verified import read_json_hashed
from duplexeval.jsonio import write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import is_safe_id, validate
from duplexeval.schemas.fdb import AsrFile, ManifestFile, id_problem, subset_problem
from duplexeval.schemas.fdb_names import (
    ASR_FILE,
    INPUT_WAV,
    MANIFEST_FILE,
    MANIFEST_KIND,
    MANIFEST_SCHEMA_VERSION,
    OUTPUT_JSON,
    OUTPUT_WAV,
    SUBSETS,
    SUMMARY_FILE,
    UNIFIED_FILE,
    UNIFIED_SAMPLES_FILE,
    SubsetInfo,
    subset_order,
)

_R = TypeVar("_R")

SCHEMA_VERSION = MANIFEST_SCHEMA_VERSION
ASR_KIND = "duplexeval.fdb.asr"
ASR_SCHEMA_VERSION = 2  # 2: the artifact header (duplexeval, signature, inputs); a file without 'kind' reads as 1
TRANSCRIPTS_KEY = "transcripts"  # asr.json: {transcript file: sha256} of a sample's further transcripts
HEADER_KEYS = ("kind", "schema_version", "duplexeval", "signature", "inputs")  # artifacts.header's keys, in order


def validate_sample_id(sample_id: object, where: str = "") -> str:
    """Return the id if it is safe to use as a folder name (whole-string match, no '..', no control characters)."""
    prefix = f"{where}: " if where else ""
    if not is_safe_id(sample_id):
        raise InputError(f"{prefix}{id_problem(sample_id)}")
    return str(sample_id)


def validate_subset(subset: object, where: str = "") -> str:
    """Return the subset name if it is in the subset table; else InputError (also for a list or object)."""
    if not isinstance(subset, str) or subset not in SUBSETS:
        prefix = f"{where}: " if where else ""
        raise InputError(f"{prefix}{subset_problem(subset)}")
    return subset


def sample_key(subset: str, sample_id: str) -> str:
    """The `<subset>/<id>` key used in asr.json and reports."""
    return f"{subset}/{sample_id}"


@dataclass
class SampleEntry:
    """One selected sample of the tree (manifest.json `samples[]`)."""

    subset: str
    id: str
    T: float
    eligible: bool
    reasons: list[str]
    files: dict[str, str]
    extra: JsonObject = field(default_factory=dict)  # the stages' own keys of the entry (export, import), as written

    @property
    def key(self) -> str:
        return sample_key(self.subset, self.id)

    @property
    def task(self) -> str:
        return SUBSETS[self.subset].task

    @property
    def annotation(self) -> str | None:
        return SUBSETS[self.subset].annotation

    def dir(self, tree: str | Path) -> Path:
        """The sample's folder inside the tree (the id was validated on load)."""
        return Path(tree) / self.subset / self.id

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "subset": self.subset,
            "id": self.id,
            "T": self.T,
            "eligible": self.eligible,
            "reasons": list(self.reasons),
            "files": dict(self.files),
        }
        out.update(self.extra)
        return out


@dataclass
class Manifest:
    """manifest.json: what was run, on what, and which samples are eligible."""

    dataset_name: str
    declared: dict[str, int]
    samples: list[SampleEntry]
    extra: JsonObject = field(default_factory=dict)  # the header and the run's keys (system, export ...), as written

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "kind": MANIFEST_KIND,
            "schema_version": SCHEMA_VERSION,
            "dataset": {"name": self.dataset_name, "declared": dict(self.declared)},
        }
        out.update(self.extra)
        out["samples"] = [s.to_json() for s in self.samples]
        return out

    def by_subset(self, subset: str) -> list[SampleEntry]:
        return [s for s in self.samples if s.subset == subset]

    def subsets(self) -> list[str]:
        """Subsets with at least one selected sample, in the canonical order."""
        present = {s.subset for s in self.samples}
        return [s for s in subset_order() if s in present]


def _fail(path: Path, msg: str) -> InputError:
    return InputError(f"{path}: {msg}")


def parse_manifest(obj: Any, path: Path) -> Manifest:
    """Validate a manifest.json object (schemas.fdb.ManifestFile, then the cross-sample rules)."""
    rec = validate(obj, ManifestFile, path)
    if not rec.samples:
        raise _fail(path, "no samples: the manifest lists none, so there is nothing to transcribe or score")
    samples: list[SampleEntry] = []
    seen: set[str] = set()
    for rs in rec.samples:
        key = sample_key(rs.subset, rs.id)
        if key in seen:
            raise _fail(path, f"sample {key}: listed twice")
        seen.add(key)
        samples.append(SampleEntry(rs.subset, rs.id, float(rs.T), rs.eligible, list(rs.reasons), dict(rs.files),
                                   dict(rs.model_extra or {})))
    declared = rec.dataset.declared
    for sub in {s.subset for s in samples}:
        if sub not in declared:
            raise _fail(path, f"subset {sub} has samples but no declared size in dataset.declared")
        n = sum(1 for s in samples if s.subset == sub)
        if n > declared[sub]:
            raise _fail(path, f"subset {sub}: {n} samples selected but only {declared[sub]} declared")
    extra = {k: v for k, v in obj.items() if k not in {"kind", "schema_version", "dataset", "samples"}}
    return Manifest(rec.dataset.name, {k: int(v) for k, v in declared.items()}, samples, extra)


def _load(tree: str | Path, name: str, missing: str, parse: Callable[[Any, Path], _R]) -> tuple[_R, str]:
    """Read TREE/NAME once, parse and validate it; returns the record and the SHA-256 of the bytes read."""
    path = Path(tree) / name
    if not path.is_file():
        raise RefusalError(f"{path}: no {name}; {missing}")
    obj, digest = read_json_hashed(path)
    return parse(obj, path), digest


def load_manifest(tree: str | Path) -> tuple[Manifest, str]:
    """Load and validate TREE/manifest.json; returns the manifest and the file's SHA-256."""
    return _load(tree, MANIFEST_FILE, f"is {tree} a tree written by `duplexeval fdb export` or `import`?",
                 parse_manifest)


def tree_audio_s(tree: str | Path, eligible_only: bool = True) -> float | None:
    """Seconds of audio in a tree's eligible samples (every selected one with `eligible_only` False: what an
    export ran, faults included), sum of T, or None when there is no readable manifest."""
    try:
        manifest, _sha = load_manifest(tree)
    except (DuplexEvalError, OSError):
        return None
    return float(sum(s.T for s in manifest.samples if s.eligible or not eligible_only))


def write_manifest(tree: str | Path, manifest: Manifest) -> str:
    """Write TREE/manifest.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / MANIFEST_FILE, manifest.to_json())


@dataclass
class AsrSample:
    """asr.json `samples[<subset>/<id>]`; `transcripts` are the hashes of a task's further transcripts (its
    `SampleLayout` ASR files besides output.json), kept in `extra` under that key."""

    status: str  # "ok" | "error"
    output_json: str | None
    error: str | None
    extra: JsonObject = field(default_factory=dict)  # the record's other keys (hashes, cut), as written

    @property
    def transcripts(self) -> dict[str, str]:
        more = self.extra.get(TRANSCRIPTS_KEY)
        return {str(k): v for k, v in more.items() if isinstance(v, str)} if isinstance(more, dict) else {}

    def to_json(self) -> JsonObject:
        out: JsonObject = {"status": self.status, "output.json": self.output_json, "error": self.error}
        out.update(self.extra)
        return out


@dataclass
class AsrRecord:
    """asr.json: which backend transcribed which sample, and the transcript hashes."""

    manifest_sha256: str
    backend: JsonObject  # the backend's signature, as written
    samples: dict[str, AsrSample]
    extra: JsonObject = field(default_factory=dict)  # the header and any other keys, as written

    def to_json(self) -> JsonObject:
        out: JsonObject = {k: self.extra[k] for k in HEADER_KEYS if k in self.extra}  # the header leads
        out.update({"manifest_sha256": self.manifest_sha256, "backend": self.backend})
        out.update({k: v for k, v in self.extra.items() if k not in HEADER_KEYS})
        out["samples"] = {k: self.samples[k].to_json() for k in self.samples}
        return out


def parse_asr(obj: Any, path: Path) -> AsrRecord:
    """Validate an asr.json object (schemas.fdb.AsrFile); a file of another kind is refused first."""
    if isinstance(obj, dict) and "kind" in obj:  # written by `fdb asr`; a hand-made file without one reads as schema 1
        check_kind(obj, ASR_KIND, path, ASR_SCHEMA_VERSION)
    rec = validate(obj, AsrFile, path)
    samples = {key: AsrSample(r.status, r.output_json, r.error, dict(r.model_extra or {}))
               for key, r in rec.samples.items()}
    extra = {k: v for k, v in obj.items() if k not in {"manifest_sha256", "backend", "samples"}}
    return AsrRecord(rec.manifest_sha256, dict(obj["backend"]), samples, extra)


def load_asr(tree: str | Path) -> tuple[AsrRecord, str]:
    """Load and validate TREE/asr.json; returns the record and the file's SHA-256."""
    return _load(tree, ASR_FILE, f"run `duplexeval fdb asr {tree}` first", parse_asr)


def write_asr(tree: str | Path, record: AsrRecord) -> str:
    """Write TREE/asr.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / ASR_FILE, record.to_json())


__all__ = [
    "ASR_FILE", "ASR_KIND", "ASR_SCHEMA_VERSION", "HEADER_KEYS", "INPUT_WAV", "MANIFEST_FILE", "MANIFEST_KIND",
    "OUTPUT_JSON", "OUTPUT_WAV", "SCHEMA_VERSION", "SUBSETS", "SUMMARY_FILE", "UNIFIED_FILE", "UNIFIED_SAMPLES_FILE",
    "AsrRecord", "AsrSample", "Manifest", "SampleEntry", "SubsetInfo", "load_asr", "load_manifest", "parse_asr",
    "parse_manifest", "sample_key", "subset_order", "validate_sample_id", "validate_subset", "write_asr",
    "write_manifest",
]
