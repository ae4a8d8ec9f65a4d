"""The official Full-Duplex-Bench evaluator rules, reproduced in our own code (the reference column).

`evaluate(tree, ...)` writes TREE/summary.json. Each task's rule lives in its package (`fdb.tasks.<task>`);
here are the stage (`run`), summary.json (`summary`), the shared take-turn rule (`rules`), the printed numbers
(`metric`), the judge client (`judge`) and its settings (`judge_config`). See docs/official.md for every rule and
quirk. This package imports its stage on first call, so `fdb.official.judge_config` stays cheap to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from duplexeval.jsontypes import JsonObject

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from duplexeval.fdb.official.judge_config import JudgeConfig


def evaluate(
    tree: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    judge: JudgeConfig | None = None,
    icc_gt: str | Path | None = None,
    backchannel_rules: str = "2025-06",
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> JsonObject:
    """Apply the official rules to a transcribed tree and write TREE/summary.json (see run.evaluate); `judge` None
    asks no judge; `options` are the other tasks' own options (`official_options()`)."""
    from duplexeval.fdb.official.run import evaluate as _evaluate

    options = {"icc_gt": icc_gt, "backchannel_rules": backchannel_rules, **(options or {})}
    return _evaluate(tree, subsets=subsets, judge=judge, options=options, progress=progress)
