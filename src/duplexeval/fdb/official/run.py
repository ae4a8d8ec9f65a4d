"""`evaluate(tree)`: read a transcribed tree, apply the official v1.0 rules per subset, write summary.json.

I/O lives here; the rules themselves are pure functions in the sibling modules.
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official import backchannel as bc
from duplexeval.fdb.official.interruption import NEEDS_JUDGE, needs_judge
from duplexeval.fdb.official.judge import Judge, JudgeConfig
from duplexeval.fdb.official.summary import (
    SubsetSummary,
    build_summary,
    rules_block,
    write_summary,
)
from duplexeval.fdb.tasks import OfficialContext, get_task
from duplexeval.fdb.transcript import Word, parse_output_json
from duplexeval.fdb.tree import (
    OUTPUT_JSON,
    SUBSETS,
    AsrRecord,
    Manifest,
    SampleEntry,
    load_asr,
    load_manifest,
    validate_subset,
)
from duplexeval.fdb.verified import parse_json, read_verified, read_verified_json
from duplexeval.jsonio import sha256_bytes

ICC_GT_FILE = "icc_gt_distribution.json"
BC_SUBSET = "icc_backchannel"
JUDGES = ("none", "openai")
ICC_GT_MISSING = (
    "icc_backchannel needs the official human backchannel distribution icc_gt_distribution.json. It comes from the "
    "official repository (DanielLin94144/Full-Duplex-Bench, folder evaluation/, or v1_v1.5/evaluation/ at HEAD) "
    "under CC BY-NC 4.0, so duplexeval does not ship it: pass it with --icc-gt PATH, or copy it to "
    "TREE/icc_gt_distribution.json (export copies it there when the dataset has one)"
)


def read_sample_file(entry: SampleEntry, tree: Path, name: str, expected: str | None, what: str) -> bytes:
    """A sample's file, read once and checked against the hash in `what`'s record (`fdb.verified`)."""
    return read_verified(entry.dir(tree) / name, expected, entry.key, what)


def _read_transcript(entry: SampleEntry, tree: Path, digest: str) -> tuple[list[Word], str]:
    path = entry.dir(tree) / OUTPUT_JSON
    obj = read_verified_json(path, digest, entry.key, "asr.json")
    words = parse_output_json(obj, f"{path}: sample {entry.key}")
    text = obj.get("text")
    if not isinstance(text, str):
        raise InputError(f"{path}: sample {entry.key}: 'text' must be a string")
    return words, text


def annotation(entry: SampleEntry, tree: Path) -> Any:
    """The sample's annotation JSON, after checking its hash against manifest.json."""
    name = entry.annotation
    assert name is not None
    return read_verified_json(entry.dir(tree) / name, entry.files.get(name), entry.key, "manifest.json")


def load_icc_gt(icc_gt: str | Path | None, tree: Path, manifest: Manifest) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """The ground-truth distributions and where they came from: --icc-gt, else TREE/icc_gt_distribution.json."""
    if icc_gt is not None:
        path, source = Path(icc_gt), "--icc-gt"
        if not path.is_file():
            raise RefusalError(f"{path}: --icc-gt file not found. {ICC_GT_MISSING}")
    else:
        path, source = tree / ICC_GT_FILE, "tree"
        if not path.is_file():
            raise RefusalError(f"{path}: not found. {ICC_GT_MISSING}")
    expected = manifest.extra.get("icc_gt_distribution")
    recorded = expected if source == "tree" and isinstance(expected, str) else None
    data = read_verified(path, recorded, None, "manifest.json (icc_gt_distribution)")
    digest = sha256_bytes(data)
    gt = bc.validate_gt(parse_json(data, str(path)), str(path))
    return gt, {"source": source, "file": path.name, "sha256": digest}


def read_output_raw(path: Path, key: str, raw: bytes | None = None) -> tuple[Any, int]:
    """output.wav samples as float32 at the file's own rate, as the official torchaudio load gives them.

    `raw`: the file's bytes when the caller has read (and hash-checked) them already; else the file is read."""
    try:
        data, rate = sf.read(io.BytesIO(raw) if raw is not None else str(path), dtype="float32", always_2d=True)
    except (RuntimeError, OSError) as exc:  # soundfile errors are RuntimeErrors
        raise InputError(f"{path}: sample {key}: cannot read audio: {exc}") from None
    if data.shape[1] != 1:
        raise InputError(f"{path}: sample {key}: output.wav has {data.shape[1]} channels; the official VAD call needs mono")
    if data.shape[0] == 0:
        raise InputError(f"{path}: sample {key}: output.wav has no samples (zero frames); re-export or re-import it")
    return np.ascontiguousarray(data[:, 0]), int(rate)


def _progress_value(m: Any) -> str:
    """A metric in a progress line: 4 decimals (summary.json keeps full precision), `null` when empty."""
    if needs_judge(m.to_json()):
        return NEEDS_JUDGE
    return "null" if m.value is None else f"{m.value:.4f}"


class _Progress:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, msg: str) -> None:
        if self.on:
            print(f"evaluate: {msg}", file=sys.stderr, flush=True)


