"""v1.5-shaped stimuli made offline with espeak-ng: a user turn, then each scenario's overlap event.

Per sample: the user asks something (user voice, full level); `gap` seconds after the question ends, while a
system would be answering, the overlap event starts:

- user_interruption: the user cuts in with a new request (user voice, full level);
- user_backchannel: a short backchannel ("uh-huh", "yeah", ...) in the user's voice;
- talking_to_other: an aside to another person, in a second voice, 6 dB lower;
- background_speech: a third voice (a TV, a radio), 14 dB lower, mixed under.

`clean_input.wav` is the same audio without the event (same length). `metadata.json` holds the question
(`context_text`), the event's text (`current_turn_text`) and the event's exact extent (`timestamps`: its first
word's start and last word's end from espeak-ng's own word events). Same seed, same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from duplexeval import tts
from duplexeval.audio import write_wav_pcm16
from duplexeval.fdb.tasks.overlap.annotation import CLEAN_INPUT_FILE, INPUT_FILE, METADATA_FILE
from duplexeval.fdb.tasks.overlap.scenarios import (
    BACKGROUND_SPEECH,
    SCENARIOS,
    SUBSET_ORDER,
    TALKING_TO_OTHER,
    USER_BACKCHANNEL,
    USER_INTERRUPTION,
)
from duplexeval.jsonio import make_output_dir, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE

DATASET_FILE = "dataset.json"
DATASET_KIND = "duplexeval.fdb.v15_synth"
LEAD_S = 0.3  # silence before the question
TAIL_S = 6.0  # silence after the event
GAP_RANGE_S = (2.0, 3.5)  # question end to event onset
USER_VOICE = ("en-us", 160, 50)
OTHER_VOICE = ("en-us+f3", 170, 60)
BACKGROUND_VOICE = ("en-gb+m3", 150, 40)
LEVEL_DB = {USER_INTERRUPTION: 0.0, USER_BACKCHANNEL: 0.0, TALKING_TO_OTHER: -6.0, BACKGROUND_SPEECH: -14.0}

QUESTIONS = (
    "What are some good places to visit in the city?",
    "Can you tell me how to make a simple tomato soup?",
    "How do I get better at running long distances?",
    "What should I pack for a weekend trip to the mountains?",
    "Could you explain how a heat pump works?",
    "What is a good way to start learning the piano?",
    "How can I keep my houseplants alive in winter?",
    "What are the rules of a basic chess opening?",
    "Can you recommend a few books about the ocean?",
    "How do I plan a small birthday party at home?",
)
EVENTS: dict[str, tuple[str, ...]] = {
    USER_INTERRUPTION: (
        "Oh, before I forget, could you also suggest some good restaurants nearby?",
        "Wait, actually, can you make it shorter please?",
        "Sorry to cut in, what about doing this on a budget?",
        "Hold on, how long would that take?",
        "Actually, let's talk about the weekend instead.",
    ),
    USER_BACKCHANNEL: ("uh-huh", "yeah", "right", "okay", "mm-hmm", "I see"),
    TALKING_TO_OTHER: (
        "Hold on honey, I will be right there.",
        "Can you close the door please?",
        "Just put it on the table, thanks.",
        "Yes, I will call you back in five minutes.",
        "No, the keys are in the kitchen.",
    ),
    BACKGROUND_SPEECH: (
        "And in other news tonight the city council approved the new budget for the coming year.",
        "Temperatures will drop sharply over the weekend with rain expected on Sunday morning.",
        "The home team scored twice in the second half to win the match at the final whistle.",
        "Stay tuned after the break for our interview with the author of the bestselling novel.",
    ),
}


@dataclass(frozen=True)
class StimulusMetadata:
    """A sample's metadata.json: the question, the overlap event's text and its exact [start, end] in seconds."""

    context_text: str
    current_turn_text: str
    timestamps: tuple[float, float]

    def to_json(self) -> JsonObject:
        return {"context_text": self.context_text, "current_turn_text": self.current_turn_text,
                "timestamps": list(self.timestamps)}


@dataclass(frozen=True)
class Stimulus:
    """One sample's two inputs (float32, 16 kHz, same length) and its metadata.json record."""

    subset: str
    id: str
    input: np.ndarray
    clean_input: np.ndarray
    metadata: StimulusMetadata


