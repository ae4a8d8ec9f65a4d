"""Full-Duplex-Bench v1.0: the tree every stage shares, and the stages that read and write it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path


def score(tree_path: str | Path, **kwargs: Any) -> Any:
    """Score a tree with the unified rules of spec 000 (see duplexeval.fdb.unified)."""
    from duplexeval.fdb.unified import score as _score

    return _score(tree_path, **kwargs)
