"""What a tree-writing run covers: the dataset, the samples chosen from it, where the tree may go, and the
dataset's identity recorded in the run record (shared by `fdb export` and `fdb import`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.protocols import DatasetLike, SampleLike, dataset_root
from duplexeval.fdb.tree import subset_order, validate_sample_id, validate_subset
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject

DatasetArg: TypeAlias = DatasetLike | str | os.PathLike[str]  # what `fdb export` / `fdb import` take as `dataset`


def resolve_dataset(dataset: DatasetArg) -> DatasetLike:
    """A dataset object as is, or one loaded from a path / "demo"; TypeError for anything else."""
    if isinstance(dataset, DatasetLike):
        return dataset
    if isinstance(dataset, (str, os.PathLike)):
        return load_dataset(dataset)
    raise TypeError(f"dataset must be a folder path, 'demo' or an object with name, declared and samples(); "
                    f"got {type(dataset).__name__}")


def select_samples(ds: DatasetLike, subsets: Iterable[str] | None, limit: int | None) -> list[SampleLike]:
    """The dataset's samples in canonical subset order; `limit` is the first N of each subset."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    wanted = None if subsets is None else [validate_subset(s, "--subset") for s in subsets]
    chosen: list[SampleLike] = []
    for subset in subset_order():
        if wanted is not None and subset not in wanted:
            continue
        rows = list(ds.samples(subset))
        root = dataset_root(ds)
        for s in rows:
            validate_sample_id(s.id, f"{ds if root is None else root}: {subset}")
        chosen.extend(rows[:limit] if limit is not None else rows)
    if wanted is not None:
        empty = [s for s in wanted if not any(c.subset == s for c in chosen)]
        if empty:
            raise InputError(f"--subset: dataset {ds.name!r} has no samples in {', '.join(empty)}")
    if not chosen:
        raise InputError(f"dataset {ds.name!r}: no samples selected")
    return chosen


def check_out_outside(out: Path, ds: DatasetLike) -> Path:
    """Refuse an --out inside the dataset folder (its sample folders would mix with the dataset's)."""
    root = dataset_root(ds)
    if root is not None and out.resolve().is_relative_to(root.resolve()):
        raise InputError(f"{out}: --out is inside the dataset folder {root}; write the tree somewhere else")
    return out


@dataclass(frozen=True)
class DatasetIdentity:
    """The dataset a run read, as its run record names it: its name and its dataset.json's hash (None: none)."""

    name: str
    dataset_json_sha256: str | None

    def to_json(self) -> JsonObject:
        return {"name": self.name, "dataset_json_sha256": self.dataset_json_sha256}


def dataset_identity(ds: DatasetLike) -> DatasetIdentity:
    """The dataset's name plus the hash of its dataset.json when it has one (no absolute paths)."""
    dj = (dataset_root(ds) or Path(".")) / "dataset.json"
    return DatasetIdentity(ds.name, sha256_file(dj) if dj.is_file() else None)
