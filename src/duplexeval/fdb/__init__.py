"""Full-Duplex-Bench v1.0 and v1.5: the tree every stage shares, the stages that read and write it, and their API.

The public Python API is this package (the functions live in `fdb.api`); in pipeline order, each is what its
`duplexeval fdb` command runs, with the command's defaults:

- ``synthesize(script, out)`` -> SynthesizeResult (espeak-ng stimuli from a script, or "demo")
- ``export(system, dataset, out)`` -> ExportResult (drive a system: a System or ``NAME[:k=v]``)
- ``import_outputs(dataset, outputs, out)`` -> ExportResult (outputs made elsewhere)
- ``asr(tree)`` -> AsrResult (word timestamps: output.json files and asr.json)
- ``evaluate(tree)`` -> EvaluateResult (official rules -> summary.json; ``judge=JudgeConfig(...)`` asks a judge)
- ``score(tree)`` -> ScoreResult (unified rules -> unified.json + unified-samples.jsonl)
- ``compare(trees)`` -> CompareResult (paired differences B - A -> compare.json)
- ``replay(tree)`` -> ReplayResult (network samples rebuilt from their wire traces)

``score_samples(samples)`` scores `Sample` records held in memory by the unified rules; ``read_manifest``,
``read_asr``, ``read_words``, ``read_trace``, ``read_summary``, ``read_unified`` and ``read_comparison`` load what
the stages wrote. The names are loaded from `fdb.api` on first use and each verb imports its stage when it runs, so
``import duplexeval.fdb`` (which every ``duplexeval fdb`` command does) stays as cheap as before the API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers; at run time `__getattr__` loads them on first use
    from duplexeval.fdb.api import (
        AsrResult,
        CompareResult,
        Comparison,
        ComparisonFile,
        EvaluateResult,
        ExportResult,
        JudgeConfig,
        OfficialSubset,
        PairedSubset,
        ReplayResult,
        Sample,
        ScoreResult,
        SynthesizeResult,
        UnifiedFile,
        UnifiedSample,
        UnifiedSubset,
        asr,
        compare,
        evaluate,
        export,
        import_outputs,
        read_asr,
        read_comparison,
        read_manifest,
        read_summary,
        read_trace,
        read_unified,
        read_words,
        replay,
        score,
        score_samples,
        synthesize,
    )

__all__ = [
    "synthesize", "export", "import_outputs", "asr", "evaluate", "score", "compare", "replay", "score_samples",
    "read_manifest", "read_asr", "read_words", "read_trace", "read_summary", "read_unified", "read_comparison",
    "JudgeConfig", "Sample", "SynthesizeResult", "ExportResult", "AsrResult", "EvaluateResult", "OfficialSubset",
    "ScoreResult", "UnifiedSubset", "UnifiedSample", "UnifiedFile", "CompareResult", "Comparison", "PairedSubset",
    "ComparisonFile", "ReplayResult",
]


def __getattr__(name: str) -> Any:
    """A public name of `fdb.api`, loaded on first use (and kept, so later lookups are plain attribute reads)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from duplexeval.fdb import api

    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
