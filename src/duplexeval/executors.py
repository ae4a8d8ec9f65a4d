"""The executor seam: run a per-item function over items on a local pool or on Ray, results in item order.

Every per-sample stage maps a pure, picklable function over its work items through ``make_executor``;
the driver writes outputs in item order, so the bytes are the same whichever executor ran them.
A failing item comes back as an ``ItemFailure`` (recorded with its reason by the stage), never lost.
``--executor ray`` lives in ``duplexeval.executors_ray`` (optional extra ``duplexeval[ray]``).
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from duplexeval.errors import InputError

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorSpec:
    """What the command line asked for: which executor, and its knobs."""

    kind: str = "local"
    jobs: int = 1  # local worker processes (1 = in this process)
    ray_address: str | None = None  # None: start a local Ray instance; "auto": join a running cluster
    ray_num_cpus: float = 1.0  # per task
    ray_num_gpus: float = 0.0  # per task, only for stages that use a model
    max_retries: int = 2  # a task whose worker died is retried this many times on another worker

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise InputError(f"--executor {self.kind!r}: unknown executor; available: {', '.join(EXECUTORS)}")
        if self.jobs < 1:
            raise InputError(f"--jobs must be at least 1, got {self.jobs}")
        if self.max_retries < 0:
            raise InputError(f"--max-retries must be non-negative, got {self.max_retries}")
        if self.ray_num_cpus < 0 or self.ray_num_gpus < 0:
            raise InputError("--ray-num-cpus and --ray-num-gpus must be non-negative")


@dataclass(frozen=True)
class ItemFailure:
    """An item whose function raised (or whose worker died past the retries): the reason, one line."""

    index: int
    reason: str


@dataclass(frozen=True)
class ItemResult(Generic[R]):
    index: int
    value: R


class Executor(Protocol):
    """Runs ``fn`` over ``items``; yields one result or failure per item, in item order."""

    name: str

    def map_ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]: ...

    def close(self) -> None: ...


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


class LocalExecutor:
    """In this process (jobs=1) or a process pool; items are submitted in order and yielded in order."""

    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs
        self._pool: cf.ProcessPoolExecutor | None = None

    def map_ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]:
        if self.jobs == 1:
            for i, item in enumerate(items):
                try:
                    yield ItemResult(i, fn(item))
                except Exception as exc:  # noqa: BLE001 - recorded per item by the stage
                    yield ItemFailure(i, _one_line(exc))
            return
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(max_workers=self.jobs)
        futures = [self._pool.submit(fn, item) for item in items]
        for i, fut in enumerate(futures):
            try:
                yield ItemResult(i, fut.result())
            except Exception as exc:  # noqa: BLE001
                yield ItemFailure(i, _one_line(exc))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def make_executor(spec: ExecutorSpec) -> Executor:
    """The executor `spec` names; Ray is imported only when asked for."""
    if spec.kind == "local":
        return LocalExecutor(spec.jobs)
    from duplexeval.executors_ray import make_ray_executor  # optional extra, heavy import

    return make_ray_executor(spec)
