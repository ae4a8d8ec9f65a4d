"""The executor seam: run a per-item function over items on a local pool or on Ray, results in item order.

Every per-sample stage maps a pure, picklable function over its work items through ``make_executor``;
the driver writes outputs in item order, so the bytes are the same whichever executor ran them.
A failing item comes back as an ``ItemFailure`` (recorded with its reason by the stage), never lost.
Stages with a model use ``map_stateful(StatefulWork(init, arg, fn), items)``: ``init(arg)`` builds the
model once per worker process (or Ray actor), then ``fn(state, item)`` runs per item.
Local pool workers exit when their parent dies (even by SIGKILL), so no orphan keeps writing files.
``--executor ray`` lives in ``duplexeval.executors_ray`` (optional extra ``duplexeval[ray]``).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from duplexeval import redaction
from duplexeval.errors import DuplexEvalError, InputError
from duplexeval.plugins import print_traceback

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

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
    worker_lost: bool = False  # the worker process died (crash, OOM kill), not the function raising


@dataclass(frozen=True)
class ItemResult(Generic[R]):
    index: int
    value: R


@dataclass(frozen=True)
class StatefulWork(Generic[S, T, R]):
    """Per-item work that needs a loaded model: ``init(arg)`` once per worker, then ``fn(state, item)`` per item.

    ``init`` and ``fn`` are top-level functions and ``arg`` is picklable (they are sent to worker processes).
    ``uses_gpu``: the model runs on a GPU when one exists (Ray then requests one per worker).
    """

    init: Callable[[Any], S]
    arg: Any
    fn: Callable[[S, T], R]
    uses_gpu: bool = False


class Executor(Protocol):
    """Runs ``fn`` over ``items``; yields one result or failure per item, in item order."""

    name: str

    def map_ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]: ...

    def map_stateful(self, work: StatefulWork[Any, T, R],
                     items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]: ...

    @property
    def parallelism(self) -> int:
        """How many items run at the same time (worker processes or Ray slots)."""
        ...

    def close(self) -> None: ...


def one_line(exc: BaseException) -> str:
    """An item's failure as one line: a DuplexEvalError's own message (already one line), else `Type: message`;
    with --debug the traceback goes to stderr first."""
    print_traceback(exc)
    if isinstance(exc, DuplexEvalError):
        return str(exc)
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def _failure(index: int, exc: BaseException) -> ItemFailure:
    return ItemFailure(index, one_line(exc), worker_lost=isinstance(exc, BrokenProcessPool))


# -- local pool workers: die with the parent, hold the per-worker state ---------------------------------
PARENT_POLL_S = 0.1


class _WorkerState:
    """What `init(arg)` made in this pool worker process (a stateful pool's workers hold one each)."""

    value: Any = None


_STATE = _WorkerState()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:  # re-parented: the driver is gone (SIGKILL included)
            os._exit(1)


def die_with_parent(parent_pid: int) -> None:
    """Make this worker process exit within PARENT_POLL_S of its parent's death (a daemon thread watching getppid).

    A pipe or PR_SET_PDEATHSIG would also do; the latter fires when the *thread* that forked us exits, which a
    pool created from a short-lived thread would trip over, so we watch the parent id instead (any POSIX system).
    """
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="duplexeval-parent-watch").start()


# -- numeric threads: the same in every worker, whichever executor runs it --------------------------------
# Every worker process (a local pool process, a Ray task or actor, this process for jobs=1) computes with this many
# BLAS and OpenMP threads, and ASR models with this many intra-op threads: results of libraries whose reductions
# depend on their thread count (OpenBLAS, CTranslate2) then do not depend on where they ran (Ray sets
# OMP_NUM_THREADS=1 in its workers; a local process would take every core). Recorded in the ASR signature.
WORKER_THREADS = 1
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


_PINNED: set[int] = set()  # processes pinned already (a Ray task process runs many tasks)


