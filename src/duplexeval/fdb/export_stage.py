"""`duplexeval fdb export`: drive a system over a dataset and write an FDB v1.0 tree.

The stage: choose the samples (`fdb.selection`), run each one not already finished (`fdb.export_sample`), one
after another, `--concurrency` at once on one event loop, or on Ray workers (`fdb.export_remote`), then rebuild
`manifest.json` from the samples' entries (`fdb.tree_writer`). Each sample's `trace.json` is written last and is
its resume-journal entry, so an interrupted export resumes.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec
from duplexeval.fdb.export_remote import prepass
from duplexeval.fdb.export_sample import (
    PLAYOUT_POLICY,
    export_one,
    finish_prepared,
    prepare,
    resolve_system,
    run_sessions,
    system_json,
    system_label,
)
from duplexeval.fdb.protocols import SampleLike
from duplexeval.fdb.selection import (
    DatasetArg,
    check_out_outside,
    dataset_identity,
    resolve_dataset,
    select_samples,
)
from duplexeval.fdb.tree import SampleEntry
from duplexeval.fdb.tree_writer import TreeRun, TreeWritten, build_samples, finish_run, open_journal, unfinished
from duplexeval.jsonio import make_output_dir, sha256_file
from duplexeval.progress import progress_bar
from duplexeval.systems.base import System
from duplexeval.systems.runner import DEFAULT_CALL_TIMEOUT_S


@dataclass
class RunProgress:
    """Live counters of a concurrent export (shown in the progress line)."""

    done: int = 0
    running: int = 0
    failed: int = 0
    worst_lateness_s: float = 0.0

    def line(self) -> str:
        return (f"done {self.done} running {self.running} failed {self.failed} "
                f"worst send lateness {self.worst_lateness_s * 1000:.1f} ms")


async def _run_concurrently(system: System, samples: Sequence[SampleLike], todo: list[int], out: Path, run_sha: str,
                            keys: list[str], concurrency: int, advance: Callable[[str], None],
                            state: RunProgress, call_timeout_s: float) -> dict[int, SampleEntry]:
    """Run the `todo` samples, at most `concurrency` sessions at once on this event loop."""
    sem = asyncio.Semaphore(concurrency)
    made: dict[int, SampleEntry] = {}

    async def one(i: int) -> None:
        async with sem:
            prep = await asyncio.to_thread(prepare, samples[i], out)
            state.running += 1
            try:
                traces = await run_sessions(system, prep, call_timeout_s)
            finally:
                state.running -= 1
            state.worst_lateness_s = max(state.worst_lateness_s, *(float(t.max_send_lateness_s) for t in traces))
            entry = await asyncio.to_thread(finish_prepared, prep, traces, run_sha, keys[i])
            made[i] = entry
            state.done += 1
            state.failed += int(not entry.eligible)
            advance(state.line())

    await asyncio.gather(*(one(i) for i in todo))
    return made


def export(
    system: System | str,
    dataset: DatasetArg,
    out: str | Path,
    subsets: Iterable[str] | None = None,
    limit: int | None = None,
    force: bool = False,
    progress: bool = True,
    concurrency: int = 1,
    executor: ExecutorSpec | None = None,
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
) -> TreeWritten:
    """Drive `system` (a System or a `NAME[:k=v,...]` spec) over `dataset` and write the tree `out`.

    `concurrency` > 1 runs that many sessions at once on one event loop (network systems spend most of
    their time waiting on the wall clock); the tree is the same as a sequential run's except for
    receipt-time jitter. `executor` (an ExecutorSpec of kind ray) runs the sessions on Ray workers first
    (`export_remote`). Every call into the system must return within `call_timeout_s` seconds, or that sample
    fails with `system_error` (the message in its trace.json).
    """
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}")
    if not (isinstance(call_timeout_s, (int, float)) and math.isfinite(call_timeout_s) and 0 < call_timeout_s <= 86400):
        raise InputError(f"--call-timeout must be a number of seconds in (0, 86400], got {call_timeout_s!r}")
    system_arg = system
    system = resolve_system(system)
    ds = resolve_dataset(dataset)
    chosen = select_samples(ds, subsets, limit)
    out = make_output_dir(check_out_outside(Path(out), ds), "--out")
    sysj = system_json(system, system_label(system_arg))
    run = TreeRun("export", sysj, dataset_identity(ds))
    wall = bool(getattr(system, "wall_clock", False))
    keys: dict[int, str] = {}

    def key_of(i: int) -> tuple[str, None]:
        if i not in keys:
            keys[i] = sha256_file(chosen[i].input_path)
        return keys[i], None

    made: dict[int, SampleEntry] = {}
    if concurrency > 1 and (executor is None or executor.kind == "local"):
        journal = open_journal(out, run, force)
        shas = [key_of(i)[0] for i in range(len(chosen))]
        todo = unfinished(journal, out, chosen, shas, force)
        state = RunProgress()
        with progress_bar(len(todo), f"export {system.name}", progress and bool(todo)) as advance:
            made = asyncio.run(_run_concurrently(system, chosen, todo, out, journal.run_sha256, shas, concurrency,
                                                 advance, state, call_timeout_s))

    def make(i: int, run_sha: str, input_sha: str, _payload: None) -> SampleEntry:
        if i in made:
            return made[i]
        return export_one(system, chosen[i], out, run_sha, input_sha, call_timeout_s)

    remote = 0
    if executor is not None and executor.kind != "local":
        remote = prepass(system_arg, chosen, out, run, force, progress, executor, f"export {system.name}",
                         call_timeout_s)
        force = False  # the pre-pass redid what --force asks for; the loop below finds it all in the journal
    elif made:
        remote = len(made)  # the concurrent pre-pass ran them; the loop below finds them in the journal
        force = False
    prepassed = bool(remote) or concurrency > 1 and (executor is None or executor.kind == "local")
    entries, ran, reused = build_samples(out, run, force, progress and not remote and concurrency == 1, chosen,
                                         key_of, make, f"export {system.name}", redo_ineligible=not prepassed)
    ran, reused = ran + remote, reused - remote
    info = {"tool": "duplexeval fdb export", "clock": "wall" if wall else "virtual", "frame_samples": 1280,
            "playout": PLAYOUT_POLICY, "call_timeout_s": call_timeout_s}
    return finish_run(out, ds, entries, sysj, "export", info, limit, ran, reused)
