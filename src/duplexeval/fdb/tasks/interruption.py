"""User interruption (synthetic): the model should stop talking when the user cuts in, and answer the interruption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval import stats
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.compare import EXERCISED, INTERRUPTION_METRICS
from duplexeval.fdb.official.interruption import (
    InterruptionSample,
    interruption_metrics,
    interruption_sample,
)
from duplexeval.fdb.official.run import annotation, sample_where
from duplexeval.fdb.official.summary import NOT_JUDGED
from duplexeval.fdb.tasks import OfficialContext, OfficialOutcome, SampleFiles, Task
from duplexeval.fdb.tree import ASR_FILE, MANIFEST_FILE, OUTPUT_WAV, USER_INTERRUPTION
from duplexeval.fdb.unified.aggregate import (
    RESPONSE_KS,
    PooledSeconds,
    interruption_block,
)
from duplexeval.fdb.unified.interruption import (
    InterruptionRow,
    r_limit_sample,
    score_interruption,
)
from duplexeval.fdb.unified.load import (
    InterruptionInput,
    check_wav,
    fmt_s,
    parse_interrupt,
    parse_words,
    where,
)
from duplexeval.fdb.verified import read_verified
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import InterruptAnnotation


def parse(s: SampleFiles) -> InterruptionInput:
    """interrupt.json's S and R, the words (all at or after R), then the hash-checked, 16 kHz output.wav."""
    entry = s.entry
    S_us, R_us = parse_interrupt(s.annotation, s.T_us, s.annotation_path, entry)
    words = parse_words(s.transcript, s.T_us, s.transcript_path, entry)
    for i, w in enumerate(words):
        if w.start_us < R_us:
            raise InputError(
                f"{where(s.transcript_path, entry)}: word {i} starts at {fmt_s(w.start_us)}, before R={fmt_s(R_us)} "
                "(interruption transcripts hold only words from R on)"
            )
    wav_path = s.root / entry.subset / entry.id / OUTPUT_WAV
    data = read_verified(wav_path, entry.files[OUTPUT_WAV], entry.key, MANIFEST_FILE)
    audio_sha = s.asr.extra.get("audio_sha256")
    if isinstance(audio_sha, str) and audio_sha != entry.files[OUTPUT_WAV]:
        raise RefusalError(
            f"{s.root / ASR_FILE}: sample {entry.key}: transcribed a different output.wav than manifest.json records; rerun asr"
        )
    n = check_wav(data, wav_path, entry)
    return InterruptionInput(s.T_us, words, S_us, R_us, n, wav_path)


def segments(inp: InterruptionInput) -> tuple[Path, int]:
    """Only segments starting at or before R enter any quantity, so each VAD scan may stop once they are final."""
    return inp.wav_path, r_limit_sample(inp.R_us)


def score(inp: InterruptionInput, segs: Any) -> InterruptionRow:
    return score_interruption(inp, segs)


def _interrupt(obj: Any, where_: str) -> tuple[float, str, str]:
    """(R, context text, interrupt text) from `interrupt.json[0]`."""
    first = validate(obj, InterruptAnnotation, where_).root[0]
    return float(first.timestamp[1]), first.context, first.interrupt


def official(ctx: OfficialContext, ready: list) -> OfficialOutcome:
    """TOR and latency per sample, then the judge on the takeovers (when one is configured)."""
    done: list[InterruptionSample] = []
    for e, words, text in ready:
        r, context, interrupt = _interrupt(annotation(e, ctx.tree), sample_where(e, ctx.tree))
        done.append(interruption_sample(e.id, words, text, r, context, interrupt))
    judge = ctx.judge
    if judge is None:
        return OfficialOutcome(done, interruption_metrics(done, judged=False), judge=dict(NOT_JUDGED))
    subset, say = ctx.subset, ctx.say
    judge.log_run_start(subset)
    takeovers = [(e, s) for (e, _, _), s in zip(ready, done) if s.turn.tor == 1]
    for i, (e, s) in enumerate(takeovers, 1):
        say(f"{subset}: judging {e.id} ({i}/{len(takeovers)})")
        s.judge = judge.rate(e.key, e.dir(ctx.tree), s.context, s.interrupt, s.response_text)
    ratings = [s.judge for _, s in takeovers if s.judge is not None]
    block = judge.signature()
    block["rated"] = sum(1 for r in ratings if r.rating is not None)
    block["failed"] = len(takeovers) - block["rated"]
    block["retried_samples"] = sum(1 for r in ratings if r.attempts > 1)
    st = judge.stats
    say(f"{subset}: judge requests {st['requests']}, retries {st['retries']}, reused {st['reused']}, failed {st['failed']}")
    return OfficialOutcome(done, interruption_metrics(done, judged=True), judge=block)


TASK = Task(
    name=USER_INTERRUPTION,
    subsets=("synthetic_user_interruption",),
    annotation="interrupt.json",
    annotation_model=InterruptAnnotation,
    parse=parse,
    score=score,
    aggregate=interruption_block,
    metric_kinds={
        "exercised_rate": stats.Share,
        "speaking_at_end_rate": stats.Share,
        **{f"response_rate_{k}s": stats.Share for k in RESPONSE_KS},
        "no_response_rate": stats.Share,
        "response_latency_s": stats.Latency,
        "stop_latency_s": stats.Latency,
        "speech_s_per_interruption_s": PooledSeconds,
        "restart_rate": stats.Share,
    },
    official=official,
    paired_metrics=INTERRUPTION_METRICS,
    paired_gate=EXERCISED,
    paired_over="samples exercised in both (exercised_rate: eligible in both)",
    segments=segments,
    uses_judge=True,
)
