"""Controller streaming runs on the executor seam (``controller run --executor ray``): one item per conversation
(channel assignment), the controller built once per worker from its spec, the scores applied by the driver in
manifest order, so the data folder has the same bytes as an in-process run.

The conversations' audio is held in the driver's memory for the run (the items carry it to the workers).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from duplexeval.controller.format.data import Clip
from duplexeval.controller.runtime.runner import Controller, RunResult, load_controller, run
from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec, ItemFailure, StatefulWork, make_executor
from duplexeval.jsontypes import JsonObject


@dataclass(frozen=True)
class RunJob:
    """One conversation's run: the arguments of ``runner.run``."""

    user: np.ndarray
    agent: np.ndarray | None
    n_frames: int
    truth_state: np.ndarray | None
    name: str


def _load(arg: tuple[str, JsonObject]) -> Controller:
    spec, options = arg
    return load_controller(spec, options)


def _run(controller: Controller, job: RunJob) -> RunResult:
    return run(controller, job.user, job.agent, job.n_frames, job.truth_state, name=job.name)


def run_clips(pairs: Iterable[tuple[Clip, RunJob]], controller: str, options: JsonObject,
              executor: ExecutorSpec) -> Iterator[Clip]:
    """Each clip with its controller scores, in the order given; a failed run is an InputError naming the clip."""
    items = list(pairs)
    ex = make_executor(executor)
    try:
        work = StatefulWork(_load, (controller, dict(options)), _run)
        for res in ex.map_stateful(work, [job for _, job in items]):
            clip = items[res.index][0]
            if isinstance(res, ItemFailure):
                raise InputError(f"conversation {clip.id}: controller run failed: {res.reason}")
            res.value.apply(clip.frames)
            yield clip
    finally:
        ex.close()
