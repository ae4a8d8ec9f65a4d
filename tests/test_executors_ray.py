"""The Ray executor on a real local Ray instance (2 CPUs, one per test session): order, failures, killed workers
recovered or recorded, the missing-extra message, and byte-identical `fdb asr` / `fdb score` outputs vs local."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duplexeval.errors import InputError
from duplexeval.executors import (
    ExecutorSpec,
    ItemFailure,
    ItemResult,
    StatefulWork,
    make_executor,
)
from tests.helpers import workers as wh

pytestmark = pytest.mark.ray


def _run(spec: ExecutorSpec, stateful: StatefulWork | None, fn, items):
    ex = make_executor(spec)
    try:
        return list(ex.map_stateful(stateful, items) if stateful else ex.map_ordered(fn, items))
    finally:
        ex.close()


def test_tasks_in_order_with_failures(ray_local) -> None:
    got = _run(ExecutorSpec("ray"), None, wh.square_or_fail, [1, 2, 3, 4, 5])
    assert [type(g) for g in got] == [ItemResult, ItemResult, ItemFailure, ItemResult, ItemResult]
    assert [g.index for g in got] == [0, 1, 2, 3, 4]
    assert got[2] == ItemFailure(2, "ValueError: three")  # the function's own error: not a lost worker, not retried
    assert [g.value for g in got if isinstance(g, ItemResult)] == [1, 4, 16, 25]


def test_killed_task_worker_is_retried_on_a_new_worker(ray_local, tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    got = _run(ExecutorSpec("ray", max_retries=1), None, wh.die_once, [(marker, n) for n in range(5)])
    assert all(isinstance(g, ItemResult) for g in got), got
    assert [g.value[0] for g in got] == [0, 1, 2, 3, 4]
    assert got[2].value[1] != int(Path(marker).read_text())  # got[2] ran again on a new process


def test_killed_actor_is_replaced_and_its_item_retried(ray_local, tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    work = StatefulWork(wh.offset, 100, wh.stateful_die_once)
    got = _run(ExecutorSpec("ray", max_retries=1), work, None, [(marker, n) for n in range(6)])
    assert all(isinstance(g, ItemResult) for g in got), got
    assert [g.value[0] for g in got] == [100, 101, 102, 103, 104, 105]
    assert got[2].value[1] != int(Path(marker).read_text())


def test_an_item_that_always_kills_its_worker_is_recorded_and_the_rest_finish(ray_local) -> None:
    work = StatefulWork(wh.offset, 10, wh.stateful_die_always)
    got = _run(ExecutorSpec("ray", max_retries=1), work, None, [("", n) for n in range(4)])
    assert [type(g) for g in got] == [ItemResult, ItemFailure, ItemResult, ItemResult]
    assert got[1].worker_lost and "attempt 2 of 2" in got[1].reason and "--max-retries 1" in got[1].reason
    assert [g.value for g in got if isinstance(g, ItemResult)] == [10, 12, 13]


def test_results_held_for_order_are_bounded_without_stalling(ray_local, monkeypatch: pytest.MonkeyPatch) -> None:
    from duplexeval import executors_ray

    monkeypatch.setattr(executors_ray, "MAX_AHEAD", 1)  # at most one item past the oldest unfinished one
    got = _run(ExecutorSpec("ray"), StatefulWork(wh.offset, 1, wh.stateful_die_always), None,
               [("", n) for n in (0, 2, 3, 4)])
    assert [g.value for g in got] == [1, 3, 4, 5]
    got = _run(ExecutorSpec("ray"), None, wh.square_or_fail, [1, 2, 4, 5])
    assert [g.value for g in got] == [1, 4, 16, 25]


def test_a_failing_model_load_raises_in_the_driver(ray_local) -> None:
    with pytest.raises(FileNotFoundError, match="no model here"):
        _run(ExecutorSpec("ray"), StatefulWork(wh.init_fails, None, wh.stateful_die_always), None, [("", 0)])


def test_a_worker_bigger_than_the_cluster_is_refused_not_left_waiting(ray_local) -> None:
    with pytest.raises(InputError, match=r"--ray-num-cpus 3 --ray-num-gpus 0: more than the Ray cluster has \(2 CPUs"):
        _run(ExecutorSpec("ray", ray_num_cpus=3), StatefulWork(wh.offset, 0, wh.stateful_die_always), None, [("", 0)])


def test_gpu_is_requested_only_when_the_cluster_has_one(ray_local, capsys: pytest.CaptureFixture[str]) -> None:
    work = StatefulWork(wh.offset, 5, wh.stateful_die_always)
    got = _run(ExecutorSpec("ray", ray_num_gpus=1), work, None, [("", 0), ("", 2)])
    assert [g.value for g in got] == [5, 7]  # ran on CPU workers instead of waiting for a GPU that does not exist
    assert "no GPU" in capsys.readouterr().err


def test_without_ray_one_line_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if the extra were not installed
    with pytest.raises(InputError, match=r"pip install 'duplexeval\[ray\]'"):
        make_executor(ExecutorSpec("ray"))
    from duplexeval.cli import main

    monkeypatch.setattr(sys, "argv", ["duplexeval", "fdb", "score", str(tmp_path), "--executor", "ray"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == "duplexeval: error: --executor ray needs Ray, an optional extra: pip install 'duplexeval[ray]'\n"


# -- the stages on a demo tree ----------------------------------------------------------------------
def _demo_tree(root: Path, per_subset: int = 2) -> Path:
    from duplexeval.fdb.export_stage import export

    export("turn-based", "demo", root, subsets=["candor_turn_taking", "synthetic_user_interruption"],
           limit=per_subset, progress=False)
    return root


def _files(tree: Path, names: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """Relative path -> bytes of the files under `tree` (only those named `names`, when given)."""
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and (names is None or p.name in names)}


@pytest.mark.slow
def test_asr_and_score_on_ray_write_the_same_bytes_as_local(ray_local, tmp_path: Path) -> None:
    from duplexeval.cli import _make_app
    from duplexeval.fdb import asr_stage
    from duplexeval.fdb.unified import score

    local = _demo_tree(tmp_path / "local", 1)
    remote = tmp_path / "ray"
    shutil.copytree(local, remote)
    asr_stage.asr(local, backend="whisper-align", jobs=1, progress=False)
    res = asr_stage.asr(remote, backend="whisper-align", progress=False, executor=ExecutorSpec("ray"))
    assert res.n_ok == res.n_eligible == 2 and not res.failed
    names = ("asr.json", "output.json")
    assert _files(remote, names) == _files(local, names) and len(_files(local, names)) == 3

    score(local, jobs=1)
    out = CliRunner().invoke(_make_app(), ["fdb", "score", str(remote), "--executor", "ray", "--json", "-"])
    assert out.exit_code == 0, out.output
    names = ("unified.json", "unified-samples.jsonl")
    assert _files(remote, names) == _files(local, names) and len(_files(local, names)) == 2


def test_asr_worker_killed_mid_sample_is_retried_with_the_same_bytes(ray_local, tmp_path: Path) -> None:
    from duplexeval.fdb import asr_stage

    local = _demo_tree(tmp_path / "local")
    remote = tmp_path / "ray"
    shutil.copytree(local, remote)
    (tmp_path / "never").write_text("")  # the local run's marker already exists: nothing dies there
    asr_stage.asr(local, backend=wh.KillOnceBackend(str(tmp_path / "never")), jobs=1, progress=False)
    res = asr_stage.asr(remote, backend=wh.KillOnceBackend(str(tmp_path / "died")), progress=False,
                        executor=ExecutorSpec("ray", max_retries=1))
    assert (tmp_path / "died").exists() and not res.failed  # a worker died, and its sample was redone elsewhere
    names = ("asr.json", "output.json")
    assert _files(remote, names) == _files(local, names)


def test_asr_sample_past_the_retries_is_recorded_with_its_reason(ray_local, tmp_path: Path) -> None:
    from duplexeval.fdb import asr_stage
    from duplexeval.fdb.tree import load_asr

    tree = _demo_tree(tmp_path / "t")
    res = asr_stage.asr(tree, backend=wh.KillOnceBackend(str(tmp_path / "died")), progress=False,
                        executor=ExecutorSpec("ray", max_retries=0))
    assert res.failed and res.n_error == 1 and res.n_ok == 3
    rec, _ = load_asr(tree)
    (key, bad), = [(k, s) for k, s in rec.samples.items() if s.status == "error"]
    assert (bad.output_json is None and "worker died running it, attempt 1 of 1" in (bad.error or "")
            and key in (bad.error or ""))
    assert not (tree / key / "output.json").exists()


def test_controller_run_on_ray_writes_the_same_data_folder(ray_local, tmp_path: Path) -> None:
    import json

    import numpy as np
    import soundfile as sf

    from duplexeval.cli import _make_app
    from duplexeval.tts import synthesize

    lines = []
    for k, (q, a) in enumerate([("Where is the station?", "Go left."), ("Is it raining?", "Not today."),
                                ("Can you help me?", "Of course.")]):
        u, g = synthesize(q).audio, synthesize(a).audio
        n = len(u) + len(g) + 16000
        user, agent = np.zeros(n, np.float32), np.zeros(n, np.float32)
        user[:len(u)] = u
        agent[len(u) + 8000: len(u) + 8000 + len(g)] = g
        sf.write(str(tmp_path / f"c{k}.wav"), np.stack([user, agent], axis=1), 16000, subtype="PCM_16")
        lines.append({"id": f"c{k}", "audio": f"c{k}.wav", "assignments": "both"})
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    app, runner = _make_app(), CliRunner()
    for out, extra in (("local", []), ("ray", ["--executor", "ray"])):
        res = runner.invoke(app, ["controller", "run", "--controller", "baseline:silero", "--out", str(tmp_path / out),
                                  "--conversations", str(manifest), *extra])
        assert res.exit_code == 0, res.output
    local = _files(tmp_path / "local")
    assert _files(tmp_path / "ray") == local and len(local) > 2


def test_export_on_ray_writes_the_same_tree_and_resumes_from_its_journal(ray_local, tmp_path: Path) -> None:
    from duplexeval.fdb.export_stage import export

    subsets = ["candor_turn_taking", "synthetic_pause_handling"]
    local = export("turn-based", "demo", tmp_path / "local", subsets=subsets, limit=2, progress=False)
    remote = export("turn-based", "demo", tmp_path / "ray", subsets=subsets, limit=2, progress=False,
                    executor=ExecutorSpec("ray"))
    assert (remote.ran, remote.reused) == (local.ran, local.reused) == (4, 0)

    assert _files(tmp_path / "ray") == _files(tmp_path / "local") and len(_files(tmp_path / "local")) > 8
    (tmp_path / "ray" / "candor_turn_taking" / "1" / "trace.json").unlink()  # as if killed before this journal entry
    again = export("turn-based", "demo", tmp_path / "ray", subsets=subsets, limit=2, progress=False,
                   executor=ExecutorSpec("ray"))
    assert (again.ran, again.reused) == (1, 3) and _files(tmp_path / "ray") == _files(tmp_path / "local")


def test_eot_predict_on_ray_writes_the_same_predictions(ray_local, tmp_path: Path) -> None:
    from duplexeval.cli import _make_app
    from duplexeval.eot.predict_stage import predict
    from tests.helpers.eot import one_turn_set

    a, b = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    predict(one_turn_set(), "silero", {}, a, progress=False)
    predict(one_turn_set(), "silero", {}, b, executor=ExecutorSpec("ray"), progress=False)
    assert (a.read_bytes() == b.read_bytes()
            and a.with_suffix(".jsonl").read_bytes() == b.with_suffix(".jsonl").read_bytes())
    helptext = CliRunner().invoke(_make_app(), ["eot", "predict", "--help"]).output
    assert all(flag in helptext
               for flag in ("--executor", "--ray-address", "--ray-num-cpus", "--ray-num-gpus", "--max-retries"))


def _cli(*args: str, cwd: Path) -> None:
    """One `duplexeval` command in a fresh process, as a user runs it (with --executor ray it starts its own Ray)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "duplexeval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, (args, proc.stderr[-2000:])


