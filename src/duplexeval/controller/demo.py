"""`controller demo`: espeak-ng two-channel conversations, labels derived from their word times, the two baselines
run through the streaming runner and the offline replay, and compared with the grouped paired bootstrap.
Offline and deterministic; well under a minute for the default size."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from duplexeval import controller
from duplexeval.controller.api import CompareResult, ControllerReport
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.labels.conversations import write_conversations
from duplexeval.controller.metrics.compare import format_comparison
from duplexeval.controller.metrics.report import format_report
from duplexeval.controller.runtime.baselines import make
from duplexeval.errors import RefusalError
from duplexeval.jsonio import write_json
from duplexeval.reruns import read_header

DEMO_BASELINES = ("silence", "silero")
DEMO_RECORD = "demo.json"  # the settings a demo folder was made with: a rerun with the same ones writes it again
DEMO_KIND = "duplexeval.controller.demo"


@dataclass
class DemoResult:
    """Paths written and what the API returned (for printing and tests)."""

    out: Path
    manifest: Path
    reports: dict[str, ControllerReport]
    comparison: CompareResult
    seconds: float


def run_demo(out: str | Path, n: int = 4, exchanges: int = 4, seed: int = 0, force: bool = False) -> DemoResult:
    """Make the conversations, then with the family's API (`duplexeval.controller`, an example of it): run each
    baseline into its data folder, evaluate both, compare B = silero vs A = silence."""
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
    policy = EvaluationPolicy()
    reports: dict[str, ControllerReport] = {}
    for name in DEMO_BASELINES:
        info = {"controller": f"baseline:{name}", "controller_config": make(name).config(),
                "conversations": str(manifest.relative_to(out))}  # fmt: skip
        controller.run(controller=name, out=out / f"data-{name}", conversations=manifest, force=True, info=info)
        reports[name] = controller.evaluate(out / f"data-{name}", policy=policy, json_out=out / f"report-{name}.json",
                                            label=f"data-{name}")  # fmt: skip
    a, b = DEMO_BASELINES  # the same file as `controller compare data-silence data-silero --json compare.json` in OUT
    comparison = controller.compare(out / f"data-{a}", out / f"data-{b}", policy=policy, json_out=out / "compare.json",
                                    labels=(f"data-{a}", f"data-{b}"))  # fmt: skip
    return DemoResult(out, manifest, reports, comparison, time.perf_counter() - t0)


def format_demo(res: DemoResult) -> str:
    """Both reports (the evaluate text format) and the comparison table."""
    lines = []
    for name, rep in res.reports.items():
        lines.append(f"=== baseline:{name}")
        lines.append(format_report(rep.document))
    doc = res.comparison.document
    ev = doc["event_metrics"]
    lines.append(f"=== compare: {doc['b']['path']} - {doc['a']['path']} "
                 f"({ev['groups']} conversations, paired bootstrap 95% CI)")  # fmt: skip
    lines.append(format_comparison(ev["metrics"]))
    lines.append(f"wrote {res.out} in {res.seconds:.1f} s")
    return "\n".join(lines)
