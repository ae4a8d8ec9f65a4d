"""Our rules for FDB v1.5 (the unified column): per-sample rows tied to the overlap window, honest denominators.

Per sample, from the overlap window [on, off] of `metadata.json`, the VAD segments of `output.wav` and the
words of `output.json` and `clean_output.json`:

- `speaking_at_onset`: a model segment covers `on` (start <= on < end). Only then can the model stop.
- stop latency: from `on` to the start of the model's first silence of at least `stop_silence_ms` (default
  500 ms: the official timing merges shorter model gaps) that begins at or after `on`; the silence may begin
  inside the window or after it, and the stretch from the last segment to T counts if it is long enough. No
  such silence before T: not reached. Denominator: samples speaking at onset.
- response latency: from `off` to the start of the model's next segment at or after `off`; none before T: not
  reached. Denominator: samples in which the model is silent at `off` (a model still talking at `off` is
  counted as `speaking_at_end`, not as a response).
- our offline behaviour class (labelled as ours, never as the judge's), from that timing and the ASR words
  after the overlap (words starting at or after `off`):
  `continued` (talked through: no stop before off + stop_silence), `asked_to_repeat` (the words after the
  overlap ask for a repeat), `resumed` (the words after the overlap are mostly words the model also says in its
  clean output: it carried on with what it was saying), `responded` (new words after the overlap), `silent`
  (no words after the overlap). They map onto the judge's labels as C_RESUME, C_UNCERTAIN_HANDLING, C_RESUME,
  C_RESPOND, C_UNKNOWN, so the two can be compared sample by sample.

Times are integer microseconds inside; VAD segments are 16 kHz sample indices, compared exactly in half-µs ticks.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from duplexeval import stats
from duplexeval.asr.base import Word
from duplexeval.errors import InputError
from duplexeval.fdb.sample import SampleAudio
from duplexeval.fdb.tasks.base import MetricSpec, OpenedSample, PairedSpec, UnifiedRules, time_units
from duplexeval.fdb.tasks.overlap.annotation import CLEAN_OUTPUT_JSON, NAME, TAG_FILE
from duplexeval.fdb.tasks.overlap.behavior import LABELS, TRANSCRIPTS, parse_reply, transcripts_sha256
from duplexeval.fdb.tasks.overlap.scenarios import SCENARIOS
from duplexeval.fdb.unified.aggregate import Block, Counts, UnifiedMetric
from duplexeval.fdb.verified import parse_json
from duplexeval.jsonio import read_json
from duplexeval.jsontypes import JsonObject
from duplexeval.paired import mcnemar_exact, paired_quantile_difference
from duplexeval.schemas.fdb_names import OUTPUT_WAV
from duplexeval.units import US_PER_S, to_us

TICKS_PER_US = 2
TICKS_PER_SAMPLE = 125
TICKS_PER_S = 2_000_000
STOP_SILENCE_MS = 500
RESUME_OVERLAP = 0.5  # share of post-overlap words found in the clean output for "resumed"

CONTINUED = "continued"
ASKED_TO_REPEAT = "asked_to_repeat"
RESUMED = "resumed"
RESPONDED = "responded"
SILENT = "silent"
CLASSES = (RESPONDED, RESUMED, CONTINUED, ASKED_TO_REPEAT, SILENT)
AS_JUDGE_LABEL = {RESPONDED: "C_RESPOND", RESUMED: "C_RESUME", CONTINUED: "C_RESUME",
                  ASKED_TO_REPEAT: "C_UNCERTAIN_HANDLING", SILENT: "C_UNKNOWN"}
# What a good system does afterwards, per expectation of the scenario (scenarios.Scenario.expected).
GOOD = {"respond": frozenset({RESPONDED}), "resume": frozenset({RESUMED, CONTINUED})}
REPEAT_PHRASES = ("sorry", "pardon", "repeat", "say that again", "didn't catch", "did not catch", "come again",
                  "what was that", "could you say")
_WORD = re.compile(r"[a-z0-9']+")


def _norm(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class OverlapRow:
    """One eligible v1.5 sample under our rules; times in µs (None: does not apply or not reached)."""

    subset: str
    id: str
    T_us: int
    on_us: int
    off_us: int
    speaking_at_onset: bool
    speaking_at_end: bool
    stop_us: int | None  # on -> first long-enough silence; None when not speaking at onset or not reached
    stop_reached: bool
    response_us: int | None  # off -> next model onset; None when speaking at end or not reached
    response_reached: bool
    post_words: int
    resume_overlap: float | None
    behaviour: str
    judge_tags: tuple[str, ...] | None = None  # the judge's tags when there is a judge; None: not judged
    judge_error: str | None = None

    @property
    def expected(self) -> str:
        return SCENARIOS[self.subset].expected

    @property
    def good(self) -> bool:
        return self.behaviour in GOOD[self.expected]

    @property
    def judge_label(self) -> str | None:
        return self.judge_tags[0] if self.judge_tags else None

    def to_json(self) -> JsonObject:
        return {
            "subset": self.subset, "id": self.id, "T": self.T_us / 1e6,
            "overlap": [self.on_us / 1e6, self.off_us / 1e6],
            "speaking_at_onset": self.speaking_at_onset, "speaking_at_end": self.speaking_at_end,
            "stop_latency_s": self.stop_latency_s, "stop_reached": self.stop_reached,
            "response_latency_s": None if self.response_us is None else self.response_us / 1e6,
            "response_reached": self.response_reached, "post_overlap_words": self.post_words,
            "resume_overlap": self.resume_overlap, "behaviour": self.behaviour,
            "behaviour_as_label": AS_JUDGE_LABEL[self.behaviour], "expected": self.expected, "good": self.good,
            "judge_tags": None if self.judge_tags is None else list(self.judge_tags), "judge_error": self.judge_error,
        }

    @property
    def stop_latency_s(self) -> float | None:
        return None if self.stop_us is None else self.stop_us / 1e6

    @classmethod
    def from_json(cls, js: JsonObject) -> OverlapRow:
        """The row back from its unified-samples.jsonl fields (the inverse of `to_json`)."""
        on, off = js["overlap"]
        stop, response, tags = js["stop_latency_s"], js["response_latency_s"], js["judge_tags"]
        overlap = js["resume_overlap"]
        return cls(str(js["subset"]), str(js["id"]), to_us(js["T"]), to_us(on), to_us(off),
                   bool(js["speaking_at_onset"]), bool(js["speaking_at_end"]),
                   None if stop is None else to_us(stop), bool(js["stop_reached"]),
                   None if response is None else to_us(response), bool(js["response_reached"]),
                   int(js["post_overlap_words"]), None if overlap is None else float(overlap), str(js["behaviour"]),
                   None if tags is None else tuple(str(t) for t in tags),
                   None if js["judge_error"] is None else str(js["judge_error"]))


def _ticks_to_us(t: int) -> int:
    return t // TICKS_PER_US


def score(subset: str, sample_id: str, T_us: int, on_us: int, off_us: int, segments: Sequence[tuple[int, int]],
          words: Sequence[Word], clean_words: Sequence[Word], stop_silence_ms: int = STOP_SILENCE_MS,
          judge_tags: Sequence[str] | None = None, judge_error: str | None = None) -> OverlapRow:
    """One sample's row from its overlap window (µs), output VAD segments (16 kHz samples) and words."""
    on, off, T = on_us * TICKS_PER_US, off_us * TICKS_PER_US, T_us * TICKS_PER_US
    need = stop_silence_ms * 1000 * TICKS_PER_US
    segs = sorted((s * TICKS_PER_SAMPLE, e * TICKS_PER_SAMPLE) for s, e in segments)
    at_onset = any(s <= on < e for s, e in segs)
    at_end = any(s <= off < e for s, e in segs)
    stop: int | None = None
    if at_onset:
        # silences after `on`: the gaps between segments (and the tail to T), from the covering segment on
        ends = [e for s, e in segs if e > on]
        starts = [s for s, _ in segs if s > on] + [T]
        for gap_start in ends:
            nxt = min((s for s in starts if s >= gap_start), default=T)
            if nxt - gap_start >= need:
                stop = gap_start - on
                break
    response: int | None = None
    if not at_end:
        nxt_on = min((s for s, _ in segs if s >= off), default=None)
        response = None if nxt_on is None else nxt_on - off
    post = [w for w in words if to_us(w.start) >= off_us]
    post_tokens = [t for w in post for t in _norm(w.text)]
    clean_tokens = Counter(t for w in clean_words for t in _norm(w.text))
    overlap: float | None = None
    if post_tokens:
        left = Counter(clean_tokens)
        hit = 0
        for t in post_tokens:
            if left[t] > 0:
                left[t] -= 1
                hit += 1
        overlap = hit / len(post_tokens)
    post_text = " ".join(post_tokens)
    if at_onset and (stop is None or stop > off - on + need):
        behaviour = CONTINUED
    elif not post_tokens:
        behaviour = SILENT
    elif any(p in post_text for p in REPEAT_PHRASES):
        behaviour = ASKED_TO_REPEAT
    elif overlap is not None and overlap >= RESUME_OVERLAP:
        behaviour = RESUMED
    else:
        behaviour = RESPONDED
    return OverlapRow(subset, sample_id, T_us, on_us, off_us, at_onset, at_end,
                      None if stop is None else _ticks_to_us(stop), stop is not None,
                      None if response is None else _ticks_to_us(response), response is not None,
                      len(post), overlap, behaviour, None if judge_tags is None else tuple(judge_tags), judge_error)