def _base_counts(subset: str, manifest: Manifest, entries: Sequence[SampleEntry]) -> dict[str, Any]:
    reasons = Counter(r for e in entries if not e.eligible for r in e.reasons)
    return {
        "declared": manifest.declared.get(subset, SUBSETS[subset].declared),
        "selected": len(entries),
        "eligible": sum(1 for e in entries if e.eligible),
        "ineligible": sum(1 for e in entries if not e.eligible),
        "ineligible_reasons": dict(sorted(reasons.items())),
        "asr_error": 0,
        "evaluated": 0,
    }


def evaluate(
    tree: str | Path,
    subsets: Sequence[str] | None = None,
    judge: str = "none",
    icc_gt: str | Path | None = None,
    backchannel_rules: str = bc.RULES_2025_06,
    progress: bool = True,
    **judge_opts: Any,
) -> dict[str, Any]:
    """Apply the official v1.0 rules to every eligible, transcribed sample; write and return summary.json.

    `judge_opts` are JudgeConfig fields: model, base_url, api_key_env, seed, timeout_s, max_attempts,
    reference_source.
    """
    tree = Path(tree)
    say = _Progress(progress)
    if judge not in JUDGES:
        raise InputError(f"--judge {judge!r}: expected one of {', '.join(JUDGES)}")
    if backchannel_rules not in bc.BACKCHANNEL_RULES:
        raise InputError(f"--backchannel-rules {backchannel_rules!r}: expected one of {', '.join(bc.BACKCHANNEL_RULES)}")
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
    unknown = set(judge_opts) - set(JudgeConfig.__dataclass_fields__)
    if unknown:
        raise InputError(f"unknown judge option(s): {', '.join(sorted(unknown))}")
    config = JudgeConfig(**{k: v for k, v in judge_opts.items() if v is not None})
    judge_obj = None
    if judge == "openai" and any(get_task(SUBSETS[s].task).uses_judge for s in chosen):
        judge_obj = Judge.create(config, tree)

    gt = None
    if BC_SUBSET in chosen and any(e.eligible for e in manifest.by_subset(BC_SUBSET)):
        gt = load_icc_gt(icc_gt, tree, manifest)  # before any work (or judge spending) is done
        # the backchannel VAD (CPU, in threads) runs while the other subsets are evaluated (mostly judge waits)
        from duplexeval.fdb.tasks import backchannel as bc_task

        bc_task.start_vad(tree, manifest.by_subset(BC_SUBSET), asr)

    results: dict[str, SubsetSummary] = {}
    bc_info: dict[str, Any] | None = None
    for subset in chosen:
        entries = manifest.by_subset(subset)
        task = SUBSETS[subset].task
        say(f"{subset}: {len(entries)} selected sample(s)")
        counts = _base_counts(subset, manifest, entries)
        rows: list[dict[str, Any]] = []
        ready = _transcribed(tree, asr, entries, counts, rows)
        ctx = OfficialContext(tree, subset, judge_obj, gt, backchannel_rules, rows, say)
        outcome = get_task(task).official(ctx, ready)
        done, metrics, judge_block = outcome.done, outcome.metrics, outcome.judge
        counts.update(outcome.counts)
        if outcome.rules_info is not None:
            bc_info = outcome.rules_info
        counts["evaluated"] = len(done)
        rows.extend(s.to_json() for s in done)
        order = {e.id: i for i, e in enumerate(entries)}
        rows.sort(key=lambda r: order[r["id"]])
        results[subset] = SubsetSummary(task, counts, metrics, rows, judge_block)
        say(f"{subset}: evaluated {len(done)}: " + ", ".join(f"{k} {_progress_value(m)}" for k, m in metrics.items()))

    summary = build_summary(manifest_sha, asr_sha, rules_block(backchannel_rules, bc_info), results, asr.backend)
    write_summary(tree, summary)
    return summary


Ready = list[tuple[SampleEntry, list[Word], str]]


def sample_where(e: SampleEntry, tree: Path) -> str:
    """`ANNOTATION_PATH: sample SUBSET/ID` for messages about a sample's annotation."""
    return f"{e.dir(tree) / (e.annotation or '')}: sample {e.key}"


def _transcribed(tree: Path, asr: AsrRecord, entries: Sequence[SampleEntry], counts: dict[str, Any], rows: list[dict[str, Any]]) -> Ready:
    """The eligible, transcribed samples with their words; the others become counted, not-evaluated rows."""
    ready: Ready = []
    for e in entries:
        if not e.eligible:
            rows.append({"id": e.id, "evaluated": False, "reason": "ineligible: " + "; ".join(e.reasons)})
            continue
        rec = asr.samples.get(e.key)
        if rec is None:
            raise RefusalError(f"{tree / 'asr.json'}: eligible sample {e.key} was not transcribed; rerun asr")
        if rec.status != "ok" or rec.output_json is None:
            counts["asr_error"] += 1
            rows.append({"id": e.id, "evaluated": False, "reason": f"asr error: {rec.error}"})
            continue
        words, text = _read_transcript(e, tree, rec.output_json)
        ready.append((e, words, text))
    return ready


__all__ = ["ICC_GT_MISSING", "evaluate", "load_icc_gt"]
