"""Rendering one sample: espeak-ng speech trimmed to its voiced extent, placed on the 16 kHz grid (layouts:
docs/synth.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from duplexeval.errors import InputError
from duplexeval.fdb.synth.parse import Part, Pause, SampleSpec
from duplexeval.fdb.tasks import task_of
from duplexeval.jsontypes import JsonObject
from duplexeval.tts import synthesize
from duplexeval.units import SAMPLE_RATE

Word = tuple[str, float, float]  # text, start s, end s


@dataclass
class Utterance:
    """Speech trimmed to its voiced extent; word times relative to its first sample."""

    text: str
    audio: np.ndarray
    words: list[Word]


def speak(text: str, voice: str, rate: int, pitch: int, where: str = "") -> Utterance:
    """Synthesize and trim to [first word start, last word end] on the 16 kHz grid."""
    try:
        sp = synthesize(text, voice=voice, rate=rate, pitch=pitch)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    if not sp.words:
        raise InputError(f"{where}: espeak-ng spoke no words for {text!r}")
    s0 = math.floor(sp.words[0].start_s * SAMPLE_RATE)
    s1 = min(math.ceil(sp.words[-1].end_s * SAMPLE_RATE), sp.audio.shape[0])
    off = s0 / SAMPLE_RATE
    return Utterance(text, sp.audio[s0:s1].copy(), [(w.text, w.start_s - off, w.end_s - off) for w in sp.words])


class Timeline:
    """Concatenates silences and utterances on the 16 kHz sample grid and keeps absolute word times."""

    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.n = 0
        self.words: list[Word] = []

    def silence(self, seconds: float) -> None:
        k = round(seconds * SAMPLE_RATE)
        self.chunks.append(np.zeros(k, dtype=np.float32))
        self.n += k

    def speech(self, utt: Utterance) -> list[Word]:
        t0 = self.n / SAMPLE_RATE
        placed = [(w, t0 + a, t0 + b) for w, a, b in utt.words]
        self.chunks.append(utt.audio)
        self.n += utt.audio.shape[0]
        self.words.extend(placed)
        return placed

    def audio(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.float32)


def round_s(x: float) -> float:
    """A time in seconds as written to the annotation files: rounded to the microsecond."""
    return round(float(x), 6)


def _transcription(words: list[Word]) -> list[JsonObject]:
    return [{"speaker": 0, "item": [{"text": w, "timestamp": [round_s(a), round_s(b)]} for w, a, b in words]}]


@dataclass
class RenderedSample:
    """One generated sample: its input audio, annotation object, transcription and extra WAVs."""

    subset: str
    id: str
    audio: np.ndarray
    annotation: list[JsonObject] | None  # the annotation file's JSON (None: the task has none)
    transcription: list[JsonObject]  # transcription.json, as written
    words: list[Word]
    extra_wavs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def T(self) -> float:
        return len(self.audio) / SAMPLE_RATE

    def timing(self) -> SampleTiming:
        """The sample's length and word times, without its audio."""
        return SampleTiming(self.subset, self.id, self.T, list(self.words))


@dataclass(frozen=True)
class SampleTiming:
    """A rendered sample's subset, id, length T (s) and absolute word times: what a task's files beside the
    samples are made from (`SynthRecipe.dataset_files`)."""

    subset: str
    id: str
    T: float
    words: list[Word]


def place_parts(parts: Sequence[Part], tl: Timeline, speak: Callable[[str], Utterance]) -> list[JsonObject]:
    """Speech parts and `{pause: s}` silences in order; returns the `[PAUSE]` items between speech (exact word
    times), as pause.json holds them."""
    pauses: list[JsonObject] = []
    last_end: float | None = None
    pending_pause = False
    for p in parts:
        if isinstance(p, Pause):
            tl.silence(p.seconds)
            pending_pause = True
            continue
        placed = tl.speech(speak(p))
        if pending_pause and last_end is not None:
            pauses.append({"text": "[PAUSE]", "timestamp": [round_s(last_end), round_s(placed[0][1])]})
        pending_pause = False
        last_end = placed[-1][2]
    return pauses


def render_sample(spec: SampleSpec, where: str = "") -> RenderedSample:
    """Build one sample's audio and annotations from its normalised spec (layouts in docs/synth.md): the lead
    silence, the task's recipe (`SynthRecipe.render`), the tail silence."""
    recipe = task_of(spec.subset).synth
    if recipe is None:
        raise InputError(f"{where}: the task of subset {spec.subset} cannot be synthesized")
    v = spec.voice
    tl = Timeline()
    tl.silence(spec.seconds("lead"))
    made = recipe.render(spec, tl, lambda text: speak(text, v.voice, v.rate, v.pitch, where=where))
    tl.silence(spec.seconds("tail"))
    return RenderedSample(
        subset=spec.subset,
        id=spec.id,
        audio=tl.audio(),
        annotation=made.annotation,
        transcription=_transcription(tl.words),
        words=list(tl.words),
        extra_wavs=dict(made.extra_wavs),
    )