def _latency(vals: Sequence[int | None], reached: Sequence[bool]) -> stats.Latency:
    return stats.Latency.of([float(v) if r and v is not None else float("inf") for v, r in zip(vals, reached)], 1e6)


@dataclass(frozen=True)
class OverlapBlock(Block):
    """A v1.5 subset's block: besides the metrics, our class against the judge's label (`confusion`, None without a
    judge) before them and each metric's kind (`kinds`) after them."""

    confusion: Mapping[str, Mapping[str, int]] | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"task": self.task, "counts": self.counts.to_json(), "coverage": self.coverage}
        if self.confusion is not None:
            out["confusion"] = {c: dict(by) for c, by in self.confusion.items()}
        out["metrics"] = self.metrics_json()
        out["kinds"] = {k: type(v).__name__ for k, v in self.metrics.items()}
        return out


def aggregate(rows: Sequence[OverlapRow], counts: Counts, not_scored: Mapping[str, int] | None = None) -> OverlapBlock:
    """A subset's block: counts, Wilson shares with bounds over every selected sample, latencies, agreement."""
    n = len(rows)
    selected = counts.selected
    unknown = selected - n  # selected but not scored (ineligible, no transcript): the bounds' worst cases
    counts = counts.adding(scored=n, not_scored=dict(not_scored or {}))
    confusion = None
    m: dict[str, UnifiedMetric] = {}
    m["speaking_at_onset_rate"] = stats.Share(sum(r.speaking_at_onset for r in rows), n, unknown, selected)
    ex = [r for r in rows if r.speaking_at_onset]
    m["stop_latency_s"] = _latency([r.stop_us for r in ex], [r.stop_reached for r in ex])
    m["speaking_at_end_rate"] = stats.Share(sum(r.speaking_at_end for r in rows), n, unknown, selected)
    silent_end = [r for r in rows if not r.speaking_at_end]
    m["response_latency_s"] = _latency([r.response_us for r in silent_end], [r.response_reached for r in silent_end])
    for c in CLASSES:
        m[f"{c}_rate"] = stats.Share(sum(r.behaviour == c for r in rows), n, unknown, selected)
    m["good_rate"] = stats.Share(sum(r.good for r in rows), n, unknown, selected)
    judged = [r for r in rows if r.judge_tags]
    if any(r.judge_tags is not None or r.judge_error for r in rows):
        failed = sum(1 for r in rows if r.judge_error and not r.judge_tags)
        for lab in LABELS:
            m[f"judge_{lab}_rate"] = stats.Share(sum(r.judge_label == lab for r in judged), len(judged),
                                                 failed + unknown, selected)
        m["agreement_rate"] = stats.Share(sum(AS_JUDGE_LABEL[r.behaviour] == r.judge_label for r in judged),
                                          len(judged), selected - len(judged), selected)
        confusion = {c: dict(Counter(str(r.judge_label) for r in judged if r.behaviour == c)) for c in CLASSES}
        counts = counts.adding(judge_failed=failed)
    return OverlapBlock(NAME, counts, m, confusion=confusion)


