"""`fdb score --sensitivity`: spec 000's VAD sensitivity sweep on real (espeak-ng) speech.

The model tells two sentences with a short gap; the user's onset S falls inside the gap, so spec 000's rule
(minimum silence 100 ms) splits the speech there and the sample is not_exercised, while a longer minimum
silence bridges the gap and the same sample becomes exercised: the fragility spec 000 describes, shown.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.fdb.tasks.interruption.sensitivity import (
    EDGE_MS,
    MIN_SILENCES_MS,
    THRESHOLDS,
    analyse,
    nearest_edge,
)
from duplexeval.fdb.unified import score
from duplexeval.fdb.unified.load import load_tree
from duplexeval.tts import synthesize
from duplexeval.vad import SCORER_SETTINGS, load_vad
from tests.helpers.fdb import FixtureSample, interrupt_ann, place, write_tree

UI = "synthetic_user_interruption"
GAP_S = 0.3  # silence between the sentences: Silero splits them under 100 ms minimum silence, not under 300


def _trim(x: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(np.abs(x) > 1e-3)
    return x[nz[0] : nz[-1] + 1]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    a = _trim(synthesize("Once upon a time there was a small village by the sea.").audio)
    b = _trim(synthesize("And the people fished every day.").audio)
    reply = synthesize("Sure, what would you like to know?")
    T = 20.0
    end_a = 2.0 + a.size / 16000
    gapped = place(T, [(2.0, a), (end_a + GAP_S, b), (13.0, reply.audio)])
    S = end_a + GAP_S / 2  # inside the gap
    R = S + 2.0
    words = [(w.text, 13.0 + w.start_s, 13.0 + w.end_s) for w in reply.words]
    far = gapped.copy()
    root = write_tree(
        tmp_path_factory.mktemp("sens") / "t",
        [
            FixtureSample(UI, "gap", T, interrupt_ann(S, R), words, audio=gapped),
            FixtureSample(UI, "inside", T, interrupt_ann(3.0, 5.0), words, audio=far),  # S mid-sentence
            FixtureSample(UI, "silent", T, interrupt_ann(S, R), words, audio=place(T, [(13.0, reply.audio)])),
        ],
    )
    return root


def test_sweep_shows_the_gap_sample_flip_and_flags_it(tree):
    sens = analyse(load_tree(tree), jobs=1)
    assert len(sens.table) == len(THRESHOLDS) * len(MIN_SILENCES_MS) == 25
    head = [r for r in sens.table if r.headline]
    assert len(head) == 1 and (head[0].threshold, head[0].min_silence_ms) == (0.5, 100)
    # the headline row is exactly unified.json's interruption numbers
    u = score(tree, write=False, jobs=1).subset(UI)
    assert head[0].not_exercised == u["counts"]["not_exercised"] == 2  # gap and silent
    assert head[0].exercised == u["counts"]["exercised"] == 1
    assert head[0].speaking_at_end == u["counts"]["speaking_at_end"]
    assert head[0].response_rate_2s == u["metrics"]["response_rate_2s"]["value"]
    assert head[0].stop_latency_median_s == u["metrics"]["stop_latency_s"]["median"]
    assert head[0].restart_rate == u["metrics"]["restart_rate"]["value"]
    # a minimum silence longer than the gap bridges it: the gap sample is exercised there
    long_sil = [r for r in sens.table if r.min_silence_ms >= 300 and r.threshold == 0.5]
    assert long_sil and all(r.not_exercised == 1 and r.exercised == 2 for r in long_sil)
    rows = {e.sample_id: e for e in sens.edges}
    assert rows["gap"].near_edge and rows["gap"].distance_ms <= EDGE_MS
    assert rows["gap"].headline_outcome == "not_exercised" and len(rows["gap"].outcomes) >= 2
    assert not rows["inside"].near_edge and rows["inside"].headline_outcome != "not_exercised"
    assert not rows["silent"].near_edge
    body = sens.to_json()
    assert sens.near_edge == body["near_edge"] == 1
    assert body["kind"] == "duplexeval.fdb.unified-sensitivity"
    assert body["signature"]["compact"].startswith(
        "fdb-v1.0-unified-4-sensitivity-1|asr:hand|vad:silero-6.2.3@1a153a22:t0.3-0.7,s50-500,p0,edge200|v:"
    )


def test_nearest_edge_is_exact_and_ignores_file_boundaries(tree):
    inp = next(ls.input for ls in load_tree(tree).samples if ls.entry.id == "gap")
    S_samples = inp.S_us * 16 // 1000
    segs = [(0, S_samples - 100), (S_samples + 3200, inp.n_samples)]
    _edge, dist = nearest_edge(inp, segs)
    assert dist == abs((S_samples - 100) * 125 - inp.S_us * 2)
    assert nearest_edge(inp, [(0, inp.n_samples)]) == (None, None)
    # the headline segments the sweep uses are the whole-file Silero segments
    audio = __import__("soundfile").read(str(inp.audio.path), dtype="float32")[0]
    assert load_vad().segments(audio, SCORER_SETTINGS)


def _cli(argv: list[str], capsys) -> str:
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    assert exc.value.code in (0, None), out.err
    return out.out


def test_cli_flag_prints_the_table_and_writes_the_file(tree, capsys):
    out = _cli(["fdb", "score", str(tree), "--sensitivity", "--jobs", "1"], capsys)
    assert "VAD sensitivity" in out and "0.5*" in out
    assert "S within 200 ms of a headline segment edge: 1 of 3" in out
    body = json.loads((tree / "unified-sensitivity.json").read_text())
    assert len(body["settings"]) == 25 and body["settings"][0]["threshold"] == 0.3
    # same tree in, same bytes out
    first = (tree / "unified-sensitivity.json").read_bytes()
    both = json.loads(_cli(["fdb", "score", str(tree), "--sensitivity", "--jobs", "2", "--json", "-"], capsys))
    assert (tree / "unified-sensitivity.json").read_bytes() == first
    assert set(both) == {"unified", "sensitivity"} and both["sensitivity"]["near_edge"] == 1
    # without the flag nothing changes: unified.json alone
    plain = json.loads(_cli(["fdb", "score", str(tree), "--json", "-", "--no-write"], capsys))
    assert plain == both["unified"]


def test_sweep_rows_equal_whole_file_segmentation(tree):
    """The sweep segments only the prefix that fixes the segments starting at or before R; every setting's
    outcomes equal those from whole-file segments."""
    from duplexeval import vad_batched
    from duplexeval.fdb.tasks.interruption import unified as intr
    from duplexeval.fdb.tasks.interruption.sensitivity import segments_up_to_r, settings_grid
    from duplexeval.vad import timestamps_from_probs

    inputs = [ls.input for ls in load_tree(tree).samples if ls.input is not None]
    probs = vad_batched.probs_files([i.audio for i in inputs], jobs=1)
    for st in settings_grid():
        for inp, p in zip(inputs, probs):
            whole = intr.score_interruption(inp, timestamps_from_probs(p, inp.n_samples, st))
            assert intr.score_interruption(inp, segments_up_to_r(p, inp, st)) == whole
