"""The FDB v1.0 tree every stage shares: subsets, sample ids, `manifest.json` and `asr.json`.

The formats are documented in docs/tree.md; this module is their single reader and writer, and
validates on load so every later stage can trust the records.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.artifacts import check_kind
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import read_json, sha256_file, write_json

MANIFEST_KIND = "duplexeval.fdb.tree"
SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"
ASR_FILE = "asr.json"
ASR_KIND = "duplexeval.fdb.asr"
ASR_SCHEMA_VERSION = 2  # 2: the artifact header (duplexeval, signature, inputs); a file without 'kind' reads as 1
HEADER_KEYS = ("kind", "schema_version", "duplexeval", "signature", "inputs")  # artifacts.header's keys, in order
SUMMARY_FILE = "summary.json"
UNIFIED_FILE = "unified.json"
UNIFIED_SAMPLES_FILE = "unified-samples.jsonl"
OUTPUT_WAV = "output.wav"
OUTPUT_JSON = "output.json"

# Tasks, in the spec's words.
PAUSE_HANDLING = "pause_handling"
TURN_TAKING = "smooth_turn_taking"
USER_INTERRUPTION = "user_interruption"
BACKCHANNEL = "backchannel"


@dataclass(frozen=True)
class SubsetInfo:
    """One FDB v1.0 subset: its task, its annotation file (None for backchannel) and declared size."""

    name: str
    task: str
    annotation: str | None
    declared: int


SUBSETS: dict[str, SubsetInfo] = {
    s.name: s
    for s in (
        SubsetInfo("candor_pause_handling", PAUSE_HANDLING, "pause.json", 216),
        SubsetInfo("synthetic_pause_handling", PAUSE_HANDLING, "pause.json", 137),
        SubsetInfo("candor_turn_taking", TURN_TAKING, "turn_taking.json", 119),
        SubsetInfo("synthetic_user_interruption", USER_INTERRUPTION, "interrupt.json", 200),
        SubsetInfo("icc_backchannel", BACKCHANNEL, None, 55),
    )
}
SUBSET_ORDER: tuple[str, ...] = tuple(SUBSETS)

_SAMPLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def validate_sample_id(sample_id: object, where: str = "") -> str:
    """Return the id if it is safe to use as a folder name (no separators, no '..'); else InputError."""
    prefix = f"{where}: " if where else ""
    if not isinstance(sample_id, str) or not _SAMPLE_ID.match(sample_id) or ".." in sample_id:
        raise InputError(
            f"{prefix}sample id {sample_id!r} is not allowed (letters, digits, '.', '_', '-' only; no path separators or '..')"
        )
    return sample_id


def validate_subset(subset: object, where: str = "") -> str:
    """Return the subset name if it is one of the five FDB v1.0 subsets; else InputError."""
    if subset not in SUBSETS:
        prefix = f"{where}: " if where else ""
        raise InputError(f"{prefix}unknown subset {subset!r} (expected one of {', '.join(SUBSET_ORDER)})")
    return str(subset)


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
    extra: dict[str, Any] = field(default_factory=dict)

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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
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
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
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
        return [s for s in SUBSET_ORDER if s in present]


def _fail(path: Path, msg: str) -> InputError:
    return InputError(f"{path}: {msg}")


def parse_manifest(obj: Any, path: Path) -> Manifest:
    """Validate a manifest.json object; errors name the file, the sample and the problem."""
    if not isinstance(obj, dict):
        raise _fail(path, "manifest must be a JSON object")
    if obj.get("kind") != MANIFEST_KIND:
        raise _fail(path, f"'kind' must be {MANIFEST_KIND!r}, got {obj.get('kind')!r}")
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise _fail(path, f"unsupported schema_version {obj.get('schema_version')!r} (this version reads {SCHEMA_VERSION})")
    ds = obj.get("dataset")
    if not isinstance(ds, dict) or not isinstance(ds.get("name"), str):
        raise _fail(path, "'dataset' must be an object with a string 'name'")
    declared = ds.get("declared")
    if not isinstance(declared, dict):
        raise _fail(path, "'dataset.declared' must be an object {subset: size}")
    for sub, size in declared.items():
        validate_subset(sub, str(path))
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _fail(path, f"dataset.declared[{sub!r}] must be a non-negative integer, got {size!r}")
    raw_samples = obj.get("samples")
    if not isinstance(raw_samples, list):
        raise _fail(path, "'samples' must be a list")
    samples: list[SampleEntry] = []
    seen: set[str] = set()
    fixed = {"subset", "id", "T", "eligible", "reasons", "files"}
    for i, rs in enumerate(raw_samples):
        if not isinstance(rs, dict):
            raise _fail(path, f"samples[{i}] must be an object")
        subset = validate_subset(rs.get("subset"), f"{path}: samples[{i}]")
        sid = validate_sample_id(rs.get("id"), f"{path}: samples[{i}] ({subset})")
        key = sample_key(subset, sid)
        if key in seen:
            raise _fail(path, f"sample {key}: listed twice")
        seen.add(key)
        T = rs.get("T")
        if isinstance(T, bool) or not isinstance(T, (int, float)) or not math.isfinite(T) or T <= 0:
            raise _fail(path, f"sample {key}: 'T' must be a positive finite number of seconds, got {T!r}")
        eligible = rs.get("eligible")
        if not isinstance(eligible, bool):
            raise _fail(path, f"sample {key}: 'eligible' must be true or false")
        reasons = rs.get("reasons")
        if not isinstance(reasons, list) or not all(isinstance(r, str) and r for r in reasons):
            raise _fail(path, f"sample {key}: 'reasons' must be a list of non-empty strings")
        if not eligible and not reasons:
            raise _fail(path, f"sample {key}: ineligible without a reason")
        if eligible and reasons:
            raise _fail(path, f"sample {key}: eligible but has reasons {reasons}")
        files = rs.get("files")
        if not isinstance(files, dict):
            raise _fail(path, f"sample {key}: 'files' must be an object {{name: sha256}}")
        for name, digest in files.items():
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                raise _fail(path, f"sample {key}: bad file name {name!r} in 'files'")
            if not isinstance(digest, str) or not _SHA256.match(digest):
                raise _fail(path, f"sample {key}: files[{name!r}] must be a lowercase hex SHA-256")
        if eligible:
            if OUTPUT_WAV not in files:
                raise _fail(path, f"sample {key}: eligible sample has no {OUTPUT_WAV} hash in 'files'")
            ann = SUBSETS[subset].annotation
            if ann is not None and ann not in files:
                raise _fail(path, f"sample {key}: eligible sample has no {ann} hash in 'files'")
        extra = {k: v for k, v in rs.items() if k not in fixed}
        samples.append(SampleEntry(subset, sid, float(T), eligible, list(reasons), dict(files), extra))
    for sub in {s.subset for s in samples}:
        if sub not in declared:
            raise _fail(path, f"subset {sub} has samples but no declared size in dataset.declared")
        n = sum(1 for s in samples if s.subset == sub)
        if n > declared[sub]:
            raise _fail(path, f"subset {sub}: {n} samples selected but only {declared[sub]} declared")
    extra = {k: v for k, v in obj.items() if k not in {"kind", "schema_version", "dataset", "samples"}}
    return Manifest(ds["name"], {k: int(v) for k, v in declared.items()}, samples, extra)


def load_manifest(tree: str | Path) -> tuple[Manifest, str]:
    """Load and validate TREE/manifest.json; returns the manifest and the file's SHA-256."""
    path = Path(tree) / MANIFEST_FILE
    if not path.is_file():
        raise RefusalError(f"{path}: no manifest.json; is {tree} a tree written by `duplexeval fdb export` or `import`?")
    return parse_manifest(read_json(path), path), sha256_file(path)


