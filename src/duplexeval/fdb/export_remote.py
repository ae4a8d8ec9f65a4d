"""`fdb export --executor ray`: sessions spread over Ray workers, one sample per task, so one client machine does
not bound how many sessions run at once.

A pre-pass runs every selected sample that has no finished journal (`trace.json`) of this run: each worker builds
the system from its spec once, runs the session exactly as a local export does (its own input pacing and clock,
per session), and writes the sample's files and `trace.json` into the tree, which must therefore be a path every
worker sees (docs/scale.md). The export's usual loop then finds every sample in the journal, so `manifest.json`
and every file equal a local export's. Network systems read their API keys from each worker's own environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from duplexeval.errors import InputError, RefusalError
from duplexeval.executors import ExecutorSpec, ItemFailure, StatefulWork, make_executor
from duplexeval.fdb.export_sample import export_one, resolve_system
from duplexeval.fdb.protocols import SampleLike
from duplexeval.fdb.tree_writer import TreeRun, open_journal, unfinished
from duplexeval.jsonio import sha256_file
from duplexeval.progress import progress_bar
from duplexeval.systems.base import System

Job = tuple[SampleLike, str, str, str, float]  # (sample, tree folder, run sha256, input sha256, call timeout): one task


def _one(system: System, job: Job) -> None:
    sample, out, run_sha, input_sha, call_timeout_s = job
    export_one(system, sample, Path(out), run_sha, input_sha, call_timeout_s)


def prepass(system: System | str, chosen: Sequence[SampleLike], out: Path, run: TreeRun, force: bool,
            progress: bool, executor: ExecutorSpec, label: str, call_timeout_s: float) -> int:
    """Run the samples this run has not finished (all of them with `force`) on `executor`; returns how many ran."""
    journal = open_journal(out, run, force)
    where = str(out.resolve())  # workers may run in another folder (or on another machine)
    shas = [sha256_file(s.input_path) for s in chosen]
    todo: list[Job] = [(chosen[i], where, journal.run_sha256, shas[i], call_timeout_s)
                       for i in unfinished(journal, out, chosen, shas, force)]
    if not todo:
        return 0
    ex = make_executor(executor)
    try:
        with progress_bar(len(todo), label, progress) as advance:
            for res in ex.map_stateful(StatefulWork(resolve_system, system, _one), todo):
                s = todo[res.index][0]
                if isinstance(res, ItemFailure):
                    if res.worker_lost:
                        raise RefusalError(f"sample {s.subset}/{s.id}: {res.reason}; finished samples are kept, "
                                           "rerun the same command to resume")
                    raise InputError(f"sample {s.subset}/{s.id}: {res.reason}")
                advance(f"{s.subset}/{s.id}")
    finally:
        ex.close()
    return len(todo)
