"""duplexeval.eot's typed API: the verbs return typed results, the readers read them back, the docs' example runs."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import duplexeval.eot as eot
from duplexeval.cli import main
from duplexeval.eot import EOTPair
from duplexeval.eot.predictions import Predictions
from duplexeval.errors import InputError
from duplexeval.stats import Estimate, Latency, Share

ROOT = Path(__file__).resolve().parents[2]


def rows(seed: int, n_turns: int) -> list[dict]:
    """Turns of 0-2 hold spans and a last eot span on eot-bench's 0.1 s grid (the same spans for every seed);
    p_eot, drawn by `seed`, rises faster at the true end."""
    rng = np.random.default_rng(0)
    score = np.random.default_rng(seed)
    out: list[dict] = []
    for t in range(n_turns):
        ns = int(rng.integers(1, 4))
        t0 = 0.5
        for s in range(ns):
            last = s == ns - 1
            d = 3.5 if last else float(rng.choice((0.3, 0.5, 1.0, 2.2)))
            slope = score.uniform(0.5, 2.0) if last else score.uniform(0.0, 0.8)
            for i in range(math.floor(d / 0.1 + 1e-6) + 1):
                sd = round(i * 0.1, 6)
                p = round(float(np.clip(score.normal(0.1, 0.1) + slope * sd, 0, 1)), 4)
                out.append({"id": f"t{t:02d}", "language": "en", "span_index": s, "timestamp": round(t0 + sd, 6),
                            "silence_dur": sd, "p_eot": p, "label": "eot" if last else "hold"})  # fmt: skip
            t0 += d + 1.0
    return out


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in items))
    return path


def spans_file(path: Path) -> Path:
    """Two turns of tone / pause / tone / tail at 16 kHz in eot-bench's dataset schema."""
    sr = 16000
    items = []
    for k in range(2):
        tone = (0.3 * np.sin(2 * np.pi * (200 + 20 * k) * np.arange(int(0.6 * sr)) / sr)).astype(np.float32)
        pause = 0.3 + 0.4 * k
        audio = np.concatenate([tone, np.zeros(int(pause * sr), np.float32), tone, np.zeros(int(2.0 * sr), np.float32)])
        spans = [{"start": 0.6, "end": round(0.6 + pause, 6)},
                 {"start": round(1.2 + pause, 6), "end": round(3.2 + pause, 6)}]
        items.append({"id": f"turn{k}", "language": "en", "silence_spans": spans,
                      "audio": {"array": np.round(audio, 5).tolist(), "sampling_rate": sr}})
    return write_jsonl(path, items)


