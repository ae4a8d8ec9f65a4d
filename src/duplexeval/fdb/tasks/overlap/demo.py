"""The v1.5 part of `duplexeval demo`: four overlap scenarios, each baseline, every fdb stage, one table.

The demo set is one espeak-ng sample per scenario (`synth.write_set`, seed 0). Each system gets an FDB tree under
`OUT/v1.5/<system>` made by the stages the `fdb` commands run: export (two sessions per sample), asr (four
transcripts), evaluate (the official rules, without a judge: its prompt is not ours to ship) and score (our
rules). A finished tree made from the same demo set is reused.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from duplexeval.errors import DuplexEvalError
from duplexeval.fdb import asr_stage
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.official import evaluate
from duplexeval.fdb.tasks.overlap import synth
from duplexeval.fdb.tasks.overlap.scenarios import SCENARIOS, SUBSET_ORDER
from duplexeval.fdb.unified import score
from duplexeval.jsonio import read_json, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.fdb_names import SUMMARY_FILE, UNIFIED_FILE
from duplexeval.stats import NO_DATA, NOT_REACHED

DEMO_SYSTEMS = ("silent", "turn-based", "talk-over", "backchannel")
DATA_STAMP = "demo-data.sha256"  # the demo set a finished tree was made from (beside the tree's files)
PER_SUBSET = 1


@dataclass
class V15Run:
    system: str
    tree: Path
    stages: dict[str, str] = field(default_factory=dict)


@dataclass
class V15Demo:
    data: Path
    runs: list[V15Run]


def _data(out: Path, say: Callable[[str], None]) -> Path:
    data = out / "data"
    listing = data / synth.DATASET_FILE
    if listing.is_file() and read_json(listing).get("declared") == synth.small(PER_SUBSET):
        return data
    shutil.rmtree(data, ignore_errors=True)
    say("demo v1.5: making the overlap set (espeak-ng, one sample per scenario)")
    return synth.write_set(data, synth.small(PER_SUBSET), seed=0, name="demo-v1.5")


def _current(tree: Path, data_sha: str) -> bool:
    try:
        return (tree / UNIFIED_FILE).is_file() and read_json(tree / DATA_STAMP) == data_sha
    except DuplexEvalError:
        return False


def run(out: str | Path, systems: Sequence[str] = DEMO_SYSTEMS, say: Callable[[str], None] = print,
        asr_backend: str = "whisper-align") -> V15Demo:
    """Every v1.5 stage for each system on the demo overlap set (reusing finished trees)."""
    root = Path(out) / "v1.5"
    root.mkdir(parents=True, exist_ok=True)
    data = _data(root, say)
    data_sha = sha256_file(data / synth.DATASET_FILE)
    runs = []
    for spec in systems:
        tree = root / spec.replace(":", "_").replace("=", "-").replace(",", "_")
        r = V15Run(spec, tree)
        runs.append(r)
        if _current(tree, data_sha):
            r.stages = {"all": "reused"}
            continue
        shutil.rmtree(tree, ignore_errors=True)
        try:
            say(f"demo v1.5: [{spec}] export (two sessions per sample)")
            export(spec, data, tree, progress=False)
            r.stages["export"] = "done"
            say(f"demo v1.5: [{spec}] asr (four transcripts per sample)")
            res = asr_stage.asr(tree, backend=asr_backend, progress=False)
            if res.failed:
                raise DuplexEvalError(f"asr failed on {res.n_error} sample(s): {res.errors[0][1]}")
            r.stages["asr"] = "done"
            say(f"demo v1.5: [{spec}] evaluate")
            evaluate(tree, progress=False)
            r.stages["evaluate"] = "done"
            say(f"demo v1.5: [{spec}] score")
            score(tree)
            r.stages["score"] = "done"
            (tree / DATA_STAMP).write_text(f'"{data_sha}"')
        except DuplexEvalError as exc:
            say(f"demo v1.5: [{spec}] failed: {exc}")
            r.stages["failed"] = str(exc)
    return V15Demo(data, runs)


def _cell(m: JsonObject | None, key: str) -> str:
    if not m:
        return NO_DATA
    if "count" in m:
        return NO_DATA if m["value"] is None else f"{m['value']:.2f} ({m['count']}/{m['n']})"
    if m.get("n", 0) == 0:
        return NO_DATA
    return NOT_REACHED if m.get("median_reached") is False else f"{m['median']:.2f} s (n={m['n']})"


ROWS = (("good_rate", "good behaviour (ours)"), ("responded_rate", "responded"), ("resumed_rate", "resumed"),
        ("continued_rate", "continued"), ("silent_rate", "silent after"), ("stop_latency_s", "stop latency (median)"),
        ("response_latency_s", "response latency (median)"))


def table(result: V15Demo) -> Table:
    """Rows = scenario x metric (unified), plus the official post-overlap wpm; columns = systems."""
    t = Table(title="duplexeval demo, FDB v1.5 overlaps: our rules (the official behaviour judge needs its prompt)")
    t.add_column("scenario", style="bold")
    t.add_column("metric")
    for r in result.runs:
        t.add_column(r.system, justify="right")
    trees = []
    for r in result.runs:
        u = read_json(r.tree / UNIFIED_FILE) if (r.tree / UNIFIED_FILE).is_file() else None
        s = read_json(r.tree / SUMMARY_FILE) if (r.tree / SUMMARY_FILE).is_file() else None
        trees.append((u, s))
    for subset in SUBSET_ORDER:
        first = True
        for key, label in ROWS:
            cells = [_cell(((u or {}).get("subsets", {}).get(subset) or {}).get("metrics", {}).get(key), key)
                     for u, _ in trees]
            t.add_row(f"{SCENARIOS[subset].title} ({SCENARIOS[subset].expected})" if first else "", label, *cells)
            first = False
        cells = []
        for _, s in trees:
            m = ((s or {}).get("subsets", {}).get(subset) or {}).get("metrics") or {}
            pre, post = (m.get("pre_wpm") or {}).get("value"), (m.get("post_wpm") or {}).get("value")
            cells.append(NO_DATA if pre is None or post is None else f"{pre:.0f} -> {post:.0f}")
        t.add_row("", "wpm before -> after (official)", *cells)
    return t


def print_report(result: V15Demo, console: Any) -> None:
    console.print(table(result))
    for r in result.runs:
        u = read_json(r.tree / UNIFIED_FILE) if (r.tree / UNIFIED_FILE).is_file() else None
        s = read_json(r.tree / SUMMARY_FILE) if (r.tree / SUMMARY_FILE).is_file() else None
        for name, obj in (("unified", u), ("official", s)):
            if obj:
                console.print(f"signature v1.5 {name} ({r.system}): {obj['signature']['compact']}", soft_wrap=True,
                              highlight=False)
        console.print(f"{r.system}: {r.tree}  ({', '.join(f'{k} {v}' for k, v in r.stages.items())})", soft_wrap=True)