def pin_numeric_threads(n: int = WORKER_THREADS, again: bool = False) -> None:
    """Make this process compute with `n` BLAS/OpenMP threads: the variables for libraries loaded later, threadpoolctl
    for those loaded already (some 10-50 ms, so once per process unless `again`: after loading a model library)."""
    from threadpoolctl import threadpool_limits  # lazy: it inspects every loaded library

    if os.getpid() in _PINNED and not again:
        return
    for var in THREAD_ENV:
        os.environ[var] = str(n)
    threadpool_limits(limits=n)
    _PINNED.add(os.getpid())


@contextmanager
def numeric_threads(n: int = WORKER_THREADS) -> Iterator[None]:
    """`pin_numeric_threads` for the work done in this process (jobs=1), undone afterwards."""
    from threadpoolctl import threadpool_limits

    old = {var: os.environ.get(var) for var in THREAD_ENV}
    for var in THREAD_ENV:
        os.environ[var] = str(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        for var, value in old.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def _init_plain(parent_pid: int, secrets: tuple[str, ...] = ()) -> None:
    pin_numeric_threads()
    die_with_parent(parent_pid)
    redaction.register(*secrets)  # what the driver knows, so a worker's lines and files are scrubbed as well
    redaction.install_stream_guard()


def _init_stateful(parent_pid: int, init: Callable[[Any], Any], arg: Any, secrets: tuple[str, ...] = ()) -> None:
    _init_plain(parent_pid, secrets)
    _STATE.value = init(arg)
    pin_numeric_threads(again=True)  # the model's own thread pools exist now


def _call_stateful(fn: Callable[[Any, Any], Any], item: Any) -> Any:
    return fn(_STATE.value, item)


class LocalExecutor:
    """In this process (jobs=1) or a process pool; items are submitted in order and yielded in order."""

    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs
        self._pool: cf.ProcessPoolExecutor | None = None

    @property
    def parallelism(self) -> int:
        return self.jobs

    def map_ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]:
        if self.jobs == 1:
            with numeric_threads():
                for i, item in enumerate(items):
                    try:
                        yield ItemResult(i, fn(item))
                    except (Exception, SystemExit) as exc:  # noqa: BLE001 - recorded per item by the stage
                        yield ItemFailure(i, one_line(exc))
            return
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(max_workers=self.jobs, initializer=_init_plain,
                                                 initargs=(os.getpid(), redaction.known()))
        futures = [self._pool.submit(fn, item) for item in items]
        yield from _ordered(futures)

    def map_stateful(self, work: StatefulWork[Any, T, R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]:
        """In this process (jobs=1: ``init`` runs here, its errors propagate) or ``jobs`` spawned processes."""
        if self.jobs == 1 or len(items) <= 1:
            with numeric_threads():
                state = work.init(work.arg) if items else None
                with numeric_threads():  # again: the model's thread pools exist now
                    for i, item in enumerate(items):
                        try:
                            yield ItemResult(i, work.fn(state, item))
                        except (Exception, SystemExit) as exc:  # noqa: BLE001 - recorded per item by the stage
                            yield ItemFailure(i, one_line(exc))
            return
        # spawn: model libraries (onnxruntime, CTranslate2) are not fork-safe once their threads exist.
        with cf.ProcessPoolExecutor(max_workers=min(self.jobs, len(items)), mp_context=mp.get_context("spawn"),
                                    initializer=_init_stateful,
                                    initargs=(os.getpid(), work.init, work.arg, redaction.known())) as pool:
            futures = [pool.submit(_call_stateful, work.fn, item) for item in items]
            try:
                yield from _ordered(futures)
            finally:
                for f in futures:
                    f.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def _ordered(futures: Sequence[cf.Future[Any]]) -> Iterator[ItemResult[Any] | ItemFailure]:
    for i, fut in enumerate(futures):
        try:
            yield ItemResult(i, fut.result())
        except Exception as exc:  # noqa: BLE001 - recorded per item by the stage
            yield _failure(i, exc)


def make_executor(spec: ExecutorSpec) -> Executor:
    """The executor `spec` names; Ray is imported only when asked for."""
    if spec.kind == "local":
        return LocalExecutor(spec.jobs)
    # Lazy: the Ray backend (optional extra) imports this module's records, so a top-level import would be a cycle.
    from duplexeval.executors_ray import make_ray_executor

    return make_ray_executor(spec)
