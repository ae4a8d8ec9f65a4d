"""FDB v1.0 for pipecat's turn stacks, driven through the real transports, and what each transport does to the numbers.

Part `stacks`: the reference pipecat bot (`duplexeval serve pipecat`, pipecat 1.14's own transport, Silero VAD,
Smart Turn v3 and user-turn / interruption handling) with each turn stack -- VAD only at stop_secs 0.2, 0.5 and
0.8 (the turn ends stop_secs after the speech) and Smart Turn v3 (stop_secs 0.2, pipecat's recommendation) --
with interruptions on and off, over telephony (Twilio, mu-law 8 kHz) and webrtc (Opus 48 kHz): each is
exported over the dataset (`fdb export`), transcribed (`fdb asr`), scored by the unified rules (`fdb score`),
compared pairwise (`fdb compare`: every stack against VAD 0.5 with interruptions on, on the same transport)
and put in one report (`duplexeval report`). Printed: every unified metric with its interval per tree, the
eligibility, the paired differences, the signature.

Part `transports`: one stack (VAD 0.5, interruptions on) in-process (the `pipecat` system: the same pipeline,
no transport, no codec) and over telephony, pipecat-ws and webrtc; per sample the first audible output onset
(first |x| > 500 in output.wav) minus the in-process onset: median and p90, and for webrtc the same after its
measured jitter-buffer hold (the session's `jitter_buffer` record).

    .venv/bin/python benchmarks/pipecat_turn_stacks.py --out .cache/pipecat-stacks                  # both parts
    .venv/bin/python benchmarks/pipecat_turn_stacks.py --part transports --out .cache/pipecat-transports
    .venv/bin/python benchmarks/pipecat_turn_stacks.py --dataset /data/fdb-v1.0 --out ...             # the real data

Every export runs at `--concurrency` sessions at once (4: the bot costs about a tenth of a core per call on
the 2-core build machine); a sample the machine starved (`input_pacing_late`) stays in the tree, counted
ineligible, as the scorer counts it. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.systems.pipecat.process import BotProcess  # noqa: E402
from duplexeval.systems.pipecat.stack import BotConfig  # noqa: E402

PY = [sys.executable, "-m", "duplexeval"]
STACKS = [("vad", 0.2), ("vad", 0.5), ("vad", 0.8), ("smart-turn", 0.2)]
REFERENCE = ("vad", 0.5, True)
ONSET_LEVEL = 500


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(args: list[str], what: str) -> int:
    t0 = time.time()
    proc = subprocess.run(args, capture_output=True, text=True)
    tail = (proc.stderr.strip().splitlines() or [""])[-1]
    print(f"  {what}: exit {proc.returncode} in {time.time() - t0:.0f} s; {tail[:160]}", flush=True)
    return proc.returncode


def _name(turn: str, stop: float, inter: bool, transport: str) -> str:
    return f"{transport}-{turn}-{stop:g}-{'int' if inter else 'noint'}"


def export_tree(cfg: BotConfig, tree: Path, dataset: str, concurrency: int, limit: int | None) -> None:
    if (tree / "manifest.json").is_file():
        print(f"  {tree.name}: exported already", flush=True)
        return
    with BotProcess(cfg, warm=concurrency + 2) as bot:
        args = [*PY, "fdb", "export", "--system", bot.client(), "--dataset", dataset, "--out", str(tree),
                "--concurrency", str(concurrency), "--min-eligible", "0", "-q"]
        if limit:
            args += ["--limit", str(limit)]
        _run(args, f"export {tree.name}")


def export_in_process(tree: Path, dataset: str, limit: int | None) -> None:
    if (tree / "manifest.json").is_file():
        return
    args = [*PY, "fdb", "export", "--system", "pipecat:turn=vad,stop_secs=0.5,allow_interruptions=true",
            "--dataset", dataset, "--out", str(tree), "--min-eligible", "0", "-q"]
    if limit:
        args += ["--limit", str(limit)]
    _run(args, f"export {tree.name}")


def score_tree(tree: Path) -> dict | None:
    if not (tree / "asr.json").is_file():
        _run([*PY, "fdb", "asr", str(tree), "-q"], f"asr {tree.name}")
    if not (tree / "unified.json").is_file():
        _run([*PY, "fdb", "score", str(tree), "-q", "--min-eligible", "0"], f"score {tree.name}")
    path = tree / "unified.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _value(v: object) -> str:
    if isinstance(v, dict):
        point = v.get("value", v.get("estimate", v.get("median")))
        lo, hi = v.get("ci_low", v.get("low")), v.get("ci_high", v.get("high"))
        if isinstance(point, (int, float)):
            ci = f" [{lo:.3f}, {hi:.3f}]" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""
            n = v.get("n")
            return f"{point:.3f}{ci}" + (f" n={n}" if n is not None else "")
        return "null" + (f" ({v.get('flag') or v.get('reason')})" if v.get("flag") or v.get("reason") else "")
    return str(v)


def print_unified(name: str, doc: dict) -> None:
    print(f"\n{name}")
    subsets = doc.get("subsets") or {}
    for subset, block in subsets.items():
        metrics = block.get("metrics", block) if isinstance(block, dict) else {}
        counts = block.get("counts") or {}
        line = ", ".join(f"{k}={_value(v)}" for k, v in metrics.items() if isinstance(v, dict))
        print(f"  {subset} (eligible {counts.get('eligible', '?')}/{counts.get('selected', '?')}): {line}")
    sig = doc.get("signature") or {}
    if sig:
        print(f"  signature: {sig.get('compact') or json.dumps(sig)[:200]}")


def onset(tree: Path, subset: str, sid: str) -> float | None:
    path = tree / subset / sid / "output.wav"
    if not path.is_file():
        return None
    with wave.open(str(path)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    loud = np.flatnonzero(np.abs(x.astype(np.int32)) > ONSET_LEVEL)
    return None if loud.size == 0 else float(loud[0]) / 16000.0


def jitter_hold(tree: Path, subset: str, sid: str) -> float | None:
    path = tree / subset / sid / "trace.jsonl"
    if not path.is_file():
        return None
    for line in path.read_text().splitlines()[1:]:
        rec = json.loads(line)
        if rec.get("event") == "jitter_buffer":
            return rec.get("held_median_s")
    return None


def _q(xs: list[float], q: float) -> float:
    """The quantile rule of DESIGN.md: the ceil(q*N)-th smallest."""
    s = sorted(xs)
    return s[max(0, int(np.ceil(q * len(s))) - 1)]


def part_transports(out: Path, dataset: str, concurrency: int, limit: int | None) -> None:
    print(f"\n== transports (load {_load()})", flush=True)
    ref = out / "in-process-vad-0.5-int"
    export_in_process(ref, dataset, limit)
    rows = json.loads((ref / "manifest.json").read_text())["samples"]
    for transport in ("telephony", "pipecat-ws", "webrtc"):
        tree = out / _name("vad", 0.5, True, transport)
        export_tree(BotConfig(transport=transport, turn="vad", stop_secs=0.5), tree, dataset, concurrency, limit)
        diffs, resid, n_both, notes = [], [], 0, []
        for row in rows:
            a, b = onset(ref, row["subset"], row["id"]), onset(tree, row["subset"], row["id"])
            if a is None or b is None:
                notes.append(f"{row['subset']}/{row['id']}: {'no in-process onset' if a is None else 'no onset'}")
                continue
            n_both += 1
            diffs.append(b - a)
            hold = jitter_hold(tree, row["subset"], row["id"]) if transport == "webrtc" else None
            if hold is not None:
                resid.append(b - a - hold)
        if diffs:
            absd = [abs(d) for d in diffs]
            line = (f"  {transport}: n={n_both} onset - in-process: median {np.median(diffs) * 1000:+.1f} ms, "
                    f"p90 |diff| {_q(absd, 0.9) * 1000:.1f} ms, min {min(diffs) * 1000:+.1f}, max "
                    f"{max(diffs) * 1000:+.1f}")
            if resid:
                line += (f"; after the jitter-buffer hold: median {np.median(resid) * 1000:+.1f} ms, "
                         f"p90 |diff| {_q([abs(r) for r in resid], 0.9) * 1000:.1f} ms")
            print(line, flush=True)
        for n in notes:
            print(f"    {n}")
    print(f"  load after: {_load()}")


def part_stacks(out: Path, dataset: str, concurrency: int, limit: int | None) -> None:
    print(f"\n== stacks (load {_load()})", flush=True)
    trees: dict[str, Path] = {}
    for transport in ("telephony", "webrtc"):
        for turn, stop in STACKS:
            for inter in (True, False):
                name = _name(turn, stop, inter, transport)
                cfg = BotConfig(transport=transport, turn=turn, stop_secs=stop, allow_interruptions=inter)
                export_tree(cfg, out / name, dataset, concurrency, limit)
                trees[name] = out / name
    print(f"\n== asr and score (load {_load()})", flush=True)
    docs = {name: score_tree(tree) for name, tree in trees.items()}
    for name, doc in docs.items():
        if doc is not None:
            print_unified(name, doc)
    print(f"\n== paired comparisons (load {_load()})", flush=True)
    for transport in ("telephony", "webrtc"):
        ref = trees[_name(*REFERENCE[:2], REFERENCE[2], transport)]
        others = [t for n, t in trees.items() if n.startswith(transport) and t != ref and docs.get(n) is not None]
        if docs.get(ref.name) is None or not others:
            continue
        cmp_path = out / f"compare-{transport}.json"
        _run([*PY, "fdb", "compare", str(ref), *map(str, others), "--out", str(cmp_path), "--force"],
             f"compare {transport}")
        proc = subprocess.run([*PY, "fdb", "compare", str(ref), *map(str, others), "--no-write"], capture_output=True,
                              text=True)
        print(proc.stdout)
    scored = [str(t) for n, t in trees.items() if docs.get(n) is not None]
    if scored:
        _run([*PY, "report", *scored, "--out", str(out / "report.html"),
              *sum((["--label", Path(t).name] for t in scored), [])], "report")
    print(f"  load after: {_load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(".cache/pipecat-stacks"))
    ap.add_argument("--part", choices=("stacks", "transports", "both"), default="both")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--limit", type=int, default=None, help="Samples per subset (a quick look; the numbers need all).")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    print(f"pipecat turn stacks: dataset {a.dataset}, concurrency {a.concurrency}, load {_load()}, "
          f"{os.cpu_count()} cores, Python {sys.version.split()[0]}", flush=True)
    if a.part in ("transports", "both"):
        part_transports(a.out, a.dataset, a.concurrency, a.limit)
    if a.part in ("stacks", "both"):
        part_stacks(a.out, a.dataset, a.concurrency, a.limit)


if __name__ == "__main__":
    main()
