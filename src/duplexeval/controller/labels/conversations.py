"""Two-channel test conversations made with espeak-ng: shifts, pauses inside turns, backchannels both ways and
barge-ins, at varied voices and rates, with exact word times (``duplexeval.tts``). Deterministic for a seed.

Each exchange: a user turn (one or two parts; between them a pause, sometimes with an agent backchannel in it,
sometimes a backchannel over the first part), a gap, then an agent reply that either ends normally, carries a
user backchannel, or is cut off by a user barge-in (the agent stops 0.35 s after the user starts, and the
interrupting utterance is the next user turn).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf  # writes stereo WAVs (audio.py writes mono PCM16 only); reads no file

from duplexeval.audio import to_pcm16
from duplexeval.controller.labels.derive import Activity
from duplexeval.jsonio import atomic_write_bytes, atomic_write_text, dumps_line
from duplexeval.jsontypes import JsonObject
from duplexeval.tts import espeak_version, synthesize
from duplexeval.units import SAMPLE_RATE as SR

VOICES = ("en-us", "en-gb", "en-us+f3", "en-us+m3", "en-gb+f2", "en-us+f4")
USER_LINES = (
    ("So I was thinking about the trip we planned", "maybe we should leave on Friday instead"),
    ("My sister called me yesterday", "and she wants to visit us next week"),
    ("I tried the new bakery on the corner", "their bread was really good"),
    ("Could you remind me what time the meeting is", "I forgot to write it down"),
    ("The car has been making a strange noise", "especially when I turn left"),
    ("I finally finished reading that book", "the ending surprised me a lot"),
    ("We need to buy a present for Anna", "her birthday is on Sunday"),
    ("I was looking at the weather forecast", "it says it will rain all weekend"),
)
AGENT_LINES = (
    "That sounds like a good idea, Friday would give us more time on the road.",
    "Oh nice, we can make up the guest room for her then.",
    "I have heard good things about that place, we should go together.",
    "The meeting starts at ten in the small room on the second floor.",
    "You should take it to the garage before it gets any worse.",
    "I am glad you liked it, I will borrow it when you are done.",
    "How about a scarf or maybe a nice set of tea cups for her kitchen.",
    "Then we could stay in and watch a film or play a board game.",
)
BACKCHANNELS = ("yeah", "mhm", "right", "okay", "uh huh", "I see")


@dataclass(frozen=True)
class ScriptLine:
    """One placed utterance (kept in the manifest as ``extra_script``): channel, kind, text, start, voice, rate and
    where it was cut (None: spoken whole)."""

    who: str
    kind: str
    text: str
    start_s: float
    voice: str
    rate: int
    cut_s: float | None

    def to_json(self) -> JsonObject:
        return {"who": self.who, "kind": self.kind, "text": self.text, "start_s": self.start_s, "voice": self.voice,
                "rate": self.rate, "cut_s": self.cut_s}  # fmt: skip


@dataclass
class SynthConversation:
    """A made conversation: both channels' audio and words, and the script that made it (for the record)."""

    id: str
    user_audio: np.ndarray
    agent_audio: np.ndarray
    user_words: list[tuple[str, float, float]]
    agent_words: list[tuple[str, float, float]]
    script: list[ScriptLine] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return self.user_audio.size / SR

    def activities(self) -> tuple[Activity, Activity]:
        return Activity.from_words(self.user_words), Activity.from_words(self.agent_words)


