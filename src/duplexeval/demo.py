"""`duplexeval demo`: the whole FDB v1.0 pipeline, offline, on the built-in demo set, for each baseline.

Make (or find) the demo set, export it with each system, transcribe, apply the official rules and the
unified rules, then print one table comparing the systems side by side. Every stage resumes: a
second run reuses what the first wrote when nothing changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from duplexeval import children, stats
from duplexeval.asr.registry import DEFAULT_BACKEND
from duplexeval.errors import DuplexEvalError, InputError, RefusalError
from duplexeval.fdb.asr_stage import asr as asr_run
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.official.metric import NEEDS_JUDGE, needs_judge
from duplexeval.fdb.official.run import evaluate
from duplexeval.fdb.selection import resolve_dataset
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import ASR_FILE, MANIFEST_FILE, SUBSETS, subset_order
from duplexeval.fdb.unified import score
from duplexeval.jsonio import read_json, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.progress import table_console
from duplexeval.report.build import ReportOptions, write_report
from duplexeval.stats import NO_DATA, NOT_REACHED
from duplexeval.systems.base import System
from duplexeval.systems.registry import make_system

DEFAULT_OUT = Path("duplexeval-demo")
# The turn-based baseline served by a loopback openai-realtime server (a `duplexeval serve` child process)
# and driven over the wire, all samples at once: the network path on a known system, at the protocol's
# default 24 kHz, so the column can be compared with `turn-based` (docs/network.md).
NETWORK_DEMO = "loopback:protocol=openai-realtime,serve=turn-based"
DEFAULT_SYSTEMS: tuple[str, ...] = ("silent", "turn-based", "talk-over", "backchannel", NETWORK_DEMO)
LABELS = {NETWORK_DEMO: "turn-based@openai-realtime"}


def unified_rows() -> list[tuple[str, str, str]]:
    """(subset, metric, label) of the unified headline rows, in table order: each subset's task's `headline`, a
    latency labelled as its median."""
    rows = []
    for subset in SUBSETS:
        task = task_of(subset)
        kinds = task.unified.metric_kinds if task.unified is not None else {}
        for h in task.headline:
            median = isinstance(kinds.get(h.metric), type) and issubclass(kinds[h.metric], stats.Latency)
            rows.append((subset, h.metric, f"{h.metric} (median)" if median else h.metric))
    return rows


@dataclass
class SystemRun:
    """One system's tree and what each stage did to it."""

    spec: str
    label: str
    tree: Path
    stages: dict[str, str] = field(default_factory=dict)


@dataclass
class DemoResult:
    out: Path
    dataset_root: Path
    runs: list[SystemRun]
    seconds: float
    report: Path | None = None  # OUT/report.html, when at least one tree was scored


def tree_name(spec: str) -> str:
    """A folder name for a system spec: the bare name, or name + a short hash when it has parameters."""
    if spec in LABELS:
        return re.sub(r"[^A-Za-z0-9._-]", "-", LABELS[spec])
    name, _, rest = spec.partition(":")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name.strip()) or "system"
    if not rest.strip():
        return safe
    return f"{safe}-{hashlib.sha256(spec.encode('utf-8')).hexdigest()[:8]}"


class DemoRefusal(RefusalError):
    """The demo folder holds a tree of another run: the demo stops (docs/cli.md section 4) instead of replacing it."""


