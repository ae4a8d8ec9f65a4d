"""The official backchannel rule (`eval_backchannel.py`): the segment loop, frequency and JSD.

Two loops: `2025-06` (v1.0 code behind the June-2025 table: a segment classed as a turn erases the
backchannels found so far) and `2026-02` (HEAD: every segment up to 3 s is kept, whatever its
class). Both stop at the first segment longer than 3 s. Pure functions over VAD segment lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from duplexeval import vad as vadmod
from duplexeval.fdb.official.metric import Metric, numpy_mean_std
from duplexeval.fdb.transcript import Word
from duplexeval.jsontypes import JsonObject
from duplexeval.vad_batched import segment_audios

WINDOW_S = 0.2  # `window_size`
EPSILON = 1e-10  # `epsilon`
TIME_THRESHOLD_S = 3  # `time_threshold`: a segment longer than this is a real turn
NO_BACKCHANNEL_JSD = 1  # what the script assigns when it found no backchannel

RULES_2025_06 = "2025-06"
RULES_2026_02 = "2026-02"
BACKCHANNEL_RULES = (RULES_2025_06, RULES_2026_02)

Segment = tuple[float, float]


def segment_words(words: Sequence[Word], start: float, end: float) -> list[str]:
    """Words the script attributes to VAD segment [start, end], with its null-end quirk.

    A word counts if it lies inside, straddles the end, or straddles the start. A word with a null
    end is skipped unless it starts at or after `end`; then it is zero-length at its start, so it
    only counts when it starts exactly at `end`.
    """
    out: list[str] = []
    for w in words:
        ws, we = w.start, w.end
        if we is None:
            if ws < end:
                continue
            we = ws
        if (ws >= start and we <= end) or (ws <= end and we > end) or (ws <= start and we > start):
            out.append(w.text)
    return out


def classify_segment(duration_s: float, n_words: int) -> int:
    """TOR of one segment of at most 3 s: 1 with more than 3 words, 0 when under 1 s with at most 2 words."""
    if n_words > 3:
        return 1
    if duration_s < 1:
        return 0 if n_words <= 2 else 1
    return 1


@dataclass(frozen=True)
class SegmentTrace:
    """How the loop saw one segment (for the per-sample evidence)."""

    start: float
    end: float
    n_words: int | None  # None for the long segment that stopped the loop (its words are not looked at)
    tor: int

    def to_json(self) -> list[Any]:
        return [self.start, self.end, self.n_words, self.tor]


@dataclass(frozen=True)
class LoopResult:
    """A sample's TOR, its backchannel list, and the segments the loop visited before it stopped."""

    tor: int
    backchannels: list[Segment]
    trace: list[SegmentTrace]
    stopped_at_long_segment: bool
    n_segments: int


def backchannel_loop(segments: Sequence[Segment], words: Sequence[Word], rules: str = RULES_2025_06) -> LoopResult:
    """Walk the VAD segments in order; the TOR left by the last visited segment is the sample's TOR."""
    if rules not in BACKCHANNEL_RULES:
        raise ValueError(f"unknown backchannel rules {rules!r} (expected one of {', '.join(BACKCHANNEL_RULES)})")
    tor = 0
    bc: list[Segment] = []
    trace: list[SegmentTrace] = []
    stopped = False
    for start, end in segments:
        duration = end - start
        if duration > TIME_THRESHOLD_S:
            tor = 1
            stopped = True
            trace.append(SegmentTrace(start, end, None, 1))
            break
        n_words = len(segment_words(words, start, end))
        tor = classify_segment(duration, n_words)
        trace.append(SegmentTrace(start, end, n_words, tor))
        if rules == RULES_2026_02:
            bc.append((start, end))
        elif tor == 1:
            bc = []
        else:
            bc.append((start, end))
    return LoopResult(tor, bc, trace, stopped, len(segments))


def vad_segments_s(audios: Sequence[np.ndarray], jobs: int | None = None) -> list[list[Segment]]:
    """The official VAD call on each output (`get_speech_timestamps(wav, model, return_seconds=True)`: Silero
    defaults, 30 ms padding, the whole file, samples taken as 16 kHz, seconds rounded to 0.1).

    The files are stepped together through the model's batch axis (`speech.segment_audios`); the segments
    equal `SileroVad.segments_s(audio, OFFICIAL_SETTINGS, official_rounding=True)` one file at a time (tested).
    """

    clips = [_clip(a) for a in audios]
    segs = segment_audios(clips, vadmod.OFFICIAL_SETTINGS, jobs=jobs)
    return [vadmod.seconds_from_samples(sg, a.size, official_rounding=True) for sg, a in zip(segs, clips)]


def _clip(audio: np.ndarray) -> np.ndarray:
    clip = np.ascontiguousarray(np.asarray(audio), dtype=np.float32)
    if clip.ndim != 1 or not np.isfinite(clip).all():
        raise ValueError("VAD input must be finite mono 1-D audio")
    return clip


