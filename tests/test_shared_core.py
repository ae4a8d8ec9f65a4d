"""The shared layer: exact interval ranks, typed values, registry, signatures, artifact headers, paired tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from duplexeval import paired, stats
from duplexeval.artifacts import check_kind, header
from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec, ItemFailure, ItemResult, make_executor
from duplexeval.registry import Registry, import_object
from duplexeval.signature import Component, Signature


def test_percentile_interval_takes_ranks_50_and_1950() -> None:
    values = np.arange(1, 2001, dtype=float)  # the k-th smallest is k
    rng = np.random.default_rng(5)
    shuffled = rng.permutation(values)
    assert stats.percentile_interval(shuffled) == (50.0, 1950.0)
    assert stats.interval_levels(0.95) == (stats.LOWER_95, stats.UPPER_95)


def test_float_alpha_would_have_taken_rank_51() -> None:
    # the bug this guards against: (1 - 0.95) / 2 in floating point
    assert stats.quantile_rank((1.0 - 0.95) / 2.0, 2000) == 51
    assert stats.quantile_rank(stats.LOWER_95, 2000) == 50


def test_share_json_shape_and_bounds() -> None:
    js = stats.Share(3, 10, unknown=2, selected=12).to_json()
    assert js["value"] == 0.3 and js["count"] == 3 and js["n"] == 10
    assert js["selected_bounds"] == [0.25, 5 / 12]
    assert stats.Share(0, 0).to_json()["value"] is None
    assert "selected_bounds" not in stats.Share(1, 2).to_json()
    with pytest.raises(ValueError):
        stats.Share(3, 2)


def test_latency_not_reached_is_null() -> None:
    js = stats.Latency.of([0.1, math.inf, math.inf]).to_json()
    assert js["median"] is None and js["median_reached"] is False
    js2 = stats.Latency.of([300_000, 100_000, 200_000], scale=1e6).to_json()
    assert js2["median"] == 0.2 and js2["p90"] == 0.3


def test_registry_names_unknown_and_import_spec() -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("b", 2)
    reg.register("a", 1)
    assert reg.names() == ["a", "b"]
    assert reg.get("a") == 1
    with pytest.raises(InputError, match=r"unknown widget 'c'; available: a, b"):
        reg.get("c")
    assert reg.get("duplexeval.stats:Share") is stats.Share
    with pytest.raises(InputError, match="no attribute"):
        import_object("duplexeval.stats:Nope")
    with pytest.raises(InputError, match="cannot import"):
        import_object("duplexeval.nonexistent_mod:X")


def test_signature_compact_and_roundtrip() -> None:
    sig = Signature(
        "fdb-v1.0-unified-4",
        (Component("asr", "whisper-align:tiny.en", "1a5afae0ffff"),
         Component("vad", "silero-6.2.3", "1a153a22aa", {"t": 0.5, "s": 250})),
        {"manifest": "ab" * 32},
    ).with_bootstrap()
    line = sig.compact()
    assert line.startswith(
        "fdb-v1.0-unified-4|asr:whisper-align:tiny.en@1a5afae0|vad:silero-6.2.3@1a153a22:t0.5,s250|boot:2000@0|v:")
    assert Signature.from_json(sig.to_json()) == sig


def test_artifact_header_and_kind_check(tmp_path) -> None:
    h = header("duplexeval.test", 3, inputs={"b": "2", "a": "1"})
    assert list(h)[:3] == ["kind", "schema_version", "duplexeval"]
    assert list(h["inputs"]) == ["a", "b"]
    assert check_kind(h, "duplexeval.test", "x.json", max_schema=3) is h
    with pytest.raises(InputError, match="is a 'duplexeval.test' file, expected kind 'other'"):
        check_kind(h, "other", "x.json")
    with pytest.raises(InputError, match="newer"):
        check_kind(h, "duplexeval.test", "x.json", max_schema=2)


@pytest.mark.parametrize("a_only,b_only", [(0, 0), (1, 0), (3, 7), (10, 2), (25, 30)])
def test_mcnemar_matches_scipy_binomial(a_only: int, b_only: int) -> None:
    a = [True] * a_only + [False] * b_only + [True] * 4 + [False] * 3
    b = [False] * a_only + [True] * b_only + [True] * 4 + [False] * 3
    got = paired.mcnemar_exact(a, b)
    assert (got.a_only, got.b_only) == (a_only, b_only)
    want = 1.0 if a_only + b_only == 0 else binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue
    assert got.p_value == pytest.approx(min(1.0, want), abs=1e-15)


def test_paired_differences() -> None:
    a = [1.0, 0.0, 1.0, 0.0]
    b = [1.0, 1.0, 1.0, 0.0]
    d = paired.paired_mean_difference(a, b)
    assert d.diff == 0.25 and d.n_pairs == 4 and d.interval is not None
    assert paired.paired_mean_difference([], []).reason == "no unit is in both"
    q = paired.paired_quantile_difference([0.2, 0.4, 0.6], [0.1, 0.3, math.inf])
    assert q.diff == pytest.approx(-0.1) and q.n_pairs == 3
    nr = paired.paired_quantile_difference([math.inf, math.inf, 0.1], [0.1, 0.2, 0.3])
    assert nr.diff is None and nr.reason == "not reached"


def _square(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x * x


@pytest.mark.parametrize("jobs", [1, 2])
def test_local_executor_in_order_with_failures(jobs: int) -> None:
    ex = make_executor(ExecutorSpec("local", jobs=jobs))
    try:
        got = list(ex.map_ordered(_square, [1, 2, 3, 4]))
    finally:
        ex.close()
    assert [type(g) for g in got] == [ItemResult, ItemResult, ItemFailure, ItemResult]
    assert [g.value for g in got if isinstance(g, ItemResult)] == [1, 4, 16]
    assert isinstance(got[2], ItemFailure) and got[2].reason == "ValueError: three"


def test_executor_spec_refuses_unknown() -> None:
    with pytest.raises(InputError, match="available: local, ray"):
        ExecutorSpec("dask")