def test_export_asr_and_score_on_a_default_ray_start_write_the_local_bytes(tmp_path: Path) -> None:
    """No test fixture's Ray: each `--executor ray` command starts a local instance with Ray's defaults (every core,
    OMP_NUM_THREADS=1 in its workers), as `duplexeval ... --executor ray` does for a user without a cluster."""
    local, remote = tmp_path / "local", tmp_path / "ray"
    common = ["--system", "turn-based", "--dataset", "demo", "--limit", "1", "-q"]
    _cli("fdb", "export", *common, "--out", str(local), cwd=tmp_path)
    _cli("fdb", "export", *common, "--out", str(remote), "--executor", "ray", cwd=tmp_path)
    assert _files(remote) == _files(local) and len(_files(local)) > 10
    _cli("fdb", "asr", str(local), "-q", cwd=tmp_path)
    _cli("fdb", "asr", str(remote), "-q", "--executor", "ray", cwd=tmp_path)
    names = ("asr.json", "output.json")
    assert _files(remote, names) == _files(local, names) and len(_files(local, names)) == 6
    _cli("fdb", "score", str(local), cwd=tmp_path)
    _cli("fdb", "score", str(remote), "--executor", "ray", cwd=tmp_path)
    names = ("unified.json", "unified-samples.jsonl")
    assert _files(remote, names) == _files(local, names) and len(_files(local, names)) == 2


