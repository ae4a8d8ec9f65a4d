"""Invariants of the label derivation on random two-channel activity (hypothesis)."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duplexeval.controller.format import data as cdata
from duplexeval.controller.format.data import to_us
from duplexeval.controller.labels.derive import Activity, derive, to_clip

DUR = 20.0


@st.composite
def channel(draw):  # noqa: ANN001, ANN201
    n = draw(st.integers(0, 8))
    cuts = sorted(draw(st.lists(st.integers(0, int(DUR * 100)), min_size=2 * n, max_size=2 * n)))
    return Activity.from_segments([(cuts[2 * k] / 100, cuts[2 * k + 1] / 100) for k in range(n)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user=channel(), agent=channel())
def test_invariants(user, agent):
    lab = derive(user, agent, DUR)
    n = lab.n_frames
    assert lab.truth_state.shape == (n,) and set(np.unique(lab.truth_state)) <= {0, 1, 2, 3}
    for h in ("endpoint", "yield", "backchannel"):
        assert not (lab.label[h] & ~lab.valid[h]).any(), h  # positives are always scored frames
    assert 0 <= lab.floor_s <= DUR and 0 <= lab.listen_s <= DUR + 0.08
    user_starts = {to_us(v.start_s) for v in lab.vocalizations if v.speaker == "user"}
    assert all(to_us(o) in user_starts for o in lab.yield_onsets)
    agent_bc = {to_us(v.start_s) for v in lab.vocalizations if v.speaker == "agent" and v.kind == "backchannel"}
    assert {to_us(o) for o in lab.backchannel_onsets} == agent_bc
    user_turns = [t for t in lab.turns if t.speaker == "user"]
    for p in lab.pause_probes:  # every pause lies inside one user turn
        assert any(to_us(t.start_s) <= to_us(p.pause_start_s) < to_us(p.pause_end_s) <= to_us(t.end_s)
                   for t in user_turns)
    assert len(lab.turn_probes) == sum(1 for t in user_turns if t.ended_by == "shift")
    # the clip passes the data model's own validation (window order, times inside the clip)
    clip = to_clip(lab, "x")
    cdata.clip_meta_from_json(json.loads(json.dumps(clip.meta.to_json())), "prop")
    cdata.validate_frames(clip.frames.to_npz_dict(), n, "prop")
    # speech is never silently lost: every run is a vocalization of some kind
    assert sum(1 for v in lab.vocalizations) >= len(lab.turns)
