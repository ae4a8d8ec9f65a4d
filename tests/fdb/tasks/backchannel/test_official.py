"""The official backchannel loops (2025-06 and 2026-02), frequency and JSD, computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval.errors import InputError
from duplexeval.fdb.tasks.backchannel import rules as bc
from duplexeval.fdb.tasks.backchannel.groundtruth import IccGroundTruth
from duplexeval.fdb.transcript import Word
from duplexeval.schemas import validate

BC_A = (1.0, 1.4)  # 0.4 s, no words: a backchannel
TURN = (3.0, 4.5)  # 1.5 s: a turn (>= 1 s)
BC_B = (6.0, 6.5)  # 0.5 s
LONG = (8.0, 11.5)  # 3.5 s > 3: stops the loop
BC_C = (12.0, 12.3)


def words_in(*spans: tuple[float, float | None], text: str = "w") -> list[Word]:
    return [Word(text, s, e) for s, e in spans]


# ---- which words belong to a segment ---------------------------------------------------------------


def test_segment_words_inside_and_straddling():
    ws = [
        Word("inside", 1.1, 1.3),
        Word("over_end", 1.3, 1.6),
        Word("over_start", 0.8, 1.05),
        Word("before", 0.2, 0.5),
        Word("after", 1.7, 1.9),
        Word("touch_start", 0.5, 1.0),  # ends exactly at the start: not > start, not counted
    ]
    assert bc.segment_words(ws, 1.0, 1.4) == ["inside", "over_end", "over_start"]


def test_segment_words_null_end_quirk():
    # null end starting inside the segment: skipped; starting exactly at its end: counted (zero length)
    ws = [Word("skipped", 1.1, None), Word("at_end", 1.4, None), Word("later", 1.5, None)]
    assert bc.segment_words(ws, 1.0, 1.4) == ["at_end"]


# ---- segment classification and the loop -----------------------------------------------------------


@pytest.mark.parametrize(
    "duration,n_words,tor",
    [(0.5, 0, 0), (0.5, 2, 0), (0.5, 3, 1), (0.5, 4, 1), (1.0, 0, 1), (0.99, 2, 0), (2.9, 1, 1), (3.0, 4, 1)],
)
def test_classify_segment(duration, n_words, tor):
    assert bc.classify_segment(duration, n_words) == tor


def test_no_segments():
    r = bc.backchannel_loop([], [])
    assert (r.tor, r.backchannels, r.stopped_at_long_segment) == (0, [], False)


def test_v1_loop_a_turn_erases_earlier_backchannels():
    r = bc.backchannel_loop([BC_A, TURN, BC_B], [])
    assert r.tor == 0 and r.backchannels == [BC_B]
    r = bc.backchannel_loop([BC_A, BC_B, TURN], [])
    assert r.tor == 1 and r.backchannels == []  # the last segment decides the TOR
    r = bc.backchannel_loop([TURN, BC_A, BC_B], [])
    assert r.tor == 0 and r.backchannels == [BC_A, BC_B]


def test_2026_loop_keeps_every_short_segment():
    for order in ([BC_A, TURN, BC_B], [BC_A, BC_B, TURN], [TURN, BC_A, BC_B]):
        r = bc.backchannel_loop(order, [], bc.RULES_2026_02)
        assert r.backchannels == order
    assert bc.backchannel_loop([BC_A, BC_B, TURN], [], bc.RULES_2026_02).tor == 1


def test_long_segment_stops_the_loop_and_keeps_what_was_found():
    for rules in bc.BACKCHANNEL_RULES:
        r = bc.backchannel_loop([BC_A, LONG, BC_C], [], rules)
        assert r.tor == 1 and r.backchannels == [BC_A] and r.stopped_at_long_segment
        assert len(r.trace) == 2  # BC_C never visited


def test_exactly_three_seconds_is_not_long():
    r = bc.backchannel_loop([(1.0, 4.0)], [])
    assert r.tor == 1 and not r.stopped_at_long_segment  # classified (>= 1 s), not stopped


def test_words_make_a_short_segment_a_turn():
    ws = words_in((1.05, 1.1), (1.15, 1.2), (1.25, 1.3))  # 3 words in BC_A
    r = bc.backchannel_loop([BC_A, BC_B], ws)
    assert r.trace[0].n_words == 3 and r.trace[0].tor == 1
    assert r.backchannels == [BC_B] and r.tor == 0


def test_unknown_rules():
    with pytest.raises(ValueError):
        bc.backchannel_loop([], [], "2024-01")


# ---- frequency and JSD ----------------------------------------------------------------------------


def test_frequency_per_second_of_output():
    s = bc.backchannel_sample("7", [BC_A, TURN, BC_B, (7.0, 7.3)], [], 16000 * 20, 16000, [0.5, 0.5])
    assert s.frequency == pytest.approx(2 / 20)
    # a 24 kHz file: duration from its own rate
    s = bc.backchannel_sample("7", [BC_A], [], 24000 * 10, 24000, [0.5, 0.5])
    assert s.frequency == pytest.approx(0.1) and s.duration_s == 10.0


def test_no_backchannel_jsd_is_one_and_needs_no_gt():
    s = bc.backchannel_sample("7", [TURN], [], 16000 * 10, 16000, None)
    assert s.jsd == 1.0 and s.frequency == 0.0


def test_missing_gt_with_backchannels_raises():
    with pytest.raises(KeyError):
        bc.backchannel_sample("7", [BC_A], [], 16000 * 10, 16000, None)


def test_bin_count_uses_float_division():
    # 0.6 / 0.2 == 2.9999999999999996 -> int 2 -> 3 bins (not 4)
    assert len(bc.predicted_distribution([(0.0, 0.1)], 0.6)) == 3
    assert len(bc.predicted_distribution([(0.0, 0.1)], 1.0)) == 6


def test_predicted_distribution_inclusive_bins_and_overflow():
    p = bc.predicted_distribution([(0.25, 0.65), (0.9, 5.0)], 1.0)  # bins 1..3, then 4..25 cut to 4..5
    counts = np.array([0, 1, 1, 1, 1, 1], dtype=float) + 1e-10
    assert np.allclose(p, counts / counts.sum(), rtol=0, atol=1e-15)


def test_resample_gt_linear_on_unit_grid():
    assert np.allclose(bc.resample_gt([0.25, 0.5, 0.25], 5), [0.25, 0.375, 0.5, 0.375, 0.25])


def _js_distance(p, q):
    p, q = np.asarray(p, float), np.asarray(q, float)
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a, b):
        mask = a > 0
        return float(np.sum(a[mask] * np.log(a[mask] / b[mask])))

    return math.sqrt((kl(p, m) + kl(q, m)) / 2)


def test_jsd_is_natural_log_distance():
    # duration 1.0 s -> 6 bins; one backchannel in bin 0
    same = [1.0, 0, 0, 0, 0, 0]
    assert bc.jsd([(0.0, 0.1)], 1.0, same) == pytest.approx(0.0, abs=1e-4)
    disjoint = [0, 0, 0, 0, 0, 1.0]
    assert bc.jsd([(0.0, 0.1)], 1.0, disjoint) == pytest.approx(math.sqrt(math.log(2)), abs=1e-4)
    # a partial overlap against a known distribution, with the epsilon smoothing written out
    gt = [0.1, 0.2, 0.3, 0.2, 0.1, 0.1]
    pred = np.array([0, 1, 1, 0, 0, 0], float) + 1e-10
    assert bc.jsd([(0.2, 0.5)], 1.0, gt) == pytest.approx(_js_distance(pred, gt), abs=1e-12)
    assert bc.jsd([(0.2, 0.5)], 1.0, gt) < math.sqrt(math.log(2)) < 1


def test_jsd_with_interpolated_gt():
    # gt of 3 points stretched to 6 bins on the 0..1 grid
    gt = [0.0, 1.0, 0.0]
    x = np.linspace(0, 1, 6)
    gt6 = np.interp(x, [0, 0.5, 1], gt)  # [0, .4, .8, .8, .4, 0]
    pred = np.array([0, 0, 1, 1, 0, 0], float) + 1e-10
    assert bc.jsd([(0.4, 0.7)], 1.0, gt) == pytest.approx(_js_distance(pred, gt6), abs=1e-12)


def test_metrics_mean_and_population_std():
    a = bc.backchannel_sample("1", [BC_A], [], 16000 * 10, 16000, [0.5, 0.5])  # tor 0, freq 0.1
    b = bc.backchannel_sample("2", [TURN], [], 16000 * 10, 16000, None)  # tor 1, freq 0, jsd 1
    m = bc.backchannel_metrics([a, b])
    assert m["TOR"].value == 0.5 and m["TOR"].std == 0.5
    assert m["Frequency"].value == pytest.approx(0.05) and m["Frequency"].std == pytest.approx(0.05)
    assert m["JSD"].value == pytest.approx((a.jsd + 1) / 2) and m["JSD"].n == 2
    empty = bc.backchannel_metrics([])
    assert empty["JSD"].value is None and "nan" in empty["JSD"].note


def test_validate_gt():
    assert validate({"0": [0.5, 0.5]}, IccGroundTruth, "gt").distributions() == {"0": [0.5, 0.5]}
    for bad in ({}, {"0": [1.0]}, {"0": [0.5, float("nan")]}, {"0": [0.5, -1]}, {"0": "x"}, []):
        with pytest.raises(InputError):
            validate(bad, IccGroundTruth, "gt")


def test_resample_and_jsd_are_bit_identical_to_scipy():
    """Our interp1d and jensenshannon arithmetic (to spare their imports) gives SciPy's values to the bit."""
    from scipy.interpolate import interp1d
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(7)
    for k in range(300):
        n_gt, n = int(rng.integers(2, 400)), int(rng.integers(1, 400))
        gt = rng.random(n_gt) * (rng.random(n_gt) < 0.7)
        x_gt, x = np.linspace(0, 1, n_gt), np.linspace(0, 1, n)
        want = interp1d(x_gt, gt, kind="linear", fill_value="extrapolate")(x)
        assert np.array_equal(bc.resample_gt(gt.tolist(), n), want), k
        duration = float(rng.uniform(5, 60))
        segs = sorted((float(a), float(a) + float(rng.uniform(0.1, 1.0)))
                      for a in rng.uniform(0, duration, int(rng.integers(1, 6))))
        pred = bc.predicted_distribution(segs, duration)
        ref = interp1d(x_gt, gt + 1e-3, kind="linear", fill_value="extrapolate")(np.linspace(0, 1, len(pred)))
        assert bc.jsd(segs, duration, (gt + 1e-3).tolist()) == float(jensenshannon(pred, ref)), k


