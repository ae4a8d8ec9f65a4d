"""Every worker computes with the same numeric threads whichever executor runs it (in this process, a local pool
process, a Ray task or actor): libraries whose results depend on their thread count (OpenBLAS, CTranslate2's
OpenMP) then give the same bytes everywhere. The ASR signature records the count."""

from __future__ import annotations

import os

import pytest

from duplexeval.executors import WORKER_THREADS, ExecutorSpec, LocalExecutor, StatefulWork, make_executor
from tests.helpers import workers as wh

PINNED = {"OMP_NUM_THREADS": str(WORKER_THREADS)}


def _values(results: list) -> list:
    return [r.value for r in results]


def _pinned(info: dict) -> bool:
    return info["OMP_NUM_THREADS"] == PINNED["OMP_NUM_THREADS"] and all(n == WORKER_THREADS for _, n in info["pools"])


def test_local_workers_and_this_process_compute_with_the_pinned_threads() -> None:
    before = wh.numeric_threads()
    for jobs in (1, 2):
        ex = LocalExecutor(jobs)
        try:
            plain = _values(list(ex.map_ordered(wh.numeric_threads, [0, 1, 2])))
            stateful = _values(list(ex.map_stateful(
                StatefulWork(wh.load_ctranslate2, None, wh.stateful_numeric_threads), [0, 1, 2])))
        finally:
            ex.close()
        assert all(_pinned(i) for i in plain + stateful), (jobs, plain, stateful)
        # CTranslate2's pool, loaded in the worker
        assert any(api == "openmp" for i in stateful for api, _ in i["pools"])
    after = wh.numeric_threads()
    assert after["OMP_NUM_THREADS"] == before["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS")


@pytest.mark.ray
def test_ray_workers_compute_with_the_same_threads_as_local_ones(ray_local) -> None:
    ex = make_executor(ExecutorSpec("ray"))
    try:
        tasks = _values(list(ex.map_ordered(wh.numeric_threads, [0, 1, 2])))
        actors = _values(list(ex.map_stateful(StatefulWork(wh.load_ctranslate2, None, wh.stateful_numeric_threads),
                                              [0, 1, 2])))
    finally:
        ex.close()
    local = LocalExecutor(2)
    try:
        there = _values(list(local.map_stateful(StatefulWork(wh.load_ctranslate2, None, wh.stateful_numeric_threads),
                                                [0, 1])))
    finally:
        local.close()
    assert all(_pinned(i) for i in tasks + actors)
    assert {tuple(i["pools"]) for i in actors} == {tuple(i["pools"]) for i in there}


def test_the_asr_signature_records_the_worker_threads() -> None:
    from duplexeval.fdb.signatures import asr_component

    comp = asr_component({"name": "whisper-align",
                          "model": {"name": "whisper tiny.en (CTranslate2)", "sha256": "0" * 64},
                          "options": {"a": 1}, "worker_threads": WORKER_THREADS})
    assert comp.settings["thr"] == WORKER_THREADS
