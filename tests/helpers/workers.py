"""Functions and stand-in backends that worker processes (Ray or local pool) import by name in the executor tests;
some kill their own worker with SIGKILL, once or always."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def square_or_fail(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x * x


def die_once(item: tuple[str, int]) -> tuple[int, int]:
    """Item (marker, n): the first worker to see n == 2 writes the marker and is SIGKILLed; later ones return."""
    marker, n = item
    if n == 2 and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return n, os.getpid()


def die_always(item: tuple[str, int]) -> int:
    """n == 1 kills its worker every time; the others return n."""
    _, n = item
    if n == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def offset(base: int) -> int:
    """A stand-in model load: the state is the base, and the pid proves it happened once per worker."""
    return base


def stateful_die_once(state: int, item: tuple[str, int]) -> tuple[int, int]:
    n, pid = die_once(item)
    return state + n, pid


def stateful_die_always(state: int, item: tuple[str, int]) -> int:
    return state + die_always(item)


def init_fails(_: object) -> None:
    raise FileNotFoundError("no model here")


class SleepyBackend:
    """A slow stand-in ASR (no model): one word per sample after `delay` seconds; picklable, so it runs in workers."""

    name = "sleepy"

    def __init__(self, delay: float = 0.4) -> None:
        self.delay = delay

    def signature(self) -> dict:
        return {"name": self.name, "packages": {}, "options": {"delay": self.delay}}

    def transcribe(self, audio16k, offset_s: float = 0.0):
        import time

        from duplexeval.asr.base import Word

        time.sleep(self.delay)
        return [Word("hello", offset_s + 0.1, offset_s + 0.1 + len(audio16k) / 16000 / 4)]


class KillOnceBackend(SleepyBackend):
    """The first worker to transcribe writes `marker` and SIGKILLs itself mid-sample; every later call is normal."""

    name = "kill-once"

    def __init__(self, marker: str) -> None:
        super().__init__(0.0)
        self.marker = marker

    def signature(self) -> dict:
        return {"name": self.name, "packages": {}, "options": {}}

    def transcribe(self, audio16k, offset_s: float = 0.0):
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().transcribe(audio16k, offset_s)


def init_pid(_: object) -> int:
    """A stand-in model load that remembers which process loaded it."""
    return os.getpid()


def loaded_where(state: int, item: int) -> tuple[int, int, int]:
    return item, state, os.getpid()


def numeric_threads(_: object = None) -> dict[str, object]:
    """The BLAS / OpenMP thread counts this worker computes with (threadpoolctl) and the OMP variable it sees."""
    import numpy  # noqa: F401 - its OpenBLAS is what a worker's numbers go through
    from threadpoolctl import threadpool_info

    pools = sorted({(p["user_api"], p["num_threads"]) for p in threadpool_info()})
    return {"pools": pools, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}


def stateful_numeric_threads(state: object, item: object) -> dict[str, object]:
    return numeric_threads()


def load_ctranslate2(_: object) -> str:
    """A worker that loads the ASR model library first (its OpenMP pool appears after the worker started)."""
    import ctranslate2

    return str(ctranslate2.__version__)


class HangingDetector:
    """An EOT detector plugin whose predict_batch never returns."""

    def predict_batch(self, items: list[object]) -> list[float]:
        import time

        time.sleep(3600)
        return []


def plugin_env(_: object = None) -> tuple[str | None, str | None]:
    """The driver settings a worker sees: (DUPLEXEVAL_DEBUG, DUPLEXEVAL_CALL_TIMEOUT)."""
    return os.environ.get("DUPLEXEVAL_DEBUG"), os.environ.get("DUPLEXEVAL_CALL_TIMEOUT")


def stateful_plugin_env(state: object, item: object) -> tuple[str | None, str | None]:
    return plugin_env()
