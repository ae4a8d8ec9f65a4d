"""Replicas: the demo set against one Moshi-flavor server versus two, one conversation each.

Starts `duplexeval serve moshi --flavor kyutai` children (Kyutai's server holds one conversation at a time
and queues the next), exports the demo set through `moshi:url=<one address>` with `--concurrency 1` and
through `moshi:url=<two addresses>` with `--concurrency 2` (at most one session per replica, the moshi
default), times both, transcribes and scores both trees, and prints the wall times, their ratio, the
replica each sample ran on, and whether every sample's unified outcome is the same in both trees. The load
average is printed before and after each export. A sample the machine's load made `input_pacing_late` is run
again by rerunning the export (`fdb export` reruns exactly its ineligible samples; `--retries`, not timed), so
the scores compare the same eligible samples.

    .venv/bin/python benchmarks/replicas.py
    .venv/bin/python benchmarks/replicas.py --system 'turn-based:vad=energy' --replicas 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.fdb.asr_stage import asr as asr_run
from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.unified import score
from duplexeval.systems.net.server import ServerProcess


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _rows(tree: Path) -> dict[str, dict[str, Any]]:
    rows = {}
    for line in (tree / "unified-samples.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            rows[f"{r['subset']}/{r['sample_id']}"] = r
    return rows


def _outcome(row: dict[str, Any]) -> dict[str, Any]:
    """What a unified row decides (its categorical fields), without the times."""
    return {k: v for k, v in row.items() if isinstance(v, (str, bool)) or v is None}


def _manifest(tree: Path) -> dict[str, Any]:
    return json.loads((tree / "manifest.json").read_text())


def _replicas_of(tree: Path) -> dict[str, Any]:
    out = {}
    for s in _manifest(tree)["samples"]:
        net = s.get("export", {}).get("network", {})
        out[f"{s['subset']}/{s['id']}"] = (net.get("replica") or {}).get("replica")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="turn-based", help="The served baseline (';' separates its parameters).")
    ap.add_argument("--replicas", type=int, default=2, help="Servers in the replicated run (default 2).")
    ap.add_argument("--flavor", default="kyutai", choices=["kyutai", "rust", "personaplex"])
    ap.add_argument("--retries", type=int, default=3, help="Reruns for samples that ended ineligible (not timed).")
    args = ap.parse_args()
    ds = load_dataset("demo")
    served = args.system.replace(";", ",")
    client = "" if args.flavor != "personaplex" else ",voice_prompt=NATF2.pt"
    servers = [ServerProcess("moshi", served, options={"flavor": args.flavor}).start() for _ in range(args.replicas)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            trees, walls = {}, {}
            for name, urls, conc in (("one", servers[:1], 1), ("many", servers, args.replicas)):
                tree = Path(tmp) / name
                spec = "moshi:url=" + ",".join(s.url() for s in urls) + f",flavor={args.flavor}{client}"
                print(f"{name}: {len(urls)} replica(s), --concurrency {conc}; load before {_load()}", flush=True)
                t0 = time.monotonic()
                export(spec, ds, tree, progress=False, concurrency=conc)
                walls[name] = time.monotonic() - t0
                man = _manifest(tree)
                elig = sum(s["eligible"] for s in man["samples"])
                reasons = sorted({r for s in man["samples"] for r in s["reasons"]})
                print(f"{name}: {walls[name]:.1f} s wall, {elig}/{len(man['samples'])} eligible {reasons or ''}; "
                      f"load after {_load()}", flush=True)
                for k in range(args.retries):
                    if elig == len(man["samples"]):
                        break
                    res = export(spec, ds, tree, progress=False, concurrency=conc)  # reruns the ineligible samples only
                    man = _manifest(tree)
                    elig = sum(s["eligible"] for s in man["samples"])
                    print(f"{name}: rerun {k + 1}: {res.ran} run again, now {elig}/{len(man['samples'])} eligible; "
                          f"load {_load()}", flush=True)
                trees[name] = tree
            for tree in trees.values():
                asr_run(tree, progress=False)
                score(tree)
            a, b = _rows(trees["one"]), _rows(trees["many"])
            same = [k for k in sorted(a) if k in b and _outcome(a[k]) == _outcome(b[k])]
            differ = [k for k in sorted(a) if k in b and _outcome(a[k]) != _outcome(b[k])]
            reps = _replicas_of(trees["many"])
            spread = {
                r: sum(1 for v in reps.values() if v == r) for r in sorted({v for v in reps.values() if v is not None})}
            print(f"ratio many/one: {walls['many'] / walls['one']:.3f} ({walls['many']:.1f} s / {walls['one']:.1f} s)")
            print(f"samples per replica: {spread}")
            print(f"unified outcomes: {len(same)} of {len(a)} scored samples the same, differ: {differ}")
            ua = json.loads((trees["one"] / "unified.json").read_text())
            ub = json.loads((trees["many"] / "unified.json").read_text())
            print(f"unified.json metrics identical apart from the header: {_strip(ua) == _strip(ub)}")
            for where, x, y in _differences(_strip(ua), _strip(ub)):
                print(f"  differs: {where}: one {x}, many {y}")
    finally:
        for s in servers:
            s.stop()


def _differences(a: Any, b: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """Every leaf where two JSON documents differ (path, value in a, value in b)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [(where.lstrip("."), a, b)]


def _strip(doc: dict[str, Any]) -> Any:
    """unified.json without what names its inputs (tree paths and hashes differ between the runs)."""
    return {k: v for k, v in doc.items() if k not in ("kind", "schema_version", "duplexeval", "signature", "inputs",
                                                       "tree", "manifest_sha256", "created")}


if __name__ == "__main__":
    main()
