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
the stages wrote. The stage modules (``export_stage``, ``asr_stage``, ...) are imported on first call, so
``import duplexeval.fdb`` stays cheap.
"""

from __future__ import annotations

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
