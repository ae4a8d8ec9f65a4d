"""Test and demo speech: espeak-ng (from the `espeakng-loader` wheel, through ctypes) with exact word times.

espeak-ng reports a WORD event (with the exact output sample) for every word it speaks, so the word
times of the audio we make are known exactly instead of estimated by an aligner. We drive the C
library directly because the wheel ships only the library and its data, no Python API.

Word-time rule (docs/synth.md): a word's *span* runs from its WORD event's sample to the next WORD or
clause-END event (or the end of the audio). espeak writes digital silence (exact zeros) in pauses and
before stop bursts, so the word's times are the first and last non-zero samples inside its span (its
true voiced extent). Input tokens that espeak speaks without an event of their own (it merges "I am"
into one WORD event) share the span of the token before them, split in proportion to their
character counts; such words carry ``exact=False``.
"""

from __future__ import annotations

import _ctypes
import atexit
import ctypes
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field

import numpy as np

from duplexeval.audio import from_pcm16, resample
from duplexeval.errors import InputError
from duplexeval.units import SAMPLE_RATE

_ESPEAK_RATE = 22050

# espeak_AUDIO_OUTPUT / espeak_EVENT_TYPE / espeak_PARAMETER / flags from speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_EV_LIST_TERMINATED, _EV_WORD, _EV_END = 0, 1, 5
_P_RATE, _P_VOLUME, _P_PITCH, _P_RANGE, _P_PUNCTUATION, _P_CAPITALS, _P_WORDGAP = 1, 2, 3, 4, 5, 6, 7
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_RAND_SEED = 1

_WORD_CHARS = re.compile(r"[^\W_](?:.*[^\W_])?", re.DOTALL)


