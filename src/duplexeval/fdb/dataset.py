"""One interface to FDB inputs: a real FDB v1.0 or v1.5 folder (either nesting depth) or a synth/demo set.

Loading validates everything a later stage relies on, with one-line errors naming file and sample:
sample ids, the input's own sample rate and length, annotation files, and each task's own checks (its ids, its
annotation against the input, its files beside the samples: `DatasetRules`). Nothing is skipped silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import audio_info, read_audio_16k
from duplexeval.errors import InputError
from duplexeval.fdb.tasks import DATASET, all_tasks, get_task, task_of
from duplexeval.fdb.tree import SUBSETS, subset_order, validate_sample_id
from duplexeval.jsonio import read_json, sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import SynthDatasetFile
from duplexeval.schemas.fdb_names import INPUT_WAV

INPUT_FILE = INPUT_WAV
DATASET_FILE = "dataset.json"
# Annotation times may overshoot the input's end by this much (rounding in the published files).
TIME_TOLERANCE_S = 0.05


@dataclass(frozen=True)
class DatasetSample:
    """One input sample: its folder, input file (own rate `sr`, length `T` seconds) and annotation file."""

    subset: str
    id: str
    dir: Path
    input_path: Path
    annotation_path: Path | None
    T: float
    sr: int
    n_samples: int
    annotation: Any = None  # the validated annotation object (None for a task without one)
    annotation_sha256: str | None = None
    record: Any = None  # the typed annotation (its task's `Task.annotation` model)

    @property
    def task(self) -> str:
        return SUBSETS[self.subset].task

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"

    def read_input_16k(self) -> np.ndarray:
        """The input as mono float32 at 16 kHz (resampled with soxr from its own rate)."""
        return read_audio_16k(self.input_path)


@dataclass
class Dataset:
    """A set of FDB v1.0 input samples; `declared` is the published size (real) or what dataset.json says (synth)."""

    name: str
    root: Path
    declared: dict[str, int]
    kind: str  # the release ("fdb-v1.0", "fdb-v1.5", both joined by "+") or "synth"
    _samples: list[DatasetSample]
    files: dict[str, Path] = field(default_factory=dict)  # the tasks' checked files beside the samples (by name)
    info: JsonObject | None = None  # dataset.json as read (a synth set), None for a real release

    def samples(self, subset: str | None = None) -> list[DatasetSample]:
        """Samples in canonical subset order, ids in natural order; one subset if given."""
        if subset is not None and subset not in SUBSETS:
            raise InputError(f"unknown subset {subset!r} (expected one of {', '.join(subset_order())})")
        return [s for s in self._samples if subset is None or s.subset == subset]

    def subsets(self) -> list[str]:
        """Subsets with at least one sample, canonical order."""
        present = {s.subset for s in self._samples}
        return [s for s in subset_order() if s in present]

    def file(self, name: str) -> Path | None:
        """A task's checked file beside the samples (`DatasetRules.dataset_files`), if the dataset has it."""
        return self.files.get(name)


def id_key(sid: str) -> tuple[int, int, str]:
    """Natural order of sample ids: digit ids by value first, then the others by name."""
    return (0, int(sid), "") if sid.isdigit() else (1, 0, sid)


def check_span(a: float, b: float, i: int, where: str, T: float) -> None:
    """Annotation item i's [a, b]: starts at or after 0, not after its end, and not after T (with the published
    files' rounding tolerance)."""
    if a < 0:
        raise InputError(f"{where}: item {i} starts before 0 ({a})")
    if a > b:
        raise InputError(f"{where}: item {i} has start {a} after end {b}")
    if a > T + TIME_TOLERANCE_S:
        raise InputError(f"{where}: item {i} starts at {a} s, after the input's end T = {T:.6f} s")


def annotation_record(obj: Any, subset: str, where: str) -> Any:
    """The typed annotation (its task's model) of a subset's annotation object; InputError naming `where`."""
    model = task_of(subset).annotation
    assert model is not None
    return validate(obj, model, where)


def validate_annotation(obj: Any, subset: str, T: float, where: str) -> Any:
    """Check an annotation object for its task; returns it unchanged (error messages name `where`)."""
    checked_record(obj, subset, T, where)
    return obj


def checked_record(obj: Any, subset: str, T: float, where: str) -> Any:
    """The typed annotation after every check: the shape (types, finite and in-range numbers) is the model's;
    the rules against T (with the published files' rounding tolerance) and the item counts are the task's."""
    rec = annotation_record(obj, subset, where)
    task_of(subset).dataset.check_annotation(rec, T, where)
    return rec


def _subset_dirs(root: Path) -> dict[str, Path]:
    """Subset folders at either depth: `<root>/<subset>/<id>` or `<root>/<subset>/<subset>/<id>`, also under the
    folders a task names (`DatasetRules.folders`, a published archive's top folder).

    A folder whose name differs from a subset's only in case (or '-' for '_') is refused: on a
    case-sensitive disk it would otherwise be skipped and the whole subset would vanish.
    """
    found = {}
    listed: dict[Path, set[str]] = {}
    for subset in subset_order():
        bases = [root] + [root / f for f in task_of(subset).dataset.folders if (root / f).is_dir()]
        for base in bases:
            names = listed.setdefault(base, {p.name for p in base.iterdir() if p.is_dir()})
            near = sorted(n for n in names if n != subset and n.lower().replace("-", "_") == subset)
            if near:
                raise InputError(f"{base / near[0]}: folder name differs from the subset {subset!r} only in case or "
                                 f"'-'; rename it to {subset} (subset folder names are exact)")
            d = base / subset
            if d.is_dir() and subset not in found:
                found[subset] = d / subset if (d / subset).is_dir() else d
    return found