def vad_segments_s_read(readers: Sequence[Callable[[], np.ndarray]], sizes: Sequence[int],
                        jobs: int | None = None) -> list[list[Segment]]:
    """`vad_segments_s` of outputs read only when a VAD thread gets to each (`readers[k]()`; `sizes[k]`, its
    samples, orders the work) and dropped after it, so a subset's outputs are never all in memory. A signal that
    is not finite mono audio is the same ValueError, raised once every output was segmented."""
    n = [0] * len(readers)
    bad: list[int] = []

    def read(k: int) -> np.ndarray:
        try:
            clip = _clip(readers[k]())
        except ValueError:
            bad.append(k)
            return np.zeros(0, dtype=np.float32)
        n[k] = clip.size
        return clip

    segs = segment_audios([partial(read, k) for k in range(len(readers))], vadmod.OFFICIAL_SETTINGS, jobs=jobs,
                          sizes=sizes)
    if bad:
        raise ValueError("VAD input must be finite mono 1-D audio")
    return [vadmod.seconds_from_samples(sg, size, official_rounding=True) for sg, size in zip(segs, n)]


def frequency(n_backchannels: int, duration_s: float) -> float:
    """Backchannel segments per second of output audio (file samples / file rate)."""
    return n_backchannels / duration_s


def predicted_distribution(backchannels: Sequence[Segment], duration_s: float) -> np.ndarray:
    """0.2 s bins over the output, +1 for every bin a backchannel touches (inclusive), smoothed and normalised."""
    bins = np.zeros(int(duration_s / WINDOW_S) + 1, dtype=np.float64)
    n = len(bins)
    for start, end in backchannels:
        for i in range(int(start / WINDOW_S), int(end / WINDOW_S) + 1):
            if i < n:
                bins[i] += 1
    bins = bins + EPSILON
    return bins / np.sum(bins)


def resample_gt(gt: Sequence[float], n: int) -> np.ndarray:
    """The ground-truth distribution linearly interpolated onto n points of a 0..1 grid, as the script's
    `interp1d(x_gt, gt, kind="linear", fill_value="extrapolate")(x_pred)`.

    Written out with interp1d's own arithmetic (the interval from a left `searchsorted`, clipped to the inner
    intervals; slope times offset plus the left value) so the values are bit-identical (tested against SciPy)
    without importing scipy.interpolate, which costs 0.4-0.6 s of every `fdb evaluate` start.
    """
    x_gt = np.linspace(0, 1, len(gt))
    y = np.asarray(gt, dtype=np.float64)
    x = np.linspace(0, 1, n)
    hi = np.searchsorted(x_gt, x).clip(1, len(x_gt) - 1)
    lo = hi - 1
    slope = (y[hi] - y[lo]) / (x_gt[hi] - x_gt[lo])
    return np.asarray(slope * (x - x_gt[lo]) + y[lo])


def jsd(backchannels: Sequence[Segment], duration_s: float, gt: Sequence[float]) -> float:
    """SciPy's Jensen-Shannon *distance* (natural log, max sqrt(ln 2)); 1 when there is no backchannel.

    The same operations as `scipy.spatial.distance.jensenshannon(p, q)` (normalise, mean, `rel_entr` sums,
    square root of half), bit-identical (tested), without importing scipy.spatial (0.4-0.9 s per start).
    """
    if not backchannels:
        return float(NO_BACKCHANNEL_JSD)
    from scipy.special import rel_entr

    pred = predicted_distribution(backchannels, duration_s)
    ref = resample_gt(gt, len(pred))
    p = pred / np.sum(pred)
    q = ref / np.sum(ref)
    m = (p + q) / 2.0
    return float(np.sqrt((np.sum(rel_entr(p, m)) + np.sum(rel_entr(q, m))) / 2.0))


@dataclass(frozen=True)
class BackchannelSample:
    """One evaluated backchannel sample."""

    id: str
    duration_s: float
    file_rate: int
    loop: LoopResult
    frequency: float
    jsd: float

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "evaluated": True,
            "tor": self.loop.tor,
            "frequency": self.frequency,
            "jsd": self.jsd,
            "n_backchannels": len(self.loop.backchannels),
            "backchannels": [list(b) for b in self.loop.backchannels],
            "n_vad_segments": self.loop.n_segments,
            "stopped_at_long_segment": self.loop.stopped_at_long_segment,
            "segments": [t.to_json() for t in self.loop.trace],
            "output_duration_s": self.duration_s,
            "output_rate": self.file_rate,
        }


def backchannel_sample(
    sample_id: str,
    segments: Sequence[Segment],
    words: Sequence[Word],
    n_audio_samples: int,
    file_rate: int,
    gt: Sequence[float] | None,
    rules: str = RULES_2025_06,
) -> BackchannelSample:
    """Loop, frequency and JSD for one sample; `gt` may be None only if no backchannel is found."""
    loop = backchannel_loop(segments, words, rules)
    duration = n_audio_samples / file_rate
    if loop.backchannels and gt is None:
        raise KeyError(sample_id)
    value = jsd(loop.backchannels, duration, gt or [])
    return BackchannelSample(sample_id, duration, file_rate, loop, frequency(len(loop.backchannels), duration), value)


NO_SAMPLES_NAN = "no evaluated sample: the official script prints nan here (numpy mean of an empty list)"
JSD = "JSD"
TOR = "TOR"
FREQUENCY = "Frequency"


def backchannel_metrics(samples: Sequence[BackchannelSample]) -> dict[str, Metric]:
    """Mean and population std of JSD, TOR and frequency over all samples, as the script prints them."""

    return {
        JSD: numpy_mean_std([s.jsd for s in samples], NO_SAMPLES_NAN),
        TOR: numpy_mean_std([float(s.loop.tor) for s in samples], NO_SAMPLES_NAN),
        FREQUENCY: numpy_mean_std([s.frequency for s in samples], NO_SAMPLES_NAN),
    }
