"""Backend `parakeet`: NVIDIA parakeet-tdt-0.6b-v2 through NeMo, the official FDB v1.0 ASR (optional extra).

`pip install duplexeval[parakeet]` brings NeMo and torch. `model=` (in `--backend parakeet:model=...`) is a local
`.nemo` file, or a
hub id (default `nvidia/parakeet-tdt-0.6b-v2`) fetched once into the Hugging Face cache when the
machine has network. Like the official `asr.py` it transcribes the whole (cut) audio in one call
and takes the words from `hypothesis.timestamp["word"]`; the checkpoint's SHA-256 is recorded.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.asr.base import Word, package_versions
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject

DEFAULT_HUB_ID = "nvidia/parakeet-tdt-0.6b-v2"

Loader = Callable[[Path, str], Any]
NEEDS_NEMO = "the parakeet backend needs NeMo, which is not installed: pip install 'duplexeval[parakeet]'"


def require_nemo() -> None:
    """Refuse early (before any model download is tried) when NeMo is not importable."""
    if importlib.util.find_spec("nemo") is None:
        raise RefusalError(NEEDS_NEMO)


def nemo_loader(path: Path, device: str) -> Any:
    """Restore a `.nemo` checkpoint with NeMo on `device` (cpu|cuda)."""
    try:
        import nemo.collections.asr as nemo_asr
    except ImportError:
        raise RefusalError(NEEDS_NEMO) from None
    model = nemo_asr.models.ASRModel.restore_from(str(path), map_location=device)
    model.eval()
    return model


def resolve_checkpoint(model: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """A local `.nemo` path and how it was named: the file itself, or a hub id fetched into the cache."""
    if model is not None and Path(model).is_file():
        return Path(model), Path(model).name
    if model is not None and (str(model).endswith(".nemo") or Path(model).exists()):
        raise InputError(f"{model}: not a .nemo file (give a .nemo file or a hub id such as {DEFAULT_HUB_ID})")
    repo = str(model) if model is not None else DEFAULT_HUB_ID
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise RefusalError("the parakeet backend needs NeMo: pip install 'duplexeval[parakeet]'") from None
    try:
        path = hf_hub_download(repo_id=repo, filename=f"{repo.split('/')[-1]}.nemo")
    except Exception as exc:  # noqa: BLE001 - any hub failure means: offline or wrong id
        raise RefusalError(f"cannot fetch {repo} from the Hugging Face hub ({type(exc).__name__}); pass --backend "
                           "parakeet:model=FILE.nemo") from None
    return Path(path), repo


def _word_items(hyp: Any) -> list[Any]:
    ts = hyp.get("timestamp") if isinstance(hyp, dict) else getattr(hyp, "timestamp", None)
    if not isinstance(ts, dict) or "word" not in ts:
        raise InputError("parakeet: the model returned no word timestamps (transcribe(..., timestamps=True))")
    return list(ts["word"])


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class ParakeetBackend:
    """parakeet-tdt-0.6b-v2 (or any NeMo ASR checkpoint with word timestamps) on cpu or cuda."""

    name = "parakeet"

    def __init__(self, model: str | os.PathLike[str] | None = None, device: str = "cpu",
                 loader: Loader | None = None) -> None:
        if device not in ("cpu", "cuda"):
            raise InputError(f"--backend parakeet: device must be cpu or cuda, got {device!r}")
        self.device = device
        self._model_arg = model
        self._loader = loader or nemo_loader
        self._path: Path | None = None
        self._label = ""
        self._model: Any = None
        self._signature: JsonObject | None = None
        self.last_stats: dict[str, int] = {}

    def signature(self) -> JsonObject:
        if self._signature is None:
            m = self._model_arg
            if self._loader is nemo_loader and (m is None or not (Path(m).exists() or str(m).endswith(".nemo"))):
                require_nemo()  # before a hub download: the missing package is what the user must fix
            self._path, self._label = resolve_checkpoint(self._model_arg)
            self._signature = {
                "name": self.name,
                "packages": package_versions("nemo_toolkit", "torch"),
                "model": {"source": self._label, "name": self._path.name, "sha256": sha256_file(self._path)},
                "options": {"device": self.device, "timestamps": "word", "decoding": "model default (greedy)",
                            "input": "whole audio after the cut, 16 kHz float32"},
            }
        return self._signature

    def load(self) -> None:
        if self._model is None:
            self.signature()
            assert self._path is not None
            self._model = self._loader(self._path, self.device)

    def transcribe(self, audio16k: np.ndarray, offset_s: float = 0.0) -> list[Word]:
        """Words of the audio, times in seconds from its start plus `offset_s`."""
        self.load()
        result = self._model.transcribe([np.asarray(audio16k, np.float32)], timestamps=True)
        if isinstance(result, tuple):  # some NeMo versions return (best, all) hypotheses
            result = result[0]
        hyp = list(result)[0]
        words: list[Word] = []
        for item in _word_items(hyp):
            text = str(_field(item, "word") or "").strip()
            if not text:
                continue
            start, end = _field(item, "start"), _field(item, "end")
            words.append(Word(text, _as_float(start) + offset_s, None if end is None else _as_float(end) + offset_s))
        self.last_stats = {"words": len(words), "unaligned": 0}
        return words


def _as_float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")  # the stage rejects it with the word named
