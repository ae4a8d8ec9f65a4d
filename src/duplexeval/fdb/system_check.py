"""`duplexeval systems check SPEC`: one short sample through a system, and what it produced, before a whole run.

The sample is exported exactly as `fdb export` would (same session, playout and eligibility rules), then its
`output.wav` is measured: where sound starts and how long it lasts, its level, what Silero VAD calls speech
and what the ASR heard. Words the ASR finds outside the VAD's speech (a test tone, noise, music) are the
warning this exists for: the scoring rules count words, so such words would score as a response.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from duplexeval.audio import read_audio_16k
from duplexeval.errors import InputError
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.protocols import DatasetLike, SampleLike
from duplexeval.fdb.selection import resolve_dataset
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import load_manifest, validate_sample_id, validate_subset
from duplexeval.units import SAMPLE_RATE
from duplexeval.vad import VadSettings, load_vad

DEFAULT_SAMPLE = "candor_turn_taking/1"
SILENCE_DBFS = -60.0  # below this an 80 ms window counts as silent
WINDOW_S = 0.08
OUTSIDE_SHARE = 0.5  # a word is outside speech when at least this share of it lies outside every VAD segment
# Silero's defaults but speech from 100 ms (as the ASR's own speech regions): a word cut short by a barge-in is
# still speech; a tone or noise is not, at any length
SPEECH_SETTINGS = VadSettings(min_speech_ms=100)


@dataclass(frozen=True)
class OneSample(DatasetLike):
    """A dataset of one sample (export runs it like any other)."""

    base: DatasetLike
    sample: SampleLike

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def declared(self) -> Mapping[str, int]:
        return {self.sample.subset: 1}

    @property
    def root(self) -> Path | None:
        return getattr(self.base, "root", None)

    def samples(self, subset: str | None = None) -> Sequence[SampleLike]:
        return [self.sample] if subset in (None, self.sample.subset) else []


@dataclass
class CheckResult:
    """What one sample through the system produced (times in seconds on the input's timeline)."""

    system: str
    sample: str
    T: float
    user_end_s: float | None
    eligible: bool
    reasons: list[str]
    onset_s: float | None = None  # first 80 ms window above SILENCE_DBFS
    sound_s: float = 0.0  # total time above SILENCE_DBFS
    level_dbfs: float | None = None  # RMS over the sounding windows
    peak_dbfs: float | None = None
    speech: list[tuple[float, float]] = field(default_factory=list)  # VAD segments
    words: list[tuple[str, float, float | None]] = field(default_factory=list)
    asr: str = ""
    outside_words: int = 0

    @property
    def speech_s(self) -> float:
        return sum(e - s for s, e in self.speech)

    def warnings(self) -> list[str]:
        """What would make this system's scores misleading, one line each (empty: it looks right)."""
        out = []
        if not self.eligible:
            out.append(f"the sample is ineligible ({', '.join(self.reasons)}): a run would score none of its "
                       "samples like this")
        elif self.onset_s is None:
            out.append("the system produced no sound at all")
        elif not self.speech:
            out.append("the output has sound but the VAD finds no speech in it")
        if self.outside_words:
            out.append(f"the ASR heard {self.outside_words} of {len(self.words)} words in audio the VAD "
                       "calls non-speech (a tone, noise or music?): the scoring rules count words, so they would score "
                       "as a response")
        return out


def _find_sample(ds: DatasetLike, key: str) -> SampleLike:
    subset, _, sid = key.partition("/")
    validate_subset(subset, "--sample")
    validate_sample_id(sid, "--sample")
    for s in ds.samples(subset):
        if s.id == sid:
            return s
    raise InputError(f"--sample {key}: dataset {ds.name!r} has no such sample")


def _user_end(sample: SampleLike) -> float | None:
    """When the user's turn ends, as the sample's task names it from its checked annotation
    (`RenderRules.reference`: E for turn-taking), else None."""
    record = getattr(sample, "record", None)
    return None if record is None else task_of(sample.subset).render.reference(record)


def _db(x: float) -> float:
    return 20.0 * math.log10(max(x, 1e-10))


def measure(audio: np.ndarray, result: CheckResult) -> None:
    """Onset, sounding time and level of `audio` (16 kHz mono float32) into `result`."""
    n = int(round(WINDOW_S * SAMPLE_RATE))
    frames = audio[: audio.size // n * n].reshape(-1, n) if audio.size >= n else np.zeros((0, n), np.float32)
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1)) if len(frames) else np.zeros(0)
    loud = np.flatnonzero(20.0 * np.log10(np.maximum(rms, 1e-10)) > SILENCE_DBFS)
    if loud.size:
        result.onset_s = round(float(loud[0]) * WINDOW_S, 3)
        result.sound_s = round(float(loud.size) * WINDOW_S, 3)
        result.level_dbfs = round(_db(float(np.sqrt(np.mean(rms[loud] ** 2)))), 1)
        result.peak_dbfs = round(_db(float(np.max(np.abs(audio)))), 1)


