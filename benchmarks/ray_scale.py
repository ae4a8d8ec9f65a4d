"""Local vs Ray for `fdb asr` and `fdb score` on the full 727-sample tree, and a paper projection of a GPU pool.

The tree is the one benchmarks/score_full_tree.py builds (reused from --cache when present). Every configuration
runs in a fresh process (Ray: `ray.init(num_cpus=W)`, so W workers; local: W processes or VAD threads), and the
outputs of every configuration must hash the same (the driver writes them in manifest order).

- `fdb score` on the whole tree: local 1 and 2 VAD threads, Ray 1 and 2 workers.
- `fdb asr` with a model-free backend on every eligible sample (the stage's own per-sample cost: read and hash the
  wav, cut, write output.json and the journal record): local 1 and 2 processes, Ray 1 and 2 workers.
- `fdb asr` with a real model (--asr-backend, default whisper-align) on --asr-samples samples spread over the
  subsets (0: all 703 eligible; about 20 min per configuration on a quiet 2-core machine).
- Per-task overhead: a no-op item through the Ray actor pool and through plain Ray tasks, 1 and 2 workers.
- Projection: a pool of G GPUs (default 16) running Parakeet on N outputs (default 10,000) of the tree's mean
  length, from the measured per-sample stage cost and per-task overhead plus two stated assumptions
  (--gpu-rtfx, --model-load-s) that this machine cannot measure (no GPU, no NeMo).

    .venv/bin/python benchmarks/ray_scale.py [--cache DIR] [--asr-samples 48] [--asr-backend whisper-align]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
CONFIGS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))


class NullBackend:
    """An ASR backend that hears nothing, instantly: what is left is the stage's own per-sample work."""

    name = "null"

    def signature(self) -> dict[str, Any]:
        return {"name": self.name, "packages": {}, "options": {}}

    def transcribe(self, audio16k: Any, offset_s: float = 0.0) -> list[Any]:
        return []


def _noop_init(_: Any) -> None:
    return None


def _noop(_state: Any, item: int) -> int:
    return item


def _noop_task(item: int) -> int:
    return item


# -- one configuration, in a fresh process ------------------------------------------------------------------------
def child(stage: str, kind: str, workers: int, tree: Path, backend: str) -> dict[str, Any]:
    from duplexeval.executors import ExecutorSpec, StatefulWork, make_executor

    init_s = 0.0
    if kind == "ray":
        import ray

        t0 = time.perf_counter()
        ray.init(address="local", num_cpus=workers, include_dashboard=False, logging_level="ERROR")
        init_s = time.perf_counter() - t0
    spec = ExecutorSpec(kind, jobs=workers)
    out: dict[str, Any] = {"stage": stage, "executor": kind, "workers": workers, "ray_init_s": round(init_s, 3)}
    t0 = time.perf_counter()
    if stage == "score":
        from duplexeval.fdb.unified import score
        from duplexeval.jsonio import dumps

        res = score(tree, write=False, jobs=workers, executor=spec)
        out["sha256"] = hashlib.sha256((dumps(res.to_json()) + res.samples_jsonl()).encode()).hexdigest()
    elif stage in ("asr-null", "asr-model"):
        from duplexeval.fdb import asr_stage

        be: Any = NullBackend() if stage == "asr-null" else backend
        res = asr_stage.asr(tree, backend=be, jobs=workers, force=True, progress=False, executor=spec)
        out["n"] = res.n_eligible
        out["failed"] = res.n_error
        out["sha256"] = hashlib.sha256((tree / "asr.json").read_bytes()).hexdigest()
    elif stage == "noop":
        n = 2000
        ex = make_executor(spec)
        t1 = time.perf_counter()
        assert len(list(ex.map_stateful(StatefulWork(_noop_init, None, _noop), list(range(n))))) == n
        out["actor_ms_per_item"] = round((time.perf_counter() - t1) / n * 1e3, 3)
        t1 = time.perf_counter()
        assert len(list(ex.map_ordered(_noop_task, list(range(n))))) == n
        out["task_ms_per_item"] = round((time.perf_counter() - t1) / n * 1e3, 3)
        ex.close()
    out["wall_s"] = round(time.perf_counter() - t0, 3)
    out["load"] = round(os.getloadavg()[0], 2)
    return out


