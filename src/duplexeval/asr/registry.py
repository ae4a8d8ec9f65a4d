"""ASR backends by name, through the shared `duplexeval.registry.Registry` (models load lazily, on first transcribe).

A name is a built-in (whisper-align, pocketsphinx, faster-whisper, parakeet), a backend published by an
installed package under the entry-point group ``duplexeval.asr_backends``, or ``module.path:Name`` for a
user's own class. The factory (usually the class) is called with those of ``model``, ``device`` and
``threads`` it accepts; ``model=`` given to a backend that takes none is an error. ``import`` is not a
backend: the stage adopts existing output.json files instead (docs/asr.md).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from duplexeval.asr.base import Backend
from duplexeval.asr.faster_whisper_backend import FasterWhisperBackend
from duplexeval.asr.parakeet import ParakeetBackend
from duplexeval.asr.pocketsphinx_free import PocketsphinxBackend
from duplexeval.asr.whisper_align import WhisperAlignBackend
from duplexeval.errors import InputError
from duplexeval.registry import Registry

DEFAULT_BACKEND = "whisper-align"
IMPORT = "import"
BACKENDS: tuple[str, ...] = ("whisper-align", "pocketsphinx", "faster-whisper", "parakeet", IMPORT)  # the built-ins

BackendFactory = Callable[..., Backend]


def _import_is_not_a_backend(**_: Any) -> Backend:
    raise InputError("--backend import adopts existing output.json files; it builds no backend")


def _register_builtins() -> None:
    ASR_BACKENDS.register("whisper-align", WhisperAlignBackend)
    ASR_BACKENDS.register("pocketsphinx", PocketsphinxBackend)
    ASR_BACKENDS.register("faster-whisper", FasterWhisperBackend)
    ASR_BACKENDS.register("parakeet", ParakeetBackend)
    ASR_BACKENDS.register(IMPORT, _import_is_not_a_backend)


ASR_BACKENDS: Registry[BackendFactory] = Registry("ASR backend", loader=_register_builtins)


def backend_names() -> list[str]:
    """Every name `--backend` accepts besides `module.path:Name` (built-ins, `import`, entry points)."""
    return ASR_BACKENDS.names()


def check_backend_name(name: str) -> None:
    """Raise the one-line "unknown ASR backend 'x'; available: ..." unless `name` resolves (imports it)."""
    ASR_BACKENDS.get(name)


def _accepts(factory: BackendFactory) -> set[str] | None:
    """The keyword names the factory takes, or None when it takes any (``**kwargs``) or cannot be inspected."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


def make_backend(name: str, model: str | os.PathLike[str] | None = None, device: str = "cpu",
                 threads: int | None = None) -> Backend:
    """A backend by name (registry name, entry point or `module.path:Name`); `import` is refused here."""
    factory = ASR_BACKENDS.get(name)
    accepts = _accepts(factory)
    if model is not None and accepts is not None and "model" not in accepts:
        hint = " (its model is in the wheel)" if name == "pocketsphinx" else ""
        raise InputError(f"--backend {name}: model= is not used by the {name} backend{hint}")
    offered: dict[str, str | os.PathLike[str] | int | None] = {"model": model, "device": device, "threads": threads}
    kwargs = {k: v for k, v in offered.items() if accepts is None or k in accepts}
    if name in BACKENDS:
        return factory(**kwargs)
    backend = ASR_BACKENDS.build(name, **kwargs)
    if not isinstance(backend, Backend):
        raise InputError(f"ASR backend {name!r}: needs a name, signature() and transcribe(audio16k, offset_s) "
                         "(duplexeval.asr.base.Backend)")
    return backend


def backend_spec(name: str, model: Any, device: str, threads: int | None) -> tuple[str, Any, str, int | None]:
    """A picklable recipe for building the same backend in a worker process."""
    return (name, None if model is None else str(model), device, threads)
