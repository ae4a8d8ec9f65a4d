"""Controller data format, frame metrics, policy files, grouped paired bootstrap, calibration and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.controller.format.data import (
    Clip,
    ClipFrames,
    ClipMeta,
    PauseProbe,
    TurnProbe,
    frames_in_window,
    load_data,
    write_data,
)
from duplexeval.controller.format.policy import EvaluationPolicy, load_policy, save_policy
from duplexeval.controller.metrics.events import clip_events
from duplexeval.controller.metrics.frame_metrics import frame_metrics
from duplexeval.errors import InputError
from duplexeval.stats import bootstrap_indices, percentile_interval, quantile_rule
from tests.helpers.controller import turn_clip


def small_clip(cid="c1", n=50, group="g"):
    fr = ClipFrames(n, endpoint=np.linspace(0, 1, n), level_db=np.full(n, -30.0), truth_state=np.zeros(n, int),
                    state_probs=np.full((n, 4), 0.25))  # fmt: skip
    meta = ClipMeta(cid, n, group=group, turn_probes=[TurnProbe(2.0)], pause_probes=[PauseProbe(1.0, 1.5)], floor_s=4.0)
    return Clip(meta, fr)


# ------------------------------------------------------------------ data format


def test_roundtrip_and_deterministic_bytes(tmp_path):
    write_data(tmp_path / "a", [small_clip("c1"), small_clip("c2")])
    write_data(tmp_path / "b", [small_clip("c1"), small_clip("c2")])
    for rel in ("dataset.json", "clips.jsonl", "frames/c1.npz"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    d = load_data(tmp_path / "a")
    assert [c.id for c in d.clips] == ["c1", "c2"]
    clip = next(d.iter_clips())
    assert clip.meta.turn_probes == [TurnProbe(2.0, 0.0, None)]
    assert np.allclose(clip.frames.endpoint, np.linspace(0, 1, 50))
    assert clip.frames.valid("yield").all() and clip.frames.yield_ is None


def test_frames_in_window_edges():
    assert frames_in_window(0.0, 0.8, 100) == (0, 10)
    assert frames_in_window(0.05, 0.8, 100) == (1, 10)  # a frame starting before the window is out
    assert frames_in_window(0.0, 0.79, 100) == (0, 9)
    assert frames_in_window(0.0, 100.0, 20) == (0, 20)


def _write_raw(root, lines, arrays=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "dataset.json").write_text(
        json.dumps({"kind": "duplexeval.controller.data", "schema_version": 1, "frame_s": 0.08}))
    (root / "clips.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (root / "frames").mkdir(exist_ok=True)
    for cid, arrs in (arrays or {}).items():
        np.savez(root / "frames" / f"{cid}.npz", **arrs)


@pytest.mark.parametrize(
    "line,msg",
    [
        ({"id": "a/b", "n_frames": 5}, "clip id 'a/b' is not allowed"),
        ({"id": "a", "n_frames": -1}, "n_frames must be a non-negative integer"),
        ({"id": "a", "n_frames": 5, "turn_probes": [[0.5]]}, "turn_probes\\[0\\] 0.5 is after the clip end"),
        ({"id": "a", "n_frames": 50, "pause_probes": [[2.0, 1.0]]}, "pause_start must be < pause_end"),
        ({"id": "a", "n_frames": 50, "yield_onsets": ["x"]}, "yield_onsets\\[0\\] must be a finite number"),
        ({"id": "a", "n_frames": 50, "bogus": 1}, "unknown field\\(s\\) bogus"),
    ],
)
def test_loader_errors_are_one_line_with_file_line_and_clip(tmp_path, line, msg):
    _write_raw(tmp_path / "d", [line])
    with pytest.raises(InputError, match=msg) as e:
        load_data(tmp_path / "d")
    assert "clips.jsonl: line 1" in str(e.value) and "\n" not in str(e.value)


def test_loader_rejects_duplicates_and_bad_arrays(tmp_path):
    _write_raw(tmp_path / "d", [{"id": "a", "n_frames": 3}, {"id": "a", "n_frames": 3}])
    with pytest.raises(InputError, match="line 2: duplicate clip id 'a'"):
        load_data(tmp_path / "d")
    _write_raw(tmp_path / "e", [{"id": "a", "n_frames": 3}], {"a": {"endpoint": np.zeros(4)}})
    d = load_data(tmp_path / "e")
    with pytest.raises(InputError, match="clip a: array endpoint has shape \\(4,\\), expected \\(3,\\)"):
        d.load_frames(d.clips[0])
    _write_raw(tmp_path / "f", [{"id": "a", "n_frames": 3}], {"a": {"truth_state": np.array([0, 4, 1])}})
    d = load_data(tmp_path / "f")
    with pytest.raises(InputError, match="truth_state frame 1: value 4"):
        d.load_frames(d.clips[0])
    _write_raw(tmp_path / "g",
               [{"id": "a", "n_frames": 3, "source": "s", "floor_s": 1},
                {"id": "b", "n_frames": 3, "source": "s", "floor_s": 2}])
    with pytest.raises(InputError, match="floor_s 2.0 differs"):
        load_data(tmp_path / "g")
    _write_raw(tmp_path / "h", [{"id": "zz", "n_frames": 3}])
    d = load_data(tmp_path / "h")
    with pytest.raises(InputError, match="frames file not found"):
        d.load_frames(d.clips[0])


# ------------------------------------------------------------------ frame metrics


def test_macro_f1_confusion_and_auc_by_hand():
    truth = np.array([0, 0, 1, 2, 3, 3, -1, 0])
    pred = np.array([0, 1, 1, 2, 3, 0, 2, 0])
    probs = np.eye(4)[pred]
    valid = np.ones(8, bool)
    valid[7] = False  # masked
    lab = np.array([0, 1, 0, 1, 1, 0, 0, 1], bool)
    score = np.array([0.1, 0.8, 0.4, 0.35, 0.9, 0.2, 0.3, 0.0])
    fr = ClipFrames(8, state_probs=probs, truth_state=truth, valid_state=valid, endpoint=score, label_endpoint=lab,
                    valid_endpoint=valid, yield_=score, label_yield=np.zeros(8, bool))  # fmt: skip
    m = frame_metrics([fr])
    st = m["state"]
    # scored frames 0..5: truth 0,0,1,2,3,3 pred 0,1,1,2,3,0
    assert st["confusion"]["matrix"] == [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
    # F1: LISTEN p=1/2 r=1/2 -> .5; HOLD p=1/2 r=1 -> 2/3; SPEAK 1; BACKCHANNEL p=1 r=1/2 -> 2/3
    assert st["macro_f1"] == pytest.approx((0.5 + 2 / 3 + 1 + 2 / 3) / 4)
    assert (st["scored"], st["masked"], st["unlabelled"]) == (6, 1, 1)
    e = m["endpoint"]
    # valid frames 0..6: labels 0,1,0,1,1,0,0 scores .1,.8,.4,.35,.9,.2,.3
    # positives .8,.35,.9 vs negatives .1,.4,.2,.3: pairs won 4+3+4 = 11 of 12
    assert (e["positives"], e["negatives"], e["masked"]) == (3, 4, 1)
    assert e["roc_auc"] == pytest.approx(11 / 12)
    # AP: ranking .9+, .8+, .4-, .35+ -> precisions 1, 1, 3/4 at each positive: (1+1+.75)/3
    assert e["average_precision"] == pytest.approx((1 + 1 + 0.75) / 3)
    y = m["yield"]
    assert y["roc_auc"] is None and "only one class" in y["reason"]


# ------------------------------------------------------------------ policy


def test_policy_defaults_roundtrip_and_errors(tmp_path):
    p = EvaluationPolicy()
    assert (p.endpoint_threshold, p.yield_threshold, p.backchannel_threshold) == (0.91, 0.93, 0.80)
    assert ((p.warmup_frames, p.vad_gate_db, p.min_voiced_ms, p.fallback_silence_ms, p.backchannel_cooldown_frames)
            == (6, -50.0, 350, 1200, 15))
    save_policy(tmp_path / "p.json", p.with_(endpoint_threshold=0.5))
    assert load_policy(tmp_path / "p.json") == p.with_(endpoint_threshold=0.5)
    (tmp_path / "bad.json").write_text('{"endpoint_threshold": 0.5, "nope": 1}')
    with pytest.raises(InputError, match="unknown policy field\\(s\\) nope"):
        load_policy(tmp_path / "bad.json")
    (tmp_path / "bad2.json").write_text('{"endpoint_mode": "sometimes"}')
    with pytest.raises(InputError, match="endpoint_mode must be one of"):
        load_policy(tmp_path / "bad2.json")


# ------------------------------------------------------------------ grouped paired bootstrap


def test_paired_bootstrap_matches_a_brute_force_group_resample():
    from duplexeval.controller.metrics.compare import paired_bootstrap

    pol = EvaluationPolicy(endpoint_mode="head_only")
    rng = np.random.default_rng(5)
    fires_a = [int(x) for x in rng.integers(25, 45, size=12)]
    fires_b = [f - int(d) for f, d in zip(fires_a, rng.integers(0, 4, size=12))]
    groups = [f"g{k // 3}" for k in range(12)]
    ea = [clip_events(turn_clip(f"c{k}", groups[k], fires_a[k]), pol) for k in range(12)]
    eb = [clip_events(turn_clip(f"c{k}", groups[k], fires_b[k]), pol) for k in range(12)]
    res = paired_bootstrap(ea, eb, pol, pol)
    m = res["metrics"]["endpoint.latency_median_ms"]
    lat_a = {g: [] for g in sorted(set(groups))}
    lat_b = {g: [] for g in sorted(set(groups))}
    for k in range(12):
        lat_a[groups[k]].append((fires_a[k] + 1) * 80 - 2000)
        lat_b[groups[k]].append((fires_b[k] + 1) * 80 - 2000)
    gs = sorted(lat_a)
    assert m["a"] == quantile_rule([x for g in gs for x in lat_a[g]], 0.5)
    assert m["b"] == quantile_rule([x for g in gs for x in lat_b[g]], 0.5)
    diffs = []
    for row in bootstrap_indices(len(gs)):
        va = [x for i in row for x in lat_a[gs[i]]]
        vb = [x for i in row for x in lat_b[gs[i]]]
        diffs.append(quantile_rule(vb, 0.5) - quantile_rule(va, 0.5))
    lo, hi = percentile_interval(np.asarray(diffs))
    assert m["ci95"] == [pytest.approx(lo), pytest.approx(hi)]
    assert res["groups"] == 4 and res["metrics"]["endpoint.no_endpoint_rate"]["ci95"] == [0.0, 0.0]


def test_paired_bootstrap_ratio_metric_brute_force():
    from duplexeval.controller.metrics.compare import paired_bootstrap

    pol = EvaluationPolicy(endpoint_mode="head_only")
    fires_a = [30, None, 30, None, 30, 30]
    fires_b = [30, 30, None, 30, 30, 30]
    groups = ["x", "x", "y", "z", "z", "w"]
    ea = [clip_events(turn_clip(f"c{k}", groups[k], fires_a[k]), pol) for k in range(6)]
    eb = [clip_events(turn_clip(f"c{k}", groups[k], fires_b[k]), pol) for k in range(6)]
    m = paired_bootstrap(ea, eb, pol, pol)["metrics"]["endpoint.no_endpoint_rate"]
    assert m["a"] == pytest.approx(2 / 6) and m["b"] == pytest.approx(1 / 6)
    gs = sorted(set(groups))
    none_a = {g: sum(1 for k in range(6) if groups[k] == g and fires_a[k] is None) for g in gs}
    none_b = {g: sum(1 for k in range(6) if groups[k] == g and fires_b[k] is None) for g in gs}
    size = {g: groups.count(g) for g in gs}
    diffs = [
        (sum(none_b[gs[i]] for i in row) - sum(none_a[gs[i]] for i in row)) / sum(size[gs[i]] for i in row)
        for row in bootstrap_indices(len(gs))
    ]
    lo, hi = percentile_interval(np.asarray(diffs))
    assert m["ci95"] == [pytest.approx(lo), pytest.approx(hi)]


# ------------------------------------------------------------------ calibration


def test_calibration_picks_lowest_latency_under_the_pause_ceiling():
    from duplexeval.controller.calibration.thresholds import Targets, calibrate

    n = 80
    # one turn probe (turn end 2.0 s) and one pause probe (3.2-4.0 s) in one clip
    s = np.zeros(n)
    s[24:26] = 0.6  # would end the turn at frame 25 (2.08 s) for thresholds <= 0.6
    s[27:29] = 0.8  # frame 28 (2.32 s) for thresholds <= 0.8
    s[40:42] = 0.7  # inside the pause: fires at 41 (3.36 s) for thresholds <= 0.7
    s[60:62] = 0.9  # frame 61 (4.96 s) for thresholds <= 0.9
    meta = ClipMeta("c", n, turn_probes=[TurnProbe(2.0)], pause_probes=[PauseProbe(3.2, 4.0, 2.4)], floor_s=6.4)
    clip = Clip(meta, ClipFrames(n, endpoint=s, level_db=np.full(n, -20.0)))
    pol, info = calibrate([clip], EvaluationPolicy(endpoint_mode="head_only"), Targets(pause_cutin_ceiling=0.0),
                          [0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95])
    # 0.5-0.7 cut into the pause; 0.75 and 0.8 both give 320 ms -> the higher (0.8) wins the tie
    assert pol.endpoint_threshold == 0.8
    rows = {r.threshold: r for r in info.table}
    assert rows[0.6].pause_cutin == 1.0 and rows[0.9].endpoint_median_latency_all_ms == 2960.0
    assert rows[0.95].endpoint_median_latency_all_ms is None  # never fires: median not reached
    assert pol.yield_threshold == 0.93  # no target: unchanged


# ------------------------------------------------------------------ CLI


def test_cli_evaluate_calibrate_compare(tmp_path, capsys):
    from duplexeval.cli import main

    clips = [turn_clip(f"c{k}", f"g{k // 2}", 26 + k) for k in range(6)]
    write_data(tmp_path / "a", clips)
    write_data(tmp_path / "b", [turn_clip(f"c{k}", f"g{k // 2}", 28 + k) for k in range(6)])
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as e:
        main(["controller", "evaluate", str(tmp_path / "a"), "--json", str(out), "--mode", "head_only"])
    assert e.value.code == 0
    rep = json.loads(out.read_text())
    assert rep["evaluation_policy"]["endpoint_mode"] == "head_only"
    assert list(rep)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
    assert rep["signature"]["compact"].startswith("controller-spec002-1|policy:head_only@")
    assert rep["signature"]["compact"] in capsys.readouterr().out  # printed under the table
    assert rep["event_metrics"]["endpoint"]["head_only"]["latency"]["n"] == 6
    with pytest.raises(SystemExit) as e:
        main(["controller", "calibrate", str(tmp_path / "a"), "--out", str(tmp_path / "p.json"),
              "--pause-cutin-ceiling", "0.5", "--grid", "0.5,0.9,0.96"])  # fmt: skip
    assert e.value.code == 0
    assert load_policy(tmp_path / "p.json").endpoint_threshold == 0.9
    cmp = tmp_path / "c.json"
    with pytest.raises(SystemExit) as e:
        main(
            ["controller", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--policy", str(tmp_path / "p.json"),
             "--json", str(cmp)])
    assert e.value.code == 0
    cj = json.loads(cmp.read_text())
    assert (cj["kind"], cj["schema_version"]) == ("duplexeval.controller.compare", 2)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:  # `--json -`: stdout is that document and nothing else
        main(
            ["controller", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--policy", str(tmp_path / "p.json"),
             "--json", "-"])
    assert e.value.code == 0 and json.loads(capsys.readouterr().out) == cj
    assert "|boot:2000@0|" in cj["signature"]["compact"] and set(cj["inputs"]) == {"a:clips.jsonl", "b:clips.jsonl"}
    c = cj["event_metrics"]["metrics"]["endpoint.latency_median_ms"]
    assert c["diff_b_minus_a"] == 160.0
    write_data(tmp_path / "other", clips[:3])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["controller", "compare", str(tmp_path / "a"), str(tmp_path / "other")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "must hold the same clips" in err[0]
    with pytest.raises(SystemExit) as e:
        main(["controller", "evaluate", str(tmp_path / "nope")])
    assert e.value.code == 2


def test_evaluate_report_is_deterministic_and_rows_add_up(tmp_path):
    from duplexeval.cli import main

    clips = [turn_clip(f"c{k}", f"g{k // 2}", 20 + 3 * k) for k in range(6)]
    write_data(tmp_path / "a", clips)
    outs = []
    for k in range(2):
        with pytest.raises(SystemExit) as e:
            main(["controller", "evaluate", str(tmp_path / "a"), "--json", str(tmp_path / f"r{k}.json"),
                  "--rows", str(tmp_path / f"rows{k}.jsonl")])  # fmt: skip
        assert e.value.code == 0
        outs.append((tmp_path / f"r{k}.json").read_bytes() + (tmp_path / f"rows{k}.jsonl").read_bytes())
    assert outs[0] == outs[1]
    rep = json.loads((tmp_path / "r0.json").read_text())
    rows = [json.loads(x) for x in (tmp_path / "rows0.jsonl").read_text().splitlines()]
    mode = rep["evaluation_policy"]["endpoint_mode"]
    early = sum(1 for r in rows for t in r[mode]["turns"] if t["early_firings"] > 0)
    assert early == rep["event_metrics"]["endpoint"][mode]["early_cutin"]["count"] > 0
    lat = sorted(t["latency_ms"] for r in rows for t in r[mode]["turns"] if t["latency_ms"] is not None)
    assert rep["event_metrics"]["endpoint"][mode]["latency"]["median_ms"] == lat[(len(lat) + 1) // 2 - 1]


def test_macro_f1_bootstrap_uses_group_confusions():
    from sklearn.metrics import f1_score

    from duplexeval.controller.metrics.compare import paired_bootstrap
    from duplexeval.controller.metrics.frame_metrics import macro_f1_from_confusion
    from duplexeval.controller.metrics.report import run_clips

    rng = np.random.default_rng(3)
    clips_a, clips_b, per_group = [], [], {}
    for k in range(8):
        t = rng.integers(0, 4, 40)
        pa = np.where(rng.uniform(size=40) < 0.6, t, rng.integers(0, 4, 40))
        pb = np.where(rng.uniform(size=40) < 0.8, t, rng.integers(0, 4, 40))
        g = f"g{k // 2}"
        per_group.setdefault(g, []).append((t, pa, pb))
        for out, p in ((clips_a, pa), (clips_b, pb)):
            out.append(Clip(ClipMeta(f"c{k}", 40, group=g), ClipFrames(40, state_probs=np.eye(4)[p], truth_state=t)))
    ea, fa = run_clips(clips_a, EvaluationPolicy())
    eb, _ = run_clips(clips_b, EvaluationPolicy())
    m = paired_bootstrap(ea, eb, EvaluationPolicy(), EvaluationPolicy())["metrics"]["state.macro_f1"]
    assert m["a"] == pytest.approx(fa["state"]["macro_f1"])
    gs = sorted(per_group)
    diffs = []
    for row in bootstrap_indices(len(gs)):
        t = np.concatenate([x[0] for i in row for x in per_group[gs[i]]])
        va = f1_score(t, np.concatenate([x[1] for i in row for x in per_group[gs[i]]]), labels=[0, 1, 2, 3],
                      average="macro", zero_division=0.0)
        vb = f1_score(t, np.concatenate([x[2] for i in row for x in per_group[gs[i]]]), labels=[0, 1, 2, 3],
                      average="macro", zero_division=0.0)
        diffs.append(vb - va)
        if len(diffs) == 60:
            break
    # the first 60 resamples agree one by one with scikit-learn; the interval uses all 2000
    cm = np.zeros((len(gs), 16))
    for ev in ea:
        cm[gs.index(ev.group)] += np.asarray(ev.state_confusion).ravel()
    cmb = np.zeros((len(gs), 16))
    for ev in eb:
        cmb[gs.index(ev.group)] += np.asarray(ev.state_confusion).ravel()
    from duplexeval.controller.metrics.compare import group_counts

    counts = group_counts(bootstrap_indices(len(gs)), len(gs))
    mine = (
        macro_f1_from_confusion((counts @ cmb).reshape(-1, 4, 4)) - macro_f1_from_confusion(
            (counts @ cm).reshape(-1, 4, 4)))
    assert np.allclose(mine[:60], diffs)
    lo, hi = percentile_interval(mine)
    assert m["ci95"] == [pytest.approx(lo), pytest.approx(hi)]


def test_compare_refuses_different_frame_labels():
    from duplexeval.controller.metrics.compare import paired_bootstrap

    pol = EvaluationPolicy()
    a = turn_clip("c", "g", 30)
    b = turn_clip("c", "g", 30)
    b.frames.label_endpoint = np.zeros(60, bool)
    with pytest.raises(InputError, match="clip c: A and B have different frame labels"):
        paired_bootstrap([clip_events(a, pol)], [clip_events(b, pol)], pol, pol)


def test_macro_f1_equals_scikit_learn_over_several_clips():
    from sklearn.metrics import confusion_matrix, f1_score

    rng = np.random.default_rng(11)
    frames, ts, ps = [], [], []
    for k in range(5):
        n = 100 + k
        t = rng.choice([0, 1, 3, -1], size=n)  # SPEAK never labelled; -1 unlabelled
        probs = rng.dirichlet(np.ones(4), size=n)
        valid = rng.uniform(size=n) < 0.8
        frames.append(ClipFrames(n, state_probs=probs, truth_state=t, valid_state=valid))
        keep = valid & (t != -1)
        ts.append(t[keep])
        ps.append(probs[keep].argmax(axis=1))
    st = frame_metrics(frames)["state"]
    t, p = np.concatenate(ts), np.concatenate(ps)
    assert st["macro_f1"] == pytest.approx(f1_score(t, p, labels=[0, 1, 2, 3], average="macro", zero_division=0.0))
    assert st["confusion"]["matrix"] == confusion_matrix(t, p, labels=[0, 1, 2, 3]).tolist()
    assert st["scored"] == t.size