def test_an_unreachable_ray_address_is_one_line_within_seconds() -> None:
    import time

    from duplexeval.executors_ray import check_reachable

    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"^--ray-address 127\.0\.0\.1:1: cannot connect \(Connection "
                                         r"refused\); is the Ray head running there"):
        check_reachable("127.0.0.1:1")
    assert time.monotonic() - t0 < 5
    with pytest.raises(InputError, match=r"^--ray-address 'nohost': expected auto or HOST:PORT"):
        check_reachable("nohost")


def _cli_fails(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[str, float]:
    import os
    import subprocess
    import time

    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "duplexeval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})
    assert proc.returncode == 2, proc.stderr[-2000:]
    return proc.stderr.strip().splitlines()[-1], time.monotonic() - t0


def test_ray_that_cannot_start_or_be_joined_is_one_line(tmp_path: Path) -> None:
    from tests.helpers.eot import write_eotbench_spans

    spans = write_eotbench_spans(tmp_path / "spans.jsonl")
    base = ["eot", "predict", "--spans", str(spans), "--detector", "silence", "--out", str(tmp_path / "p.parquet"),
            "--executor", "ray"]
    line, _ = _cli_fails(base, tmp_path, {"RAY_TMPDIR": "/proc/no-such-folder"})  # the local node cannot start
    assert line.startswith("duplexeval: error: --executor ray: could not start a local Ray instance (")
    assert line.endswith("); run with --executor local")
    line, took = _cli_fails([*base, "--ray-address", "127.0.0.1:1"], tmp_path)
    assert line.startswith("duplexeval: error: --ray-address 127.0.0.1:1: cannot connect (Connection refused)")
    assert took < 120  # Ray alone kept retrying for minutes


def test_a_killed_driver_leaves_no_ray_process_behind(tmp_path: Path) -> None:
    """SIGKILL of `eot predict --executor ray` mid-run: every Ray process it started (GCS, raylet, workers, and the
    dashboard and runtime-env agents, which alone linger about a minute) is gone within seconds."""
    import os
    import signal
    import subprocess
    import time

    from duplexeval.ray_reaper import _alive, _ray_below
    from tests.helpers.eot import write_eotbench_spans

    spans = write_eotbench_spans(tmp_path / "spans.jsonl", 40)
    driver = subprocess.Popen([sys.executable, "-m", "duplexeval", "eot", "predict", "--spans", str(spans),
                               "--detector", "silero", "--out", str(tmp_path / "p.parquet"), "--executor", "ray"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        ray_procs: dict[int, int] = {}
        while time.monotonic() < deadline and driver.poll() is None:  # until the agents and a worker run
            ray_procs = _ray_below(driver.pid)
            names = [(Path("/proc") / str(p) / "cmdline").read_bytes() for p in ray_procs if _alive(p, ray_procs[p])]
            if sum(n.startswith((b"ray::DashboardAgent", b"ray::RuntimeEnvAgent", b"ray::_run_task"))
                   for n in names) >= 3:
                break
            time.sleep(0.5)
        assert driver.poll() is None, "the run ended before its Ray workers were seen"
        ray_procs = _ray_below(driver.pid)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(p, t) for p, t in ray_procs.items()):
            time.sleep(0.5)
        left = [p for p, t in ray_procs.items() if _alive(p, t)]
        assert not left, [(Path("/proc") / str(p) / "cmdline").read_bytes()[:60] for p in left]
    finally:
        if driver.poll() is None:
            driver.kill()


def test_a_plugin_call_on_a_ray_worker_is_bounded_by_the_driver_s_setting(ray_local, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Set after the instance started (as for a cluster started elsewhere): the setting travels with the work."""

    from duplexeval.eot.predict_stage import predict
    from tests.helpers.eot import one_turn_set

    monkeypatch.setenv("DUPLEXEVAL_CALL_TIMEOUT", "0.2")
    monkeypatch.setenv("DUPLEXEVAL_DEBUG", "")
    spec = ExecutorSpec("ray")
    assert [r.value for r in _run(spec, None, wh.plugin_env, [0, 1])] == [("", "0.2")] * 2
    stateful = StatefulWork(wh.offset, 0, wh.stateful_plugin_env)
    assert [r.value for r in _run(spec, stateful, None, [0, 1])] == [("", "0.2")] * 2
    with pytest.raises(InputError, match=r"^tiny: turn 't1': EOT detector 'tests.helpers.workers:HangingDetector': "
                                         r"predict_batch did not return within 0.2 s \(DUPLEXEVAL_CALL_TIMEOUT\)"):
        predict(one_turn_set(), "tests.helpers.workers:HangingDetector", {}, tmp_path / "p.parquet", executor=spec,
                    progress=False)
