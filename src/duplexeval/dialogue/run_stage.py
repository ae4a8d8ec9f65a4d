"""The `run` stage: replay every case against a system and write ``decisions.jsonl`` and
``cases.jsonl``, each led by an artifact header line (kind, schema version, duplexeval version,
signature, input hashes). Cases go through the shared executor, in case order, so the bytes are
the same for any number of jobs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from duplexeval.artifacts import header
from duplexeval.dialogue.baselines import KIND, make_manager, manager_settings
from duplexeval.dialogue.cases import MiUCase, UiMCase
from duplexeval.dialogue.kinds import CASES_KIND, DECISIONS_KIND, SCHEMA
from duplexeval.dialogue.load import CaseSet
from duplexeval.dialogue.rows import CaseRow, decision_text, error_row, miu_row, uim_row
from duplexeval.dialogue.simulator import Clock, simulate
from duplexeval.errors import RefusalError
from duplexeval.executors import ExecutorSpec, ItemFailure, make_executor
from duplexeval.jsonio import (
    atomic_write_text,
    check_output_dir,
    dumps_line,
    make_output_dir,
    sha256_bytes,
)
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import returned
from duplexeval.signature import Component, Signature

DEFINITIONS = "dialogue-spec004-2"
DECISIONS_FILE = "decisions.jsonl"
CASES_FILE = "cases.jsonl"


def clock_component(clock: Clock) -> Component:
    """The clock settings in short form: ASR cadence, first-token, per-token, endpoint, horizon (ms)."""
    return Component("clock", settings={
        "asr": clock.asr_chunk_ms, "ft": clock.first_token_ms, "tok": clock.per_token_ms,
        "ep": clock.endpoint_ms, "hz": clock.horizon_ms,
    })


def system_component(name: str, settings: JsonObject) -> Component:
    """The system's name and the hash of all its settings; scalar settings are printed too."""
    blob = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    scalars = {k: v for k, v in settings.items() if isinstance(v, (int, float, str, bool)) and len(str(v)) <= 24}
    return Component("system", name, hash=sha256_bytes(blob), settings=scalars)


def run_signature(cases: CaseSet, system: str, settings: JsonObject, clock: Clock) -> Signature:
    """What a run's numbers depend on: the case set (hash), the system and its settings, the clock."""
    comps = (
        Component("cases", f"{cases.shape}:{cases.n_miu}miu+{cases.n_uim}uim", hash=cases.sha256),
        system_component(system, settings),
        clock_component(clock),
    )
    return Signature(DEFINITIONS, comps, {"cases": cases.sha256})


@dataclass(frozen=True)
class _Job:
    system: str
    params: tuple[tuple[str, str], ...]
    clock: Clock
    out_dir: str
    case: MiUCase | UiMCase


_MANAGERS: dict[tuple[str, tuple[tuple[str, str], ...], str], Any] = {}


def _manager(system: str, params: tuple[tuple[str, str], ...], out_dir: str) -> Any:
    key = (system, params, out_dir)
    if key not in _MANAGERS:
        m = make_manager(system, dict(params))
        if callable(getattr(m, "bind", None)):
            m.bind(Path(out_dir))
        _MANAGERS[key] = m
    return _MANAGERS[key]


def replay_case(job: _Job) -> tuple[CaseRow, str]:
    """One case: its row and its decision-log text (a picklable top-level function for the executor)."""
    manager = _manager(job.system, job.params, job.out_dir)
    rep = simulate(job.case, manager, job.clock)
    row: CaseRow = miu_row(job.case, rep) if isinstance(job.case, MiUCase) else uim_row(job.case, rep, job.clock)
    errs = getattr(manager, "case_errors", None)
    if callable(errs):
        row = replace(row, system_errors=returned(KIND, job.system, "case_errors", errs(), int, "a count (int)"))
    return row, decision_text(rep)


@dataclass(frozen=True)
class RunResult:
    """The rows written, in case order, the run's signature and how many cases failed."""

    out_dir: Path
    rows: list[CaseRow]
    signature: Signature
    failures: int


STALE_AFTER_RUN = ("judgements.jsonl", "dialogue.json")  # score artifacts of a replaced run


def _check_overwrite(out_dir: Path, sig: Signature, force: bool) -> bool:
    """Refuse to replace another run (other cases, system, settings or clock) unless forced; True
    when another run is being replaced (its score files are then stale)."""
    path = out_dir / CASES_FILE
    if not path.exists():
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.loads(fh.readline())
        compact = old["signature"]["compact"]
    except (OSError, ValueError, KeyError, TypeError):
        compact = None
    if compact == sig.compact():
        return False
    if not force:
        raise RefusalError(f"{out_dir}: holds another run ({compact or 'unreadable cases.jsonl'}); use --force to "
                           "replace it, or another --out")
    return True


def run(cases: CaseSet, system: str, params: dict[str, str], clock: Clock, out_dir: Path,
        executor: ExecutorSpec | None = None, force: bool = False) -> RunResult:
    """Replay `cases` against `system`; write the two artifacts atomically into `out_dir`."""
    out_dir = check_output_dir(out_dir, "run folder")
    ptuple = tuple(sorted(params.items()))
    manager = make_manager(system, dict(ptuple))
    if callable(getattr(manager, "bind", None)):  # its settings are checked once, here, before any case
        manager.bind(out_dir)
    settings = manager_settings(manager, system)
    sig = run_signature(cases, system, settings, clock)
    if _check_overwrite(out_dir, sig, force):
        for name in STALE_AFTER_RUN:
            (out_dir / name).unlink(missing_ok=True)
    make_output_dir(out_dir, "run folder")
    jobs = [_Job(system, ptuple, clock, str(out_dir), c) for c in cases.cases]
    rows: list[CaseRow] = []
    lines: list[str] = []
    failures = 0
    ex = make_executor(executor or ExecutorSpec())
    try:
        for res in ex.map_ordered(replay_case, jobs):
            case = cases.cases[res.index]
            if isinstance(res, ItemFailure):
                failures += 1
                rows.append(error_row(case, res.reason))
                continue
            row, dec = res.value
            rows.append(row)
            lines.append(dec)
    finally:
        ex.close()
    body = {"system": system, "system_settings": settings, "clock": clock.settings(),
            "cases_file": Path(cases.path).name, "n_cases": len(cases.cases)}
    dec_head = {**header(DECISIONS_KIND, SCHEMA, sig, {"cases": cases.sha256}), **body}
    atomic_write_text(out_dir / DECISIONS_FILE, dumps_line(dec_head) + "".join(lines))
    case_head = {**header(CASES_KIND, SCHEMA, sig, {"cases": cases.sha256}), **body, "failures": failures}
    atomic_write_text(out_dir / CASES_FILE, dumps_line(case_head) + "".join(dumps_line(r.to_json()) for r in rows))
    return RunResult(out_dir, rows, sig, failures)
