"""Before/after the overlap, as the official v1.5 script splits and measures a system's output.

The split: d = the end of the overlap (`metadata.timestamps[1]`); the output's words sorted by start; split_t
is the start of the first word that starts after d or spans it, else the last word's end, or d without words;
clamped to [0, duration]. `pre` is the audio before split_t with the words ending by it, `post` the rest. The
whole `clean_output.wav` with `clean_output.json` is a third, unsplit segment.

Each segment is trimmed to its speech with Silero (threshold 0.5, min speech 60 ms, min silence 50 ms, pad
30 ms, speech parts concatenated; no speech: the whole segment is kept, as the script does), then measured:
`wpm` and `speech_dur_s` from the words (first start to last end, in list order), pitch and intensity with
Praat (`prosody`), UTMOSv2 only from a local model (otherwise not computed, with the reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from duplexeval.asr.base import Word
from duplexeval.fdb.tasks.overlap import prosody
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE
from duplexeval.vad import VadSettings

TRIM_SETTINGS = VadSettings(threshold=0.5, min_speech_ms=60, min_silence_ms=50, speech_pad_ms=30)
TRIM_PROPORTION = 0.05  # the aggregate keeps values within [P5, P95]
MIN_N = 3  # ... when at least this many values are left
METRIC_ORDER = ("utmosv2", "wpm", "speech_dur_s", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity")
UTMOS_NOT_COMPUTED = "UTMOSv2 downloads its weights at run time; give a local model to compute it"


class OfficialCrash(Exception):
    """The official script raises on this input (it writes no result for the subset)."""


def _pair(w: Word, what: str) -> tuple[float, float]:
    if w.end is None:
        raise OfficialCrash(f"{what}: word {w.text!r} has a null end time; the official script's float(None) raises")
    return float(w.start), float(w.end)


def split_time(distractor_end: float, words: Sequence[Word], duration_s: float, what: str = "output.json") -> float:
    """split_t of the official rule, clamped to [0, duration_s]."""
    if not words:
        t = distractor_end
    else:
        normed = sorted((_pair(w, what) for w in words), key=lambda x: x[0])
        t = normed[-1][1]
        for s, e in normed:
            if distractor_end < s or s <= distractor_end < e:
                t = s
                break
    return max(0.0, min(duration_s, t))


def partition(words: Sequence[Word], split_t: float) -> tuple[list[Word], list[Word]]:
    """Words ending by split_t (pre) and the rest (post), each in list order."""
    pre: list[Word] = []
    post: list[Word] = []
    for w in words:
        _pair(w, "output.json")
        (pre if float(w.end or 0.0) <= split_t else post).append(w)
    return pre, post


def speech_stats(words: Sequence[Word], what: str = "transcript") -> tuple[float, int]:
    """(span from the first word's start to the last word's end, in list order, or 0 if negative; word count)."""
    if not words:
        return 0.0, 0
    start, _ = _pair(words[0], what)
    _, end = _pair(words[-1], what)
    span = end - start
    return (span if span >= 0 else 0.0), len(words)


def wpm(words: Sequence[Word], what: str = "transcript") -> float:
    """Words per minute over the span of `speech_stats`; 0.0 for no span."""
    span, n = speech_stats(words, what)
    return 0.0 if span <= 0 else float(n / (span / 60.0))


def slice_audio(audio: np.ndarray, start_s: float, end_s: float) -> np.ndarray:
    """audio[round(start*sr) : round(end*sr)], clamped, empty when reversed (the script's `_slice_wave`)."""
    n = audio.shape[0]
    a = max(0, min(n, int(round(start_s * SAMPLE_RATE))))
    b = max(0, min(n, int(round(end_s * SAMPLE_RATE))))
    return audio[a:b] if b > a else audio[:0]


Segmenter = Callable[[np.ndarray, VadSettings], list[tuple[int, int]]]


def trim(audio: np.ndarray, segments: Segmenter) -> tuple[np.ndarray, bool]:
    """The speech parts of `audio` concatenated, and whether any speech was found (else `audio` unchanged)."""
    segs = segments(audio, TRIM_SETTINGS)
    if not segs:
        return audio, False
    parts = [slice_audio(audio, s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in segs]
    return (np.concatenate(parts) if len(parts) > 1 else parts[0]), True


@dataclass
class SegmentResult:
    """One segment's official metrics (None: not computed, with `notes` saying why) and how they were made."""

    values: dict[str, float | None]
    speech_found: bool
    intensity_scale: str | None
    notes: dict[str, str] = field(default_factory=dict)

    def official_json(self) -> dict[str, float]:
        """The keys the official `general_split.json` would hold with a number (None and NaN left out)."""
        return {k: v for k, v in self.values.items() if v is not None and not math.isnan(v)}


def segment_metrics(audio: np.ndarray, words: Sequence[Word] | None, segments: Segmenter, what: str,
                    utmos: Callable[[np.ndarray], float] | None = None) -> SegmentResult | None:
    """The official `_eval_segment` on a float32 16 kHz segment; None for an empty segment (the script's {})."""
    if audio.shape[0] == 0:
        return None
    x, found = trim(audio, segments)
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    if utmos is None:
        values["utmosv2"] = None
        notes["utmosv2"] = UTMOS_NOT_COMPUTED
    else:
        values["utmosv2"] = float(utmos(x))
    if words is not None:
        values["wpm"] = wpm(words, what)
        values["speech_dur_s"] = float(speech_stats(words, what)[0])
    p = prosody.pitch_stats(x, SAMPLE_RATE)
    values["mean_pitch"], values["std_pitch"] = p.mean, p.std
    if p.reason:
        notes["pitch"] = p.reason
    i = prosody.intensity_stats(x, SAMPLE_RATE)
    values["mean_intensity"], values["std_intensity"] = i.mean, i.std
    if i.reason:
        notes["intensity"] = i.reason
    if not found:
        notes["trim"] = "no speech found: the whole segment is measured (the official rule)"
    return SegmentResult(values, found, i.scale, notes)


@dataclass
class SampleSplit:
    """One sample's before/after result, the official `general_split.json` in typed form."""

    pre: SegmentResult | None
    post: SegmentResult | None
    clean: SegmentResult | None
    split_t: float
    distractor_end: float
    pre_dur_s: float
    post_dur_s: float

    def official_json(self) -> JsonObject:
        out: JsonObject = {
            "pre": {} if self.pre is None else self.pre.official_json(),
            "post": {} if self.post is None else self.post.official_json(),
            "split_t": self.split_t,
            "distractor_end": self.distractor_end,
            "pre_dur_s": self.pre_dur_s,
            "post_dur_s": self.post_dur_s,
        }
        if self.clean is not None and self.clean.official_json():
            out["clean"] = self.clean.official_json()
        return out


@dataclass(frozen=True)
class Plan:
    """The split of one output before anything is measured: split_t, both audio parts and their words."""

    split_t: float
    duration_s: float
    pre_audio: np.ndarray
    post_audio: np.ndarray
    pre_words: list[Word]
    post_words: list[Word]


def plan(output: np.ndarray, words: Sequence[Word], distractor_end: float) -> Plan:
    """Where the official rule splits `output` (16 kHz float32) and what falls on each side."""
    duration = output.shape[0] / SAMPLE_RATE
    t = split_time(distractor_end, words, duration)
    pre_words, post_words = partition(words, t)
    out = np.asarray(output, dtype=np.float32)
    return Plan(float(t), duration, slice_audio(out, 0.0, t), slice_audio(out, t, duration), pre_words, post_words)


def measure(p: Plan, distractor_end: float, segments: Segmenter, clean: tuple[np.ndarray, Sequence[Word]] | None = None,
            utmos: Callable[[np.ndarray], float] | None = None) -> SampleSplit:
    """The official metrics of a planned split and, when given, of the clean output (unsplit)."""
    pre = segment_metrics(p.pre_audio, p.pre_words, segments, "output.json", utmos)
    post = segment_metrics(p.post_audio, p.post_words, segments, "output.json", utmos)
    clean_res = None
    if clean is not None:
        clean_res = segment_metrics(clean[0], clean[1], segments, "clean_output.json", utmos)
    return SampleSplit(pre, post, clean_res, p.split_t, float(distractor_end), p.split_t,
                       float(max(0.0, p.duration_s - p.split_t)))


def sample_split(output: np.ndarray, words: Sequence[Word], distractor_end: float, segments: Segmenter,
                 clean: tuple[np.ndarray, Sequence[Word]] | None = None,
                 utmos: Callable[[np.ndarray], float] | None = None) -> SampleSplit:
    """The official per-sample split and metrics of `output` (16 kHz float32) and, when given, the clean pair."""
    return measure(plan(output, words, distractor_end), distractor_end, segments, clean, utmos)


@dataclass(frozen=True)
class TrimmedMean:
    """The official aggregate of one metric: mean of the values within [P5, P95] (all values when n < 3)."""

    value: float | None
    n: int  # values given (None and NaN excluded)
    n_used: int

    def to_json(self) -> JsonObject:
        return {"value": self.value, "n": self.n, "n_used": self.n_used,
                "rule": f"mean within [P{TRIM_PROPORTION * 100:g}, P{100 - TRIM_PROPORTION * 100:g}] when n >= {MIN_N}"}


def trimmed_mean(values: Sequence[float | None]) -> TrimmedMean:
    """The official `_robust_filter_vals(mode='trim', trim_prop=0.05)` then the mean (NumPy's linear percentile)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return TrimmedMean(None, 0, 0)
    kept = vals
    if len(vals) >= MIN_N:
        lo = np.percentile(vals, TRIM_PROPORTION * 100.0)
        hi = np.percentile(vals, 100.0 - TRIM_PROPORTION * 100.0)
        kept = [v for v in vals if lo <= v <= hi]
    return TrimmedMean(float(sum(kept) / len(kept)) if kept else None, len(vals), len(kept))


def aggregate(splits: Sequence[SampleSplit]) -> dict[str, dict[str, TrimmedMean]]:
    """Trimmed means per side (`pre`, `post`; the official aggregate never includes `clean`) and metric."""
    out: dict[str, dict[str, TrimmedMean]] = {}
    for side in ("pre", "post"):
        segs = [getattr(s, side) for s in splits]
        per: dict[str, TrimmedMean] = {}
        for k in METRIC_ORDER:
            vals = [seg.values.get(k) for seg in segs if seg is not None and k in seg.values]
            tm = trimmed_mean(vals)
            if tm.value is not None:
                per[k] = tm
        out[side] = per
    return out