@dataclass(frozen=True)
class ScriptedOutputs:
    """A scripted system's answer to one stimulus: its policy, both outputs (float32, input length) and their exact
    transcripts (official output.json objects)."""

    policy: str
    output: np.ndarray
    clean_output: np.ndarray
    output_json: JsonObject
    clean_output_json: JsonObject


def _speak(text: str, voice: tuple[str, int, int]) -> tts.Speech:
    return tts.synthesize(text, voice=voice[0], rate=voice[1], pitch=voice[2])


def _voice(subset: str) -> tuple[str, int, int]:
    return {TALKING_TO_OTHER: OTHER_VOICE, BACKGROUND_SPEECH: BACKGROUND_VOICE}.get(subset, USER_VOICE)


def make_stimulus(subset: str, index: int, seed: int = 0) -> Stimulus:
    """Sample `index` of `subset`: texts and gap drawn from `numpy.random.default_rng([seed, subset#, index])`."""
    rng = np.random.default_rng([seed, SUBSET_ORDER.index(subset), index])
    question = QUESTIONS[int(rng.integers(len(QUESTIONS)))]
    event_text = EVENTS[subset][int(rng.integers(len(EVENTS[subset])))]
    gap = float(rng.uniform(*GAP_RANGE_S))
    q = _speak(question, USER_VOICE)
    ev = _speak(event_text, _voice(subset))
    q_at = int(round(LEAD_S * SAMPLE_RATE))
    q_end = q_at + q.audio.shape[0]
    ev_at = q_end + int(round(gap * SAMPLE_RATE))
    n = ev_at + ev.audio.shape[0] + int(round(TAIL_S * SAMPLE_RATE))
    clean = np.zeros(n, dtype=np.float32)
    clean[q_at:q_end] = q.audio
    noisy = clean.copy()
    noisy[ev_at:ev_at + ev.audio.shape[0]] += ev.audio * np.float32(10 ** (LEVEL_DB[subset] / 20))
    start = round(ev_at / SAMPLE_RATE + ev.words[0].start_s, 6)
    end = round(ev_at / SAMPLE_RATE + ev.words[-1].end_s, 6)
    return Stimulus(subset, str(index), noisy, clean, StimulusMetadata(question, event_text, (start, end)))


def write_set(out: str | os.PathLike[str], counts: dict[str, int], seed: int = 0, name: str = "fdb-v1.5-synth") -> Path:
    """Write `counts[subset]` samples per subset under `out/<subset>/<id>/` plus `dataset.json`; returns `out`."""
    root = make_output_dir(out, "v1.5 synth output folder")
    listing: list[dict[str, str]] = []
    for subset in SUBSET_ORDER:
        for i in range(int(counts.get(subset, 0))):
            st = make_stimulus(subset, i, seed)
            d = root / subset / st.id
            d.mkdir(parents=True, exist_ok=True)
            write_wav_pcm16(d / INPUT_FILE, st.input)
            write_wav_pcm16(d / CLEAN_INPUT_FILE, st.clean_input)
            write_json(d / METADATA_FILE, st.metadata.to_json())
            listing.append({"subset": subset, "id": st.id})
    write_json(root / DATASET_FILE, {"kind": DATASET_KIND, "name": name, "seed": seed,
                                     "espeak_ng": tts.espeak_version(),
                                     "declared": {s: int(counts.get(s, 0)) for s in SUBSET_ORDER if counts.get(s)},
                                     "samples": listing})
    return root


def full_size() -> dict[str, int]:
    """The published subset sizes (499 samples)."""
    return {s: SCENARIOS[s].declared for s in SUBSET_ORDER}


def small(n: int = 2, subsets: Sequence[str] = SUBSET_ORDER) -> dict[str, int]:
    """`n` samples of each subset."""
    return {s: n for s in subsets}


# ---------------------------------------------------------------------------------------------------------
# Scripted outputs: a known-answer "system" whose replies and transcripts are exact, for tests and benchmarks.

