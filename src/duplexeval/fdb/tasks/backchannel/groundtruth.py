"""icc_gt_distribution.json: the human backchannel timing distribution of each sample (official, CC BY-NC, not
shipped), its model, where a dataset keeps it, and the check that it covers every sample."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, RootModel, model_validator

from duplexeval.errors import InputError
from duplexeval.fdb.tasks.base import DatasetFile, DatasetRules
from duplexeval.jsonio import parse_json_text, read_text
from duplexeval.schemas import validate
from duplexeval.schemas.base import fail, finite

if TYPE_CHECKING:
    from duplexeval.fdb.protocols import SampleKey
    from duplexeval.schemas.fdb_names import SubsetInfo

NAME = "backchannel"
ICC_GT_FILE = "icc_gt_distribution.json"
ICC_GT = DatasetFile(ICC_GT_FILE, "icc_gt_distribution")  # copied into the tree, its hash in manifest.json


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


def read_icc_gt(path: str | Path) -> dict[str, list[float]]:
    """`icc_gt_distribution.json`, checked by IccGroundTruth (the evaluator's rule too).

    NaN / Infinity are parsed here and refused by the schema, so the error names the sample that has one.
    """
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = parse_json_text(text, path)  # raises the one-line error naming the file and position
    return validate(data, IccGroundTruth, path).distributions()


class BackchannelChecks(DatasetRules):
    """Digit ids only (the official evaluator skips others); the ground truth, when the dataset has one, covers
    every sample."""

    def check_id(self, subset: str, sample_id: str, where: str) -> None:
        if not sample_id.isdigit():
            raise InputError(f"{where}: backchannel sample ids must be digit strings (the official evaluator "
                             "skips others)")

    def dataset_files(self, root: Path, samples: Sequence[SampleKey]) -> dict[str, Path]:
        """icc_gt_distribution.json at the root, or in the subset's folder, checked against the samples."""
        subsets = {s.name for s in _subsets()}
        found = [root / ICC_GT_FILE, *(root / s / ICC_GT_FILE for s in sorted(subsets))]
        gt_path = next((p for p in found if p.is_file()), None)
        if gt_path is None:
            return {}
        gt = read_icc_gt(gt_path)
        for subset in sorted(subsets):
            missing = [s.id for s in samples if s.subset == subset and s.id not in gt]
            if missing:
                raise InputError(
                    f"{gt_path}: no ground truth for sample {subset}/{missing[0]} ({len(missing)} missing)")
        return {ICC_GT_FILE: gt_path}


def _subsets() -> Sequence[SubsetInfo]:
    from duplexeval.schemas.fdb_names import SUBSETS

    return SUBSETS.of_task(NAME)