def write_manifest(tree: str | Path, manifest: Manifest) -> str:
    """Write TREE/manifest.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / MANIFEST_FILE, manifest.to_json())


@dataclass
class AsrSample:
    """asr.json `samples[<subset>/<id>]`."""

    status: str  # "ok" | "error"
    output_json: str | None
    error: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "output.json": self.output_json, "error": self.error}
        out.update(self.extra)
        return out


@dataclass
class AsrRecord:
    """asr.json: which backend transcribed which sample, and the transcript hashes."""

    manifest_sha256: str
    backend: dict[str, Any]
    samples: dict[str, AsrSample]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: self.extra[k] for k in HEADER_KEYS if k in self.extra}  # the header leads
        out.update({"manifest_sha256": self.manifest_sha256, "backend": self.backend})
        out.update({k: v for k, v in self.extra.items() if k not in HEADER_KEYS})
        out["samples"] = {k: self.samples[k].to_json() for k in self.samples}
        return out


def parse_asr(obj: Any, path: Path) -> AsrRecord:
    """Validate an asr.json object."""
    if not isinstance(obj, dict):
        raise _fail(path, "asr.json must be a JSON object")
    if "kind" in obj:  # written by `fdb asr`; a hand-made file without a header is read as schema 1
        check_kind(obj, ASR_KIND, path, ASR_SCHEMA_VERSION)
    msha = obj.get("manifest_sha256")
    if not isinstance(msha, str) or not _SHA256.match(msha):
        raise _fail(path, "'manifest_sha256' must be a lowercase hex SHA-256")
    backend = obj.get("backend")
    if not isinstance(backend, dict):
        raise _fail(path, "'backend' must be an object")
    raw = obj.get("samples")
    if not isinstance(raw, dict):
        raise _fail(path, "'samples' must be an object keyed by '<subset>/<id>'")
    samples: dict[str, AsrSample] = {}
    for key, rec in raw.items():
        parts = key.split("/") if isinstance(key, str) else []
        if len(parts) != 2:
            raise _fail(path, f"sample key {key!r} must be '<subset>/<id>'")
        validate_subset(parts[0], f"{path}: {key}")
        validate_sample_id(parts[1], f"{path}: {key}")
        if not isinstance(rec, dict):
            raise _fail(path, f"sample {key}: record must be an object")
        status = rec.get("status")
        if status not in ("ok", "error"):
            raise _fail(path, f"sample {key}: 'status' must be 'ok' or 'error', got {status!r}")
        oj = rec.get("output.json")
        err = rec.get("error")
        if status == "ok":
            if not isinstance(oj, str) or not _SHA256.match(oj):
                raise _fail(path, f"sample {key}: status ok needs an 'output.json' SHA-256")
        else:
            if oj is not None:
                raise _fail(path, f"sample {key}: status error must have 'output.json': null")
            if not isinstance(err, str) or not err:
                raise _fail(path, f"sample {key}: status error needs an 'error' message")
        extra = {k: v for k, v in rec.items() if k not in {"status", "output.json", "error"}}
        samples[key] = AsrSample(status, oj, err if isinstance(err, str) else None, extra)
    extra = {k: v for k, v in obj.items() if k not in {"manifest_sha256", "backend", "samples"}}
    return AsrRecord(msha, backend, samples, extra)


def load_asr(tree: str | Path) -> tuple[AsrRecord, str]:
    """Load and validate TREE/asr.json; returns the record and the file's SHA-256."""
    path = Path(tree) / ASR_FILE
    if not path.is_file():
        raise RefusalError(f"{path}: no asr.json; run `duplexeval fdb asr --tree {tree}` first")
    return parse_asr(read_json(path), path), sha256_file(path)


def write_asr(tree: str | Path, record: AsrRecord) -> str:
    """Write TREE/asr.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / ASR_FILE, record.to_json())
