"""Label derivation (docs/controller-labels.md R1..R9): hand-computed cases for each rule."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.controller.format import data as cdata
from duplexeval.controller.labels.derive import (
    BACKCHANNEL,
    HOLD,
    LISTEN,
    SPEAK,
    Activity,
    LabelRules,
    derive,
    n_frames_for,
    to_clip,
)
from duplexeval.errors import InputError


def seg(*iv):
    return Activity.from_segments(list(iv))


def frames_of(mask):
    return [int(i) for i in np.flatnonzero(mask)]


def test_simple_shift_states_probe_and_endpoint_labels():
    lab = derive(seg((0.5, 2.0)), seg((2.4, 4.0)), 5.0)
    assert lab.n_frames == 63 == n_frames_for(5.0)  # ceil(5 / 0.08)
    assert [(t.speaker, t.ended_by) for t in lab.turns] == [("user", "shift"), ("agent", "end")]
    # window: turn start .. min(turn end + 2.0 s, clip end, next user speech) = 4.0 s
    assert lab.turn_probes == [cdata.TurnProbe(2.0, 0.5, 4.0)]
    assert lab.pause_probes == [] and lab.yield_onsets == [] and lab.backchannel_onsets == []
    assert frames_of(lab.truth_state == SPEAK) == list(range(30, 50))  # [2.4, 4.0) = frames 30..49
    assert (lab.truth_state[lab.truth_state != SPEAK] == LISTEN).all()
    # endpoint positives: stamps (i+1)*0.08 in [2.0, 3.2) -> i = 24..38
    assert frames_of(lab.label["endpoint"]) == list(range(24, 39))
    # user floor frames are endpoint negatives: frame 6 holds 6 of its 8 ticks in [0.5, 2.0)
    assert lab.valid["endpoint"][6] and not lab.valid["endpoint"][5] and not lab.label["endpoint"][20]
    assert lab.floor_s == 1.5
    assert lab.listen_s == pytest.approx((63 - 20) * 0.08)


def test_pause_inside_user_turn_is_hold_and_a_pause_probe():
    lab = derive(seg((0.0, 1.0), (1.5, 2.5)), seg((3.0, 4.0)), 4.0)
    assert lab.pause_probes == [cdata.PauseProbe(1.0, 1.5, 0.0, 1.5)]
    assert lab.user_pauses == [cdata.UserPause(1.0, 1.5, 1.0)]
    # frame 12 = [0.96, 1.04) has 4 voiced ticks -> LISTEN; frame 18 = [1.44, 1.52) has 2 -> HOLD
    assert frames_of(lab.truth_state == HOLD) == list(range(13, 19))
    assert lab.turn_probes == [cdata.TurnProbe(2.5, 0.0, 4.0)]
    assert lab.floor_s == 2.5


def test_silence_below_ipu_gap_is_no_pause_and_lapse_is_no_shift():
    lab = derive(seg((0.0, 1.0), (1.15, 2.0)), seg(), 3.0)
    assert lab.user_pauses == [] and lab.pause_probes == []
    assert len(lab.turns) == 1 and lab.turns[0].ended_by == "end" and lab.turn_probes == []
    lab = derive(seg((0.0, 1.0), (4.5, 5.0)), seg(), 6.0)  # 3.5 s > max_pause_s 3.0
    assert [t.ended_by for t in lab.turns] == ["lapse", "end"]
    assert lab.pause_probes == [] and lab.turn_probes == [] and lab.user_pauses == []
    assert lab.truth_state[20] == LISTEN  # 1.6 s: no floor -> LISTEN, not HOLD
    lab = derive(seg((0.0, 1.0)), seg((4.5, 5.0)), 6.0)  # a reply after a long silence is still a shift
    assert [t.ended_by for t in lab.turns] == ["shift", "end"]
    assert lab.turn_probes == [cdata.TurnProbe(1.0, 0.0, 3.0)]


def test_pause_min_rule():
    lab = derive(seg((0.0, 1.0), (1.25, 2.0)), seg(), 3.0, LabelRules(pause_min_s=0.3))
    assert lab.user_pauses == [cdata.UserPause(1.0, 1.25, 1.0)] and lab.pause_probes == []


def test_agent_backchannel_inside_user_turn():
    lab = derive(seg((0.0, 2.0), (2.3, 4.0)), seg((1.0, 1.4), (5.0, 6.0)), 7.0)
    kinds = [(v.speaker, v.kind) for v in lab.vocalizations]
    assert kinds == [("user", "turn"), ("agent", "backchannel"), ("user", "turn"), ("agent", "turn")]
    assert lab.backchannel_onsets == [1.0]
    assert frames_of(lab.truth_state == BACKCHANNEL) == list(range(12, 18))  # 4+ of 8 ticks in [1.0, 1.4)
    # label window [onset - 640 ms, onset + 320 ms): stamps in [0.36, 1.32) -> i = 4..15
    assert frames_of(lab.label["backchannel"]) == list(range(4, 16))
    assert lab.turn_probes == [cdata.TurnProbe(4.0, 0.0, 6.0)]


def test_short_run_with_too_many_words_is_not_a_backchannel():
    user = Activity.from_words([("so", 0.0, 0.5), ("then", 0.6, 2.0), ("we", 2.3, 4.0)])
    agent = Activity.from_words([("no", 1.0, 1.1), ("way", 1.1, 1.2), ("you", 1.2, 1.3), ("did", 1.3, 1.4)])
    lab = derive(user, agent, 5.0)
    assert [v.kind for v in lab.vocalizations if v.speaker == "agent"] == ["overlap"]
    assert lab.vocalizations[1].n_words == 4 and lab.backchannel_onsets == []
    agent3 = Activity.from_words([("yeah", 1.0, 1.2), ("I", 1.2, 1.3), ("see", 1.3, 1.4)])
    assert derive(user, agent3, 5.0).backchannel_onsets == [1.0]


def test_short_reply_without_user_resuming_takes_the_floor():
    lab = derive(seg((0.0, 2.0)), seg((2.2, 2.6)), 5.0)
    assert lab.backchannel_onsets == [] and lab.turns[0].ended_by == "shift"
    assert lab.turn_probes == [cdata.TurnProbe(2.0, 0.0, 4.0)]


def test_user_barge_in_is_a_yield_onset_and_user_backchannel_is_not():
    lab = derive(seg((2.0, 4.0)), seg((0.0, 3.0)), 5.0)
    assert lab.yield_onsets == [2.0]
    # yield positives: stamps in [2.0, 2.64) -> i = 24..31: the first eight frames
    assert frames_of(lab.label["yield"]) == list(range(24, 32))
    assert lab.valid["yield"][0] and lab.valid["yield"][31] and not lab.valid["yield"][45]
    lab = derive(seg((1.0, 1.3)), seg((0.0, 3.0), (3.2, 5.0)), 6.0)
    assert lab.yield_onsets == [] and [v.kind for v in lab.vocalizations if v.speaker == "user"] == ["backchannel"]
    assert lab.label["yield"].sum() == 0 and lab.valid["yield"][14]  # user BC frames are yield negatives
    lab = derive(seg((1.0, 2.5)), seg((0.0, 3.0)), 4.0)  # long user run, agent talks on: a failed overlap
    assert lab.yield_onsets == [] and lab.vocalizations[1].kind == "overlap" and len(lab.turns) == 1


def test_barge_in_after_the_agent_took_the_floor():
    lab = derive(seg((0.0, 2.0), (4.0, 7.0)), seg((2.3, 5.0)), 8.0)
    assert [(t.speaker, t.ended_by) for t in lab.turns] == [("user", "shift"), ("agent", "shift"), ("user", "end")]
    assert lab.yield_onsets == [4.0]
    assert lab.turn_probes == [cdata.TurnProbe(2.0, 0.0, 4.0)]  # the window stops at the user's next speech


def test_probe_window_stops_at_next_user_speech_and_clip_end():
    lab = derive(seg((0.0, 1.0), (1.8, 2.0)), seg((1.2, 3.0)), 3.1)
    assert lab.turn_probes == [cdata.TurnProbe(1.0, 0.0, 1.8)]
    assert frames_of(lab.label["endpoint"]) == list(range(12, 22))  # stamps 1.04 .. 1.76 in [1.0, 1.8)
    lab = derive(seg((0.0, 1.0)), seg((1.2, 1.5)), 1.5)
    assert lab.turn_probes == [cdata.TurnProbe(1.0, 0.0, 1.5)]


def test_events_limit_and_clip_round_trip(tmp_path):
    lab = derive(seg((2.0, 4.0), (9.0, 9.5)), seg((0.0, 3.0), (5.0, 8.0)), 10.0)
    # the user's 9.0 s start follows the agent's turn end (8.0 s) after a gap: a shift, not a yield
    assert lab.yield_onsets == [2.0]
    assert [p.turn_end_s for p in lab.turn_probes] == [4.0]
    clip = to_clip(lab, "conv1.user-a", group="conv1", level_db=np.zeros(lab.n_frames), events_end_s=1.5)
    assert clip.meta.yield_onsets == [] and clip.meta.events_end_s == 1.5
    # LISTEN time only inside the events region: frames 0..17 (ends <= 1.5 s); SPEAK (agent talks) from 0.0 s
    assert clip.meta.listen_s == pytest.approx(0.08 * int((lab.truth_state[:18] == LISTEN).sum()))
    assert clip.meta.listen_s < lab.listen_s
    clip = to_clip(lab, "conv1.user-a", group="conv1", level_db=np.zeros(lab.n_frames), events_end_s=5.0)
    assert clip.meta.yield_onsets == [2.0]
    root = cdata.write_data(tmp_path / "d", [clip])
    back = cdata.load_data(root)
    (c2,) = list(back.iter_clips())
    assert c2.meta.to_json() == clip.meta.to_json()
    assert np.array_equal(c2.frames.truth_state, lab.truth_state)
    assert np.array_equal(c2.frames.label_endpoint, lab.label["endpoint"])


def test_bad_input_is_one_line_error():
    with pytest.raises(InputError, match="before start"):
        seg((2.0, 1.0))
    with pytest.raises(InputError, match="finite"):
        seg((-1.0, 1.0))
    with pytest.raises(InputError, match="after the conversation end"):
        derive(seg((0.0, 6.0)), seg(), 5.0)
    with pytest.raises(InputError, match="duration"):
        derive(seg(), seg(), 0.0)


def test_deterministic_and_assignment_symmetric():
    a = seg((0.0, 1.0), (1.5, 2.0), (6.0, 7.0))
    b = seg((2.3, 5.0), (5.2, 5.5))
    l1, l2 = derive(a, b, 8.0), derive(a, b, 8.0)
    assert np.array_equal(l1.truth_state, l2.truth_state) and l1.turn_probes == l2.turn_probes
    swapped = derive(b, a, 8.0)
    # what is a turn probe for one assignment is the agent's turn end for the other
    assert [p.turn_end_s for p in l1.turn_probes] == [2.0]
    assert [p.turn_end_s for p in swapped.turn_probes] == [5.5]


def test_short_probe_window_is_censored_in_the_replay():
    from duplexeval.controller.format.policy import EvaluationPolicy
    from duplexeval.controller.metrics.events import evaluate_events
    from duplexeval.controller.runtime.baselines import silence_timeout_scores

    # turn 1 ends at 1.0 s and the user barges in at 2.0 s (< 1.0 + 1.2): its window cannot show the deadline;
    # turn 2 ends at 4.0 s with 3 s of silence after it: eligible
    user, agent = seg((0.0, 1.0), (2.0, 4.0)), seg((1.2, 2.5), (4.3, 5.0))
    lab = derive(user, agent, 7.0)
    assert [(p.turn_end_s, p.window_end_s) for p in lab.turn_probes] == [(1.0, 2.0), (4.0, 6.0)]
    assert lab.yield_onsets == [2.0]
    clip = to_clip(lab, "c")
    voiced = np.zeros(lab.n_frames, dtype=bool)
    for a, b in user.intervals:
        voiced[int(round(a / 0.08)) : int(round(b / 0.08))] = True
    clip.frames.level_db = np.where(voiced, -20.0, -np.inf)
    clip.frames.endpoint = silence_timeout_scores(voiced, 2.0)  # never reaches 0.91 inside turn 1's window
    clip.frames.yield_ = clip.frames.backchannel = np.zeros(lab.n_frames)
    _, agg = evaluate_events([clip], EvaluationPolicy(endpoint_mode="head_only"))
    miss = agg.to_json()["endpoint"]["head_only"]["miss_within_deadline"]
    assert (miss["eligible"], miss["censored"]) == (1, 1)
