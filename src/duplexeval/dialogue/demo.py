"""`dialogue demo`: the built-in case set, the three baselines, the offline judge, one table.

It is an example of the Python API (`duplexeval.dialogue.api`): `synth`, `read_cases`, then `run` and `score`
each baseline, and `compare` each against the first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplexeval.dialogue import api
from duplexeval.dialogue.baselines import BASELINES
from duplexeval.dialogue.compare_stage import format_comparison
from duplexeval.dialogue.score_stage import print_report
from duplexeval.dialogue.synth_stage import DEFAULT_MIU, DEFAULT_UIM_PER_REASON
from duplexeval.jsonio import make_output_dir

if TYPE_CHECKING:
    from duplexeval.dialogue.api import DialogueScore

CASES_NAME = "cases-builtin.jsonl"


def run_demo(out: Path, seed: int = 0, console: Any | None = None, force: bool = False) -> list[DialogueScore]:
    """Write the case set into `out`, run and score each baseline in `out/<name>/`, print the comparison.

    A rerun with the same seed redoes it in place; an earlier demo of another seed there is refused unless `force`
    (so is a run there that another judge scored)."""
    out = make_output_dir(out, "demo folder")
    path = out / CASES_NAME
    api.synth(out=path, seed=seed, n_miu=DEFAULT_MIU, n_uim=DEFAULT_UIM_PER_REASON, force=force)
    cases = api.read_cases(path)
    scores = []
    for name in BASELINES:
        api.run(cases, system=name, out=out / name, force=force)
        scores.append(api.score(out / name, judge="expected", force=force))
    print_report([s.document for s in scores], list(BASELINES),
                 f"duplex dialogue demo (spec 004): {len(cases.cases)} built-in cases (ours, not the paper's), judge "
                 "expected", console)
    base = BASELINES[0]
    lines = ["paired on the same cases (bootstrap 95% interval of B - A; McNemar exact test):"]
    for name in BASELINES[1:]:
        cmp = api.compare(out / base, out / name)
        lines.extend("  " + ln for ln in format_comparison(base, name, cmp.document))
    if console is None:
        print("\n".join(lines))
    else:
        console.print("\n".join(lines))
    return scores
