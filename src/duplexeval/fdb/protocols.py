"""What the tree-writing stages (`fdb export`, `fdb import`) accept as a dataset and its samples.

`fdb.dataset.Dataset` / `DatasetSample` are the implementation; these protocols name the members the stages
use, so a caller's own dataset object (tests build small ones from espeak speech) works without subclassing.
`fdb.selection.resolve_dataset` is the one place that decides what a `dataset` argument is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


class SampleKey(Protocol):
    """What names a sample in a tree: its subset and id (a dataset sample, or a manifest entry on replay)."""

    @property
    def subset(self) -> str: ...

    @property
    def id(self) -> str: ...


class SampleLike(SampleKey, Protocol):
    """One input sample as the stages read it: its length `T` (seconds), input file and 16 kHz audio.

    Optional members, read only when present: `dir` (the sample's folder: import looks for the output at the
    dataset's own nesting), `annotation_path` (copied byte for byte; absent means `missing_annotation`) and
    `annotation_sha256` (the hash the dataset loaded, checked against the copy).
    """

    @property
    def T(self) -> float: ...

    @property
    def input_path(self) -> Path: ...

    def read_input_16k(self) -> npt.NDArray[np.float32]:
        """The input as mono float32 samples at 16 kHz."""
        ...


@runtime_checkable
class DatasetLike(Protocol):
    """A set of FDB v1.0 input samples: a name, the declared size of each subset and the samples.

    Optional member: `root` (the dataset folder: its icc_gt_distribution.json is copied, its dataset.json
    hashed into the run record, and --out may not be inside it).
    """

    @property
    def name(self) -> str: ...

    @property
    def declared(self) -> Mapping[str, int]: ...

    def samples(self, subset: str | None = None) -> Sequence[SampleLike]: ...


def dataset_root(ds: DatasetLike) -> Path | None:
    """The dataset's folder, when it has one (`root`)."""
    root = getattr(ds, "root", None)
    return None if root is None else Path(root)