def test_package_exports_the_verbs_and_imports_no_stage():
    code = ("import sys, duplexeval.eot as e; heavy = [m for m in ('numpy', 'pyarrow', 'duplexeval.eot.predict_stage', "
            "'duplexeval.eot.sweep_engine', 'typer') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for verb in ("score", "predict", "sweep", "compare", "check"):
        fn = getattr(eot, verb)
        assert callable(fn) and fn.__module__ == "duplexeval.eot.api" and fn.__doc__
    import duplexeval.eot.predict_stage  # noqa: F401  a stage import leaves the package's verbs alone

    assert eot.predict.__module__ == "duplexeval.eot.api"


def test_score_pairs_in_memory_gives_stats_values():
    res = eot.score_pairs([EOTPair(1.0, 0.5), EOTPair(1.0, 1.2), EOTPair(1.0, math.inf)], bands=(300,), tolerance_ms=50)
    assert res.false_cutoff == Share(1, 3) and res.hang[300] == Share(1, 3)
    assert isinstance(res.latency, Latency) and res.latency.n == 3 and res.n_missed == 1
    assert res.metrics["score.false_cutoff_rate"] == pytest.approx(1 / 3) and res.paths == ()
    grouped = eot.score_pairs([EOTPair(1.0, 0.5), EOTPair(1.0, 1.2), EOTPair(2.0, 2.1)], conversations=["a", "a", "b"])
    assert isinstance(grouped.false_cutoff, Estimate) and grouped.false_cutoff.value == pytest.approx(1 / 3)
    with pytest.raises(InputError, match="--tolerance-ms must be non-negative"):
        eot.score_pairs([EOTPair(1.0, 1.0)], tolerance_ms=-1)
    with pytest.raises(TypeError, match="score_pairs"):  # spec 003's score(pairs) moved to duplexeval.eot.pairs
        eot.score([EOTPair(1.0, 1.0)])  # type: ignore[arg-type]


def test_score_writes_what_the_command_writes(tmp_path, capsys):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("true_turn_end_s,detector_commit_s,id\n1.0,1.2,a\n2.0,1.5,b\n3.0,,c\n")
    res = eot.score(pairs, json_out=tmp_path / "api.json", rows_out=tmp_path / "api.jsonl")
    with pytest.raises(SystemExit) as e:
        main(["eot", "score", str(pairs), "--json", str(tmp_path / "cli.json"), "--rows", str(tmp_path / "cli.jsonl")])
    assert e.value.code == 0
    assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert (tmp_path / "api.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    assert res.paths == (tmp_path / "api.json", tmp_path / "api.jsonl")
    back = eot.read_report(tmp_path / "api.json")
    assert back.false_cutoff == res.false_cutoff == Share(1, 3) and back.signature == res.signature
    assert back.metrics.keys() == res.metrics.keys()
    (tmp_path / "other.json").write_text(json.dumps({"kind": "duplexeval.eot.sweep", "schema_version": 1}))
    with pytest.raises(InputError, match="is a 'duplexeval.eot.sweep' file, expected kind 'duplexeval.eot.report'"):
        eot.read_report(tmp_path / "other.json")


def test_sweep_compare_and_their_readers(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", rows(0, 20))
    b = write_jsonl(tmp_path / "b.jsonl", rows(1, 20))
    grid = [i / 20 for i in range(21)]
    s = eot.sweep(a, out=tmp_path / "s", thresholds=grid, plots=False, selection_aware=False)
    assert s.paths == (tmp_path / "s" / "summary.json", tmp_path / "s" / "sweep.parquet")
    assert all(p.exists() for p in s.paths) and s.signature is not None
    point = next(p for p in s.points.values() if p is not None)
    assert isinstance(point.cutoff_rate, Estimate) and point.cutoff_rate.interval is not None
    assert eot.read_sweep(tmp_path / "s") == eot.read_sweep(tmp_path / "s" / "summary.json")
    assert eot.read_sweep(tmp_path / "s").points == s.points
    mem = eot.sweep_predictions(Predictions.from_rows(rows(0, 20)), config=eot.sweep_config(thresholds=grid),
                                selection_aware=False)
    assert mem.points == s.points and mem.paths == ()
    c = eot.compare(a, b, json_out=tmp_path / "compare.json")
    diff = c.metrics["5pct.cutoff_rate_diff"]
    assert isinstance(diff, Estimate) and c.paths == (tmp_path / "compare.json",)
    assert eot.read_compare(tmp_path / "compare.json").metrics == c.metrics
    with pytest.raises(InputError, match="expected kind 'duplexeval.eot.compare'"):
        eot.read_compare(tmp_path / "s" / "summary.json")


def test_the_documented_example_runs(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "eot.md").read_text()
    block = re.search(r"## 9\. Python API.*?```python\n(.*?)```", text, re.S)
    assert block is not None
    (tmp_path / "pairs.csv").write_text("true_turn_end_s,detector_commit_s\n1.0,1.2\n2.0,1.5\n3.0,3.9\n")
    spans_file(tmp_path / "spans.jsonl")
    write_jsonl(tmp_path / "a.jsonl", rows(0, 20))
    write_jsonl(tmp_path / "b.jsonl", rows(1, 20))
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "docs/eot.md", "exec"), {})
    assert (tmp_path / "silence.parquet").exists() and (tmp_path / "compare.json").exists()


def test_the_readers_check_the_kinds_and_versions_the_stages_write():
    from duplexeval.eot import api, compare_stage, report, sweep_report

    assert (api.REPORT_KIND, api.REPORT_SCHEMA) == (report.REPORT_KIND, report.SCHEMA_VERSION)
    assert (api.SWEEP_KIND, api.SWEEP_SCHEMA) == (sweep_report.SWEEP_KIND, sweep_report.SCHEMA_VERSION)
    assert (api.COMPARE_KIND, api.COMPARE_SCHEMA) == (compare_stage.COMPARE_KIND, compare_stage.SCHEMA_VERSION)
