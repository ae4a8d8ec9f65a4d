"""Network exports end to end: concurrency, trace files, replay byte for byte, failures, resume, API keys, plugins,
CLI."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval.cli import main
from duplexeval.errors import InputError
from duplexeval.fdb.export_stage import export
from duplexeval.fdb.replay_stage import replay
from duplexeval.systems.net.server import ServerProcess, ServerThread, make_server
from duplexeval.systems.registry import make_system
from tests.helpers.net import SERVED, user_turn
from tests.helpers.systems import Dataset, add_sample

LOOP = "loopback:serve=" + SERVED.replace(",", ";") + ",in_process=true"


def _ds(root: Path, n: int = 3) -> Dataset:
    """`n` short turn-taking samples (a noise 'user turn', then silence) with annotations."""
    ds = Dataset("net-test", root)
    for i in range(n):
        T = 3.0 + 0.2 * i
        pcm = user_turn(T, ((0.2, 0.9 + 0.1 * i),), seed=i).astype("float32") / 32768.0
        add_sample(ds, "candor_turn_taking", str(i + 1), pcm, [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.5]}])
    return ds


def _spec(protocol: str, extra: str = "", faults: str = "", options: str = "") -> str:
    s = LOOP.replace("loopback:", f"loopback:protocol={protocol},")
    if extra:
        s += f",client={extra}"
    if faults:
        s += f",faults={faults}"
    if options:
        s += f",options={options}"
    return s


def _tree_bytes(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("protocol", ["openai-realtime", "ws-pcm"])
def test_concurrent_export_writes_traces_and_replays_byte_for_byte(tmp_path: Path, protocol: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ds = _ds(tmp_path / "ds")
    tree = tmp_path / "tree"
    res = export(_spec(protocol, "linger_s=0.2"), ds, tree, progress=False, concurrency=3)
    assert res.ran == 3
    man = json.loads((tree / "manifest.json").read_text())
    assert man["export"]["clock"] == "wall"
    for row in man["samples"]:
        sdir = tree / row["subset"] / row["id"]
        assert set(row["files"]) == {"output.wav", "turn_taking.json", "trace.jsonl", "trace.pcm"}
        head = json.loads((sdir / "trace.jsonl").read_text().splitlines()[0])
        assert head["kind"] == "duplexeval.net.trace" and head["protocol"] == protocol
        text = (sdir / "trace.jsonl").read_text()
        assert '"delta"' not in text and '"audio":"' not in text  # no base64 payloads in the JSON
        assert row["export"]["network"]["reasons"] == [r for r in row["reasons"] if r == "input_pacing_late"]
    before = _tree_bytes(tree)
    assert main_ok(["fdb", "replay", str(tree), "--check"], capsys).startswith("replay: checked 3 samples")
    replay(tree)  # rewrite mode: nothing changes
    assert _tree_bytes(tree) == before
    again = export(_spec(protocol, "linger_s=0.2"), ds, tree, progress=False, concurrency=3)
    assert (again.ran, again.reused) == (0, 3)  # resume: the journal matches, nothing reruns
    assert _tree_bytes(tree) == before


def test_replay_rebuilds_a_deleted_or_changed_output(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds", 1)
    tree = tmp_path / "tree"
    export(_spec("ws-pcm"), ds, tree, progress=False, concurrency=2)
    wav = tree / "candor_turn_taking" / "1" / "output.wav"
    good = wav.read_bytes()
    wav.write_bytes(good[:-2] + b"\x00\x01")
    with pytest.raises(Exception, match="replay differs"):
        replay(tree, check=True)
    res = replay(tree)
    assert res.changed == {"candor_turn_taking/1": ["output.wav"]}
    assert wav.read_bytes() == good


def test_a_failed_session_never_stops_the_run_and_always_leaves_its_trace(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    tree = tmp_path / "tree"
    export(_spec("openai-realtime", "stall_s=2", faults="error@0.5"), ds, tree, progress=False,
           concurrency=3)
    man = json.loads((tree / "manifest.json").read_text())
    assert len(man["samples"]) == 3
    for row in man["samples"]:
        sdir = tree / row["subset"] / row["id"]
        assert not row["eligible"] and "server_error" in row["reasons"]
        assert not (sdir / "output.wav").exists() and "output.wav" not in row["files"]
        assert (sdir / "trace.jsonl").is_file() and (sdir / "trace.pcm").is_file() and (sdir / "trace.json").is_file()
    assert not list(tree.rglob("*.tmp"))  # no half-written file
    replay(tree, check=True)


def test_connect_failed_export_rows(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds", 2)
    tree = tmp_path / "tree"
    export("ws-pcm:url=ws://127.0.0.1:9/ws", ds, tree, progress=False, concurrency=2)
    man = json.loads((tree / "manifest.json").read_text())
    assert [r["reasons"] for r in man["samples"]] == [["connect_failed"], ["connect_failed"]]
    attempts = [json.loads(x) for x in (tree / "candor_turn_taking/1/trace.jsonl").read_text().splitlines()[1:]]
    assert [a["result"] for a in attempts if a.get("event") == "connect_attempt"] == ["refused"] * 4
    replay(tree, check=True)


def test_the_api_key_never_reaches_a_file_or_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv("DUPLEXEVAL_TEST_KEY", key)
    caplog.set_level(logging.DEBUG)
    ds = _ds(tmp_path / "ds", 2)
    srv = make_server("openai-realtime", SERVED)
    with ServerThread(srv) as th:
        spec = f"openai-realtime:url={th.url('/v1/realtime')},api_key_env=DUPLEXEVAL_TEST_KEY"
        export(spec, ds, tmp_path / "tree", progress=False, concurrency=2)
        # a busy server: the retries are logged, the key is not
        srv.config.faults = srv.config.faults.__class__(busy=srv.connections + 10)
        export(spec, ds, tmp_path / "tree2", progress=False, concurrency=2)
    export(spec.replace(str(th.server.port), "9"), ds, tmp_path / "tree3", progress=False)  # refused
    assert [e.authorization for e in srv.events if e.event == "connect"][:2] == [True, True]
    needles = [key, base64.b64encode(key.encode()).decode(), base64.b64encode(f"Bearer {key}".encode()).decode(),
               key.encode().hex()]
    for p in tmp_path.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert not any(n.encode() in data for n in needles), (p, [n for n in needles if n.encode() in data])
    out = capsys.readouterr()
    logs = caplog.text + out.out + out.err
    assert "retrying" in caplog.text  # the busy retries were logged ...
    assert not any(n in logs for n in needles)  # ... without the key


def test_a_url_with_a_credential_is_refused() -> None:
    with pytest.raises(InputError, match="must not carry a credential"):
        make_system("openai-realtime:url=wss://example.com/v1/realtime?api-key=abc")


def test_plugins_by_import_path(tmp_path: Path) -> None:
    sys_ = make_system("tests.helpers.net:Echo:gain=2")
    assert sys_.params() == {"gain": 2} and sys_.name == "echo"
    ds = _ds(tmp_path / "ds", 1)
    res = export("tests.helpers.net:Echo:gain=2", ds, tmp_path / "tree", progress=False)
    assert res.counts["candor_turn_taking"]["eligible"] == 1
    with pytest.raises(InputError, match="has no parameter 'nope'"):
        make_system("tests.helpers.net:Echo:nope=1")
    with pytest.raises(InputError, match="cannot import module"):
        make_system("no_such_module_xyz:Echo")
    with pytest.raises(InputError, match="not a dataclass"):
        make_system("tests.helpers.net:user_turn")


def main_ok(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as ex:
        main(argv)
    out = capsys.readouterr()
    assert ex.value.code in (0, None), out.err
    return out.out


def test_serve_command_and_export_command(tmp_path: Path) -> None:
    with ServerProcess("ws-pcm", SERVED, faults=["jitter_ms=5"]) as proc:  # `duplexeval serve` as a child process
        url = proc.url()
        assert url.startswith("ws://127.0.0.1:") and url.endswith("/ws")
        res = export(f"ws-pcm:url={url}", _ds(tmp_path / "ds", 2), tmp_path / "tree", progress=False, concurrency=2)
        assert res.ran == 2
    man = json.loads((tmp_path / "tree" / "manifest.json").read_text())
    assert all(set(r["reasons"]) <= {"input_pacing_late"} for r in man["samples"])  # served and captured
    r = subprocess.run([sys.executable, "-m", "duplexeval", "serve", "ws-pcm", "--fault", "bogus@1"],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "unknown fault 'bogus'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "duplexeval", "serve", "openai-realtime", "--option", "speed=fast"],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 2 and "speed=fast" in r.stderr
