"""Time `duplexeval report` on the full-size FDB v1.0 tree (727 samples) and measure the page's size.

The tree is the one `benchmarks/score_full_tree.py` builds (default .cache/bench-full-tree; built here when
missing, then scored once with `duplexeval fdb score` so unified.json exists). The target: under 30 s and
under 20 MB.

    .venv/bin/python benchmarks/report.py [--cache DIR] [--jobs N] [--out PATH]

Prints the wall and CPU time of the CLI (process start included), the page size, the per-part split
(loading, timelines, the rest) and the load average, since the build machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "duplexeval", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path(".cache/bench-full-tree"))
    ap.add_argument("--jobs", type=int, default=0, help="timeline processes (0: one per CPU)")
    ap.add_argument("--out", type=Path, default=None, help="where to write the page (default: CACHE/../report-full.html)")
    args = ap.parse_args()
    root = args.cache
    if not (root / "asr.json").is_file():
        from score_full_tree import build

        t0 = time.perf_counter()
        build(root)
        print(f"built {root} in {time.perf_counter() - t0:.1f} s")
    if not (root / "unified.json").is_file():
        subprocess.run(_cli("fdb", "score", str(root)), check=True, stdout=subprocess.DEVNULL)
        print(f"scored {root}")
    out = args.out or root.parent / "report-full.html"
    jobs = args.jobs or os.cpu_count() or 1

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(_cli("report", str(root), "--out", str(out), "--jobs", str(jobs)), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = out.stat().st_size
    page = out.read_text(encoding="utf-8")
    n_sections = page.count('<article class="smp')
    n_svg = len(re.findall(r"<svg", page))
    print(f"`duplexeval report` on {root}: wall {wall:.2f} s, CPU {cpu:.2f} s (user+sys, all processes), {jobs} timeline processes")
    print(f"page: {out}, {size / 1e6:.2f} MB, {n_sections} sample sections, {n_svg} inline SVG figures")
    print(f"targets: under 30 s {'met' if wall < 30 else 'NOT met'}, under 20 MB {'met' if size < 20e6 else 'NOT met'}")

    from duplexeval.fdb.results import load_scored
    from duplexeval.report.fdb_evidence import NONE, gather

    t0 = time.perf_counter()
    tree = load_scored(root)
    t1 = time.perf_counter()
    gather([tree], {}, NONE, jobs)
    t2 = time.perf_counter()
    print(f"in process: load {t1 - t0:.2f} s, {len(tree.manifest.samples)} samples read {t2 - t1:.2f} s "
          f"({(t2 - t1) / len(tree.manifest.samples) * 1000:.1f} ms each over {jobs} processes)")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (timings are inflated when it exceeds the CPUs)")


if __name__ == "__main__":
    main()
