"""`evaluate(tree)`: read a transcribed tree, apply each task's official rule per subset, write summary.json.

I/O lives here; the rules themselves live in the task packages (`OfficialRules`), which this stage looks up by
the subset's task and never names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official.judge_config import JudgeConfig
from duplexeval.fdb.official.metric import NEEDS_JUDGE, Metric, needs_judge
from duplexeval.fdb.official.rules import TURN_DURATION_THRESHOLD_S, TURN_NUM_WORDS_THRESHOLD
from duplexeval.fdb.official.summary import (
    SubsetCounts,
    SubsetSummary,
    build_summary,
    rules_block,
    write_summary,
)
from duplexeval.fdb.sample import OpenedSample
from duplexeval.fdb.tasks import OfficialContext, Ready, all_tasks, task_of
from duplexeval.fdb.tasks.base import JsonRecord, NotEvaluated, SummaryRow
from duplexeval.fdb.tree import (
    SUBSETS,
    AsrRecord,
    Manifest,
    SampleEntry,
    load_asr,
    load_manifest,
    validate_subset,
)
from duplexeval.jsontypes import JsonObject
from duplexeval.progress import status_lines
from duplexeval.signature import Component

JUDGES = ("none", "openai")


def official_options() -> dict[str, object]:
    """Every registered task's official options with their defaults (`OfficialRules.options`)."""
    out: dict[str, object] = {}
    for task in all_tasks():
        out.update(task.official.options)
    return out


def _progress_value(m: Metric) -> str:
    """A metric in a progress line: 4 decimals (summary.json keeps full precision), `null` when empty."""
    if needs_judge(m.to_json()):
        return NEEDS_JUDGE
    return "null" if m.value is None else f"{m.value:.4f}"


def _base_counts(subset: str, manifest: Manifest, entries: Sequence[SampleEntry]) -> SubsetCounts:
    reasons = Counter(r for e in entries if not e.eligible for r in e.reasons)
    return SubsetCounts(
        declared=manifest.declared.get(subset, SUBSETS[subset].declared),
        selected=len(entries),
        eligible=sum(1 for e in entries if e.eligible),
        ineligible=sum(1 for e in entries if not e.eligible),
        ineligible_reasons=dict(sorted(reasons.items())),
    )


def evaluate(
    tree: str | Path,
    *,
    subsets: Sequence[str] | None = None,
    judge: JudgeConfig | None = None,
    options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> JsonObject:
    """Apply the official rules to every eligible, transcribed sample; write and return summary.json.

    `options` are the tasks' own options (`official_options()` lists them with their defaults); `judge` is how the
    OpenAI-compatible judge runs (None: no judge, the ratings stay empty and say so).
    """
    tree = Path(tree)
    say = status_lines("evaluate", progress)
    if judge is not None and not isinstance(judge, JudgeConfig):
        raise TypeError(f"evaluate: judge must be a JudgeConfig or None, got {type(judge).__name__}")
    mode = "none" if judge is None else "openai"
    known = official_options()
    unknown_options = sorted(set(options or {}) - set(known))
    if unknown_options:
        raise InputError(f"unknown evaluate option(s): {', '.join(unknown_options)}; known: "
                         f"{', '.join(known) or 'none'}")
    opts = {**known, **{k: v for k, v in (options or {}).items() if v is not None}}
    for task in all_tasks():
        task.official.check_options(opts)
    manifest, manifest_sha = load_manifest(tree)
    asr, asr_sha = load_asr(tree)
    if asr.manifest_sha256 != manifest_sha:
        raise RefusalError(
            f"{tree / 'asr.json'}: made from a different manifest.json (sha256 {asr.manifest_sha256[:12]}..., "
            f"now {manifest_sha[:12]}...); rerun `duplexeval fdb asr {tree}`"
        )
    if subsets:
        chosen = [validate_subset(s, "--subset") for s in dict.fromkeys(subsets)]
        for s in chosen:
            if not manifest.by_subset(s):
                raise InputError(f"--subset {s}: the tree has no selected sample of this subset")
        chosen = [s for s in manifest.subsets() if s in chosen]
    else:
        chosen = manifest.subsets()
    config = judge if judge is not None else JudgeConfig()

    # Every chosen subset's rule prepares before any is evaluated: what it needs is checked before any work (or
    # judge spending) is done, and work it can start early (CPU in threads) overlaps the others' judge waits.
    contexts: dict[str, OfficialContext] = {}
    for subset in chosen:
        ctx = OfficialContext(tree, subset, manifest, asr, opts, mode, config, [], say)
        ctx.prepared = task_of(subset).official.prepare(ctx, manifest.by_subset(subset))
        contexts[subset] = ctx

    results: dict[str, SubsetSummary] = {}
    infos: dict[str, JsonRecord] = {}
    for subset in chosen:
        entries = manifest.by_subset(subset)
        task = task_of(subset)
        say(f"{subset}: {len(entries)} selected sample(s)")
        counts = _base_counts(subset, manifest, entries)
        ctx = contexts[subset]
        rows = ctx.rows
        ready = _transcribed(tree, asr, entries, counts, rows)
        outcome = task.official.evaluate(ctx, ready)
        done, metrics, judge_block = outcome.done, outcome.metrics, outcome.judge
        counts.rule.update(outcome.counts)
        if outcome.rules_info is not None:
            infos[task.name] = outcome.rules_info
        counts.evaluated = len(done)
        rows.extend(done)
        order = {e.id: i for i, e in enumerate(entries)}
        rows.sort(key=lambda r: order[r.id])
        results[subset] = SubsetSummary(task.name, counts, metrics, rows, judge_block, outcome.extra)
        say(f"{subset}: evaluated {len(done)}: " + ", ".join(f"{k} {_progress_value(m)}" for k, m in metrics.items()))

    rules = rules_block({"turn_duration_threshold_s": TURN_DURATION_THRESHOLD_S,
                         "turn_num_words_threshold": TURN_NUM_WORDS_THRESHOLD})
    rules["name"] = "+".join(sorted({task_of(s).official.rules_name for s in chosen}))  # the rule sets applied
    components: list[Component] = []
    for t in all_tasks():
        rules.update(t.official.rules_block(opts, infos.get(t.name)))
        components += t.official.signature_components(opts, infos.get(t.name))
    summary = build_summary(manifest_sha, asr_sha, rules, results, asr.backend, tuple(components))
    write_summary(tree, summary)
    return summary


def _transcribed(tree: Path, asr: AsrRecord, entries: Sequence[SampleEntry], counts: SubsetCounts,
                 rows: list[SummaryRow]) -> Ready:
    """The eligible, transcribed samples with their words; the others become counted, not-evaluated rows."""
    ready: Ready = []
    for e in entries:
        if not e.eligible:
            rows.append(NotEvaluated(e.id, "ineligible: " + "; ".join(e.reasons)))
            continue
        rec = asr.samples.get(e.key)
        if rec is None:
            raise RefusalError(f"{tree / 'asr.json'}: eligible sample {e.key} was not transcribed; rerun asr")
        if rec.status != "ok" or rec.output_json is None:
            counts.asr_error += 1
            rows.append(NotEvaluated(e.id, f"asr error: {rec.error}"))
            continue
        sample = OpenedSample(tree, e, rec, task_of(e.subset).annotation)
        sample.words, sample.text  # noqa: B018 - read and checked now, before any rule runs
        ready.append(sample)
    return ready


__all__ = ["JUDGES", "evaluate", "official_options"]