class _Event(ctypes.Structure):
    """espeak_EVENT on x86_64/aarch64 (40 bytes); `sample` is the exact output sample of the event."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based, in characters
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),  # ms
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),
    ]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@dataclass(frozen=True)
class SpokenWord:
    """One spoken word of the input text with its true voiced extent in seconds (see module docstring)."""

    text: str
    start_s: float
    end_s: float
    exact: bool = True


@dataclass
class Speech:
    """Synthesized speech: float32 mono audio at `sample_rate` and its words with exact times."""

    audio: np.ndarray
    words: list[SpokenWord]
    sample_rate: int = SAMPLE_RATE
    voice: str = ""
    rate: int = 0
    pitch: int = 0
    params: dict[str, object] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return len(self.audio) / self.sample_rate


class _Engine:
    """espeak-ng loaded fresh for every call, so each call starts from the same state.

    libespeak-ng keeps static synthesis state (pitch flutter phase) across calls and across
    espeak_Terminate/espeak_Initialize, so two identical calls in one process differ by a few samples;
    and it seeds its noise generator from the clock (fixed here with espeak_ng_SetRandSeed).
    We therefore dlopen a private copy of the library per call and dlclose it afterwards, and check
    in /proc/self/maps that it really was unloaded. Callers hold `_LOCK`.
    """

    def __init__(self) -> None:
        import espeakng_loader

        self.data_path = espeakng_loader.get_data_path().encode()
        self.src_path = espeakng_loader.get_library_path()
        tmp = tempfile.mkdtemp(prefix="duplexeval-espeak-")
        owner = os.getpid()

        def cleanup() -> None:
            if os.getpid() == owner:  # not from forked children
                shutil.rmtree(tmp, True)

        atexit.register(cleanup)
        self.lib_path = os.path.join(tmp, "libespeak-ng-duplexeval.so")
        shutil.copyfile(self.src_path, self.lib_path)
        self._pcm: list[np.ndarray] = []
        self._events: list[tuple[int, int, int]] = []  # (type, text_position, sample)
        self._cb = _CALLBACK(self._on_synth)  # keep a reference: the C side holds only the pointer
        lib = self._load()
        try:
            self.version = (lib.espeak_Info(None) or b"").decode()
        finally:
            self._unload(lib)

    def _load(self) -> ctypes.CDLL:
        if not os.path.exists(self.lib_path):  # e.g. a temp-folder cleaner removed our copy
            os.makedirs(os.path.dirname(self.lib_path), exist_ok=True)
            shutil.copyfile(self.src_path, self.lib_path)
        lib = ctypes.CDLL(self.lib_path)
        lib.espeak_Info.restype = ctypes.c_char_p
        lib.espeak_Info.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        sr = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, self.data_path, 0)
        if sr != _ESPEAK_RATE:
            self._unload(lib, terminate=False)
            raise RuntimeError(f"espeak-ng initialisation failed or gave an unexpected rate ({sr})")
        lib.espeak_SetSynthCallback(self._cb)
        # Variant voices (breath, e.g. en-us+f3) draw noise from espeak's RNG, which initialisation
        # seeds from the clock; a fixed seed makes their output reproducible.
        lib.espeak_ng_SetRandSeed(ctypes.c_long(_RAND_SEED))
        return lib

    def _unload(self, lib: ctypes.CDLL, terminate: bool = True) -> None:
        if terminate:
            lib.espeak_Terminate()
        _ctypes.dlclose(lib._handle)
        maps = "/proc/self/maps"
        if os.path.exists(maps):
            with open(maps, encoding="utf-8", errors="replace") as fh:
                if self.lib_path in fh.read():
                    raise RuntimeError("libespeak-ng could not be unloaded; its output would not be reproducible")

    def _on_synth(self, wav: ctypes._Pointer[ctypes.c_short], n: int, events: ctypes._Pointer[_Event]) -> int:
        """The ctypes callback: collect the audio block and the WORD/END events of one synthesis call."""
        if n > 0 and wav:
            self._pcm.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        i = 0
        while events[i].type != _EV_LIST_TERMINATED:
            ev = events[i]
            if ev.type in (_EV_WORD, _EV_END):
                self._events.append((int(ev.type), int(ev.text_position), int(ev.sample)))
            i += 1
        return 0

    def run(self, text: str, voice: str, rate: int, pitch: int) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """int16 audio at 22050 Hz and the WORD/END events, from a freshly loaded library."""
        lib = self._load()
        try:
            name = _VOICE_ALIASES.get(voice.lower().split("+")[0], voice.split("+")[0])
            name += voice[len(voice.split("+")[0]) :]
            if lib.espeak_SetVoiceByName(name.encode()) != 0:
                raise InputError(f"espeak-ng has no voice {voice!r} (try en-us, en-gb, en-us+f3, en-gb-x-rp)")
            for param, value in (
                (_P_RATE, rate), (_P_VOLUME, 100), (_P_PITCH, pitch), (_P_RANGE, 50),
                (_P_PUNCTUATION, 0), (_P_CAPITALS, 0), (_P_WORDGAP, 0),
            ):  # fmt: skip
                lib.espeak_SetParameter(param, int(value), 0)
            self._pcm, self._events = [], []
            buf = ctypes.create_string_buffer(text.encode("utf-8"))
            err = lib.espeak_Synth(buf, len(buf), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            lib.espeak_Synchronize()
            if err != 0:
                raise RuntimeError(f"espeak_Synth failed with code {err}")
            pcm = np.concatenate(self._pcm) if self._pcm else np.zeros(0, dtype=np.int16)
            events = self._events
        finally:
            self._pcm, self._events = [], []
            self._unload(lib)
        return pcm.astype(np.int16, copy=False), events


# espeak-ng names its British English voice "en"; accept the usual tag too.
_VOICE_ALIASES = {"en-gb": "en"}


_LOCK = threading.Lock()
_ENGINE: _Engine | None = None


def _engine() -> _Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = _Engine()
    return _ENGINE


def espeak_version() -> str:
    """The version of the loaded libespeak-ng (e.g. '1.52.0'); recorded with every generated set."""
    with _LOCK:
        return _engine().version


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """Whitespace tokens as (word, start char, end char), trimmed of surrounding punctuation; pure punctuation
    dropped."""
    out = []
    for m in re.finditer(r"\S+", text):
        w = _WORD_CHARS.search(m.group())
        if w:
            out.append((w.group(), m.start(), m.end()))
    return out


def word_times(
    text: str, pcm: np.ndarray, events: list[tuple[int, int, int]], sr: int = _ESPEAK_RATE
) -> list[SpokenWord]:
    """Map WORD events to the text's tokens by text_position and apply the word-time rule (module docstring)."""
    toks = _tokens(text)
    n = int(pcm.shape[0])
    voiced = np.flatnonzero(pcm != 0)
    boundaries = sorted({min(max(s, 0), n) for _, _, s in events} | {n})
    # Events that start a token: the first WORD event whose (0-based) position lies in the token.
    tok_events: dict[int, list[int]] = {}
    for etype, pos, sample in events:
        if etype != _EV_WORD:
            continue
        p = pos - 1
        for i, (_, a, b) in enumerate(toks):
            if a <= p < b:
                tok_events.setdefault(i, []).append(min(max(sample, 0), n))
                break
    # Group tokens without an event of their own with the token before them (or after, at the start).
    groups: list[list[int]] = []
    for i in range(len(toks)):
        if i in tok_events or not groups:
            groups.append([i])
        else:
            groups[-1].append(i)
    if len(groups) > 1 and not any(i in tok_events for i in groups[0]):
        groups[1] = groups[0] + groups[1]
        del groups[0]
    words: list[SpokenWord] = []
    for g in groups:
        samples = [s for i in g for s in tok_events.get(i, [])]
        if not samples:  # no event at all (espeak said nothing for this text)
            continue
        lo = min(samples)
        hi = next((b for b in boundaries if b > max(samples)), n)
        inside = voiced[(voiced >= lo) & (voiced < hi)]
        v0, v1 = (int(inside[0]), int(inside[-1]) + 1) if inside.size else (lo, hi)
        if len(g) == 1:
            words.append(SpokenWord(toks[g[0]][0], _sec(v0, sr), _sec(v1, sr), True))
            continue
        weights = np.array([len(toks[i][0]) for i in g], dtype=np.float64)
        edges = v0 + (v1 - v0) * np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
        for k, i in enumerate(g):
            words.append(SpokenWord(toks[i][0], _sec(edges[k], sr), _sec(edges[k + 1], sr), False))
    return words


def _sec(sample: float, sr: int) -> float:
    return round(float(sample) / sr, 6)


def synthesize(text: str, voice: str = "en-us", rate: int = 160, pitch: int = 50) -> Speech:
    """Speak `text` with espeak-ng; float32 16 kHz mono audio (soxr from 22050 Hz) and exact word times."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("synthesize: text is empty")
    if not 80 <= int(rate) <= 450:
        raise InputError(f"synthesize: rate {rate} words/min is outside espeak-ng's 80..450")
    if not 0 <= int(pitch) <= 100:
        raise InputError(f"synthesize: pitch {pitch} is outside 0..100")
    with _LOCK:
        eng = _engine()
        pcm, events = eng.run(text, voice, int(rate), int(pitch))
    words = word_times(text, pcm, events)
    audio = resample(from_pcm16(pcm), _ESPEAK_RATE, SAMPLE_RATE)
    params = {"voice": voice, "rate": int(rate), "pitch": int(pitch), "volume": 100, "range": 50, "wordgap": 0}
    return Speech(audio=audio, words=words, sample_rate=SAMPLE_RATE, voice=voice, rate=int(rate), pitch=int(pitch),
                  params=params)
