"""``--executor ray``: the executor seam on a Ray cluster (optional extra ``duplexeval[ray]``, plain ``ray``, no torch).

``map_ordered`` runs one Ray task per item; ``map_stateful`` keeps a pool of actors, each building its model once
(``StatefulWork.init``) and taking items streamed to it, at most ``DEPTH`` queued per actor. Results come back
in item order either way, so the driver writes the same bytes as a local run. A worker that dies mid-item is
replaced and the item retried on the new worker, at most ``max_retries`` times; after that the item is an
``ItemFailure(worker_lost=True)`` with the reason, and the run goes on. Ray is imported only here.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from duplexeval import redaction
from duplexeval.errors import InputError, clip
from duplexeval.executors import (
    ExecutorSpec,
    ItemFailure,
    ItemResult,
    R,
    StatefulWork,
    T,
    one_line,
    pin_numeric_threads,
)
from duplexeval.plugins import CALL_TIMEOUT_ENV, DEBUG_ENV

INSTALL_HINT = "--executor ray needs Ray, an optional extra: pip install 'duplexeval[ray]'"
DEPTH = 2  # items queued per actor: one running, one waiting, so an actor never idles on a round trip
TASK_WINDOW = 4  # stateless tasks in flight per slot
MAX_AHEAD = 1024  # results held for in-order delivery while an earlier item is still running


def import_ray() -> Any:
    """The ray module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return ray


RAY_CONNECT_TIMEOUT_S = 10.0  # joining a cluster: how long its address may take to answer before we give up


def check_reachable(address: str) -> None:
    """Refuse, in one line and within RAY_CONNECT_TIMEOUT_S, a `--ray-address HOST:PORT` where nothing answers (Ray
    itself would retry for minutes)."""
    target = address.split("://", 1)[-1]
    host, sep, port_text = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise InputError(f"--ray-address {address!r}: expected auto or HOST:PORT (e.g. 10.0.0.5:6379)")
    try:
        with socket.create_connection((host, int(port_text)), timeout=RAY_CONNECT_TIMEOUT_S):
            pass
    except TimeoutError:
        raise InputError(f"--ray-address {address}: no answer within {RAY_CONNECT_TIMEOUT_S:g} s; is the Ray head "
                         "running there (`ray start --head`)? Or drop --ray-address to start a local "
                         "instance") from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise InputError(f"--ray-address {address}: cannot connect ({why}); is the Ray head running there "
                         "(`ray start --head`)? Or drop --ray-address to start a local instance") from None


