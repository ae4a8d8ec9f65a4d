"""`dialogue demo`: the built-in case set, the three baselines, the offline judge, one table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duplexeval.dialogue import run_stage, score_stage
from duplexeval.dialogue.baselines import BASELINES
from duplexeval.dialogue.compare_stage import compare_runs, format_comparison
from duplexeval.dialogue.judges import ExpectedJudge
from duplexeval.dialogue.load import load_cases
from duplexeval.dialogue.score_stage import print_report
from duplexeval.dialogue.simulator import Clock
from duplexeval.dialogue.synth_stage import (
    DEFAULT_MIU,
    DEFAULT_UIM_PER_REASON,
    caseset_header,
    caseset_text,
    check_caseset_out,
)
from duplexeval.jsonio import atomic_write_text, make_output_dir

CASES_NAME = "cases-builtin.jsonl"


def run_demo(out: Path, seed: int = 0, console: Any | None = None, force: bool = False) -> list[dict[str, Any]]:
    """Write the case set into `out`, run and score each baseline in `out/<name>/`, print the comparison.

    A rerun with the same seed redoes it in place; an earlier demo of another seed there is refused unless `force`."""
    out = make_output_dir(out, "demo folder")
    path = out / CASES_NAME
    check_caseset_out(path, caseset_header(seed, DEFAULT_MIU, DEFAULT_UIM_PER_REASON), force)
    atomic_write_text(path, caseset_text(seed))
    cases = load_cases(path)
    reports = []
    for name in BASELINES:
        run_stage.run(cases, name, {}, Clock(), out / name, force=force)
        reports.append(score_stage.score(out / name, ExpectedJudge()))
    print_report(reports, list(BASELINES), f"duplex dialogue demo (spec 004): {len(cases.cases)} built-in cases (ours, "
                                           "not the paper's), judge expected", console)
    base = BASELINES[0]
    lines = ["paired on the same cases (bootstrap 95% interval of B - A; McNemar exact test):"]
    for name in BASELINES[1:]:
        lines.extend("  " + ln for ln in format_comparison(base, name, compare_runs(out / base, out / name)))
    if console is None:
        print("\n".join(lines))
    else:
        console.print("\n".join(lines))
    return reports