def _check_declared(root: Path, listing: SynthDatasetFile, samples: list[DatasetSample]) -> None:
    """A synth set's dataset.json lists its samples: each must be on disk, or loading is refused (never dropped)."""
    path = root / DATASET_FILE
    present = {s.key for s in samples}
    if listing.samples is not None:
        keys = [f"{r.subset}/{r.id}" for r in listing.samples]
        missing = [k for k in keys if k not in present]
        if missing:
            raise InputError(f"{path}: sample {missing[0]}: listed in dataset.json but its folder (or input.wav) is "
                             f"missing ({len(missing)} of {len(keys)} listed samples missing); restore it or "
                             "re-run synth")
    for subset, n in listing.declared.items():
        have = sum(1 for s in samples if s.subset == subset)
        if have < n:
            raise InputError(f"{path}: subset {subset}: dataset.json declares {n} samples but {have} are on disk "
                             f"under {root / subset}; restore the missing ones or re-run synth")


def _check_more_inputs(subset: str, d: Path, where: str, annotation: str | None) -> None:
    """Every other file the task copies from the dataset or plays in a further session (`SampleLayout`) must be
    there; an audio file must hold samples."""
    layout = task_of(subset).layout
    names = [n for n in layout.names(DATASET) if n not in (INPUT_FILE, annotation)]
    names += [s.source for s in layout.sessions() if s.source != INPUT_FILE and s.source not in names]
    for name in names:
        path = d / name
        if not path.is_file():
            raise InputError(f"{path}: {where}: missing {name}")
        if name.endswith(".wav"):
            frames, sr = audio_info(path)
            if frames <= 0 or sr <= 0:
                raise InputError(f"{path}: {where}: {name} is empty")


def _load_sample(subset: str, d: Path, where_root: str) -> DatasetSample:
    sid = validate_sample_id(d.name, f"{where_root}: {subset}")
    where = f"sample {subset}/{sid}"
    info = SUBSETS[subset]
    get_task(info.task).dataset.check_id(subset, sid, f"{d}: {where}")
    inp = d / INPUT_FILE
    if not inp.is_file():
        raise InputError(f"{inp}: {where}: missing {INPUT_FILE}")
    frames, sr = audio_info(inp)
    if frames <= 0 or sr <= 0:
        raise InputError(f"{inp}: {where}: input audio is empty")
    T = frames / sr
    ann_path = None
    ann = None
    ann_sha = None
    record = None
    if info.annotation is not None:
        ann_path = d / info.annotation
        if not ann_path.is_file():
            raise InputError(f"{ann_path}: {where}: missing {info.annotation}")
        data = ann_path.read_bytes()
        ann_sha = sha256_bytes(data)
        try:
            obj = read_json(ann_path)
        except InputError as exc:  # name the sample too
            msg = str(exc)
            prefix = f"{ann_path}: "
            raise InputError(f"{prefix}{where}: {msg[len(prefix):]}" if msg.startswith(prefix)
                             else f"{msg} ({where})") from None
        record = checked_record(obj, subset, T, f"{ann_path}: {where}")
        ann = obj
    _check_more_inputs(subset, d, where, info.annotation)
    return DatasetSample(subset, sid, d, inp, ann_path, T, int(sr), int(frames), ann, ann_sha, record)


def load_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Load `"demo"` (built or found in the cache), a synth folder (has dataset.json) or a real FDB (v1.0, v1.5)
    folder."""
    if str(path) == "demo":
        # Lazy: the controller's FDB bridge imports this module for `--help`; the synth stack (YAML, espeak-ng,
        # resampling) adds about 0.1 s there.
        from duplexeval.fdb.synth import ensure_demo

        return load_dataset(ensure_demo())
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: dataset folder not found (give an FDB v1.0 or v1.5 folder, a synth output "
                         "folder, or 'demo')")
    info = None
    listing: SynthDatasetFile | None = None
    if (root / DATASET_FILE).is_file():
        info = read_json(root / DATASET_FILE)
        listing = validate(info, SynthDatasetFile, root / DATASET_FILE)
    dirs = _subset_dirs(root)
    if not dirs:
        raise InputError(f"{root}: no FDB subset folders found (expected some of {', '.join(subset_order())})")
    samples: list[DatasetSample] = []
    for subset, sdir in dirs.items():
        kids = sorted((p for p in sdir.iterdir() if p.is_dir() and not p.name.startswith(".")),
                      key=lambda p: id_key(p.name))
        samples.extend(_load_sample(subset, k, str(root)) for k in kids)
    files: dict[str, Path] = {}
    for task in all_tasks():
        files.update(task.dataset.dataset_files(root, samples))
    if listing is not None:
        declared = dict(listing.declared)
        _check_declared(root, listing, samples)
        name = listing.name or root.name
        kind = "synth"
    else:  # a published dataset: the declared sizes of every subset of its release(s) (`DatasetRules.release`)
        releases = sorted({task_of(s).dataset.release for s in dirs})
        declared = {s: SUBSETS[s].declared for s in subset_order() if task_of(s).dataset.release in releases}
        name = kind = "+".join(releases)
    return Dataset(name=name, root=root, declared=declared, kind=kind, _samples=samples, files=files, info=info)

