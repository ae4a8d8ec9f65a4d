"""Backend names and how to build each one (models load lazily, on first transcribe)."""

from __future__ import annotations

import os
from typing import Any

from duplexeval.asr.base import Backend
from duplexeval.errors import InputError

DEFAULT_BACKEND = "whisper-align"
IMPORT = "import"
BACKENDS: tuple[str, ...] = ("whisper-align", "pocketsphinx", "faster-whisper", "parakeet", IMPORT)


def make_backend(name: str, model: str | os.PathLike[str] | None = None, device: str = "cpu",
                 threads: int | None = None) -> Backend:
    """A backend by name; `import` is not a backend (the stage adopts files) and is refused here."""
    if name == "whisper-align":
        from duplexeval.asr.whisper_align import WhisperAlignBackend

        return WhisperAlignBackend(model=model, threads=threads)
    if name == "faster-whisper":
        from duplexeval.asr.faster_whisper_backend import FasterWhisperBackend

        return FasterWhisperBackend(model=model, threads=threads)
    if name == "pocketsphinx":
        if model is not None:
            raise InputError("--model is not used by the pocketsphinx backend (its model is in the wheel)")
        from duplexeval.asr.pocketsphinx_free import PocketsphinxBackend

        return PocketsphinxBackend()
    if name == "parakeet":
        from duplexeval.asr.parakeet import ParakeetBackend

        return ParakeetBackend(model=model, device=device)
    raise InputError(f"unknown ASR backend {name!r} (expected one of {', '.join(BACKENDS)})")


def backend_spec(name: str, model: Any, device: str, threads: int | None) -> tuple[str, Any, str, int | None]:
    """A picklable recipe for building the same backend in a worker process."""
    return (name, None if model is None else str(model), device, threads)
