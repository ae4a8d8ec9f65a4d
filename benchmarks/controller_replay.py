"""Replay speed of the controller evaluation on a large synthetic set (default 10,000 conversations of 5 minutes).

Each conversation is made in memory (random two-channel speech -> labels by duplexeval.controller.labels.derive, the
frame-level silence baseline's endpoint scores plus noise, noisy state/yield/backchannel scores), then timed:

- replay: ``events.clip_events`` (both endpoint modes, dense scan, yield and backchannel matching) per clip;
- frames: ``FrameAccumulator.add`` per clip, and ``result()`` (scikit-learn ROC-AUC / AP, macro-F1) once.

Generation is not timed. Prints frames per second for each part and writes a JSON record with --json.

    .venv/bin/python benchmarks/controller_replay.py                       # 10,000 x 5 min
    .venv/bin/python benchmarks/controller_replay.py --conversations 500   # quick
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np
import sklearn.metrics  # noqa: F401 - imported before timing so the import is not counted

from duplexeval.controller.format.data import STATES
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.labels.derive import Activity, derive, to_clip
from duplexeval.controller.metrics.events import aggregate, clip_events
from duplexeval.controller.metrics.frame_metrics import FrameAccumulator
from duplexeval.controller.runtime.baselines import silence_timeout_scores


def synth_activity(rng: np.random.Generator, minutes: float) -> tuple[Activity, Activity, float]:
    """Alternating turns of 1-3 speech runs (pauses 0.3-1.2 s), gaps -0.3..1.0 s, some agent backchannels."""
    dur = minutes * 60.0
    user: list[tuple[float, float]] = []
    agent: list[tuple[float, float]] = []
    t, who = 0.5, 0
    while t < dur - 8.0:
        runs = int(rng.integers(1, 4))
        start = t
        for k in range(runs):
            d = min(float(rng.uniform(0.8, 4.0)), dur - 0.5 - t)
            if d <= 0.1:
                break
            (user if who == 0 else agent).append((t, t + d))
            t += d
            if k < runs - 1:
                t += float(rng.uniform(0.3, 1.2))
        if who == 0 and rng.random() < 0.4 and t - start > 2.0:  # agent backchannel inside the user's turn
            b = float(rng.uniform(start + 0.5, min(t, dur - 1.0) - 1.0))
            agent.append((b, b + float(rng.uniform(0.2, 0.6))))
        t += float(rng.uniform(-0.3, 1.0))
        who = 1 - who
    return Activity.from_segments(user), Activity.from_segments(agent), dur


def synth_clip(i: int, minutes: float, seed: int):  # noqa: ANN201
    """One synthetic clip with labels and scores."""
    rng = np.random.default_rng([seed, i])
    user, agent, dur = synth_activity(rng, minutes)
    lab = derive(user, agent, dur)
    n = lab.n_frames
    voiced = np.zeros(n, dtype=bool)
    for a, b in user.intervals:
        voiced[int(a / 0.08) : int(b / 0.08) + 1] = True
    level = np.where(voiced, -20.0, -70.0) + rng.normal(0, 2, n)
    endpoint = np.clip(silence_timeout_scores(voiced, 0.6) + rng.normal(0, 0.05, n), 0, 1)
    onehot = np.eye(len(STATES))[lab.truth_state]
    probs = onehot + rng.gamma(1.0, 0.3, (n, len(STATES)))
    probs /= probs.sum(axis=1, keepdims=True)
    clip = to_clip(lab, f"c{i:05d}", group=f"c{i:05d}", level_db=level)
    clip.frames.state_probs = probs.astype(np.float32)
    clip.frames.endpoint = endpoint.astype(np.float32)
    clip.frames.yield_ = np.clip(lab.label["yield"] * 0.6 + rng.beta(1, 4, n), 0, 1).astype(np.float32)
    clip.frames.backchannel = np.clip(lab.label["backchannel"] * 0.5 + rng.beta(1, 5, n), 0, 1).astype(np.float32)
    return clip


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=10_000)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the result record here")
    args = ap.parse_args(argv)
    policy = EvaluationPolicy()
    acc = FrameAccumulator()
    seen: set[str] = set()
    evs = []
    frames = 0
    t_gen = t_replay = t_add = 0.0
    t_start = time.perf_counter()
    for i in range(args.conversations):
        t0 = time.perf_counter()
        clip = synth_clip(i, args.minutes, args.seed)
        t1 = time.perf_counter()
        evs.append(clip_events(clip, policy, seen))
        t2 = time.perf_counter()
        acc.add(clip.frames)
        t3 = time.perf_counter()
        t_gen += t1 - t0
        t_replay += t2 - t1
        t_add += t3 - t2
        frames += clip.meta.n_frames
        if (i + 1) % max(1, args.conversations // 10) == 0:
            print(f"  {i + 1}/{args.conversations} conversations, replay {frames / t_replay:,.0f} frames/s",
                  file=sys.stderr)
    t0 = time.perf_counter()
    agg = aggregate(evs, policy)
    t_agg = time.perf_counter() - t0
    t0 = time.perf_counter()
    fm = acc.result()
    t_result = time.perf_counter() - t0
    rec = {
        "conversations": args.conversations,
        "minutes_each": args.minutes,
        "frames": frames,
        "audio_hours": frames * 0.08 / 3600,
        "replay_s": t_replay,
        "replay_frames_per_s": frames / t_replay,
        "aggregate_s": t_agg,
        "frame_metrics_add_s": t_add,
        "frame_metrics_result_s": t_result,
        "frame_metrics_frames_per_s": frames / (t_add + t_result),
        "evaluate_frames_per_s": frames / (t_replay + t_agg + t_add + t_result),
        "generation_s_not_timed": t_gen,
        "wall_s": time.perf_counter() - t_start,
        "turn_probes": agg["endpoint"]["fallback_on"]["turn_probes"],
        "pause_probes": agg["endpoint"]["fallback_on"]["pause_probes"],
        "state_macro_f1": fm.get("state", {}).get("macro_f1") if isinstance(fm.get("state"), dict) else None,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(f"{args.conversations} conversations x {args.minutes:g} min = {frames:,} frames ({rec['audio_hours']:.1f} h)")
    print(f"  replay (events, both endpoint modes): {t_replay:8.2f} s  {rec['replay_frames_per_s']:>14,.0f} frames/s")
    print(f"  frame metrics (add + sklearn):        {t_add + t_result:8.2f} s  "
          f"{rec['frame_metrics_frames_per_s']:>14,.0f} frames/s")
    print(f"  whole evaluate (+ aggregate):         {t_replay + t_agg + t_add + t_result:8.2f} s  "
          f"{rec['evaluate_frames_per_s']:>14,.0f} frames/s")
    print(f"  (generation, not timed: {t_gen:.1f} s; {rec['turn_probes']} turn probes, {rec['pause_probes']} "
          "pause probes)")
    if args.json:
        from duplexeval.jsonio import write_json

        write_json(args.json, rec)
    return rec


if __name__ == "__main__":
    main()
