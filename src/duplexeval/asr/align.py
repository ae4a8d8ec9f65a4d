"""Pocketsphinx forced alignment of known words: exact-enough word times for words another model heard.

Each written token may have several spoken readings (numbers: cardinal, year, digit by digit);
they become alternatives of one JSGF grammar, so the aligner picks the reading that fits the audio.
Words missing from the CMU dictionary are spelled from dictionary pieces when possible; a token
that still cannot be pronounced, or that the aligner cannot reach, is reported as unaligned (None).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from duplexeval.audio import to_pcm16
from duplexeval.units import SAMPLE_RATE

FRAME_S = 0.01  # pocketsphinx: 100 frames per second
# A frame stands for the middle of its 25.6 ms analysis window: frame i -> i * 10 ms + 12.8 ms.
FRAME_CENTER_S = 0.0128
# Dither amplitude (int16 LSB): exact digital silence breaks pocketsphinx's features, and
# alignment then stops early; a fixed-seed whisper of noise keeps it deterministic.
DITHER_LSB = 3.0
# Some clips (abrupt cuts between digital silences) defeat the aligner at 3 LSB and align at
# 30 LSB (-61 dBFS); 3 LSB is more precise on the rest, so it is tried first.
FORCED_DITHERS: tuple[float, ...] = (3.0, 30.0)
HINT_MARGIN_S = 0.4  # Whisper's word times in a region are off by up to ~0.25 s (benchmark)
EDGE_S = 0.25  # silence added around each clip before alignment
_FILLERS = re.compile(r"^(<s>|</s>|<sil>|\[.*\])$")
_GRAMMAR_WORD = re.compile(r"[a-z][a-z']*")
_SCALE = {"hundred", "thousand", "million", "billion", "trillion"}

Reading = list[str]


def dithered_pcm(clip: np.ndarray, lsb: float = 0.0) -> bytes:
    """Float clip to int16 bytes with a deterministic dither of `lsb` (fresh default_rng(0) per clip)."""
    lsb = lsb or DITHER_LSB
    noise = np.random.default_rng(0).standard_normal(clip.shape[0]) * (lsb / 32768.0)
    return to_pcm16(np.asarray(clip, np.float64) + noise).tobytes()


class Aligner:
    """A pocketsphinx decoder (the en-us model in the wheel) used only for grammar-forced alignment."""

    def __init__(self) -> None:
        self._dec: Any = None
        self._known: dict[str, bool] = {}
        self._n = 0
        self.reset()

    def reset(self) -> None:
        """A fresh decoder (~0.3 s): pocketsphinx carries state from one utterance to the next, so
        times would depend on which samples a process saw before. The stage resets per sample."""
        import pocketsphinx

        if self._dec is not None and self._n == 0:
            return  # still fresh
        self._dec = pocketsphinx.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL", lm=None)  # grammars only
        self._known = {}
        self._n = 0

    # -- dictionary ---------------------------------------------------------------------------
    def _in_dict(self, word: str) -> bool:
        if word not in self._known:
            self._known[word] = self._dec.lookup_word(word) is not None
        return self._known[word]

    def pronounceable(self, word: str) -> bool:
        """True if the word is in the dictionary or could be added from dictionary pieces."""
        if not _GRAMMAR_WORD.fullmatch(word):
            return False
        if self._in_dict(word):
            return True
        pieces = _decompose(word, self._in_dict)
        phones = " ".join(self._dec.lookup_word(p) for p in pieces) if pieces else letter_phones(word)
        if not phones:
            return False
        self._dec.add_word(word, phones, False)
        self._known[word] = True
        return True

    def usable_readings(self, readings: list[Reading]) -> list[Reading]:
        """The readings whose every word can be pronounced."""
        return [r for r in readings if r and all(self.pronounceable(w) for w in r)]

    # -- alignment ----------------------------------------------------------------------------
    def align(self, clip: np.ndarray, tokens: list[list[Reading]],
              hints: list[tuple[float, float]] | None = None) -> list[tuple[float, float] | None]:
        """Times (seconds from the clip start) of each token, None where it could not be aligned.

        Every pronounceable token is forced in order over the whole clip. When the aligner cannot
        reach the end (a word Whisper heard that is not in the audio, a number read another way),
        the tokens are split in two and each half is aligned in its own window, found from the
        `hints` (Whisper's times) widened by HINT_MARGIN_S, down to single words; without hints a
        last pass makes every token optional. Spans that overlap an earlier one are dropped.
        """
        out: list[tuple[float, float] | None] = [None] * len(tokens)
        usable = [self.usable_readings(t) for t in tokens]
        todo = [i for i, u in enumerate(usable) if u]
        if not todo or clip.shape[0] < 1600:
            return out
        clip = np.asarray(clip, np.float32)
        dur = clip.shape[0] / SAMPLE_RATE
        if hints is None:
            toks = [usable[i] for i in todo]
            forced = self._forced(clip, toks)
            spans: list[tuple[float, float] | None] = (list(forced) if forced is not None
                                                       else self._window(clip, toks, optional=True))
            for i, found in zip(todo, spans):
                out[i] = found
        else:
            self._split(clip, usable, hints, todo, 0.0, dur, out)
        prev_end = 0.0
        for i in range(len(out)):
            sp = out[i]
            if sp is None:
                continue
            if sp[0] < prev_end - 1e-9:
                out[i] = None  # out of order: one of the two is wrong, keep the earlier
                continue
            prev_end = sp[1]
        return out

    def _split(self, clip: np.ndarray, usable: list[list[Reading]], hints: list[tuple[float, float]],
               idx: list[int], a: float, b: float, out: list[tuple[float, float] | None]) -> None:
        """Align tokens `idx` inside [a, b] seconds of the clip; halve the problem when it fails."""
        lo, hi = int(round(a * SAMPLE_RATE)), int(round(b * SAMPLE_RATE))
        if hi - lo >= 1600:
            spans = self._forced(clip[lo:hi], [usable[i] for i in idx])
            if spans is not None:
                for i, sp in zip(idx, spans):
                    out[i] = (a + sp[0], a + sp[1])
                return
        if len(idx) == 1:
            return
        mid = len(idx) // 2
        left, right = idx[:mid], idx[mid:]
        b_left = min(b, max(a, hints[left[-1]][1]) + HINT_MARGIN_S)
        a_right = max(a, min(b, hints[right[0]][0]) - HINT_MARGIN_S)
        self._split(clip, usable, hints, left, a, b_left, out)
        self._split(clip, usable, hints, right, a_right, b, out)

    def _forced(self, clip: np.ndarray, tokens: list[list[Reading]]) -> list[tuple[float, float]] | None:
        """Every token forced in order (the dither attempts in turn); None if no attempt reaches the end."""
        for dither in FORCED_DITHERS:
            spans = self._window(clip, tokens, optional=False, dither=dither)
            found = [sp for sp in spans if sp is not None]
            if len(found) == len(spans):
                return found
        return None

    def _window(self, clip: np.ndarray, tokens: list[list[Reading]], optional: bool,
                dither: float = DITHER_LSB) -> list[tuple[float, float] | None]:
        """One pass over a clip with EDGE_S of silence added on both sides; spans in clip seconds."""
        # The aligner needs silence to start and end in; a clip cut at R may begin right at a
        # word. A word is never placed inside the added silence: it is held at the clip edge.
        edge = np.zeros(int(EDGE_S * SAMPLE_RATE), np.float32)
        spans = self._decode(np.concatenate([edge, clip, edge]), tokens, optional, dither)
        dur = clip.shape[0] / SAMPLE_RATE
        out: list[tuple[float, float] | None] = []
        for sp in spans:
            if sp is None:
                out.append(None)
                continue
            s = min(max(sp[0] - EDGE_S, 0.0), dur)
            out.append((s, min(max(sp[1] - EDGE_S, s), dur)))
        return out

    def _decode(self, clip: np.ndarray, tokens: list[list[Reading]], optional: bool,
                dither: float = DITHER_LSB) -> list[tuple[float, float] | None]:
        """One grammar pass; the span of each token found (None where not found)."""
        self._n += 1
        name = f"a{self._n}"
        self._dec.add_jsgf_string(name, _grammar(tokens, optional))
        self._dec.activate_search(name)
        if self._n > 1:
            self._dec.remove_search(f"a{self._n - 1}")  # the previous grammar, no longer active
        self._dec.start_utt()
        self._dec.process_raw(dithered_pcm(clip, dither), full_utt=True)
        self._dec.end_utt()
        seg = [(re.sub(r"\(\d+\)$", "", g.word), g.start_frame, g.end_frame) for g in (self._dec.seg() or [])]
        words = [(w, s, e) for w, s, e in seg if not _FILLERS.match(w)]
        dur = clip.shape[0] / SAMPLE_RATE
        spans: list[tuple[float, float] | None] = []
        p = 0
        for readings in tokens:
            hit = None
            for r in readings:
                q = _match(r, words, p)
                if q is not None:
                    hit = (p, q)
                    break
            if hit is None:
                spans.append(None)
                continue
            a, b = hit
            start = min(dur, words[a][1] * FRAME_S + FRAME_CENTER_S)
            end = min(dur, (words[b - 1][2] + 1) * FRAME_S + FRAME_CENTER_S)
            spans.append((start, max(start, end)))
            p = b
        return spans


def _match(reading: Reading, words: list[tuple[str, int, int]], p: int) -> int | None:
    """Index after `reading` if the decoded words from p spell it (an optional 'and' after a scale word)."""
    q = p
    for j, w in enumerate(reading):
        if q < len(words) and words[q][0] == "and" and j > 0 and reading[j - 1] in _SCALE and w != "and":
            q += 1
        if q >= len(words) or words[q][0] != w:
            return None
        q += 1
    return q


def _quote(w: str) -> str:
    return w  # only [a-z'] words reach the grammar (see pronounceable)


def _reading_jsgf(r: Reading) -> str:
    parts: list[str] = []
    for j, w in enumerate(r):
        if j > 0 and r[j - 1] in _SCALE and w != "and":
            parts.append("[ and ]")
        parts.append(_quote(w))
    return " ".join(parts)


def _grammar(tokens: list[list[Reading]], optional: bool = False) -> str:
    """A JSGF grammar: the tokens in order, each a choice of its readings (each optional if asked)."""
    o, c = ("[ ", " ]") if optional else ("( ", " )")
    body = " ".join(o + "( " + " | ".join(_reading_jsgf(r) for r in t) + " )" + c for t in tokens)
    return f"#JSGF V1.0;\ngrammar align;\npublic <utt> = {body} ;\n"


def _decompose(word: str, in_dict: Callable[[str], bool]) -> list[str] | None:
    """Split an unknown word into the fewest dictionary words of >= 2 letters ("meetingnoter"), or None."""
    w = word.replace("'", "")
    n = len(w)
    if n < 4 or n > 40 or not w.isalpha():
        return None
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for i in range(n):
        head = best[i]
        if head is None:
            continue
        for j in range(i + 2, n + 1):
            piece = w[i:j]
            if in_dict(piece):
                cand = [*head, piece]
                known = best[j]
                if known is None or len(cand) < len(known):
                    best[j] = cand
    return best[n]


# Crude letter-to-sound rules for words neither in the dictionary nor made of dictionary words.
# The phones only need to be close enough that the aligner gives the word its own stretch of
# audio instead of stretching its neighbours over it.
_DIGRAPHS = {
    "tch": "CH", "sch": "S K", "igh": "AY",
    "th": "TH", "sh": "SH", "ch": "CH", "ph": "F", "ng": "NG", "ck": "K", "qu": "K W", "wh": "W",
    "ee": "IY", "ea": "IY", "oo": "UW", "ou": "AW", "ow": "OW", "ai": "EY", "ay": "EY", "oi": "OY",
    "oy": "OY", "au": "AO", "aw": "AO", "ie": "IY", "ey": "IY", "er": "ER", "ir": "ER", "ur": "ER",
    "ar": "AA R", "or": "AO R", "gh": "", "kn": "N", "wr": "R",
}
_LETTERS = {
    "a": "AE", "b": "B", "c": "K", "d": "D", "e": "EH", "f": "F", "g": "G", "h": "HH", "i": "IH",
    "j": "JH", "k": "K", "l": "L", "m": "M", "n": "N", "o": "AA", "p": "P", "q": "K", "r": "R",
    "s": "S", "t": "T", "u": "AH", "v": "V", "w": "W", "x": "K S", "y": "IY", "z": "Z",
}


def letter_phones(word: str) -> str | None:
    """CMU phones for an unknown lower-case word by simple spelling rules, or None if it has no letters."""
    w = re.sub(r"[^a-z]", "", word)
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]  # silent final e
    phones: list[str] = []
    i = 0
    while i < len(w):
        for k in (3, 2):
            if w[i : i + k] in _DIGRAPHS:
                if _DIGRAPHS[w[i : i + k]]:
                    phones.append(_DIGRAPHS[w[i : i + k]])
                i += k
                break
        else:
            if not phones or phones[-1] != _LETTERS[w[i]]:  # doubled consonants are one sound
                phones.append(_LETTERS[w[i]])
            i += 1
    return " ".join(phones) or None
