"""`evaluate(tree)`: read a transcribed tree, apply the official v1.0 rules per subset, write summary.json.

I/O lives here; the rules themselves are pure functions in the sibling modules.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official import backchannel as bc
from duplexeval.fdb.official.interruption import InterruptionSample, interruption_metrics, interruption_sample
from duplexeval.fdb.official.judge import Judge, JudgeConfig
from duplexeval.fdb.official.pause import pause_metrics, pause_sample
from duplexeval.fdb.official.summary import NOT_JUDGED, SubsetSummary, build_summary, rules_block, write_summary
from duplexeval.fdb.official.turn_taking import turn_taking_metrics, turn_taking_sample
from duplexeval.fdb.transcript import Word, parse_output_json
from duplexeval.fdb.tree import (
    BACKCHANNEL,
    OUTPUT_JSON,
    OUTPUT_WAV,
    PAUSE_HANDLING,
    SUBSETS,
    TURN_TAKING,
    USER_INTERRUPTION,
    Manifest,
    AsrRecord,
    SampleEntry,
    load_asr,
    load_manifest,
    validate_subset,
)
from duplexeval.jsonio import read_json, sha256_file
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import InterruptAnnotation, TurnAnnotation

ICC_GT_FILE = "icc_gt_distribution.json"
BC_SUBSET = "icc_backchannel"
JUDGES = ("none", "openai")
ICC_GT_MISSING = (
    "icc_backchannel needs the official human backchannel distribution icc_gt_distribution.json. It comes from the "
    "official repository (DanielLin94144/Full-Duplex-Bench, folder evaluation/, or v1_v1.5/evaluation/ at HEAD) "
    "under CC BY-NC 4.0, so duplexeval does not ship it: pass it with --icc-gt PATH, or copy it to "
    "TREE/icc_gt_distribution.json (export copies it there when the dataset has one)"
)


def _check_file(entry: SampleEntry, tree: Path, name: str, expected: str | None, what: str) -> Path:
    path = entry.dir(tree) / name
    if not path.is_file():
        raise RefusalError(f"{path}: sample {entry.key}: {name} is missing ({what})")
    if expected is not None and sha256_file(path) != expected:
        raise RefusalError(f"{path}: sample {entry.key}: {name} differs from the hash in {what}; rerun that stage")
    return path


def _read_transcript(entry: SampleEntry, tree: Path, digest: str) -> tuple[list[Word], str]:
    path = _check_file(entry, tree, OUTPUT_JSON, digest, "asr.json")
    obj = read_json(path)
    words = parse_output_json(obj, f"{path}: sample {entry.key}")
    text = obj.get("text")
    if not isinstance(text, str):
        raise InputError(f"{path}: sample {entry.key}: 'text' must be a string")
    return words, text


def _annotation(entry: SampleEntry, tree: Path) -> Any:
    name = entry.annotation
    assert name is not None
    return read_json(_check_file(entry, tree, name, entry.files.get(name), "manifest.json"))


def _turn_end(obj: Any, where: str) -> float:
    """`turn_taking.json[0].timestamp[0]`: the end of the user's turn."""
    return validate(obj, TurnAnnotation, where).E


def _interrupt(obj: Any, where: str) -> tuple[float, str, str]:
    """(R, context text, interrupt text) from `interrupt.json[0]`."""
    first = validate(obj, InterruptAnnotation, where).root[0]
    return float(first.timestamp[1]), first.context, first.interrupt


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
    digest = sha256_file(path)
    expected = manifest.extra.get("icc_gt_distribution")
    if source == "tree" and isinstance(expected, str) and expected != digest:
        raise RefusalError(f"{path}: differs from the hash recorded in manifest.json (icc_gt_distribution)")
    gt = bc.validate_gt(read_json(path), str(path))
    return gt, {"source": source, "file": path.name, "sha256": digest}


def read_output_raw(path: Path, key: str) -> tuple[Any, int]:
    """output.wav samples as float32 at the file's own rate, as the official torchaudio load gives them."""
    import numpy as np
    import soundfile as sf

    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, OSError) as exc:  # soundfile errors are RuntimeErrors
        raise InputError(f"{path}: sample {key}: cannot read audio: {exc}") from None
    if data.shape[1] != 1:
        raise InputError(f"{path}: sample {key}: output.wav has {data.shape[1]} channels; the official VAD call needs mono")
    if data.shape[0] == 0:
        raise InputError(f"{path}: sample {key}: output.wav has no samples (zero frames); re-export or re-import it")
    return np.ascontiguousarray(data[:, 0]), int(rate)