# ---- reading the outputs for the official VAD ------------------------------------------------------


def test_official_vad_reads_each_output_through_its_source_first_bad_one_reported(tmp_path):
    from duplexeval.audio import write_wav_pcm16
    from duplexeval.fdb.sample import SampleAudio
    from duplexeval.fdb.tasks.backchannel.official import _vad
    from duplexeval.fdb.verified import VerifyError

    rng = np.random.default_rng(5)
    sources = []
    for k, seconds in enumerate((2.0, 3.0, 4.0)):  # the last is the longest: the VAD takes it first
        path = tmp_path / f"{k}" / "output.wav"
        path.parent.mkdir()
        sha = write_wav_pcm16(path, (rng.standard_normal(int(seconds * 16000)) * 0.05).astype(np.float32))
        sources.append(SampleAudio(path, sha, f"icc_backchannel/{k}"))
    loaded, segments = _vad(sources)
    assert loaded == [(32000, 16000), (48000, 16000), (64000, 16000)] and len(segments) == 3
    for k in (1, 2):  # changed after the sample was opened
        write_wav_pcm16(sources[k].path, np.zeros(16000, dtype=np.float32))
    with pytest.raises(VerifyError, match=r"1/output.wav: sample icc_backchannel/1: file differs from manifest.json"):
        _vad(sources)