def outside_speech(words: Sequence[tuple[str, float, float | None]], speech: Sequence[tuple[float, float]]) -> int:
    """How many words lie mostly outside every speech segment (a word without an end counts 0.1 s long)."""
    n = 0
    for _w, a, b in words:
        end = b if b is not None and b > a else a + 0.1
        inside = sum(max(0.0, min(end, e) - max(a, s)) for s, e in speech)
        if inside < (1.0 - OUTSIDE_SHARE) * (end - a):
            n += 1
    return n


def check_system(system: str, dataset: str | DatasetLike = "demo", sample: str = DEFAULT_SAMPLE,
                 backend: str = "whisper-align", model: str | None = None, device: str = "cpu",
                 call_timeout_s: float = 120.0) -> CheckResult:
    """Export one sample with `system` into a temporary tree and measure its output."""
    from duplexeval.asr.registry import make_backend

    ds = resolve_dataset(dataset)
    one = _find_sample(ds, sample)
    asr = make_backend(backend, model, device, 1)  # a bad backend is refused before the session
    with tempfile.TemporaryDirectory(prefix="duplexeval-check-") as tmp:
        tree = Path(tmp) / "tree"
        export(system, OneSample(ds, one), tree, progress=False, call_timeout_s=call_timeout_s)
        manifest, _sha = load_manifest(tree)
        entry = manifest.samples[0]
        res = CheckResult(system, sample, float(entry.T), _user_end(one), bool(entry.eligible), list(entry.reasons))
        wav = entry.dir(tree) / "output.wav"
        if not wav.is_file():
            return res
        audio = read_audio_16k(wav)
    measure(audio, res)
    found = load_vad().segments(audio, SPEECH_SETTINGS)
    res.speech = [(round(s / SAMPLE_RATE, 3), round(e / SAMPLE_RATE, 3)) for s, e in found]
    words = asr.transcribe(audio)
    res.asr = str(asr.signature().get("name", backend))
    res.words = [(w.text, round(w.start, 3), None if w.end is None else round(w.end, 3)) for w in words]
    res.outside_words = outside_speech(res.words, res.speech)
    return res


def _t(x: float | None, ref: float | None = None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f} s" + (f" ({x - ref:+.2f} s after the user's turn end)" if ref is not None else "")


def format_check(r: CheckResult, max_words: int = 20) -> list[str]:
    """The report, one fact a line; warnings last."""
    lines = [f"systems check: {r.system} on {r.sample} (T {r.T:.2f} s"
             + (f", user's turn ends at {r.user_end_s:.2f} s)" if r.user_end_s is not None else ")"),
             f"  eligible: {'yes' if r.eligible else 'no: ' + ', '.join(r.reasons)}"]
    if r.eligible:
        lines += [f"  sound: onset {_t(r.onset_s, r.user_end_s)}, {r.sound_s:.2f} s above {SILENCE_DBFS:g} dBFS"
                  + (f", level {r.level_dbfs:.1f} dBFS RMS (peak {r.peak_dbfs:.1f})" if r.level_dbfs is not None
                     else ""),
                  f"  speech (Silero VAD): {len(r.speech)} segment(s), {r.speech_s:.2f} s"
                  + (": " + ", ".join(f"{s:.2f}-{e:.2f}" for s, e in r.speech[:6])
                     + (" ..." if len(r.speech) > 6 else "") if r.speech else ""),
                  f"  ASR ({r.asr}): {len(r.words)} word(s)"
                  + (f", first at {_t(r.words[0][1], r.user_end_s)}: " if r.words else "")
                  + " ".join(w for w, _a, _b in r.words[:max_words]) + (" ..." if len(r.words) > max_words else "")]
    lines += [f"  warning: {w}" for w in r.warnings()]
    return lines