def _progress_value(m: Any) -> str:
    """A metric in a progress line: 4 decimals (summary.json keeps full precision), `null` when empty."""
    from duplexeval.fdb.official.interruption import NEEDS_JUDGE, needs_judge

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
            f"now {manifest_sha[:12]}...); rerun `duplexeval fdb asr --tree {tree}`"
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
    if judge == "openai" and USER_INTERRUPTION in {SUBSETS[s].task for s in chosen}:
        judge_obj = Judge.create(config, tree)

    gt = None
    if BC_SUBSET in chosen and any(e.eligible for e in manifest.by_subset(BC_SUBSET)):
        gt = load_icc_gt(icc_gt, tree, manifest)  # before any work (or judge spending) is done

    results: dict[str, SubsetSummary] = {}
    bc_info: dict[str, Any] | None = None
    for subset in chosen:
        entries = manifest.by_subset(subset)
        task = SUBSETS[subset].task
        say(f"{subset}: {len(entries)} selected sample(s)")
        counts = _base_counts(subset, manifest, entries)
        rows: list[dict[str, Any]] = []
        ready = _transcribed(tree, asr, entries, counts, rows)
        judge_block: dict[str, Any] | None = None
        done: Sequence[Any]
        if task == PAUSE_HANDLING:
            done = [pause_sample(e.id, w) for e, w, _ in ready]
            metrics = pause_metrics(done)
        elif task == TURN_TAKING:
            done = [turn_taking_sample(e.id, w, _turn_end(_annotation(e, tree), _where(e, tree))) for e, w, _ in ready]
            metrics = turn_taking_metrics(done)
        elif task == USER_INTERRUPTION:
            done, judge_block = _interruption(subset, tree, ready, judge_obj, say)
            metrics = interruption_metrics(done, judged=judge_obj is not None)
        elif task == BACKCHANNEL:
            done, counts_extra, bc_info = _backchannel(subset, tree, ready, gt, backchannel_rules, rows, say)
            counts.update(counts_extra)
            metrics = bc.backchannel_metrics(done)
        else:  # pragma: no cover - SUBSETS only holds the four tasks
            raise AssertionError(task)
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


def _where(e: SampleEntry, tree: Path) -> str:
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


def _interruption(
    subset: str, tree: Path, ready: Ready, judge: Judge | None, say: _Progress
) -> tuple[list[InterruptionSample], dict[str, Any]]:
    """TOR and latency per sample, then the judge on the takeovers (when one is configured)."""
    done: list[InterruptionSample] = []
    for e, words, text in ready:
        r, context, interrupt = _interrupt(_annotation(e, tree), _where(e, tree))
        done.append(interruption_sample(e.id, words, text, r, context, interrupt))
    if judge is None:
        return done, dict(NOT_JUDGED)
    judge.log_run_start(subset)
    takeovers = [(e, s) for (e, _, _), s in zip(ready, done) if s.turn.tor == 1]
    for i, (e, s) in enumerate(takeovers, 1):
        say(f"{subset}: judging {e.id} ({i}/{len(takeovers)})")
        s.judge = judge.rate(e.key, e.dir(tree), s.context, s.interrupt, s.response_text)
    ratings = [s.judge for _, s in takeovers if s.judge is not None]
    block = judge.signature()
    block["rated"] = sum(1 for r in ratings if r.rating is not None)
    block["failed"] = len(takeovers) - block["rated"]
    block["retried_samples"] = sum(1 for r in ratings if r.attempts > 1)
    st = judge.stats
    say(f"{subset}: judge requests {st['requests']}, retries {st['retries']}, reused {st['reused']}, failed {st['failed']}")
    return done, block


def _backchannel(
    subset: str,
    tree: Path,
    ready: Ready,
    gt_loaded: tuple[dict[str, list[float]], dict[str, Any]] | None,
    rules: str,
    rows: list[dict[str, Any]],
    say: _Progress,
) -> tuple[list[bc.BackchannelSample], dict[str, Any], dict[str, Any] | None]:
    """VAD (official settings, 16 kHz assumed as the official call does) on each output.wav, then the loop."""
    digit = [(e, w) for e, w, _ in ready if e.id.isdigit()]
    for e, _, _ in ready:
        if not e.id.isdigit():
            rows.append({"id": e.id, "evaluated": False, "reason": "id is not all digits: the official script skips it"})
    extra = {"skipped_non_digit_id": len(ready) - len(digit)}
    if not digit:
        return [], extra, None
    from duplexeval import vad as vadmod

    assert gt_loaded is not None  # loaded up front whenever the subset has eligible samples
    gt, gt_info = gt_loaded
    info = {
        "vad": vadmod.vad_signature(vadmod.OFFICIAL_SETTINGS),
        "vad_rounding": "round(seconds, 1) as get_speech_timestamps(return_seconds=True)",
        "vad_sampling_rate_assumed": vadmod.SAMPLE_RATE,
        "icc_gt": gt_info,
    }
    loaded = [read_output_raw(_check_file(e, tree, OUTPUT_WAV, e.files.get(OUTPUT_WAV), "manifest.json"), e.key) for e, _ in digit]
    say(f"{subset}: VAD on {len(digit)} output(s), batched")
    all_segments = bc.vad_segments_s([audio for audio, _ in loaded])
    done: list[bc.BackchannelSample] = []
    for (e, words), (audio, rate), segments in zip(digit, loaded, all_segments):
        try:
            done.append(bc.backchannel_sample(e.id, segments, words, len(audio), rate, gt.get(e.id), rules))
        except KeyError:
            raise InputError(f"{gt_info['file']}: has no distribution for sample {e.key} (keys are folder ids)") from None
    return done, extra, info


__all__ = ["evaluate", "load_icc_gt", "ICC_GT_MISSING"]
