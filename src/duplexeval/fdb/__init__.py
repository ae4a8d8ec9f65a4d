"""Full-Duplex-Bench v1.0: the tree every stage shares, and the stages that read and write it.

The Python API of each stage, in pipeline order (each is the function its CLI command calls). The
first three are functions of the stage modules of the same name; the last three are re-exported
here and import their heavy modules on first call, so ``import duplexeval.fdb`` stays cheap:

- ``synth.synthesize_dataset(script, out)`` -> the dataset folder (espeak-ng stimuli from a script)
- ``export_stage.export(system, dataset, out)`` -> ExportResult (drive a system: a System or ``NAME[:k=v]``)
- ``import_stage.import_outputs(dataset, outputs, out)`` -> ExportResult (outputs made elsewhere)
- ``asr(tree)`` -> StageResult (word timestamps: output.json files and asr.json)
- ``evaluate(tree)`` -> the summary.json dict (official v1.0 rules, reference column)
- ``score(tree)`` -> UnifiedResult (unified.json + unified-samples.jsonl)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

__all__ = ["asr", "evaluate", "score"]


def asr(tree: str | Path, **kwargs: Any) -> Any:
    """Transcribe every eligible sample of `tree` (default backend whisper-align; see docs/asr.md)."""
    from duplexeval.fdb.asr_stage import asr as _asr

    return _asr(tree, **kwargs)


def evaluate(tree: str | Path, **kwargs: Any) -> Any:
    """Apply the official v1.0 rules to `tree`; writes and returns summary.json (see docs/official.md)."""
    from duplexeval.fdb.official.run import evaluate as _evaluate

    return _evaluate(tree, **kwargs)


def score(tree_path: str | Path, **kwargs: Any) -> Any:
    """Score a tree with the unified rules of spec 000 (see duplexeval.fdb.unified)."""
    from duplexeval.fdb.unified import score as _score

    return _score(tree_path, **kwargs)
