"""`controller demo`: espeak-ng two-channel conversations, labels derived from their word times, the two baselines
run through the streaming runner and the offline replay, and compared with the grouped paired bootstrap.
Offline and deterministic; well under a minute for the default size."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.controller.format.data import load_data, write_data
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.labels.conversations import write_conversations
from duplexeval.controller.labels.sources import conversation_clips, read_manifest
from duplexeval.controller.metrics.compare import compare, format_comparison
from duplexeval.controller.metrics.report import evaluate, format_report
from duplexeval.controller.runtime.baselines import make
from duplexeval.errors import RefusalError
from duplexeval.jsonio import write_json
from duplexeval.reruns import read_header

DEMO_BASELINES = ("silence", "silero")
DEMO_RECORD = "demo.json"  # the settings a demo folder was made with: a rerun with the same ones writes it again
DEMO_KIND = "duplexeval.controller.demo"


@dataclass
class DemoResult:
    """Paths written and the reports (for printing and tests)."""

    out: Path
    manifest: Path
    reports: dict[str, dict[str, Any]]
    comparison: dict[str, Any]
    seconds: float


def run_demo(out: str | Path, n: int = 4, exchanges: int = 4, seed: int = 0, force: bool = False) -> DemoResult:
    """Make the conversations, write one data folder per baseline, evaluate both, compare B = silero vs A = silence."""
    t0 = time.perf_counter()
    out = Path(out)
    record = {"kind": DEMO_KIND, "settings": {"conversations": n, "exchanges": exchanges, "seed": seed}}
    if out.exists() and any(out.iterdir()) and not force:
        old = read_header(out / DEMO_RECORD)
        if not old:
            raise RefusalError(f"{out}: folder is not empty and holds no controller demo; pass --force to write "
                               "the demo there")
        if old.get("settings") != record["settings"]:
            raise RefusalError(f"{out}: holds a controller demo made with other settings ({old.get('settings')} there, "
                               f"{record['settings']} now); pass --force to replace it")
    write_json(out / DEMO_RECORD, record)
    manifest = write_conversations(out / "conversations", n, seed=seed, exchanges=exchanges)
    convs = list(read_manifest(manifest))
    policy = EvaluationPolicy()
    reports: dict[str, dict[str, Any]] = {}
    folders = {}
    for name in DEMO_BASELINES:
        ctl = make(name)
        folder = out / f"data-{name}"
        write_data(folder, conversation_clips(convs, ctl),
                   info={"controller": f"baseline:{name}", "controller_config": ctl.config(),
                         "conversations": str(manifest.relative_to(out))})  # fmt: skip
        data = load_data(folder)
        rep = evaluate(data, policy, data_label=f"data-{name}")
        write_json(out / f"report-{name}.json", rep)
        reports[name] = rep
        folders[name] = data
    a, b = DEMO_BASELINES  # the same file as `controller compare data-silence data-silero --json compare.json` in OUT
    comparison = compare(f"data-{a}", f"data-{b}", folders[a], folders[b], policy, policy)
    write_json(out / "compare.json", comparison)
    return DemoResult(out, manifest, reports, comparison, time.perf_counter() - t0)


def format_demo(res: DemoResult) -> str:
    """Both reports (the evaluate text format) and the comparison table."""
    lines = []
    for name, rep in res.reports.items():
        lines.append(f"=== baseline:{name}")
        lines.append(format_report(rep))
    ev = res.comparison["event_metrics"]
    lines.append(f"=== compare: {res.comparison['b']['path']} - {res.comparison['a']['path']} "
                 f"({ev['groups']} conversations, paired bootstrap 95% CI)")  # fmt: skip
    lines.append(format_comparison(ev["metrics"]))
    lines.append(f"wrote {res.out} in {res.seconds:.1f} s")
    return "\n".join(lines)
