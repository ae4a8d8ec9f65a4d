"""The shared statistics conventions (DESIGN.md section 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplexeval import stats


def test_wilson_known_value():
    # 5/10 at z=1.96: centre 0.5, half-width 0.2634 (textbook value 0.2366..0.7634)
    lo, hi = stats.wilson_interval(5, 10)
    assert lo == pytest.approx(0.236593, abs=1e-6)
    assert hi == pytest.approx(0.763407, abs=1e-6)


def test_wilson_exact_endpoints_and_empty():
    assert stats.wilson_interval(0, 7)[0] == 0.0
    assert stats.wilson_interval(7, 7)[1] == 1.0
    assert stats.wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 2)


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_share(cn):
    count, n = cn
    iv = stats.wilson_interval(count, n)
    if n == 0:
        assert iv is None
    else:
        assert 0.0 <= iv[0] <= count / n <= iv[1] <= 1.0


def test_quantile_rule_is_ceil_rank_without_interpolation():
    vals = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert stats.quantile_rule(vals, 0.5) == 3.0  # ceil(2.5) = 3rd smallest
    assert stats.quantile_rule(vals, 0.2) == 1.0  # ceil(1.0) = 1st
    assert stats.quantile_rule(vals, 0.9) == 5.0  # ceil(4.5) = 5th
    assert stats.quantile_rule([1.0, 2.0], 0.5) == 1.0  # no averaging
    assert stats.quantile_rule([], 0.5) is None


def test_quantile_rank_is_exact_for_decimal_levels():
    # 0.9 * 10 is 9.000000000000002 in floating point; the rule means exactly 9.
    assert stats.quantile_rank(0.9, 10) == 9
    assert stats.quantile_rank(0.1, 30) == 3
    assert stats.quantile_rank(0.025, 2000) == 50


def test_not_reached_quantile():
    q = stats.Quantile.of([0.5, math.inf, math.inf], 0.5)
    assert q.value is None and q.reached is False
    q = stats.Quantile.of([0.5, 0.7, math.inf], 0.5)
    assert q.value == 0.7 and q.reached


def test_bootstrap_is_deterministic_and_uses_fresh_rng():
    vals = np.arange(20, dtype=float)
    a = stats.bootstrap_median_interval(vals)
    b = stats.bootstrap_median_interval(vals)
    assert a == b
    idx = stats.bootstrap_indices(20)
    expected = np.random.default_rng(0).integers(0, 20, size=(2000, 20))
    assert np.array_equal(idx, expected)


def test_bootstrap_median_matches_explicit_loop():
    vals = np.array([0.2, 1.5, 0.7, math.inf, 0.4, 2.2, 0.9])
    idx = np.random.default_rng(0).integers(0, 7, size=(2000, 7))
    meds = [stats.quantile_rule(vals[row], 0.5) for row in idx]
    lo = stats.quantile_rule(meds, 0.025)
    hi = stats.quantile_rule(meds, 0.975)
    assert stats.bootstrap_median_interval(vals) == (lo, hi)


def test_bootstrap_ratio_skips_resamples_without_denominator():
    num = np.array([1.0, 0.0, 0.0])
    den = np.array([2.0, 0.0, 0.0])
    lo, hi = stats.bootstrap_ratio_interval(num, den)
    assert lo == hi == 0.5  # every resample with pause time has ratio 1/2
    assert stats.bootstrap_ratio_interval([0.0], [0.0]) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=30))
def test_median_interval_contains_median(vals):
    med = stats.quantile_rule(vals, 0.5)
    lo, hi = stats.bootstrap_median_interval(vals)
    assert lo <= med <= hi


def test_selected_bounds():
    assert stats.selected_bounds(3, 2, 10) == (0.3, 0.5)
    assert stats.selected_bounds(0, 0, 0) is None
    with pytest.raises(ValueError):
        stats.selected_bounds(5, 6, 10)
