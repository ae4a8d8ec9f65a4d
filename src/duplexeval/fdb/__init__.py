"""Full-Duplex-Bench v1.0: the tree every stage shares, and the stages that read and write it.

The Python API of each stage, in pipeline order (each is the function its CLI command calls; the
heavy modules are imported on first call so ``import duplexeval.fdb`` stays cheap):

- ``synth(script, out)`` -> the dataset folder (espeak-ng stimuli from a YAML/JSON script)
- ``export(system, dataset, out)`` -> ExportResult (drive a system; ``system`` is a System or ``NAME[:k=v]``)
- ``import_outputs(dataset, outputs, out)`` -> ExportResult (adopt output.wav files made elsewhere)
- ``asr(tree)`` -> StageResult (word timestamps: output.json files and asr.json)
- ``evaluate(tree)`` -> the summary.json dict (official v1.0 rules, reference column)
- ``score(tree)`` -> UnifiedResult (unified.json + unified-samples.jsonl)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

__all__ = ["asr", "evaluate", "export", "import_outputs", "score", "synth"]


def synth(script: Any, out: str | Path, force: bool = False, progress: bool = False) -> Path:
    """Render a synth script (path or Script) into an FDB-v1.0-shaped dataset folder (see docs/synth.md)."""
    from duplexeval.fdb.synth import synthesize_dataset

    return synthesize_dataset(script, out, force=force, progress=progress)


def export(system: Any, dataset: Any, out: str | Path, **kwargs: Any) -> Any:
    """Drive `system` over `dataset` ('demo' or a folder) into the tree `out` (see docs/systems.md)."""
    from duplexeval.fdb.export import export as _export

    return _export(system, dataset, out, **kwargs)


def import_outputs(dataset: Any, outputs: str | Path, out: str | Path, **kwargs: Any) -> Any:
    """Build the tree `out` from `dataset`'s annotations and the `<subset>/<id>/output.wav` files under `outputs`."""
    from duplexeval.fdb.import_outputs import import_outputs as _import

    return _import(dataset, outputs, out, **kwargs)


def asr(tree: str | Path, **kwargs: Any) -> Any:
    """Transcribe every eligible sample of `tree` (default backend whisper-align; see docs/asr.md)."""
    from duplexeval.fdb.asr_stage import run

    return run(tree, **kwargs)


def evaluate(tree: str | Path, **kwargs: Any) -> Any:
    """Apply the official v1.0 rules to `tree`; writes and returns summary.json (see docs/official.md)."""
    from duplexeval.fdb.official.run import evaluate as _evaluate

    return _evaluate(tree, **kwargs)


def score(tree_path: str | Path, **kwargs: Any) -> Any:
    """Score a tree with the unified rules of spec 000 (see duplexeval.fdb.unified)."""
    from duplexeval.fdb.unified import score as _score

    return _score(tree_path, **kwargs)
