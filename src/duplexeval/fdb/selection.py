"""What a tree-writing run covers: the dataset, the samples chosen from it, where the tree may go, and the
dataset's identity recorded in the run record (shared by `fdb export` and `fdb import`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.tree import SUBSET_ORDER, validate_sample_id, validate_subset
from duplexeval.jsonio import sha256_file


def resolve_dataset(dataset: Any) -> Any:
    """A Dataset object as is, or load one from a path / "demo"."""
    if hasattr(dataset, "samples") and hasattr(dataset, "declared"):
        return dataset
    return load_dataset(dataset)


def select_samples(ds: Any, subsets: Iterable[str] | None, limit: int | None) -> list[Any]:
    """The dataset's samples in canonical subset order; `limit` is the first N of each subset."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    wanted = None if subsets is None else [validate_subset(s, "--subset") for s in subsets]
    chosen: list[Any] = []
    for subset in SUBSET_ORDER:
        if wanted is not None and subset not in wanted:
            continue
        rows = list(ds.samples(subset))
        for s in rows:
            validate_sample_id(s.id, f"{getattr(ds, 'root', ds)}: {subset}")
        chosen.extend(rows[:limit] if limit is not None else rows)
    if wanted is not None:
        empty = [s for s in wanted if not any(c.subset == s for c in chosen)]
        if empty:
            raise InputError(f"--subset: dataset {ds.name!r} has no samples in {', '.join(empty)}")
    if not chosen:
        raise InputError(f"dataset {ds.name!r}: no samples selected")
    return chosen


def check_out_outside(out: Path, ds: Any) -> Path:
    """Refuse an --out inside the dataset folder (its sample folders would mix with the dataset's)."""
    root = getattr(ds, "root", None)
    if root is not None and out.resolve().is_relative_to(Path(root).resolve()):
        raise InputError(f"{out}: --out is inside the dataset folder {root}; write the tree somewhere else")
    return out


def dataset_identity(ds: Any) -> dict[str, Any]:
    """The dataset's name plus the hash of its dataset.json when it has one (no absolute paths)."""
    ident: dict[str, Any] = {"name": ds.name}
    root = Path(getattr(ds, "root", "."))
    dj = root / "dataset.json"
    ident["dataset_json_sha256"] = sha256_file(dj) if dj.is_file() else None
    return ident