def run_configs(stage: str, configs: tuple[tuple[str, int], ...], tree: Path, backend: str,
                repeats: int) -> list[dict[str, Any]]:
    """Each configuration `repeats` times, round robin (load drifts); the fastest run of each, all hashes kept."""
    best: dict[tuple[str, int], dict[str, Any]] = {}
    hashes: set[str] = set()
    for _ in range(repeats):
        for kind, w in configs:
            r = run_child(stage, kind, w, tree, backend)
            if "sha256" in r:
                hashes.add(r["sha256"])
            if (kind, w) not in best or r["wall_s"] < best[(kind, w)]["wall_s"]:
                best[(kind, w)] = r
    rows = [best[c] for c in configs]
    for r in rows:
        r["runs"] = repeats
        r["identical"] = len(hashes) <= 1
    return rows


def run_child(stage: str, kind: str, workers: int, tree: Path, backend: str) -> dict[str, Any]:
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), str(HERE), os.environ.get("PYTHONPATH")) if p)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", stage, kind, str(workers), str(tree), backend]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[2:])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- trees ----------------------------------------------------------------------------------------------------------
def full_tree(cache: Path) -> Path:
    if not (cache / "asr.json").is_file():
        sys.path.insert(0, str(HERE))
        import score_full_tree

        t0 = time.perf_counter()
        score_full_tree.build(cache)
        print(f"built {cache} in {time.perf_counter() - t0:.1f} s")
    return cache


def work_tree(src: Path, dst: Path, n_samples: int) -> Path:
    """A copy of the tree (output.wav hard-linked) whose manifest lists every k-th eligible sample (0: all)."""
    from duplexeval.fdb.tree import Manifest, load_manifest, write_manifest

    if dst.exists():
        shutil.rmtree(dst)

    def link(a: str, b: str) -> None:
        if a.endswith(".wav"):
            os.link(a, b)
        else:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)
    for p in dst.glob("*/*/output.json"):
        p.unlink()
    (dst / "asr.json").unlink()
    (dst / "unified.json").unlink(missing_ok=True)
    m, _ = load_manifest(dst)
    eligible = [s for s in m.samples if s.eligible]
    if n_samples and n_samples < len(eligible):
        step = len(eligible) / n_samples
        keep = {id(eligible[int(i * step)]) for i in range(n_samples)}
        m = Manifest(m.dataset_name, m.declared, [s for s in m.samples if id(s) in keep], m.extra)
    write_manifest(dst, m)
    return dst


def audio_seconds(tree: Path) -> tuple[int, float]:
    from duplexeval.fdb.tree import load_manifest

    m, _ = load_manifest(tree)
    el = [s for s in m.samples if s.eligible]
    return len(el), sum(s.T for s in el)