REPLIES = (
    "Sure. There are a few options you might like, and each of them is easy to reach by bus or on foot from the "
    "center.",
    "Of course. The first step is simple, and after that you can adjust it to your taste as you go along.",
    "Good question. Most people find it easiest to start slowly and build up over a few weeks of practice.",
)
RESPONSES = (
    "Oh, sure, let me answer that instead.",
    "Right, good point, here is a shorter version.",
    "Okay, I can help with that too.",
)
POLICIES = ("respond", "continue", "resume", "stop")


def _place(buf: np.ndarray, sp: tts.Speech, at_s: float, cut_s: float | None = None) -> list[tuple[str, float, float]]:
    """Add `sp` to `buf` from `at_s` (cut at `cut_s`, and at the buffer's end); the words that fit, in seconds."""
    a = int(round(at_s * SAMPLE_RATE))
    stop = buf.shape[0] if cut_s is None else min(buf.shape[0], int(round(cut_s * SAMPLE_RATE)))
    if a >= stop:
        return []
    n = min(sp.audio.shape[0], stop - a)
    buf[a:a + n] += sp.audio[:n]
    end_s = (a + n) / SAMPLE_RATE
    return [(w.text, round(at_s + w.start_s, 6), round(at_s + w.end_s, 6)) for w in sp.words
            if at_s + w.end_s <= end_s + 1e-9]


def transcript(words: Sequence[tuple[str, float, float]]) -> JsonObject:
    """An official-shape transcript object from exact word times."""
    ws = sorted(words, key=lambda w: w[1])
    return {"text": " ".join(w[0] for w in ws), "chunks": [{"text": w[0], "timestamp": [w[1], w[2]]} for w in ws]}


def input_transcripts(st: Stimulus) -> tuple[JsonObject, JsonObject]:
    """Exact transcripts of input.wav and clean_input.wav (question words; plus the event's in input.wav)."""
    q = _speak(st.metadata.context_text, USER_VOICE)
    ev = _speak(st.metadata.current_turn_text, _voice(st.subset))
    q_words = [(w.text, round(LEAD_S + w.start_s, 6), round(LEAD_S + w.end_s, 6)) for w in q.words]
    t0 = st.metadata.timestamps[0] - ev.words[0].start_s
    ev_words = [(w.text, round(t0 + w.start_s, 6), round(t0 + w.end_s, 6)) for w in ev.words]
    return transcript(q_words + ev_words), transcript(q_words)


def scripted_outputs(st: Stimulus, index: int, seed: int = 0) -> ScriptedOutputs:
    """A scripted system's `output.wav`/`clean_output.wav` (float32, input length) and their exact transcripts.

    The reply starts shortly after the question; on the overlap it then responds, continues, resumes after
    the event or stops (one policy per sample, seeded), so every official and unified rule meets each case.
    """
    rng = np.random.default_rng([seed, 7, SUBSET_ORDER.index(st.subset), index])
    policy = POLICIES[int(rng.integers(len(POLICIES)))]
    q_end = LEAD_S + _speak(st.metadata.context_text, USER_VOICE).duration_s
    start = q_end + float(rng.uniform(0.4, 0.9))
    reply = _speak(REPLIES[int(rng.integers(len(REPLIES)))], ("en-us+m3", 175, 45))
    on, off = (float(x) for x in st.metadata.timestamps)
    n = st.input.shape[0]
    clean = np.zeros(st.clean_input.shape[0], dtype=np.float32)
    clean_words = _place(clean, reply, start)
    out = np.zeros(n, dtype=np.float32)
    if policy == "continue":
        words = _place(out, reply, start)
    else:
        cut = on + float(rng.uniform(0.2, 0.6))
        words = _place(out, reply, start, cut)
        after = off + float(rng.uniform(0.3, 1.0))
        if policy == "respond":
            words += _place(out, _speak(RESPONSES[int(rng.integers(len(RESPONSES)))], ("en-us+m3", 175, 45)), after)
        elif policy == "resume":
            words += _place(out, reply, after)
    if index % 2 == 1:  # a low noise floor (about -66 dBFS) on odd samples; even ones keep digital silence
        noise = np.random.default_rng([seed, 8, index])
        out += np.asarray(noise.normal(0.0, 5e-4, n), dtype=np.float32)
        clean += np.asarray(noise.normal(0.0, 5e-4, clean.shape[0]), dtype=np.float32)
    return ScriptedOutputs(policy, out, clean, transcript(words), transcript(clean_words))
