"""`controller bench`: compute cost of a streaming controller by spec 002's protocol — batch 1, 64 prefill frames,
then three repeats of 200 one-frame updates — on this machine's CPU.

Reported separately, because they measure different things: wall time per update (median, p90 by the quantile
rule), weight bytes, peak memory (Python heap growth by tracemalloc in a separate untimed pass, and the process
RSS high-water mark), and recurrent-state bytes. Timing runs without tracemalloc, which would slow Python code.
"""

from __future__ import annotations

import platform
import sys
import time
import tracemalloc
from typing import Any

import numpy as np

from duplexeval.controller.format.data import STATES
from duplexeval.controller.kinds import BENCH_KIND
from duplexeval.controller.runtime.registry import controller_config
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import call_bounded, call_timeout_s, unwrap
from duplexeval.stats import NO_DATA, Quantile
from duplexeval.units import FRAME_SAMPLES

LISTEN = STATES.index("LISTEN")


def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic noise frames for both channels (a controller's cost should not depend on content)."""
    rng = np.random.default_rng(seed)
    user = (0.05 * rng.standard_normal((n, FRAME_SAMPLES))).astype(np.float32)
    agent = (0.05 * rng.standard_normal((n, FRAME_SAMPLES))).astype(np.float32)
    return user, agent


def _prefill(ctl: Any, user: np.ndarray, agent: np.ndarray) -> str:
    prev = np.full(user.shape[0], LISTEN, dtype=np.int64)
    if hasattr(ctl, "prefill"):
        ctl.prefill(user, agent, prev)
        return "prefill()"
    for i in range(user.shape[0]):
        ctl.step(user[i], agent[i], LISTEN)
    return "step() x n"


def weight_bytes(ctl: Any) -> tuple[int | None, str]:
    """Bytes of the controller's weights and how they were found."""
    if hasattr(ctl, "weight_bytes"):
        return int(ctl.weight_bytes()), "controller.weight_bytes()"
    params = getattr(ctl, "parameters", None)
    if callable(params):  # a torch.nn.Module or anything alike
        total = 0
        for p in params():
            total += int(p.numel()) * int(p.element_size()) if hasattr(p, "numel") else int(np.asarray(p).nbytes)
        return total, "sum over parameters()"
    return None, "not reported (the controller has no weight_bytes() or parameters())"


def state_bytes(ctl: Any) -> tuple[int | None, str]:
    """Bytes of the per-conversation recurrent state and how they were found."""
    if hasattr(ctl, "state_bytes"):
        return int(ctl.state_bytes()), "controller.state_bytes()"
    return None, "not reported (the controller has no state_bytes())"


def _peak_rss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r) if sys.platform == "darwin" else int(r) * 1024


