"""The vectorised replay against a frame-by-frame reference state machine written from docs/controller.md."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.controller.metrics.replay import backchannel_firings, endpoint_firings, voiced_frames


def reference_endpoints(score, level, pol: EvaluationPolicy, fallback: bool):
    """One frame at a time: warmup, debounce, gate, min voiced, silence fallback, reset after every firing."""
    out = []
    r = run = voiced_total = silent = 0
    for j in range(len(score)):
        in_warmup = r < pol.warmup_frames
        run = run + 1 if (score[j] >= pol.endpoint_threshold and not in_warmup) else 0
        v = pol.vad_gate_db is None or level[j] > pol.vad_gate_db
        voiced_total += int(v)
        silent = 0 if v else silent + 1
        ok = voiced_total * 80 >= pol.min_voiced_ms and not in_warmup
        head = ok and run >= pol.debounce_frames
        fb = fallback and ok and silent * 80 >= pol.fallback_silence_ms
        if head or fb:
            out.append((j, "head" if head else "fallback"))
            r = run = voiced_total = silent = 0
            continue
        r += 1
    return out


def reference_backchannel(score, pol: EvaluationPolicy):
    out = []
    run = 0
    last = None
    for j in range(len(score)):
        run = run + 1 if score[j] >= pol.backchannel_threshold else 0
        if run == pol.debounce_frames and (last is None or j - last > pol.backchannel_cooldown_frames):
            out.append(j)
            last = j
    return out


policies = st.builds(
    EvaluationPolicy,
    endpoint_threshold=st.sampled_from([0.5, 0.91]),
    debounce_frames=st.integers(1, 3),
    warmup_frames=st.integers(0, 8),
    vad_gate_db=st.sampled_from([-50.0, None]),
    min_voiced_ms=st.sampled_from([0, 80, 350, 500]),
    fallback_silence_ms=st.sampled_from([80, 400, 1200, 1201]),
    backchannel_cooldown_frames=st.integers(0, 20),
    backchannel_threshold=st.sampled_from([0.5, 0.8]),
)


@settings(max_examples=150, deadline=None)
@given(
    pol=policies,
    fallback=st.booleans(),
    n=st.integers(0, 700),
    seed=st.integers(0, 2**32 - 1),
    p_high=st.floats(0.0, 1.0),
    p_voiced=st.floats(0.0, 1.0),
)
def test_vectorised_replay_equals_the_reference(pol, fallback, n, seed, p_high, p_voiced):
    rng = np.random.default_rng(seed)
    score = np.where(rng.uniform(size=n) < p_high, rng.choice([0.5, 0.91, 0.95], size=n), 0.1)
    level = np.where(rng.uniform(size=n) < p_voiced, -20.0, rng.choice([-50.0, -80.0], size=n))
    v = voiced_frames(level, n, pol)
    got = [(f.frame, f.source) for f in endpoint_firings(score, v, 0, n, pol, fallback)]
    assert got == reference_endpoints(score, level, pol, fallback)
    assert backchannel_firings(score, 0, n, pol).tolist() == reference_backchannel(score, pol)
