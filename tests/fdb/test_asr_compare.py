"""`duplexeval fdb asr-compare TREE_A TREE_B`: word disagreements and first-onset differences, worked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.errors import RefusalError
from duplexeval.fdb.asr_compare import align_words, compare_trees, compare_words
from duplexeval.fdb.transcript import Word
from tests.helpers.fdb import FixtureSample, interrupt_ann, turn_ann, write_tree

TT, UI = "candor_turn_taking", "synthetic_user_interruption"


def test_alignment_counts_substitutions_deletions_insertions():
    al = align_words(["call", "me", "back", "later"], ["call", "me", "mac", "later", "ok"])
    assert (al.substitutions, al.deletions, al.insertions, al.edits) == (1, 0, 1, 2)
    assert al.matches == [(0, 0), (1, 1), (3, 3)]
    assert align_words([], ["a"]).insertions == 1 and align_words(["a"], []).deletions == 1
    assert align_words(["a", "b"], ["a", "b"]).edits == 0


def test_compare_words_normalises_and_takes_b_minus_a():
    a = [Word("Sure,", 3.36, 3.9), Word("thing.", 4.0, 4.3)]
    b = [Word("sure", 3.387, 3.8), Word("thing", 4.01, 4.2), Word("Mm.", 5.0, 5.1)]
    c = compare_words("k", a, b)
    assert c.alignment.edits == 1 and c.alignment.insertions == 1
    assert c.first_onset_diff == pytest.approx(0.027)
    assert c.matched_onset_diffs == pytest.approx([0.027, 0.01])
    row = c.to_json()
    assert row["first_onset_diff_s"] == 0.027 and row["matched_onset_diff_median_s"] == 0.01
    empty = compare_words("e", [], b)
    assert empty.first_onset_diff is None and empty.alignment.insertions == 3


def _trees(tmp_path, audio_b=None, cut_b=None):
    rng = np.random.default_rng(1)
    audio = (rng.standard_normal(16000 * 12) * 0.01).astype(np.float32)
    a = [
        FixtureSample(TT, "1", 12.0, turn_ann(2.0), [("Yes,", 3.36, 3.9), ("it", 4.46, 4.69), ("is", 4.7, 4.8)],
                      audio=audio),
        FixtureSample(UI, "2", 12.0, interrupt_ann(5.0, 7.0), [("One,", 8.0, 8.4)], audio=audio),
        FixtureSample(TT, "3", 12.0, turn_ann(2.0), [("Hi", 3.0, 3.2)], audio=audio),
    ]
    b = [
        FixtureSample(TT, "1", 12.0, turn_ann(2.0), [("yes", 3.387, 3.8), ("it's", 4.5, 4.7)], audio=audio),
        FixtureSample(UI, "2", 12.0, interrupt_ann(5.0, 7.0 if cut_b is None else cut_b), [("One", 8.073, 8.4)],
                      audio=audio if audio_b is None else audio_b),
        FixtureSample(TT, "3", 12.0, turn_ann(2.0), None, audio=audio),  # not transcribed in B
    ]
    return write_tree(tmp_path / "a", a), write_tree(tmp_path / "b", b)


def test_compare_trees_rows_and_summary(tmp_path):
    ta, tb = _trees(tmp_path)
    cmp = compare_trees(ta, tb)
    body = cmp.to_json()
    assert body["kind"] == "duplexeval.fdb.asr-compare" and body["schema_version"] == 1
    assert body["signature"]["compact"].startswith("fdb-asr-compare-1|a:hand|b:hand|v:")
    assert set(body["inputs"]) == {"a/asr.json", "b/asr.json", "a/manifest.json", "b/manifest.json"}
    rows = {r["sample"]: r for r in body["samples"]}
    assert set(rows) == {f"{TT}/1", f"{UI}/2"}
    assert rows[f"{TT}/1"]["word_edits"] == 2  # "it is" vs "it's": one substitution, one deletion
    assert rows[f"{TT}/1"]["first_onset_diff_s"] == 0.027
    assert rows[f"{UI}/2"]["word_edits"] == 0 and rows[f"{UI}/2"]["first_onset_diff_s"] == 0.073
    s = body["summary"]
    assert s["samples"] == 2 and s["samples_with_word_disagreement"] == 1
    assert s["word_edits"] == 2 and s["words_a"] == 4 and s["word_edits_per_word_a"] == 0.5
    f = s["first_onset_diff_s"]
    assert f["n"] == 2 and f["signed_median"] == 0.027 and f["abs_max"] == 0.073  # ceil(N/2)-th: the 1st of 2
    assert body["not_compared"] == {"only_ok_in_a": [f"{TT}/3"], "only_ok_in_b": []}


def test_refuses_when_the_audio_differs(tmp_path):
    other = np.zeros(16000 * 12, dtype=np.float32)
    ta, tb = _trees(tmp_path, audio_b=other)
    with pytest.raises(RefusalError, match=r"sample synthetic_user_interruption/2: output.wav .* differs from "
                                           r".*same audio"):
        compare_trees(ta, tb)


def test_refuses_when_the_interruption_cut_differs(tmp_path):
    ta, tb = _trees(tmp_path, cut_b=7.5)
    with pytest.raises(RefusalError, match="transcribed from 7.5 s on"):
        compare_trees(ta, tb)


def test_cli_prints_summary_json_and_one_line_refusals(tmp_path, capsys):
    from duplexeval.cli import main

    ta, tb = _trees(tmp_path)
    out = tmp_path / "cmp.json"
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr-compare", str(ta), str(tb), "--out", str(out)])
    assert e.value.code in (0, None)
    text = capsys.readouterr().out
    assert "2 sample(s) compared; word disagreements in 1" in text and "+27.0" in text
    assert json.loads(out.read_text())["summary"]["samples"] == 2
    with pytest.raises(SystemExit) as e:
        main(["fdb", "asr-compare", str(ta), str(tmp_path / "nope")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("duplexeval: error:")
