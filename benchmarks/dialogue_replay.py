"""Replay speed of `duplexeval dialogue run` (spec 004): cases per second for the Python baselines
and the simulator's own overhead per event.

    .venv/bin/python benchmarks/dialogue_replay.py                 # 4,000 MiU + 4 x 1,000 UiM cases
    .venv/bin/python benchmarks/dialogue_replay.py --n-miu 400 --n-uim 100 --repeats 5

For each baseline it times, as the least CPU time of `--repeats` runs over the whole set (making the
cases is not timed; `time.process_time`, because the build machine is shared and its wall times
swing two-fold with the other work):
- `simulate`: the virtual-clock replay alone;
- `+ rows`: replay plus the per-case row and the decision-log lines (what `run` computes per case);
- `run_stage.run`: the whole stage in this process, writing cases.jsonl and decisions.jsonl.
The overhead per event is the replay time of a manager that never acts, divided by the events it got.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from duplexeval.dialogue import run_stage
from duplexeval.dialogue.baselines import BASELINES, make_manager
from duplexeval.dialogue.load import load_cases
from duplexeval.dialogue.protocol import CaseView, Event
from duplexeval.dialogue.rows import decision_lines, miu_row, uim_row
from duplexeval.dialogue.simulator import Clock, simulate
from duplexeval.dialogue.synth_stage import caseset_text


class Silent:
    """Never acts: what is left is the simulator's own cost."""

    events = 0

    def reset(self, view: CaseView) -> None:
        pass

    def on_event(self, ev: Event) -> tuple[()]:
        Silent.events += 1
        return ()


def best(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(least CPU time, least wall time) of this process over `repeats` runs. On a shared machine the
    wall time mostly measures the other processes; the CPU time is what the replay costs."""
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-miu", type=int, default=4000)
    ap.add_argument("--n-uim", type=int, default=1000, help="UiM cases per reason")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="dialogue-bench-"))
    path = tmp / "cases.jsonl"
    path.write_text(caseset_text(0, args.n_miu, args.n_uim), encoding="utf-8")
    t0 = time.process_time()
    cs = load_cases(path)
    load_s = time.process_time() - t0  # CPU time
    cases = cs.cases
    n = len(cases)
    clock = Clock()
    out: dict[str, object] = {"cases": n, "load_s": load_s, "systems": {}}
    print(f"{n} cases ({cs.n_miu} MiU, {cs.n_uim} UiM); loading and validating: {load_s:.2f} s CPU = "
          f"{n / load_s:,.0f} cases/s")

    Silent.events = 0
    for c in cases:
        simulate(c, Silent(), clock)
    events_per_pass = Silent.events
    silent_s, silent_w = best(lambda: [simulate(c, Silent(), clock) for c in cases], args.repeats)
    per_event_us = silent_s / events_per_pass * 1e6
    print(f"simulator overhead (manager that never acts): {events_per_pass:,} events in {silent_s:.3f} s CPU = "
          f"{per_event_us:.2f} us/event, {n / silent_s:,.0f} cases/s (wall {silent_w:.3f} s)")
    out["silent"] = {"events": events_per_pass, "cpu_s": silent_s, "wall_s": silent_w, "us_per_event": per_event_us}

    print("cases/s by CPU time (by wall time)")
    print(f"{'system':<12} {'simulate':>22} {'+ rows':>22} {'run_stage.run':>22}")
    for name in BASELINES:
        m = make_manager(name)
        sim_s = best(lambda: [simulate(c, m, clock) for c in cases], args.repeats)  # noqa: B023

        def with_rows() -> None:
            for c in cases:
                rep = simulate(c, m, clock)  # noqa: B023
                _ = miu_row(c, rep) if c.family == "MiU" else uim_row(c, rep, clock)  # type: ignore[arg-type]
                decision_lines(rep)

        rows_s = best(with_rows, args.repeats)
        run_s = best(lambda: run_stage.run(cs, name, {}, clock, tmp / name), args.repeats)  # noqa: B023
        out["systems"][name] = {"simulate": sim_s, "rows": rows_s, "run_stage.run": run_s}  # type: ignore[index]
        cells = "".join(f"{n / c:>12,.0f} ({n / w:>7,.0f})" for c, w in (sim_s, rows_s, run_s))
        print(f"{name:<12} {cells}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
