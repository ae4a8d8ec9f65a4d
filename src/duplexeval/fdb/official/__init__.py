"""The official Full-Duplex-Bench evaluator rules, reproduced in our own code (the reference column).

`evaluate(tree, ...)` writes TREE/summary.json. Each task's rule lives in its package (`fdb.tasks.<task>`);
here are the stage (`run`), summary.json (`summary`), the shared take-turn rule (`rules`), the printed numbers
(`metric`) and the judge client (`judge`). See docs/official.md for every rule and quirk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from duplexeval.fdb.official.run import evaluate as _evaluate

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping
    from pathlib import Path


def evaluate(
    tree: str | Path,
    subsets: list[str] | None = None,
    judge: str = "none",
    icc_gt: str | Path | None = None,
    backchannel_rules: str = "2025-06",
    progress: bool = True,
    options: Mapping[str, Any] | None = None,
    **judge_opts: Any,
) -> dict[str, Any]:
    """Apply the official rules to a transcribed tree and write TREE/summary.json (see run.evaluate); `options` are
    the other tasks' own options (`official_options()`)."""
    options = {"icc_gt": icc_gt, "backchannel_rules": backchannel_rules, **(options or {})}
    return _evaluate(tree, subsets, judge, options, progress, **judge_opts)
