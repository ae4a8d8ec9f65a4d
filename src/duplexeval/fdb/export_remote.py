"""`fdb export --executor ray`: sessions spread over Ray workers, one sample per task, so one client machine does
not bound how many sessions run at once.

A pre-pass runs every selected sample that has no finished journal (`trace.json`) of this run: each worker builds
the system from its spec once, runs the session exactly as a local export does (its own input pacing and clock,
per session), and writes the sample's files and `trace.json` into the tree, which must therefore be a path every
worker sees (docs/scale.md). The export's usual loop then finds every sample in the journal, so `manifest.json`
and every file equal a local export's. Network systems read their API keys from each worker's own environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.executors import ExecutorSpec, ItemFailure, StatefulWork, make_executor
from duplexeval.fdb.export import (
    _export_one,
    _resolve_system,
    check_run_file,
    progress_bar,
    reuse_entry,
)
from duplexeval.jsonio import dumps, sha256_bytes, sha256_file


def _one(system: Any, job: tuple[Any, str, str, str]) -> None:
    sample, out, run_sha, input_sha = job
    _export_one(system, sample, Path(out), run_sha, input_sha)


def prepass(system: Any, chosen: list[Any], out: Path, run: dict[str, Any], force: bool, progress: bool,
            executor: ExecutorSpec, label: str) -> int:
    """Run the samples this run has not finished (all of them with `force`) on `executor`; returns how many ran."""
    check_run_file(out, run, force, str(run["tool"]))
    run_sha = sha256_bytes(dumps(run).encode("utf-8"))
    where = str(out.resolve())  # workers may run in another folder (or on another machine)
    todo = []
    for s in chosen:
        key = sha256_file(s.input_path)
        if force or reuse_entry(out / s.subset / s.id, run_sha, key, f"{s.subset}/{s.id}") is None:
            todo.append((s, where, run_sha, key))
    if not todo:
        return 0
    ex = make_executor(executor)
    try:
        with progress_bar(len(todo), label, progress) as advance:
            for res in ex.map_stateful(StatefulWork(_resolve_system, system, _one), todo):
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
