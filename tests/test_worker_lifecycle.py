"""Local pool workers die with their driver: SIGKILL `fdb asr` mid-run, its workers exit, and a resume ignores the
output.json files no journal record vouches for, ending with the bytes of an uninterrupted run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duplexeval.fdb import asr_stage
from tests.helpers import ROOT, SRC
from tests.helpers import workers as wh
from tests.helpers.processes import alive, child_pids


def _records(tree: Path) -> list[Path]:
    return [p for p in (tree / asr_stage.JOURNAL_DIR).glob("*.json") if p.name != asr_stage.JOURNAL_RUN_RECORD]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the worker processes")
@pytest.mark.slow
def test_sigkill_of_asr_driver_takes_its_workers_and_resume_gives_the_same_bytes(tmp_path: Path) -> None:
    from duplexeval.fdb.export_stage import export

    tree = tmp_path / "killed"
    export("turn-based", "demo", tree, progress=False)
    clean = tmp_path / "clean"
    shutil.copytree(tree, clean)
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from tests.helpers import workers as wh\nfrom duplexeval.fdb import asr_stage\n"
            f"asr_stage.asr({str(tree)!r}, backend=wh.SleepyBackend(0.25), jobs=2, progress=False)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.monotonic() + 60
        while not _records(tree):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            time.sleep(0.05)
        workers = child_pids(proc.pid)
        assert len(workers) >= 2  # the two pool workers (and multiprocessing's resource tracker)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(w) for w in workers), "workers outlived their killed driver"
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (tree / "asr.json").exists()
    # a transcript no journal record vouches for (a worker wrote it as the driver died): resume must redo it
    unvouched = [d for d in sorted(tree.glob("*/*")) if d.is_dir() and (d / "output.wav").exists()
                 and not (tree / asr_stage.JOURNAL_DIR / f"{d.parent.name}__{d.name}.json").exists()]
    (unvouched[0] / "output.json").write_text('{"chunks": "not from this run"}')
    res = asr_stage.asr(tree, backend=wh.SleepyBackend(0.25), jobs=2, progress=False)
    assert 0 < res.n_resumed < res.n_eligible and not res.failed
    asr_stage.asr(clean, backend=wh.SleepyBackend(0.25), jobs=2, progress=False)
    for p in sorted(clean.rglob("*.json")):
        assert (tree / p.relative_to(clean)).read_bytes() == p.read_bytes(), p


@pytest.mark.parametrize("jobs", [1, 2])
def test_local_stateful_work_loads_once_per_worker_and_keeps_order(jobs: int) -> None:
    from duplexeval.executors import (
        ExecutorSpec,
        ItemResult,
        StatefulWork,
        make_executor,
    )

    ex = make_executor(ExecutorSpec("local", jobs=jobs))
    got = list(ex.map_stateful(StatefulWork(wh.init_pid, None, wh.loaded_where), list(range(8))))
    assert all(isinstance(g, ItemResult) for g in got) and [g.value[0] for g in got] == list(range(8))
    assert all(loaded_in == ran_in for _, loaded_in, ran_in in (g.value for g in got))  # the state of that process
    pids = {g.value[2] for g in got}
    assert pids == {os.getpid()} if jobs == 1 else (len(pids) <= 2 and os.getpid() not in pids)
