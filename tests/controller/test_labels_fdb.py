"""FDB v1.0 CANDOR bridge: probes from turn_taking.json / pause.json, unique source-clip time, and a run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.audio import write_wav_pcm16
from duplexeval.controller.format import data as cdata
from duplexeval.controller.labels.fdb_bridge import bridge_dataset, unique_source_hours
from duplexeval.errors import InputError


def tone(on: list[tuple[float, float]], T: float, sr: int = 16000) -> np.ndarray:
    a = np.zeros(int(round(T * sr)), dtype=np.float32)
    t = np.arange(a.size) / sr
    for s, e in on:
        m = (t >= s) & (t < e)
        a[m] = 0.3 * np.sin(2 * np.pi * 220 * t[m])
    return a


@pytest.fixture()
def fdb(tmp_path):
    root = tmp_path / "fdb"
    tt = root / "candor_turn_taking" / "candor_turn_taking" / "7"  # the published archive's extra nesting
    tt.mkdir(parents=True)
    write_wav_pcm16(tt / "input.wav", tone([(0.0, 2.0)], 4.0))
    (tt / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]", "timestamp": [2.0, 2.4]}]))
    for sid in ("1", "2"):  # two sample folders with the same input: one source clip
        d = root / "candor_pause_handling" / sid
        d.mkdir(parents=True)
        write_wav_pcm16(d / "input.wav", tone([(0.0, 1.0), (1.6, 2.5), (3.3, 4.0)], 5.0))
        (d / "pause.json").write_text(json.dumps([
            {"text": "[PAUSE]", "timestamp": [1.0, 1.6]}, {"text": "[PAUSE]", "timestamp": [2.5, 3.3]},
        ]))  # fmt: skip
    return root


def test_bridge_probes_and_reference_time(fdb):
    clips = [b.clip for b in bridge_dataset(str(fdb))]
    assert [c.meta.id for c in clips] == ["candor_turn_taking.7", "candor_pause_handling.1", "candor_pause_handling.2"]
    tt, p1, p2 = clips
    assert tt.meta.turn_probes == [cdata.TurnProbe(2.0, 0.0, None)] and tt.meta.pause_probes == []
    assert tt.meta.n_frames == 50 and tt.meta.floor_s == 4.0
    # endpoint labels: stamps (i+1)*0.08 >= 2.0 -> frames 24..49; every frame valid; no state truth
    assert np.flatnonzero(tt.frames.label_endpoint).tolist() == list(range(24, 50))
    assert tt.frames.valid_endpoint.all() and not tt.frames.valid_state.any() and (tt.frames.truth_state == -1).all()
    assert p1.meta.pause_probes == [cdata.PauseProbe(1.0, 1.6, 0.0, None), cdata.PauseProbe(2.5, 3.3, 0.0, None)]
    assert not p1.frames.label_endpoint.any()  # spec 000: the pause window is a non-yielding user turn
    assert p1.meta.source == p2.meta.source != tt.meta.source
    # unique source-clip time: 4.0 s + 5.0 s, the duplicated pause clip counted once
    assert unique_source_hours(clips) == pytest.approx(9.0 / 3600)
    assert tt.frames.level_db[0] == pytest.approx(20 * np.log10(0.3 / np.sqrt(2)), abs=0.05)
    assert tt.frames.level_db[30] == -np.inf


def test_bridge_written_folder_counts_source_once(fdb, tmp_path):
    root = cdata.write_data(tmp_path / "d", [b.clip for b in bridge_dataset(str(fdb))])
    assert cdata.load_data(root).reference_s() == pytest.approx(9.0)


def test_bridge_rejects_other_subsets(fdb):
    with pytest.raises(InputError, match="not bridged"):
        list(bridge_dataset(str(fdb), ("icc_backchannel",)))


def test_run_baseline_over_fdb_and_evaluate(fdb, tmp_path):
    from duplexeval.cli import main
    from duplexeval.controller.format.policy import EvaluationPolicy
    from duplexeval.controller.metrics.report import evaluate

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as ex:
        main(["controller", "run", "--controller", "baseline:silence", "--out", str(out), "--fdb", str(fdb)])
    assert ex.value.code == 0
    d = cdata.load_data(out)
    (tt,) = [c for c in d.iter_clips() if c.id == "candor_turn_taking.7"]
    # silence baseline, timeout 0.6 s: k silent frames after 2.0 s score k*0.08/0.6
    assert tt.frames.endpoint[25] == pytest.approx(0.08 / 0.6) and tt.frames.endpoint[24] == 0.0
    assert tt.frames.yield_ is None and tt.frames.state_probs is None  # no agent channel: listen pass only
    ep = evaluate(d, EvaluationPolicy())["event_metrics"]["endpoint"]["fallback_on"]
    # 7 silent frames reach 7*0.08/0.6 = 0.933 >= 0.91 at stamp 2.56 s; the 2-frame debounce fires at 2.64 s
    assert ep["latency"]["median_ms"] == pytest.approx(640.0) and ep["turn_probes"] == 1
    # pause [1.0, 1.6): the firing would come at 1.68 s, after it; pause [2.5, 3.3): fires at 3.20 s, inside it.
    # Two identical pause samples -> 4 probes, 2 false; reference time 4 s + 5 s (one source).
    pf = ep["pause_false_endpoints"]
    assert (pf["count"], pf["n"]) == (2, 4) and pf["reference_hours"] == pytest.approx(9.0 / 3600)