class _Timeline:
    def __init__(self) -> None:
        self.chunks: dict[str, list[tuple[int, np.ndarray]]] = {"user": [], "agent": []}
        self.words: dict[str, list[tuple[str, float, float]]] = {"user": [], "agent": []}
        self.script: list[ScriptLine] = []

    def place(self, who: str, text: str, start_s: float, voice: str, rate: int, kind: str,
              cut_s: float | None = None) -> tuple[float, float]:
        """Speak text on a channel from start_s (cut at cut_s if given); returns (first word start, last word end)."""
        sp = synthesize(text, voice=voice, rate=rate)
        audio = sp.audio
        words = [(w.text, round(start_s + w.start_s, 6), round(start_s + w.end_s, 6)) for w in sp.words]
        if cut_s is not None:
            n = max(0, int(round((cut_s - start_s) * SR)))
            audio = audio[:n].copy()
            fade = min(160, audio.size)  # 10 ms fade-out: no click at the cut
            if fade:
                audio[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
            words = [(t, a, min(b, round(cut_s, 6))) for t, a, b in words if a < cut_s]
        self.chunks[who].append((int(round(start_s * SR)), audio))
        self.words[who].extend(words)
        self.script.append(ScriptLine(who, kind, text, round(start_s, 6), voice, rate,
                                      None if cut_s is None else round(cut_s, 6)))  # fmt: skip
        return words[0][1], words[-1][2]

    def render(self, tail_s: float) -> tuple[np.ndarray, np.ndarray]:
        end = max((s + a.size for ch in self.chunks.values() for s, a in ch), default=0) + int(tail_s * SR)
        out = {}
        for who, ch in self.chunks.items():
            buf = np.zeros(end, dtype=np.float32)
            for s, a in ch:
                buf[s : s + a.size] += a
            out[who] = np.clip(buf, -1.0, 1.0)
        return out["user"], out["agent"]


def make_conversation(index: int, seed: int = 0, exchanges: int = 4) -> SynthConversation:
    """Conversation number `index` of a seeded set (voices, rates, gaps, pauses and event types all vary)."""
    rng = np.random.default_rng([seed, index])
    uv, av = (str(v) for v in rng.choice(VOICES, size=2, replace=False))
    ur, ar = int(rng.integers(140, 200)), int(rng.integers(140, 200))
    tl = _Timeline()
    t = 0.5
    pending_user_start: float | None = None  # a barge-in already placed the next user turn's first part
    for k in range(exchanges):
        first, second = USER_LINES[(index * 3 + k) % len(USER_LINES)]
        kind = ["shift", "pause_bc", "overlap_bc", "barge", "user_bc"][int(rng.integers(0, 5))]
        if pending_user_start is None:
            _, e1 = tl.place("user", first, t, uv, ur, "user_turn")
            s1 = t
        else:
            s1, e1 = pending_user_start, tl.words["user"][-1][2]
        if kind == "overlap_bc":
            tl.place("agent", str(rng.choice(BACKCHANNELS)), s1 + 0.45 * (e1 - s1), av, ar, "backchannel")
        pause = float(rng.uniform(0.5, 1.0))
        if kind in ("pause_bc", "shift", "overlap_bc") or k % 2 == 0:
            if kind == "pause_bc":
                tl.place("agent", str(rng.choice(BACKCHANNELS[:4])), e1 + 0.12, av, ar, "backchannel")
            _, e1 = tl.place("user", second, e1 + pause, uv, ur, "user_turn")
        gap = float(rng.uniform(0.25, 0.7))
        a0 = e1 + gap
        line = AGENT_LINES[(index * 5 + k) % len(AGENT_LINES)]
        if kind == "barge" and k < exchanges - 1:
            dur = synthesize(line, voice=av, rate=ar).duration_s
            onset = a0 + 0.5 * dur
            tl.place("agent", line, a0, av, ar, "agent_turn", cut_s=onset + 0.35)
            nxt = USER_LINES[(index * 3 + k + 1) % len(USER_LINES)][0]
            tl.place("user", nxt, onset, uv, ur, "barge_in")
            pending_user_start = onset
            continue
        _, ae = tl.place("agent", line, a0, av, ar, "agent_turn")
        if kind == "user_bc":
            tl.place("user", str(rng.choice(BACKCHANNELS[:4])), a0 + 0.4 * (ae - a0), uv, ur, "backchannel")
        pending_user_start = None
        t = ae + float(rng.uniform(0.3, 0.9))
    user, agent = tl.render(tail_s=1.0)
    return SynthConversation(f"conv{index:03d}", user, agent, sorted(tl.words["user"], key=lambda w: w[1]),
                             sorted(tl.words["agent"], key=lambda w: w[1]), tl.script)  # fmt: skip


def write_conversations(out: str | Path, n: int, seed: int = 0, exchanges: int = 4) -> Path:
    """Write n conversations as stereo 16 kHz PCM16 WAVs (channel 0 user, 1 agent) and manifest.jsonl with
    both channels' words; returns the manifest path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    ver = espeak_version()
    for i in range(n):
        c = make_conversation(i, seed, exchanges)

        buf = io.BytesIO()
        sf.write(buf, np.stack([to_pcm16(c.user_audio), to_pcm16(c.agent_audio)], axis=1), SR, subtype="PCM_16",
                 format="WAV")
        atomic_write_bytes(out / f"{c.id}.wav", buf.getvalue())
        lines.append(dumps_line({
            "id": c.id, "audio": f"{c.id}.wav", "duration_s": c.duration_s,
            "user": {"words": [list(w) for w in c.user_words]},
            "agent": {"words": [list(w) for w in c.agent_words]},
            "extra_script": [line.to_json() for line in c.script], "espeak": ver,
        }))  # fmt: skip
    path = out / "manifest.jsonl"
    atomic_write_text(path, "".join(lines))
    return path
