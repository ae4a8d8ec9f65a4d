"""`fdb compare`: paired differences checked by hand on trees made by hand, McNemar against scipy, refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from duplexeval import cli
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.compare_stage import compare
from duplexeval.fdb.results import load_scored
from duplexeval.fdb.unified import score
from duplexeval.jsonio import dumps, read_json, write_json
from duplexeval.paired import mcnemar_exact
from duplexeval.stats import bootstrap_indices
from tests.helpers.fdb import (
    FixedSegmenter,
    FixtureSample,
    interrupt_ann,
    pause_ann,
    segments_from_seconds,
    turn_ann,
    write_tree,
)

P, SP, TT, UI = "candor_pause_handling", "synthetic_pause_handling", "candor_turn_taking", "synthetic_user_interruption"
INELIGIBLE = {"eligible": False, "reasons": ["late_input"], "words": None, "wav": False}


def _tree(root: Path, system: str, dataset: str = "hand") -> Path:
    """Two systems on the same 14 samples; the comments say what each pair exercises."""
    a = system == "a"

    def s(subset, sid, T, ann, spoken, **kw):
        return FixtureSample(subset, sid, T, ann, **{"words": spoken, **kw})

    samples = [
        # pause: identical in both (ties: difference 0, no discordant pair)
        s(P, "p1", 8.0, pause_ann((2.0, 3.0)), [("so", 2.5, 2.8)]),
        s(P, "p2", 8.0, pause_ann((2.0, 3.0)), []),
        # a subset with no sample eligible in both
        s(SP, "s1", 6.0, pause_ann((1.0, 2.0)), [("x", 1.5, 1.6)], **({} if a else INELIGIBLE)),
        # turn taking, E = 3: t1 A responds (0.5 s) and B does not; t2 both respond (0.4 / 1.0 s);
        # t3 A starts early, B responds (0.2 s); t4 ineligible in B (not paired)
        s(TT, "t1", 10.0, turn_ann(3.0), [("yes", 3.5, 3.8)] if a else []),
        s(TT, "t2", 10.0, turn_ann(3.0), [("well", 3.4, 3.6)] if a else [("well", 4.0, 4.2)]),
        s(TT, "t3", 10.0, turn_ann(3.0), [("yeah", 2.9, 3.1)] if a else [("sure", 3.2, 3.5)]),
        s(TT, "t4", 10.0, turn_ann(3.0), [("ok", 3.1, 3.3)], **({} if a else INELIGIBLE)),
        # interruption, S = 10, R = 12: i1 exercised in both, i2 only in A, i3 only in B, i4 in neither,
        # i5 ineligible in B
        *(s(UI, f"i{k}", 28.0, interrupt_ann(10.0, 12.0), [("sorry", 12.5, 12.8)]) for k in (1, 2, 3, 4)),
        s(UI, "i5", 28.0, interrupt_ann(10.0, 12.0), [("sorry", 12.5, 12.8)], **({} if a else INELIGIBLE)),
    ]
    return write_tree(root, samples, declared={P: 216, SP: 137, TT: 119, UI: 200}, dataset=dataset)


SEG_A = FixedSegmenter({"i1": segments_from_seconds([(8.0, 10.5)]), "i2": segments_from_seconds([(9.0, 10.4)]),
                        "i3": segments_from_seconds([(3.0, 5.0)]), "i5": segments_from_seconds([(9.0, 10.1)])})
SEG_B = FixedSegmenter({"i1": segments_from_seconds([(9.0, 10.2)]), "i2": segments_from_seconds([(3.0, 5.0)]),
                        "i3": segments_from_seconds([(9.5, 10.3)])})


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    a, b = _tree(tmp_path / "A", "a"), _tree(tmp_path / "B", "b")
    score(a, segmenter=SEG_A)
    score(b, segmenter=SEG_B)
    return a, b


def test_turn_taking_pairs_by_hand(trees: tuple[Path, Path]) -> None:
    c = compare(list(trees)).to_json()
    block = c["comparisons"][0]["subsets"][TT]
    assert block["pairing"] == {"selected_a": 4, "selected_b": 4, "selected_both": 4, "eligible_a": 4, "eligible_b": 3,
                                "eligible_both": 3, "paired": 3}
    m = block["metrics"]
    # response within 1 s: A t1, t2 (2/3); B t2 (1.0 s exactly counts), t3 (2/3); discordant t1 (A only), t3 (B only)
    r1 = m["response_rate_1s"]
    assert (r1["a"], r1["b"], r1["diff"], r1["n_pairs"]) == (2 / 3, 2 / 3, 0.0, 3)
    assert r1["mcnemar"] == {"a_only": 1, "b_only": 1, "p_value": 1.0}
    es = m["early_start_rate"]
    assert (es["count_a"], es["count_b"], es["diff"]) == (1, 0, -1 / 3)
    assert es["mcnemar"] == {"a_only": 1, "b_only": 0, "p_value": 1.0}
    # medians by the ceil(qN) rule: A [0.4, 0.5, inf] -> 0.5; B [0.2, 1.0, inf] -> 1.0
    lat = m["response_latency_s"]
    assert (lat["a"], lat["b"], lat["diff"], lat["a_reached"], lat["b_reached"]) == (0.5, 1.0, 0.5, True, True)
    # the interval, recomputed here row by row: the difference of the resample medians, ranks 50 and 1950
    a_us = np.array([500_000, 400_000, math.inf])  # t1, t2, t3 in pairing order
    b_us = np.array([math.inf, 1_000_000, 200_000])
    diffs = []
    for row in bootstrap_indices(3):
        qa, qb = sorted(a_us[row])[1], sorted(b_us[row])[1]
        if not (math.isinf(qa) and math.isinf(qb)):
            diffs.append(qb - qa)
    diffs.sort()
    lo, hi = diffs[math.ceil(len(diffs) / 40) - 1], diffs[math.ceil(len(diffs) * 39 / 40) - 1]
    expect = [None if math.isinf(v) else v / 1e6 for v in (lo, hi)]
    assert lat["interval"] == expect


def test_interruption_exercised_counts_and_pairs(trees: tuple[Path, Path]) -> None:
    block = compare(list(trees)).to_json()["comparisons"][0]["subsets"][UI]
    p = block["pairing"]
    assert (p["eligible_both"], p["paired"]) == (4, 1)
    assert p["exercised"] == {"both": 1, "only_a": 1, "only_b": 1, "neither": 1}
    ex = block["metrics"]["exercised_rate"]
    assert (ex["a"], ex["b"], ex["n_pairs"], ex["mcnemar"]) == (0.5, 0.5, 4, {"a_only": 1, "b_only": 1, "p_value": 1.0})
    stop = block["metrics"]["stop_latency_s"]  # i1 only: A stops 0.5 s after S, B 0.2 s
    assert stop["n_pairs"] == 1 and stop["a"] == 0.5 and stop["b"] == 0.2
    assert stop["diff"] == pytest.approx(-0.3, abs=1e-12)
    # the context that pairing cannot fix is carried for both trees
    assert block["context"]["a"]["exercised_rate"]["count"] == 3  # i1, i2, i5 over A's 5 eligible
    assert block["context"]["b"]["coverage"] == 4 / 5


def test_ties_and_no_common_eligible_sample(trees: tuple[Path, Path]) -> None:
    subsets = compare(list(trees)).to_json()["comparisons"][0]["subsets"]
    tie = subsets[P]["metrics"]["pause_intrusion_rate"]
    assert (tie["a"], tie["b"], tie["diff"], tie["interval"]) == (0.5, 0.5, 0.0, [0.0, 0.0])
    assert tie["mcnemar"] == {"a_only": 0, "b_only": 0, "p_value": 1.0}
    none = subsets[SP]
    assert none["pairing"]["eligible_both"] == 0
    for m in none["metrics"].values():
        assert m["diff"] is None and m["interval"] is None and m["n_pairs"] == 0 and m["reason"] == "no unit is in both"


@pytest.mark.parametrize(("a_only", "b_only"), [(0, 0), (0, 3), (1, 4), (2, 7), (5, 5), (3, 12)])
def test_mcnemar_exact_matches_scipy_and_the_binomial_sum(a_only: int, b_only: int) -> None:
    a = [True] * a_only + [False] * b_only + [True, False]  # one concordant yes, one concordant no
    b = [False] * a_only + [True] * b_only + [True, False]
    got = mcnemar_exact(a, b)
    n, k = a_only + b_only, min(a_only, b_only)
    by_hand = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
    assert (got.a_only, got.b_only) == (a_only, b_only)
    assert got.p_value == pytest.approx(by_hand, rel=1e-12)
    if n:
        assert got.p_value == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-12)
    if (a_only, b_only) == (1, 4):
        assert got.p_value == pytest.approx(0.375)  # 2 * (1 + 5) / 32


def test_refusals_name_the_input_that_differs(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    a, _ = trees
    other = _tree(tmp_path / "other", "b", dataset="another-set")
    score(other, segmenter=SEG_B)
    with pytest.raises(RefusalError, match="different datasets \\(dataset name 'hand' vs 'another-set'\\)"):
        compare([a, other])
    asr = _tree(tmp_path / "asr", "b")
    js = read_json(asr / "asr.json")
    write_json(asr / "asr.json", {**js, "backend": {"name": "pocketsphinx"}})
    score(asr, segmenter=SEG_B)
    with pytest.raises(RefusalError, match="different ASR backends \\(asr:hand vs "
                                           "asr:pocketsphinx\\).*--allow-different-asr"):
        compare([a, asr])
    assert compare([a, asr], allow_different_asr=True).notes == ["different ASR backends allowed: asr:hand vs "
                                                                 "asr:pocketsphinx"]
    with pytest.raises(InputError, match="at least two trees"):
        compare([a])


def test_loader_refuses_stale_or_foreign_files(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    a, b = trees
    c = compare([a, b]).to_json()
    write_json(b / "unified.json", c)  # a compare.json where a unified.json belongs
    with pytest.raises(InputError, match="is a 'duplexeval.fdb.compare' file, expected kind 'duplexeval.fdb.unified'"):
        load_scored(b)
    js = read_json(a / "asr.json")
    write_json(a / "asr.json", {**js, "note": "edited"})
    with pytest.raises(RefusalError, match="made from another asr.json than the tree holds now"):
        load_scored(a)


def test_cli_writes_compare_json_with_header_deterministically(tmp_path: Path, trees: tuple[Path, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    a, b = trees
    c3 = _tree(tmp_path / "C", "a")
    score(c3, segmenter=SEG_A)
    out = tmp_path / "compare.json"
    with pytest.raises(SystemExit) as exc:
        cli.main(["fdb", "compare", str(a), str(b), str(c3), "--out", str(out), "--min-eligible", "0"])
    assert exc.value.code == 0  # (B has no pair in synthetic_pause_handling: the default rule would exit 1)
    text = capsys.readouterr().out
    first = out.read_bytes()
    js = read_json(out)
    assert list(js)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
    assert js["kind"] == "duplexeval.fdb.compare"
    assert [(x["a"], x["b"]) for x in js["comparisons"]] == [(0, 1), (0, 2)]  # each tree against the first
    same = js["comparisons"][1]["subsets"][TT]["metrics"]["response_rate_2s"]  # A against a copy of itself
    assert (same["diff"], same["interval"]) == (0.0, [0.0, 0.0])
    assert js["signature"]["compact"] in text and "exercised in both 1, only A 1, only B 1, neither 1" in text
    with pytest.raises(SystemExit):
        cli.main(["fdb", "compare", str(a), str(b), str(c3), "--out", str(out)])
    assert out.read_bytes() == first
    assert dumps(compare([a, b, c3]).to_json()).encode() == first


def test_paired_ratio_difference_by_hand() -> None:
    from duplexeval.paired import from_resamples, paired_ratio_difference

    na, da, nb, db = [1.0, 0.0, 3.0], [2.0, 2.0, 0.0], [2.0, 1.0, 3.0], [2.0, 2.0, 0.0]
    d = paired_ratio_difference(na, da, nb, db)
    assert (d.a, d.b, d.diff, d.n_pairs) == (1.0, 1.5, 0.5, 3)  # (1 + 0 + 3) / 4 and (2 + 1 + 3) / 4
    diffs, skipped = [], 0
    for row in bootstrap_indices(3):
        den = sum(da[i] for i in row)
        if den == 0:  # only the third unit drawn: no pause time on either side, skipped
            skipped += 1
            continue
        diffs.append(sum(nb[i] for i in row) / den - sum(na[i] for i in row) / den)
    diffs.sort()
    assert d.interval == (diffs[math.ceil(len(diffs) / 40) - 1], diffs[math.ceil(len(diffs) * 39 / 40) - 1])
    assert d.skipped == skipped > 0
    none = from_resamples(None, 0.5, np.array([np.nan]), np.array([0.5]), 4)
    assert (none.diff, none.interval, none.reason) == (None, None, "undefined on one side")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_non_number_in_unified_json_or_its_rows_is_refused_by_compare_and_report(
        tmp_path: Path, trees: tuple[Path, Path], capsys: pytest.CaptureFixture[str], literal: str) -> None:
    a, b = trees
    text = (b / "unified.json").read_text()
    good = text
    assert '"value": 0.5' in text
    (b / "unified.json").write_text(text.replace('"value": 0.5', f'"value": {literal}', 1))
    for args in (["fdb", "compare", str(a), str(b), "--out", str(tmp_path / "c.json")],
                 ["report", str(b), "--out", str(tmp_path / "r.html")]):
        with pytest.raises(SystemExit) as exc:
            cli.main(args)
        assert exc.value.code == 2
        assert capsys.readouterr().err == (f"duplexeval: error: {b / 'unified.json'}: {literal} is not a number "
                                           "JSON allows\n")
    (b / "unified.json").write_text(good)
    rows = b / "unified-samples.jsonl"
    lines = rows.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '":3.0' in line)
    lines[i] = lines[i].replace('":3.0', f'":{literal}', 1)
    rows.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError,
                       match=rf"unified-samples.jsonl: line {i + 1}: {literal} is not a number JSON allows"):
        load_scored(b)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.html").exists()