# -- report ---------------------------------------------------------------------------------------------------------
def table(title: str, rows: list[dict[str, Any]], n: int) -> None:
    print(f"\n{title}")
    base = rows[0]["wall_s"]
    for r in rows:
        extra = f"  (+ ray.init {r['ray_init_s']:.1f} s)" if r["executor"] == "ray" else ""
        print(f"  {r['executor']:<5} {r['workers']} worker(s): {r['wall_s']:8.2f} s  "
              f"{r['wall_s'] / n * 1e3:8.2f} ms/sample  speedup {base / r['wall_s']:.2f}x vs local 1{extra}  "
              f"load {r['load']}")
    if any("sha256" in r for r in rows):
        print(f"  outputs identical across all {len(rows) * rows[0]['runs']} runs: "
              f"{'yes' if rows[0]['identical'] else 'NO'}  (fastest of {rows[0]['runs']} run(s) shown)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        stage, kind, workers, tree, backend = sys.argv[2:7]
        print(json.dumps(child(stage, kind, int(workers), Path(tree), backend)))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path(".cache/bench-full-tree"))
    ap.add_argument("--work", type=Path, default=Path(".cache/bench-ray-work"), help="scratch trees for fdb asr")
    ap.add_argument("--asr-backend", default="whisper-align")
    ap.add_argument("--asr-samples", type=int, default=48, help="samples for the real-model asr runs (0: all)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each configuration (fastest shown), "
                    "except the real-model asr, which runs once")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: score,asr-null,asr-model,noop")
    ap.add_argument("--gpus", type=int, default=16)
    ap.add_argument("--outputs", type=int, default=10_000)
    ap.add_argument("--gpu-rtfx", type=float, default=100.0,
                    help="ASSUMED Parakeet speed per GPU at batch 1, seconds of audio per second (not measured here)")
    ap.add_argument("--model-load-s", type=float, default=30.0,
                    help="ASSUMED Parakeet (NeMo) load time per worker (not measured here)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    tree = full_tree(args.cache)
    n_all, audio_all = audio_seconds(tree)
    print(f"tree {tree}: {n_all} eligible samples, {audio_all:.0f} s of output audio; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    results: dict[str, list[dict[str, Any]]] = {}
    if "score" not in skip:
        results["score"] = run_configs("score", CONFIGS, tree, "", args.repeats)
        table("fdb score (whole tree; VAD on the executor, the rest in the driver)", results["score"], n_all)
    if "asr-null" not in skip:
        wt = work_tree(tree, args.work / "null", 0)
        results["asr-null"] = run_configs("asr-null", CONFIGS, wt, "", args.repeats)
        table(f"fdb asr, model-free backend ({n_all} samples: the stage's own per-sample cost)",
              results["asr-null"], n_all)
    if "asr-model" not in skip:
        wt = work_tree(tree, args.work / "model", args.asr_samples)
        n_m, audio_m = audio_seconds(wt)
        results["asr-model"] = run_configs("asr-model", CONFIGS, wt, args.asr_backend, 1)
        table(f"fdb asr --backend {args.asr_backend} ({n_m} samples, {audio_m:.0f} s of audio)", results["asr-model"],
              n_m)
        for r in results["asr-model"]:
            print(f"  {r['executor']} {r['workers']}: real-time factor {r['wall_s'] / audio_m:.4f}")
    if "noop" not in skip:
        results["noop"] = run_configs("noop", (("ray", 1), ("ray", 2)), tree, "", args.repeats)
        print("\nper-task overhead (a no-op item, 2000 of them, round trip through Ray)")
        for r in results["noop"]:
            print(f"  {r['workers']} worker(s): actor pool {r['actor_ms_per_item']:.2f} ms/item, "
                  f"plain tasks {r['task_ms_per_item']:.2f} ms/item  load {r['load']}")
    if "asr-null" in results:
        null = {(r["executor"], r["workers"]): r["wall_s"] for r in results["asr-null"]}
        project(args, null[("local", 1)] / n_all, audio_all / n_all,
                results.get("noop", [{}])[0].get("actor_ms_per_item"), record_cost(args.work))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(timings are inflated, and speedups understated, when it exceeds the CPUs)")


def record_cost(work: Path, n: int = 500) -> float:
    """Seconds the driver spends writing one journal record (atomic JSON write), measured."""
    from duplexeval.jsonio import write_json

    d = work / "records"
    d.mkdir(parents=True, exist_ok=True)
    rec = {"status": "ok", "output.json": "0" * 64, "error": None, "audio_sha256": "1" * 64, "cut_s": 12.5,
           "n_words": 40}
    t0 = time.perf_counter()
    for i in range(n):
        write_json(d / f"r{i}.json", rec)
    cost = (time.perf_counter() - t0) / n
    shutil.rmtree(d)
    return cost


def project(args: argparse.Namespace, stage_s: float, mean_audio_s: float, overhead_ms: float | None,
            record_s: float) -> None:
    """Paper projection: G GPU workers streaming N outputs; the driver collects and journals each result in turn."""
    ov = (overhead_ms or 0.0) / 1e3
    model_s = mean_audio_s / args.gpu_rtfx
    # Upper bounds: the in-process per-sample cost (which includes the journal record) is charged to the worker
    # too, and the whole round trip to the driver.
    per_worker = model_s + stage_s + ov  # one output on one GPU worker
    pool_s = args.outputs * per_worker / args.gpus
    driver_s = args.outputs * (ov + record_s)  # serial in the driver
    wall = args.model_load_s + max(pool_s, driver_s)
    print(f"\nprojection: {args.gpus} GPUs, {args.outputs} outputs of {mean_audio_s:.1f} s (the tree's mean), Parakeet")
    print(f"  measured: stage cost {stage_s * 1e3:.1f} ms/sample (model-free, in process, journal included), "
          f"journal record alone {record_s * 1e3:.2f} ms, per-task overhead {ov * 1e3:.2f} ms")
    print(f"  assumed:  {args.gpu_rtfx:.0f}x real time per GPU at batch 1 -> {model_s * 1e3:.0f} ms/output; "
          f"{args.model_load_s:.0f} s model load per worker")
    print(f"  pool {pool_s / 60:.1f} min, driver {driver_s / 60:.1f} min (both upper bounds) -> about "
          f"{wall / 60:.1f} min wall ({args.outputs / wall:.1f} outputs/s); the overhead is "
          f"{ov / per_worker * 100:.1f}% of each output's time")


if __name__ == "__main__":
    main()