def bench(ctl: Any, prefill: int = 64, updates: int = 200, repeats: int = 3, seed: int = 0) -> JsonObject:
    """Run the protocol on a controller object; returns the JSON report (times in milliseconds)."""
    if prefill < 0 or updates < 1 or repeats < 1:
        raise InputError(f"bench: need prefill >= 0, updates >= 1, repeats >= 1 (got {prefill}, {updates}, {repeats})")
    user, agent = _inputs(prefill + updates, seed)
    raw, kind, spec = unwrap(ctl)  # timed on the object itself; a failure is still one line naming the plugin
    per_step = call_timeout_s()
    row_bound = None if per_step is None else per_step * updates  # one timer around the timed row, not per step
    times_ns: list[list[int]] = []
    how = "none"

    def timed() -> list[int]:
        row = []
        for i in range(prefill, prefill + updates):
            t0 = time.perf_counter_ns()
            raw.step(user[i], agent[i], LISTEN)
            row.append(time.perf_counter_ns() - t0)
        return row

    for _ in range(repeats):
        ctl.reset()
        how = _prefill(ctl, user[:prefill], agent[:prefill]) if prefill else "none"
        times_ns.append(call_bounded(kind, spec, "step", row_bound, timed))
    # memory: a separate, untimed repeat under tracemalloc
    ctl.reset()
    if prefill:
        _prefill(ctl, user[:prefill], agent[:prefill])
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    for i in range(prefill, prefill + updates):
        ctl.step(user[i], agent[i], LISTEN)
    _, peak = tracemalloc.get_traced_memory()
    if not was_tracing:
        tracemalloc.stop()
    all_ms = np.asarray([t for row in times_ns for t in row], dtype=np.float64) / 1e6

    def q(values: np.ndarray, level: float) -> float | None:
        return Quantile.of(values, level).value

    wb, wb_how = weight_bytes(ctl)
    sb, sb_how = state_bytes(ctl)
    import onnxruntime

    return {
        "kind": BENCH_KIND,
        "schema_version": 1,
        "controller": getattr(raw, "name", type(raw).__name__),
        "controller_config": controller_config(ctl),
        "protocol": {"batch": 1, "prefill_frames": prefill, "prefill_via": how, "updates_per_repeat": updates,
                     "repeats": repeats, "frame_ms": 80, "inputs": f"Gaussian noise, sd 0.05, default_rng({seed})",
                     "prev_state": "LISTEN"},  # fmt: skip
        "wall_time_per_update_ms": {
            "median": q(all_ms, 0.5),
            "p90": q(all_ms, 0.9),
            "n": int(all_ms.size),
            "per_repeat_median": [q(np.asarray(r, dtype=np.float64) / 1e6, 0.5) for r in times_ns],
            "rule": "quantile rule: ceil(q*N)-th smallest of all timed updates",
        },
        "device_event_time_ms": {"value": None, "note": "CPU run: no CUDA event time (spec 002 reports it "
                                                        "separately on GPU)"},
        "weight_bytes": {"value": wb, "source": wb_how},
        "peak_memory": {
            "python_heap_bytes": int(peak - base),
            "python_heap_note": "tracemalloc peak above the pre-update level during one untimed repeat of updates; "
            "native allocations (onnxruntime, torch, BLAS) are not seen",
            "process_rss_high_water_bytes": _peak_rss_bytes(),
            "process_rss_note": "ru_maxrss: the whole process since start (interpreter, libraries, data), not the "
                                "controller alone",
        },
        "recurrent_state_bytes": {"value": sb, "source": sb_how},
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "processor": platform.processor() or None, "numpy": np.__version__,
                        "onnxruntime": onnxruntime.__version__},  # fmt: skip
        "excluded": "audio I/O, ASR, LLM, TTS and playback; only the controller's step() is timed",
    }


def format_bench(rep: JsonObject) -> str:
    """A few lines for the terminal."""
    w = rep["wall_time_per_update_ms"]

    def f(v: float | None) -> str:
        return NO_DATA if v is None else f"{v:.3f} ms"

    def b(v: int | None) -> str:
        return NO_DATA if v is None else f"{v:,} B"

    p = rep["protocol"]
    return "\n".join([
        f"controller bench: {rep['controller']} (batch 1, {p['prefill_frames']} prefill frames, "
        f"{p['repeats']} x {p['updates_per_repeat']} one-frame updates)",
        f"  wall time per update: median {f(w['median'])}  p90 {f(w['p90'])}  (n={w['n']}; per-repeat medians "
        + ", ".join(f(x) for x in w["per_repeat_median"]) + ")",
        f"  weight bytes:          {b(rep['weight_bytes']['value'])}  [{rep['weight_bytes']['source']}]",
        f"  peak Python heap:      {b(rep['peak_memory']['python_heap_bytes'])}  [tracemalloc, updates only]",
        f"  process RSS peak:      {b(rep['peak_memory']['process_rss_high_water_bytes'])}  [whole process]",
        f"  recurrent-state bytes: {b(rep['recurrent_state_bytes']['value'])}  "
        f"[{rep['recurrent_state_bytes']['source']}]",
    ])  # fmt: skip