class NetExport:
    """`duplexeval fdb export --concurrency N` of a network system in a child process (see run_demo)."""

    def __init__(self, spec: str, dataset: Path, tree: Path, concurrency: int) -> None:
        # --min-eligible 0: the demo reports ineligible samples itself and goes on; exit 2 is still a failure
        self.args = [sys.executable, "-m", "duplexeval", "fdb", "export", "--system", spec, "--dataset", str(dataset),
                     "--out", str(tree), "--concurrency", str(concurrency), "--quiet", "--min-eligible", "0"]
        self.proc: Any = None
        self.forced = False

    def start(self, force: bool = False) -> NetExport:
        # dies with the demo (SIGKILL included), and its `duplexeval serve` child with it (duplexeval.children)
        self.proc = children.start(self.args + (["--force"] if force else []), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        self.forced = force
        return self

    def result(self, say: Callable[[str], None], label: str) -> tuple[int, int]:
        """Wait; (ran, reused). A tree of another run there is a DemoRefusal (rerun the demo with --force)."""
        out, err = self.proc.communicate()
        if self.proc.returncode != 0 and not self.forced and "--force" in err:
            raise DemoRefusal(err.strip().splitlines()[-1].removeprefix("duplexeval: error: "))
        if self.proc.returncode != 0:
            raise RefusalError(" ".join((err.strip().splitlines() or ["the export failed"])[-1:]))
        m = re.search(r"\((\d+) run, (\d+) reused\)", out)
        if m is None:
            raise RefusalError(f"unexpected export output: {out.strip()[:200]}")
        return int(m.group(1)), int(m.group(2))


def _stop(background: dict[str, NetExport]) -> None:
    """End the network exports still running (the demo is stopping); each is our own child process."""
    for job in background.values():
        if job.proc is not None and job.proc.poll() is None:
            job.proc.terminate()
            job.proc.wait()


def _asr_is_current(tree: Path) -> bool:
    asr = tree / ASR_FILE
    if not asr.is_file():
        return False
    try:
        done: JsonObject = read_json(asr)
        return done.get("manifest_sha256") == sha256_file(tree / MANIFEST_FILE)
    except Exception:  # noqa: BLE001 - unreadable: transcribe again
        return False


def run_demo(
    out: str | Path = DEFAULT_OUT,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    progress: bool = True,
    say: Callable[[str], None] = print,
    dataset: Any = "demo",
    asr_backend: str | None = None,
    force: bool = False,
) -> DemoResult:
    """Run every stage for each system; returns where everything is (render it with `comparison_table`).

    A rerun resumes its own trees; a tree of another run in `out` (an older demo set, other parameters) stops the
    demo with a refusal unless `force`, which exports it again."""
    t0 = time.monotonic()
    if not systems:
        raise InputError("--systems: give at least one system")
    made = [(spec, make_system(spec)) for spec in systems]  # check every spec before any work
    labels = [tree_name(spec) for spec in systems]
    if len(set(labels)) != len(labels):
        raise InputError(f"--systems: the same system is listed twice ({', '.join(systems)})")
    out = Path(out)
    say("demo: making or finding the demo set (espeak-ng)")
    ds = resolve_dataset(dataset)
    ds_root = getattr(ds, "root", None)  # DatasetLike's optional member; the network export needs the folder
    if ds_root is None:
        raise InputError(f"dataset {ds.name!r}: the demo needs a dataset folder (a dataset object with a root)")
    ds_root = Path(ds_root)
    say(f"demo: dataset {ds.name!r}: {len(ds.samples())} samples in {ds_root}")
    runs: list[SystemRun] = []

    def do_export(system: System, label: str, tree: Path, show: bool) -> Any:
        try:
            return export(system, ds, tree, progress=show, force=force)
        # a tree of another run (an older demo set, other parameters): never replaced silently
        except RefusalError as exc:
            raise DemoRefusal(str(exc)) from None

    # Network exports wait on the wall clock: start them now as `duplexeval fdb export` child processes, so their
    # real-time wait overlaps the other systems' work without sharing this interpreter's lock (a thread here was
    # paced up to 0.3 s late while the in-process exports ran).
    background: dict[str, NetExport] = {}
    for (spec, system), label in zip(made, labels):
        if getattr(system, "wall_clock", False):
            say(f"demo: [{label}] export over the network started (a child process, all samples at once)")
            background[label] = NetExport(spec, ds_root, out / label, len(ds.samples())).start(force=force)
    # The in-process exports (seconds) overlap the network ones; ASR and scoring wait until every export is
    # done, so nothing CPU-heavy competes with a session's send schedule.
    for (spec, system), label in zip(made, labels):
        run = SystemRun(spec, label, out / label)
        runs.append(run)
        if label in background:
            continue
        say(f"demo: [{label}] export")
        try:
            res = do_export(system, label, run.tree, progress)
            run.stages["export"] = f"{res.ran} run, {res.reused} reused"
        except DemoRefusal:
            _stop(background)
            raise
        except DuplexEvalError as exc:
            say(f"demo: [{label}] export failed: {exc}")
            run.stages["export"] = f"failed: {exc}"
    for run in runs:
        if run.label in background:
            say(f"demo: [{run.label}] waiting for the network export")
            try:
                ran, reused = background[run.label].result(say, run.label)
                run.stages["export"] = f"{ran} run, {reused} reused"
            except DemoRefusal:
                _stop(background)
                raise
            except DuplexEvalError as exc:
                say(f"demo: [{run.label}] export failed: {exc}")
                run.stages["export"] = f"failed: {exc}"
    for run in runs:
        label = run.label
        if run.stages["export"].startswith("failed"):
            continue

        def asr(tree: Path) -> str:
            if _asr_is_current(tree):
                return "reused"
            asr_run(tree, DEFAULT_BACKEND if asr_backend is None else asr_backend, progress=progress, force=True)
            return "done"

        def official(tree: Path) -> str:
            evaluate(tree, progress=progress)
            return "done"

        def unified(tree: Path) -> str:
            score(tree)
            return "done"

        steps = (
            ("asr", "asr", asr),
            ("evaluate", "evaluate (official rules)", official),
            ("score", "score (unified rules)", unified),
        )
        for key, title, step in steps:
            if any(v.startswith("failed") for v in run.stages.values()):
                run.stages[key] = "skipped (an earlier stage failed)"
                continue
            say(f"demo: [{label}] {title}")
            try:
                run.stages[key] = step(run.tree)
            except DuplexEvalError as exc:  # one system's failed stage must not hide the others' results
                say(f"demo: [{label}] stage {key} failed: {exc}")
                run.stages[key] = f"failed: {exc}"
    report = _write_report(out, runs, say, ds)
    return DemoResult(out, ds_root, runs, time.monotonic() - t0, report)


BASELINE = "turn-based"  # what the others are compared with on the report's first picture


def _write_report(out: Path, runs: Sequence[SystemRun], say: Callable[[str], None], dataset: Any) -> Path | None:
    """OUT/report.html from every tree whose scoring finished: all systems side by side against the turn-based
    baseline (when it ran), labelled as in the table, with the dataset's input audio."""
    scored = [r for r in runs if r.stages.get("score") == "done"]
    if not scored:
        return None
    say("demo: report.html")
    labels = tuple(LABELS.get(r.spec, r.label) for r in scored)
    baseline = next((lb for r, lb in zip(scored, labels) if r.spec.split(":")[0] == BASELINE), None)
    opts = ReportOptions(labels=labels, baseline=baseline, dataset=dataset, jobs=os.cpu_count() or 1)
    try:
        return write_report([r.tree for r in scored], out / "report.html", options=opts)
    except DuplexEvalError as exc:
        say(f"demo: report failed: {exc}")
        return None


# ---------------------------------------------------------------- the side-by-side table (pure)


def _num(x: float | None, digits: int = 2) -> str:
    return NO_DATA if x is None else f"{x:.{digits}f}"


def format_metric(m: JsonObject | None) -> str:
    """One table cell: a share `value [lo, hi] (count/n)`, a latency `median [lo, hi] (n)`, or a ratio."""
    if not isinstance(m, dict):
        return NO_DATA
    if needs_judge(m):
        return f"{NEEDS_JUDGE} ({m.get('n', 0)})"
    if "median" in m:
        n = m.get("n")
        if m.get("median") is None:
            return f"{NOT_REACHED} ({n})" if n else f"{NO_DATA} (0)"
        lo, hi = (m.get("median_interval") or [None, None])[:2]
        return f"{_num(m['median'])} s [{_num_r(lo)}, {_num_r(hi)}] ({n})"
    if "count" in m:
        if m.get("value") is None:
            return f"{NO_DATA} (0/{m.get('n', 0)})"
        lo, hi = (m.get("interval") or [None, None])[:2]
        return f"{_num(m['value'])} [{_num(lo)}, {_num(hi)}] ({m['count']}/{m['n']})"
    if "value" in m:
        lo, hi = (m.get("interval") or [None, None])[:2]
        if m.get("std") is not None or "note" in m:  # official reference metric: mean ± std (n)
            std = "" if m.get("std") is None else f" ± {_num(m['std'])}"
            return f"{_num(m.get('value'))}{std} ({m.get('n', '?')})"
        return f"{_num(m.get('value'))} [{_num(lo)}, {_num(hi)}]"
    return NO_DATA


def _num_r(x: Any) -> str:
    """An interval endpoint of a latency quantile: null there means not reached (a never-responded sample)."""
    return NOT_REACHED if x is None else _num(x)


def _load(tree: Path, name: str) -> JsonObject | None:
    """A stage's result file, only if it was made from the tree's current manifest.json and asr.json."""
    p = tree / name
    if not p.is_file() or not (tree / MANIFEST_FILE).is_file() or not (tree / ASR_FILE).is_file():
        return None
    obj = read_json(p)
    if not isinstance(obj, dict):
        return None
    if (obj.get("manifest_sha256") != sha256_file(tree / MANIFEST_FILE)
        or obj.get("asr_sha256") != sha256_file(tree / ASR_FILE)):
        return None  # stale: made before the tree last changed
    return obj


def _short(subset: str) -> str:
    return SUBSETS[subset].label if subset in SUBSETS else subset


def comparison_rows(trees: Sequence[Path]) -> list[tuple[str, str, list[str]]]:
    """(subset, metric, one cell per tree) for the unified headline metrics and every official metric."""
    unified = [_load(t, "unified.json") for t in trees]
    summary = [_load(t, "summary.json") for t in trees]
    rows: list[tuple[str, str, list[str]]] = []
    for subset, metric, label in unified_rows():
        if not any(u and subset in u.get("subsets", {}) for u in unified):
            continue
        cells = [format_metric(((u or {}).get("subsets", {}).get(subset, {}).get("metrics", {}) or {}).get(metric))
                 for u in unified]
        rows.append((_short(subset), label, cells))
    official_keys: list[tuple[str, str]] = []
    for s in summary:
        for subset, block in ((s or {}).get("subsets") or {}).items():
            for name in (block.get("metrics") or {}):
                if (subset, name) not in official_keys:
                    official_keys.append((subset, name))

    order = subset_order()
    official_keys.sort(key=lambda k: order.index(k[0]) if k[0] in order else 99)
    for subset, name in official_keys:
        cells = [format_metric((((s or {}).get("subsets") or {}).get(subset, {}).get("metrics") or {}).get(name))
                 for s in summary]
        rows.append((_short(subset), f"official: {name}", cells))
    return rows


def comparison_table(result: DemoResult) -> Any:
    """A rich Table: rows = metrics, columns = systems; cells `value [lo, hi] (n)`."""
    table = Table(title="duplexeval demo: systems side by side (95% intervals; counts in parentheses)",
                  show_lines=False)
    table.add_column("subset", style="bold")
    table.add_column("metric")
    for run in result.runs:
        table.add_column(run.label, justify="right")
    prev = None
    for subset, metric, cells in comparison_rows([r.tree for r in result.runs]):
        table.add_row(subset if subset != prev else "", metric, *cells)
        prev = subset
    return table


def print_report(result: DemoResult, console: Any | None = None) -> None:
    """The table, then where each tree is and what each stage did."""
    console = console or table_console()  # a log or a pipe: do not squeeze the table into 80 columns
    console.print(comparison_table(result))
    for run in result.runs:  # every number carries its signature: one line per tree, under the table
        u = _load(run.tree, "unified.json")
        if u and isinstance(u.get("signature"), dict):
            console.print(f"signature ({run.label}): {u['signature']['compact']}", soft_wrap=True, highlight=False)
    console.print(f"dataset: {result.dataset_root}")
    for run in result.runs:
        stages = ", ".join(f"{k} {v}" for k, v in run.stages.items())
        console.print(f"{run.label}: {run.tree}  ({stages})")
    console.print(f"done in {result.seconds:.1f} s. Per-sample rows: <tree>/unified-samples.jsonl; "
                  f"rescore with `duplexeval fdb score <tree>`.")
    if result.report is not None:
        console.print(f"report: {result.report}", soft_wrap=True)
