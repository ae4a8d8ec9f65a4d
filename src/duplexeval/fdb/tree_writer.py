"""Writing an FDB v1.0 tree sample by sample, shared by `fdb export` and `fdb import`: the run record and resume
journal, the per-sample loop, the byte-for-byte annotation copies and those of the tasks' files beside the samples,
and manifest.json at the end.

Each sample's `trace.json` (`fdb.sample_trace`) is its journal entry: a rerun of the same run reuses every sample
whose trace names this run, this sample and its input, and whose files still have their recorded hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.protocols import DatasetLike, SampleKey, SampleLike, dataset_root
from duplexeval.fdb.run_journal import ResumeJournal
from duplexeval.fdb.sample_trace import EXPORT_TRACE_KIND, read_trace
from duplexeval.fdb.tasks import DATASET, all_tasks, task_of
from duplexeval.fdb.tree import (
    INPUT_WAV,
    MANIFEST_FILE,
    SUBSETS,
    Manifest,
    SampleEntry,
    subset_order,
    write_manifest,
)
from duplexeval.jsonio import atomic_write_bytes, sha256_bytes, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.progress import progress_bar

if TYPE_CHECKING:  # types only (selection loads the dataset reader)
    from duplexeval.fdb.selection import DatasetIdentity

# the run record of export and import: what made this tree (tool, system, dataset)
RUN_RECORD = ".duplexeval-export.json"

# Reasons a sample is ineligible (docs/systems.md lists them; a session's own, `system_error` and
# `input_pacing_late` among them, are in systems.net.trace).
REASON_MISSING_ANNOTATION = "missing_annotation"
REASON_MISSING_INPUT = "missing_input"
REASON_ANNOTATION_HASH = "annotation_hash_mismatch"
REASON_MISSING_OUTPUT = "missing_output"
REASON_LENGTH = "length_mismatch"
REASON_BAD_OUTPUT = "unreadable_output"

P = TypeVar("P")  # what a stage's `key_of` hands its `make` along with the input key (import: the source hash)


@dataclass
class TreeWritten:
    """What a run wrote: the tree, the manifest hash, per-subset counts and how much was reused."""

    tree: Path
    manifest_sha256: str
    counts: dict[str, dict[str, int]]
    ran: int
    reused: int


@dataclass(frozen=True)
class SystemRecord:
    """The system as the run record and manifest.json name it: its name, parameters (plain JSON) and version."""

    name: str
    params: JsonObject  # the system's own parameters, checked plain JSON
    version: str

    def to_json(self) -> JsonObject:
        return {"name": self.name, "params": self.params, "version": self.version}


@dataclass(frozen=True)
class TreeRun:
    """What identifies an export or import run (its journal's run record): the tool, the system, the dataset."""

    tool: str
    system: SystemRecord
    dataset: DatasetIdentity

    def to_json(self) -> JsonObject:
        return {"tool": self.tool, "system": self.system.to_json(), "dataset": self.dataset.to_json()}


def open_journal(out: Path, run: TreeRun, force: bool) -> ResumeJournal:
    """Refuse to write into a tree made by a different tool, system or dataset (unless forced), then record this run."""
    record = run.to_json()
    journal = ResumeJournal(out / RUN_RECORD, record)
    old = journal.recorded_run()
    if old is not None:
        if not journal.is_this_run(old) and not force:
            diff = [k for k in ("tool", "system", "dataset") if not isinstance(old, dict) or old.get(k) != record[k]]
            raise RefusalError(
                f"{out}: this tree was made by a different {' and '.join(diff) or 'run'}; "
                f"use another --out or pass --force to overwrite it"
            )
    elif (out / MANIFEST_FILE).is_file() and not force:
        raise RefusalError(f"{out}: has a manifest.json not written by `duplexeval fdb {run.tool}`; "
                           "use another --out or --force")
    journal.start()
    return journal


def dataset_annotation_sha256(sample: SampleKey) -> str | None:
    """SHA-256 of the sample's annotation file in the dataset as it is now (None: it has none, or its subset none),
    as `copy_annotation` records it in the sample's trace."""
    if SUBSETS[sample.subset].annotation is None:
        return None
    src = getattr(sample, "annotation_path", None)  # optional member (fdb.protocols.SampleLike)
    return sha256_file(src) if src is not None and Path(src).is_file() else None


def dataset_mismatch(sample: SampleLike, sample_dir: Path, T: float) -> str | None:
    """Why a tree's sample was not made from this dataset sample (its length, annotation or input differ), or None.

    The sample's trace.json pins the annotation (export and import) and the input (export) by hash; without one,
    only the length can be compared."""
    if abs(float(sample.T) - T) > 1e-6:
        return f"its input lasts {float(sample.T):g} s, the tree's sample {T:g} s"
    try:
        trace = read_trace(sample_dir)
    except InputError:
        return None
    if trace.head.annotation_sha256 != dataset_annotation_sha256(sample):
        return "its annotation differs from the one the tree's trace.json records"
    if trace.kind == EXPORT_TRACE_KIND and trace.head.input_sha256 != sha256_file(sample.input_path):
        return "its input differs from the one the tree's trace.json records"
    return None


def finished_entry(journal: ResumeJournal, sample_dir: Path, input_sha: str, key: str,
                   annotation_sha: str | None = None, redo_ineligible: bool = False,
                   inputs: dict[str, str] | None = None) -> SampleEntry | None:
    """The sample's manifest entry from its trace.json when the journal trusts it (this run, sample `key`, this input
    and this annotation, the tree's copies of its other inputs equal to the dataset's `inputs`, files intact); None
    means the sample is (re)done. With `redo_ineligible` (export: its input did not change, but a fault or a late
    input may not recur) a sample that ended ineligible is done again, so a rerun retries exactly what failed, as
    `fdb asr` does; import's key is the output file, so a new file redoes it."""
    try:
        trace = read_trace(sample_dir)
    except InputError:
        return None  # missing, torn or of the wrong shape: redone, never trusted
    if trace.result.key != key:
        return None  # a journal copied from another sample's folder names that sample, not this one
    if trace.head.annotation_sha256 != annotation_sha:
        return None  # made from another annotation than the dataset holds for this sample now (a copied entry)
    if any(trace.result.files.get(name) != sha for name, sha in (inputs or {}).items()):
        return None  # another input (a further session's) changed in the dataset since
    if not journal.trusts(trace.journal_entry, key, input_sha, sample_dir):
        return None
    return None if redo_ineligible and not trace.result.eligible else trace.result


def _input_names(subset: str) -> list[str]:
    """The files besides the annotation that the subset's task copies from the dataset into each sample folder."""
    ann = SUBSETS[subset].annotation
    return [n for n in task_of(subset).layout.names(DATASET) if n != ann]


def source_path(sample: SampleKey, name: str) -> Path:
    """A dataset file of the sample: its input (`input_path`) or a file beside it in its folder (`dir`, else the
    input's folder)."""
    input_path = Path(cast("SampleLike", sample).input_path)  # export and import pass dataset samples
    if name == INPUT_WAV:
        return input_path
    return Path(getattr(sample, "dir", None) or input_path.parent) / name


def dataset_input_shas(sample: SampleKey) -> dict[str, str]:
    """SHA-256 of each other input the task copies (`copy_inputs`) as the dataset holds it now ("missing": gone)."""
    paths = {n: source_path(sample, n) for n in _input_names(sample.subset)}
    return {n: sha256_file(p) if p.is_file() else "missing" for n, p in paths.items()}


def copy_inputs(sample: SampleLike, dest_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Copy the other dataset files the task keeps in the tree (`SampleLayout`, made by DATASET: FDB v1.5's two
    inputs) byte for byte; returns (files, reasons)."""
    files: dict[str, str] = {}
    reasons: list[str] = []
    for name in _input_names(sample.subset):
        src = source_path(sample, name)
        if not src.is_file():
            reasons.append(REASON_MISSING_INPUT)
            continue
        files[name] = atomic_write_bytes(dest_dir / name, src.read_bytes())
    return files, reasons


def unfinished(journal: ResumeJournal, out: Path, samples: Sequence[SampleKey], input_shas: list[str],
               force: bool) -> list[int]:
    """Indexes of the samples an export must run: not finished by this run, or ended ineligible (all with `force`)."""
    return [i for i, s in enumerate(samples)
            if force or finished_entry(journal, out / s.subset / s.id, input_shas[i], f"{s.subset}/{s.id}",
                                       dataset_annotation_sha256(s), redo_ineligible=True,
                                       inputs=dataset_input_shas(s)) is None]


def copy_annotation(sample: SampleLike, dest_dir: Path) -> tuple[dict[str, str], list[str], str | None]:
    """Copy the annotation byte for byte; returns (files, reasons, source sha256)."""
    info = SUBSETS[sample.subset]
    if info.annotation is None:
        return {}, [], None
    src = getattr(sample, "annotation_path", None)  # optional members (fdb.protocols.SampleLike)
    if src is None or not Path(src).is_file():
        return {}, [REASON_MISSING_ANNOTATION], None
    data = Path(src).read_bytes()
    src_sha = sha256_bytes(data)
    expected = getattr(sample, "annotation_sha256", None)
    dest = dest_dir / info.annotation
    atomic_write_bytes(dest, data)
    got = sha256_file(dest)
    reasons = []
    if got != src_sha or (expected is not None and expected != src_sha):
        reasons.append(REASON_ANNOTATION_HASH)
    return {info.annotation: got}, reasons, src_sha


def copy_dataset_files(ds: DatasetLike, out: Path) -> dict[str, str]:
    """Copy every task's files beside the samples (`Task.dataset_files`) that the dataset's root holds into the
    tree, byte for byte; returns their manifest keys and hashes."""
    recorded: dict[str, str] = {}
    for task in all_tasks():
        for f in task.dataset_files:
            src = (dataset_root(ds) or Path(".")) / f.name
            if src.is_file():
                recorded[f.manifest_key] = atomic_write_bytes(out / f.name, src.read_bytes())
    return recorded


def counts_of(entries: list[SampleEntry]) -> dict[str, dict[str, int]]:
    """Per subset: how many samples were selected and how many are eligible."""
    counts: dict[str, dict[str, int]] = {}
    for e in entries:
        c = counts.setdefault(e.subset, {"selected": 0, "eligible": 0})
        c["selected"] += 1
        c["eligible"] += int(e.eligible)
    return counts


def declared_of(ds: DatasetLike, entries: list[SampleEntry]) -> dict[str, int]:
    """The declared size of every subset in the tree: the dataset's, else FDB v1.0's."""
    declared = dict(ds.declared or {})
    for sub in {e.subset for e in entries}:
        declared.setdefault(sub, SUBSETS[sub].declared)
    return {k: int(declared[k]) for k in subset_order() if k in declared}


def build_samples(
    out: Path,
    run: TreeRun,
    force: bool,
    progress: bool,
    samples: Sequence[SampleKey],
    key_of: Callable[[int], tuple[str, P]],
    make: Callable[[int, str, str, P], SampleEntry],
    label: str,
    redo_ineligible: bool = False,
) -> tuple[list[SampleEntry], int, int]:
    """The per-sample loop export and import share: (entries, made, reused).

    Refuses a tree from another run (`open_journal`); then for sample i, `key_of(i)` gives the hash that
    identifies its input plus whatever `make` needs; a sample this run already finished from the same input is
    reused, else `make(i, run_sha, key, payload)` writes it; with `redo_ineligible`, a sample that ended ineligible is
    made again (finished_entry).
    """
    journal = open_journal(out, run, force)
    entries: list[SampleEntry] = []
    ran = reused = 0
    with progress_bar(len(samples), label, progress) as advance:
        for i, sample in enumerate(samples):
            key, payload = key_of(i)
            name = f"{sample.subset}/{sample.id}"
            entry = None if force else finished_entry(journal, out / sample.subset / sample.id, key, name,
                                                      dataset_annotation_sha256(sample), redo_ineligible,
                                                      dataset_input_shas(sample))
            if entry is None:
                entry = make(i, journal.run_sha256, key, payload)
                ran += 1
            else:
                reused += 1
            entries.append(entry)
            advance(name)
    return entries, ran, reused


def finish_run(out: Path, ds: DatasetLike, entries: list[SampleEntry], system: SystemRecord, section: str,
               info: JsonObject, limit: int | None, ran: int, reused: int) -> TreeWritten:
    """Write the manifest with `system` and a `section` of `info` plus the selection and counts."""
    counts = counts_of(entries)
    order = subset_order()
    selection = {"subsets": sorted({e.subset for e in entries}, key=order.index), "limit": limit}
    extra = {"system": system.to_json(), section: {**info, "selection": selection, "counts": counts}}
    return TreeWritten(out, finish_tree(out, ds, entries, extra), counts, ran, reused)


def finish_tree(out: Path, ds: DatasetLike, entries: list[SampleEntry], extra: JsonObject) -> str:
    """Write manifest.json (plus the tasks' files beside the samples) from the per-sample entries; returns its hash."""
    extra = dict(extra)
    extra.update(copy_dataset_files(ds, out))
    manifest = Manifest(ds.name, declared_of(ds, entries), entries, extra)
    return write_manifest(out, manifest)