def compare(a: Sequence[OverlapRow], b: Sequence[OverlapRow]) -> JsonObject:
    """Two systems on one scenario, paired by sample id (scored in both): McNemar on `good`, latency differences."""
    by_b = {r.id: r for r in b}
    pairs = [(r, by_b[r.id]) for r in a if r.id in by_b]
    out: JsonObject = {"pairs": len(pairs), "only_a": len(a) - len(pairs), "only_b": len(b) - len(pairs)}
    out["good_rate"] = {"a": stats.Share(sum(x.good for x, _ in pairs), len(pairs)).to_json(),
                        "b": stats.Share(sum(y.good for _, y in pairs), len(pairs)).to_json(),
                        "mcnemar": mcnemar_exact([x.good for x, _ in pairs], [y.good for _, y in pairs]).to_json()}
    both = [(x, y) for x, y in pairs if x.speaking_at_onset and y.speaking_at_onset]
    if both:
        inf = float("inf")
        da = [x.stop_us / 1e6 if x.stop_reached and x.stop_us is not None else inf for x, _ in both]
        db = [y.stop_us / 1e6 if y.stop_reached and y.stop_us is not None else inf for _, y in both]
        out["stop_latency_median_difference_s"] = {"pairs": len(both), **paired_quantile_difference(da, db).to_json()}
    return out


# ------------------------------------------------------------------------------------------- the `fdb score` rules

