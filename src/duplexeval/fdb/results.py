"""Read a scored tree for comparison and reports: manifest, asr.json, unified.json and its per-sample rows.

Only files the stages wrote are read, and only when they are current: unified.json must be of kind
``duplexeval.fdb.unified`` and made from the tree's present manifest.json and asr.json, and
unified-samples.jsonl must hold exactly one row per selected sample of the scored subsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.artifacts import check_kind
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.tasks import get_task
from duplexeval.fdb.tree import (
    UNIFIED_FILE,
    UNIFIED_SAMPLES_FILE,
    AsrRecord,
    Manifest,
    SampleEntry,
    load_asr,
    load_manifest,
)
from duplexeval.fdb.unified import UNIFIED_KIND, UNIFIED_SCHEMA_VERSION
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.fdb.verified import read_json_hashed
from duplexeval.jsonio import json_lines, read_text, sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Signature


@dataclass
class ScoredTree:
    """A tree with current unified results; `rows[subset][sample_id]` is its unified-samples.jsonl row, typed."""

    root: Path
    manifest: Manifest
    manifest_sha256: str
    asr: AsrRecord
    asr_sha256: str
    unified: JsonObject
    unified_sha256: str
    rows_sha256: str
    rows: dict[str, dict[str, SampleRow[Any]]] = field(default_factory=dict)

    @property
    def signature(self) -> Signature:
        return Signature.from_json(self.unified["signature"])

    @property
    def label(self) -> str:
        return self.root.name or str(self.root)

    def entry(self, subset: str, sample_id: str) -> SampleEntry | None:
        return next((e for e in self.manifest.samples if e.subset == subset and e.id == sample_id), None)


def read_unified_json(path: Path) -> tuple[JsonObject, str]:
    """unified.json (kind and schema_version checked) and the SHA-256 of its bytes."""
    raw, digest = read_json_hashed(path)
    return check_kind(raw, UNIFIED_KIND, path, UNIFIED_SCHEMA_VERSION), digest


def check_unified_body(unified: JsonObject, path: Path) -> None:
    """unified.json has its `signature` and `subsets` objects."""
    if not isinstance(unified.get("signature"), dict) or not isinstance(unified.get("subsets"), dict):
        raise InputError(f"{path}: has no 'signature' or 'subsets' object")


def read_unified_rows(path: Path) -> tuple[dict[str, dict[str, SampleRow[Any]]], str]:
    """unified-samples.jsonl as `rows[subset][sample_id]` (each line parsed once into its typed record), and the
    SHA-256 of its text."""
    text = read_text(path)
    rows: dict[str, dict[str, SampleRow[Any]]] = {}
    for lineno, js in json_lines(text, path):
        if not isinstance(js, dict):
            raise InputError(f"{path}: line {lineno}: expected an object with 'subset' and 'sample_id'")
        row = SampleRow.from_json(js, path, lineno)
        rows.setdefault(row.subset, {})[row.sample_id] = row
    return rows, sha256_bytes(text.encode("utf-8"))


def load_scored(tree: str | Path) -> ScoredTree:
    """Load and check a scored tree; one-line refusals name the file and what to rerun."""
    root = Path(tree)
    if not root.is_dir():
        raise InputError(f"{root}: not a folder (expected a tree scored by `duplexeval fdb score`)")
    manifest, msha = load_manifest(root)
    asr, asha = load_asr(root)
    upath = root / UNIFIED_FILE
    if not upath.is_file():
        raise RefusalError(f"{upath}: no unified.json; run `duplexeval fdb score {root}` first")
    unified, unified_sha = read_unified_json(upath)
    for name, key, current in (("manifest.json", "manifest_sha256", msha), ("asr.json", "asr_sha256", asha)):
        if unified.get(key) != current:
            raise RefusalError(f"{upath}: made from another {name} than the tree holds now; rerun `duplexeval fdb "
                               f"score {root}`")
    check_unified_body(unified, upath)
    rpath = root / UNIFIED_SAMPLES_FILE
    if not rpath.is_file():
        raise RefusalError(f"{rpath}: file not found; rerun `duplexeval fdb score {root}`")
    rows, rows_sha = read_unified_rows(rpath)
    for e in manifest.samples:
        if get_task(e.task).scored and e.id not in rows.get(e.subset, {}):
            raise RefusalError(f"{rpath}: sample {e.key} has no row; rerun `duplexeval fdb score {root}`")
    return ScoredTree(root, manifest, msha, asr, asha, unified, unified_sha, rows_sha, rows)
