"""duplexeval.controller's typed API: the verbs write what the commands write, the readers read it back, the
in-memory score equals the folder's, and docs/controller.md's example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import duplexeval.controller as controller
from duplexeval.cli import main
from duplexeval.controller.format.data import Clip, ClipFrames, ClipMeta, PauseProbe, TurnProbe, write_data
from duplexeval.controller.format.policy import EvaluationPolicy
from duplexeval.errors import InputError
from duplexeval.stats import Estimate, Share

ROOT = Path(__file__).resolve().parents[2]


def clip(k: int, fire_at: int) -> Clip:
    endpoint = np.where(np.arange(60) >= fire_at - 1, 0.95, 0.0)
    truth = np.where(np.arange(60) < 25, 1, 0)
    meta = ClipMeta(f"c{k}", 60, group=f"g{k // 2}", turn_probes=[TurnProbe(2.0)], pause_probes=[PauseProbe(0.8, 1.2)])
    frames = ClipFrames(60, endpoint=endpoint, level_db=np.full(60, -20.0), truth_state=truth,
                        state_probs=np.full((60, 4), 0.25))  # fmt: skip
    return Clip(meta, frames)


def cli(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0


def test_package_exports_the_verbs_and_imports_no_stage():
    code = ("import sys, duplexeval.controller as c; heavy = [m for m in ('numpy', 'onnxruntime', 'typer', "
            "'duplexeval.controller.calibration.thresholds') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for verb in ("label", "run", "evaluate", "calibrate", "compare", "bench"):
        fn = getattr(controller, verb)
        assert fn.__module__ == "duplexeval.controller.api" and fn.__doc__
    import duplexeval.controller.calibration.thresholds  # noqa: F401  a stage import leaves the verbs alone

    assert controller.calibrate.__module__ == "duplexeval.controller.api"


def test_verbs_write_what_the_commands_write(tmp_path):
    write_data(tmp_path / "a", [clip(k, 26 + k) for k in range(6)])
    write_data(tmp_path / "b", [clip(k, 28 + k) for k in range(6)])
    rep = controller.evaluate(tmp_path / "a", mode="head_only", json_out=tmp_path / "api.json",
                              rows_out=tmp_path / "api.jsonl")
    cli(["controller", "evaluate", str(tmp_path / "a"), "--mode", "head_only", "--json", str(tmp_path / "cli.json"),
         "--rows", str(tmp_path / "cli.jsonl")])  # fmt: skip
    assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert (tmp_path / "api.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    assert rep.paths == (tmp_path / "api.json", tmp_path / "api.jsonl") and len(rep.rows) == 6
    assert rep.metrics["event.endpoint.head_only.early_cutin"] == Share(0, 6)
    assert rep.metrics["frame.state.macro_f1"] == pytest.approx(0.18421052631578946)  # a point value: no interval
    back = controller.read_report(tmp_path / "api.json")
    assert back.metrics == rep.metrics and back.signature == rep.signature
    mem = controller.score_samples([clip(k, 26 + k) for k in range(6)], mode="head_only")
    assert mem.metrics == rep.metrics and mem.paths == ()

    cal = controller.calibrate(tmp_path / "a", out=tmp_path / "p-api.json", pause_cutin_ceiling=0.5,
                               grid=[0.5, 0.9, 0.96], json_out=tmp_path / "cal-api.json")
    cli(["controller", "calibrate", str(tmp_path / "a"), "--out", str(tmp_path / "p-cli.json"), "--pause-cutin-ceiling",
         "0.5", "--grid", "0.5,0.9,0.96", "--json", str(tmp_path / "cal-cli.json")])  # fmt: skip
    for name in ("p", "cal"):
        api, cli_ = (tmp_path / f"{name}-{side}.json" for side in ("api", "cli"))
        assert api.read_text().replace("p-api.json", "X") == cli_.read_text().replace("p-cli.json", "X")
    assert cal.policy == controller.read_policy(tmp_path / "p-api.json") and cal.policy.endpoint_threshold == 0.9
    assert isinstance(cal.policy, EvaluationPolicy) and "endpoint" in cal.chosen

    diff = controller.compare(tmp_path / "a", tmp_path / "b", policy=tmp_path / "p-api.json",
                              json_out=tmp_path / "c-api.json")
    cli(["controller", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--policy", str(tmp_path / "p-api.json"),
         "--json", str(tmp_path / "c-cli.json")])  # fmt: skip
    assert (tmp_path / "c-api.json").read_bytes() == (tmp_path / "c-cli.json").read_bytes()
    lat = diff.metrics["endpoint.latency_median_ms"]
    assert isinstance(lat, Estimate) and lat.value == 160.0
    assert controller.read_compare(tmp_path / "c-api.json").metrics == diff.metrics
    with pytest.raises(InputError, match="expected kind 'duplexeval.controller.compare'"):
        controller.read_compare(tmp_path / "api.json")


def test_bench_and_its_reader(tmp_path):
    res = controller.bench("silence", prefill=2, updates=3, repeats=1, json_out=tmp_path / "bench.json")
    assert res.paths == (tmp_path / "bench.json",) and res.document["controller_spec"] == "silence"
    assert isinstance(res.metrics["wall_time_per_update_ms"], Estimate)
    assert controller.read_bench(tmp_path / "bench.json").document == res.document


def test_the_documented_example_runs(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "controller.md").read_text()
    block = re.search(r"## 8\. Python API.*?```python\n(.*?)```", text, re.S)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "docs/controller.md", "exec"), {})
    assert capsys.readouterr().out.splitlines()[-1] == "0.9 160.0"  # what the comment says it prints


def test_the_readers_check_the_kinds_and_versions_the_stages_write():
    from duplexeval.controller import api
    from duplexeval.controller.metrics import compare, report

    assert (api.REPORT_KIND, api.REPORT_SCHEMA) == (report.REPORT_KIND, report.REPORT_SCHEMA_VERSION)
    assert (api.COMPARE_KIND, api.COMPARE_SCHEMA) == (compare.COMPARE_KIND, compare.COMPARE_SCHEMA_VERSION)