METRIC_KINDS: dict[str, type] = {
    "speaking_at_onset_rate": stats.Share, "stop_latency_s": stats.Latency, "speaking_at_end_rate": stats.Share,
    "response_latency_s": stats.Latency, **{f"{c}_rate": stats.Share for c in CLASSES}, "good_rate": stats.Share,
    **{f"judge_{lab}_rate": stats.Share for lab in LABELS}, "agreement_rate": stats.Share,
}


@dataclass(frozen=True)
class OverlapInput:
    """One opened v1.5 sample for our rules: the window and T in µs, both outputs' words, the judge's tags."""

    subset: str
    id: str
    T_us: int
    on_us: int
    off_us: int
    audio: SampleAudio  # output.wav, read by the VAD
    words: tuple[Word, ...]
    clean_words: tuple[Word, ...]
    judge_tags: tuple[str, ...] | None
    judge_error: str | None


STALE_TAGS = "content_tag.json was made from other transcripts (asr ran again): rerun fdb evaluate --judge"


def _judge_tags(sample: OpenedSample) -> tuple[list[str] | None, str | None]:
    """The judge's accepted tags from the sample's `content_tag.json` (written by `fdb evaluate --judge`; None: not
    judged), when they were made from the sample's four transcripts as asr.json records them now."""
    p = sample.dir / TAG_FILE
    if not p.is_file():
        return None, None
    obj = read_json(p)
    meta = obj.get("duplexeval") if isinstance(obj, dict) else None
    made_from = meta.get("transcripts_sha256") if isinstance(meta, dict) else None
    now = transcripts_sha256({key: parse_json(sample.recorded(name), sample.where(sample.dir / name))
                              for key, name in TRANSCRIPTS})
    if made_from != now:
        return None, STALE_TAGS
    saved = {k: v for k, v in obj.items() if k != "duplexeval"} if isinstance(obj, dict) else obj
    _, tags, err = parse_reply(json.dumps(saved))
    return tags, err


class OverlapUnified(UnifiedRules[OverlapInput, OverlapRow]):
    """metadata.json's window (checked against T), output.json and clean_output.json, the VAD of output.wav."""

    metric_kinds = METRIC_KINDS
    definitions = "fdb-v1.5-unified-1"

    def parse(self, sample: OpenedSample) -> OverlapInput:
        md = sample.annotation
        on_us, off_us = to_us(md.start), to_us(md.end)
        if off_us > sample.T_us:
            off_us = sample.T_us  # the published files' rounding tolerance (the dataset check allows 0.05 s)
        words = tuple(sample.words)
        for i, w in enumerate(words):
            if not 0 <= to_us(w.start) <= sample.T_us:
                raise InputError(f"{sample.where(sample.transcript_path)}: word {i} ({w.text.strip()!r}) starts at "
                                 f"{w.start!r}, outside [0, T={sample.T:g} s]")
        clean = tuple(sample.transcript(CLEAN_OUTPUT_JSON))
        tags, err = _judge_tags(sample)
        return OverlapInput(sample.entry.subset, sample.entry.id, sample.T_us, min(on_us, off_us), off_us,
                            sample.audio_source(OUTPUT_WAV), words, clean, None if tags is None else tuple(tags), err)

    def vad(self, inp: OverlapInput) -> tuple[SampleAudio, int | None] | None:
        return inp.audio, None

    def score(self, inp: OverlapInput, segments: Sequence[tuple[int, int]] | None) -> OverlapRow:
        return score(inp.subset, inp.id, inp.T_us, inp.on_us, inp.off_us, segments or [], inp.words, inp.clean_words,
                     STOP_SILENCE_MS, inp.judge_tags, inp.judge_error)

    def row_from_json(self, js: JsonObject) -> OverlapRow:
        return OverlapRow.from_json(js)

    def aggregate(self, rows: Sequence[OverlapRow], counts: Counts) -> OverlapBlock:
        return aggregate(rows, counts)


def _stop_units(r: OverlapRow) -> float:
    return time_units(r.stop_us if r.stop_reached else None)


def _response_units(r: OverlapRow) -> float:
    return time_units(r.response_us if r.response_reached else None)


PAIRED = PairedSpec[OverlapRow]((
    MetricSpec("good_rate", "share", lambda r: r.good),
    MetricSpec("responded_rate", "share", lambda r: r.behaviour == RESPONDED),
    MetricSpec("continued_rate", "share", lambda r: r.behaviour == CONTINUED),
    MetricSpec("silent_rate", "share", lambda r: r.behaviour == SILENT),
    MetricSpec("speaking_at_onset_rate", "share", lambda r: r.speaking_at_onset),
    MetricSpec("stop_latency_s", "median", _stop_units, US_PER_S, lambda r: r.speaking_at_onset),
    MetricSpec("response_latency_s", "median", _response_units, US_PER_S, lambda r: not r.speaking_at_end),
))