def _init_failure(address: str | None, exc: BaseException) -> str:
    """One line for a Ray that would not start or be joined, with what to do instead."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if address is None:
        return f"--executor ray: could not start a local Ray instance ({clip(text, 300)}); run with --executor local"
    return (f"--ray-address {address}: cannot join Ray ({clip(text, 300)}); check the address, or run with "
            "--executor local")


def start_reaper() -> subprocess.Popen[bytes]:
    """The watcher that stops this run's Ray processes once this process is gone (`duplexeval.ray_reaper`)."""
    return subprocess.Popen([sys.executable, "-m", "duplexeval.ray_reaper", str(os.getpid())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)


def make_ray_executor(spec: ExecutorSpec) -> RayExecutor:
    return RayExecutor(spec)


# The driver's plugin settings (--debug, the per-call bound of plugin methods): a worker of a cluster that was
# started elsewhere does not inherit the driver's environment, so they travel with the work.
DRIVER_ENV = (DEBUG_ENV, CALL_TIMEOUT_ENV)


@dataclass(frozen=True)
class _InDriverEnv:
    """`fn`, called with the driver's plugin settings in the worker's environment (unset in the driver: unset)."""

    fn: Callable[..., Any]
    env: tuple[tuple[str, str | None], ...]

    def __call__(self, *args: Any) -> Any:
        for name, value in self.env:
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return self.fn(*args)


def in_driver_env(fn: Callable[..., Any]) -> _InDriverEnv:
    """`fn` wrapped to run with this process's values of ``DRIVER_ENV``."""
    return _InDriverEnv(fn, tuple((name, os.environ.get(name)) for name in DRIVER_ENV))


def _run_task(fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """A task body: the function's own exception is a result (never retried); only a dead worker is retried."""
    redaction.install_stream_guard()  # Ray keeps a worker's output in log files: scrubbed like the driver's lines
    pin_numeric_threads()  # as a local worker computes (Ray's own OMP_NUM_THREADS=1 is not relied on)
    try:
        return True, fn(item)
    except Exception as exc:  # noqa: BLE001 - recorded per item by the stage
        return False, one_line(exc)


class _StatefulWorker:
    """The actor body: the state from ``init`` once, then ``fn(state, item)`` per call."""

    def __init__(self, init: Callable[[Any], Any], arg: Any) -> None:
        self.error: BaseException | None = None
        self.state: Any = None
        redaction.install_stream_guard()
        pin_numeric_threads()
        try:
            self.state = init(arg)
        except Exception as exc:  # noqa: BLE001 - handed to the driver by ready(), which raises it there
            self.error = exc
        pin_numeric_threads(again=True)  # the model's own thread pools exist now

    def ready(self) -> tuple[int, BaseException | str | None]:
        err = self.error
        if err is None:
            return os.getpid(), None
        try:
            pickle.dumps(err)
            return os.getpid(), err
        except Exception:  # noqa: BLE001 - an exception that cannot travel: its line
            return os.getpid(), one_line(err)

    def run(self, fn: Callable[[Any, Any], Any], item: Any) -> tuple[bool, Any]:
        if self.error is not None:
            return False, one_line(self.error)
        try:
            return True, fn(self.state, item)
        except Exception as exc:  # noqa: BLE001 - recorded per item by the stage
            return False, one_line(exc)


class RayExecutor:
    """Runs items on Ray: joins ``spec.ray_address`` (``auto``: the running cluster) or starts a local instance."""

    name = "ray"

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        self.ray = import_ray()
        self._started = False
        self._reaper: subprocess.Popen[bytes] | None = None
        if not self.ray.is_initialized():
            # None means a new local instance of our own, never whichever cluster this machine ran last
            address = spec.ray_address if spec.ray_address is not None else "local"
            if address not in ("local", "auto"):
                check_reachable(address)
                os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(int(RAY_CONNECT_TIMEOUT_S)))
            try:
                self.ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
            except Exception as exc:  # noqa: BLE001 - Ray raises many types when its node does not come up
                raise InputError(_init_failure(spec.ray_address, exc)) from None
            self._started = True
            if address == "local":
                self._reaper = start_reaper()
        self._warned_gpu = False

    # -- resources ----------------------------------------------------------------------------------
    def _resources(self, uses_gpu: bool) -> tuple[float, float, int]:
        """(num_cpus, num_gpus) per worker and how many workers the cluster fits; a GPU only when one exists."""
        total = self.ray.cluster_resources()
        cpus = float(self.spec.ray_num_cpus)
        gpus = float(self.spec.ray_num_gpus) if self.spec.ray_num_gpus > 0 else (1.0 if uses_gpu else 0.0)
        if gpus > 0 and total.get("GPU", 0.0) <= 0:
            if self.spec.ray_num_gpus > 0 and not self._warned_gpu:
                print("duplexeval: note: the Ray cluster has no GPU; --ray-num-gpus ignored, running on CPU",
                      file=sys.stderr)
                self._warned_gpu = True
            gpus = 0.0
        slots = math.inf
        if cpus > 0:
            slots = math.floor(total.get("CPU", 0.0) / cpus + 1e-9)
        if gpus > 0:
            slots = min(slots, math.floor(total.get("GPU", 0.0) / gpus + 1e-9))
        if slots == math.inf:
            slots = max(1, int(total.get("CPU", 1.0)))
        if slots < 1:  # no node could ever run a worker: refuse now instead of waiting forever
            raise InputError(f"--ray-num-cpus {cpus:g} --ray-num-gpus {gpus:g}: more than the Ray cluster has "
                             f"({total.get('CPU', 0.0):g} CPUs, {total.get('GPU', 0.0):g} GPUs)")
        return cpus, gpus, int(slots)

    @property
    def parallelism(self) -> int:
        return self._resources(False)[2]

    # -- stateless tasks ----------------------------------------------------------------------------
    def map_ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]:
        """One task per item (Ray retries a task whose worker died, ``max_retries`` times, on a new worker)."""
        ray = self.ray
        cpus, gpus, slots = self._resources(False)
        remote = ray.remote(_run_task).options(num_cpus=cpus, num_gpus=gpus, max_retries=self.spec.max_retries,
                                               retry_exceptions=False)
        fn_ref = ray.put(in_driver_env(fn))
        pending: dict[Any, int] = {}
        done: dict[int, ItemResult[R] | ItemFailure] = {}
        nxt = sub = 0
        try:
            while nxt < len(items):
                while sub < len(items) and len(pending) < slots * TASK_WINDOW and sub - nxt < MAX_AHEAD:
                    pending[remote.remote(fn_ref, items[sub])] = sub
                    sub += 1
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        ok, val = ray.get(ref)
                        done[i] = ItemResult(i, val) if ok else ItemFailure(i, val)
                    except ray.exceptions.RayError as exc:
                        done[i] = ItemFailure(i, f"the worker died running it, attempt {self.spec.max_retries + 1} of "
                                              f"{self.spec.max_retries + 1} (--max-retries {self.spec.max_retries}): "
                                              f"{_ray_line(exc)}",
                                              worker_lost=True)
                while nxt in done:
                    yield done.pop(nxt)
                    nxt += 1
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    # -- stateful actor pool ------------------------------------------------------------------------
    def map_stateful(self, work: StatefulWork[Any, T, R], items: Sequence[T]) -> Iterator[ItemResult[R] | ItemFailure]:
        """An actor pool (one ``init`` per actor), items streamed in order, dead actors replaced and their item
        retried."""
        if not items:
            return
        ray = self.ray
        cpus, gpus, slots = self._resources(work.uses_gpu)
        actor_cls = ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=0, max_task_retries=0)(_StatefulWorker)
        init_ref, arg_ref, fn_ref = (ray.put(in_driver_env(work.init)), ray.put(work.arg),
                                     ray.put(in_driver_env(work.fn)))

        def spawn() -> Any:
            return actor_cls.remote(init_ref, arg_ref)

        actors = [spawn() for _ in range(min(slots, len(items)))]
        try:
            for _pid, err in ray.get([a.ready.remote() for a in actors]):
                if isinstance(err, BaseException):
                    raise err
                if err is not None:
                    raise RuntimeError(err)
            yield from self._stream(actors, spawn, fn_ref, items)
        finally:
            for a in actors:
                ray.kill(a, no_restart=True)

    def _stream(self, actors: list[Any], spawn: Callable[[], Any], fn_ref: Any,
                items: Sequence[T]) -> Iterator[ItemResult[Any] | ItemFailure]:
        ray = self.ray
        todo: deque[int] = deque(range(len(items)))
        queued: list[deque[tuple[Any, int]]] = [deque() for _ in actors]  # per actor, in submission order
        owner: dict[Any, int] = {}  # ref -> actor slot
        deaths = [0] * len(items)
        done: dict[int, ItemResult[Any] | ItemFailure] = {}
        nxt = 0

        def feed(k: int) -> None:
            while todo and len(queued[k]) < DEPTH and todo[0] - nxt < MAX_AHEAD:
                i = todo.popleft()
                ref = actors[k].run.remote(fn_ref, items[i])
                queued[k].append((ref, i))
                owner[ref] = k

        for k in range(len(actors)):
            feed(k)
        while nxt < len(items):
            ready, _ = ray.wait(list(owner), num_returns=1)
            ref = ready[0]
            k = owner.pop(ref)
            try:
                ok, val = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                self._replace(k, exc, actors, spawn, queued, owner, deaths, todo, done)
            else:
                pos = next(p for p, (r, _) in enumerate(queued[k]) if r == ref)  # wait() may report out of order
                _, i = queued[k][pos]
                del queued[k][pos]
                done[i] = ItemResult(i, val) if ok else ItemFailure(i, val)
            while nxt in done:
                yield done.pop(nxt)
                nxt += 1
            for j in range(len(actors)):
                feed(j)

    def _replace(self, k: int, exc: BaseException, actors: list[Any], spawn: Callable[[], Any],
                 queued: list[deque[tuple[Any, int]]], owner: dict[Any, int], deaths: list[int],
                 todo: deque[int], done: dict[int, Any]) -> None:
        """Actor k died: its running item (the oldest queued) is charged one death; the others go back unharmed."""
        lost = list(queued[k])
        queued[k].clear()
        for ref, _ in lost:
            owner.pop(ref, None)
        back = []
        for pos, (_, i) in enumerate(lost):
            if pos == 0:
                deaths[i] += 1
                if deaths[i] > self.spec.max_retries:
                    done[i] = ItemFailure(i, f"the worker died running it, attempt {deaths[i]} of {deaths[i]} "
                                             f"(--max-retries {self.spec.max_retries}): {_ray_line(exc)}",
                                          worker_lost=True)
                    continue
            back.append(i)
        todo.extendleft(reversed(back))
        self.ray.kill(actors[k], no_restart=True)
        actors[k] = spawn()

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
            self._started = False
        if self._reaper is not None:
            self._reaper.terminate()
            try:
                self._reaper.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._reaper.kill()
            self._reaper = None


def _ray_line(exc: BaseException) -> str:
    """The first meaningful line of a Ray error (they run to many lines of context)."""
    text = str(exc).strip().splitlines()
    first = next((ln.strip() for ln in text if ln.strip()), "")
    return f"{type(exc).__name__}: {first}"[:300]
