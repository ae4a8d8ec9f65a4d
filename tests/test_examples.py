"""examples/ run as examples/README.md says: the installed `duplexeval` command, from the examples folder (so a
`module:Class` spec is found in the current folder, as for a user), each kind of agent end to end."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import EXAMPLES

DUPLEXEVAL = str(Path(sys.executable).parent / "duplexeval")  # the console script, as a user runs it


def cli(*args: str, check: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    p = subprocess.run([DUPLEXEVAL, *args], cwd=EXAMPLES, capture_output=True, text=True, env=env, timeout=600)
    assert check < 0 or p.returncode == check, f"{args}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"  # check < 0: any
    return p


def test_the_readme_names_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for f in sorted(EXAMPLES.glob("*.py")):
        assert f.name in readme, f.name


def test_in_process_system(tmp_path: Path) -> None:
    p = cli("systems", "check", "in_process_system:EchoAgent")
    assert "speech (Silero VAD): 1 segment(s)" in p.stdout and "I heard you say something" in p.stdout
    assert p.stderr.splitlines()[-1] == ("systems check: exit 0: the system answered with speech the ASR transcribed "
                                         "(no warning)")


@pytest.fixture()
def server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "realtime_server.py", "--port", "0"], cwd=EXAMPLES, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("listening on ws://"), (line, proc.stderr.read() if proc.stderr else "")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _one_session(url: str) -> list[dict[str, object]]:
    """A raw client: session.update, 1 s of a tone then 1.5 s of silence, and every event the server sends."""
    import websockets

    got: list[dict[str, object]] = []
    async with websockets.connect(url) as ws:
        got.append(json.loads(await ws.recv()))
        await ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime"}}))
        t = np.arange(24000) / 24000
        audio = np.concatenate([0.3 * np.sin(2 * np.pi * 200 * t), np.zeros(36000)])
        pcm = (audio * 32767).astype("<i2").tobytes()
        for k in range(0, len(pcm), 3840):
            await ws.send(
                json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[k:k + 3840]).decode()}))
        while not got or got[-1].get("type") != "response.done":
            got.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=30)))
    return got


def test_realtime_server_speaks_the_sdk_s_event_types_and_scores(server: str) -> None:
    from openai.types.realtime import RealtimeServerEvent
    from pydantic import TypeAdapter

    events = asyncio.run(_one_session(server))
    adapter = TypeAdapter(RealtimeServerEvent)
    for ev in events:
        adapter.validate_python(ev, strict=True)  # every event is one of the SDK's server event types
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["session.created", "session.updated", "input_audio_buffer.speech_started",
                         "input_audio_buffer.speech_stopped"]
    assert kinds[4] == "response.created" and "response.output_audio.delta" in kinds and kinds[-1] == "response.done"
    for _attempt in range(3):  # a real-time capture: a machine too busy to send on time makes it input_pacing_late
        p = cli("systems", "check", f"openai-realtime:url={server}", check=-1)
        if "input_pacing_late" not in p.stdout:
            break
    assert p.returncode == 0, p.stdout + p.stderr
    assert "thanks i heard you and this is my answer" in p.stdout.lower().replace(",", "")


def test_eot_detector(tmp_path: Path) -> None:
    p = cli("eot", "check", "eot_detector:QuietAndDone")
    assert "note: end of turn minus pause, mean score at equal silence" in p.stdout
    preds = tmp_path / "mine.parquet"
    cli("eot", "predict", "--detector", "eot_detector:QuietAndDone:hold=0.2", "--spans", "turns.yaml", "--out",
        str(preds))
    p = cli("eot", "sweep", str(preds), "--no-bootstrap", "--no-plots")
    assert "det:eot_detector:QuietAndDone:1:horizon_s1.0,hold0.2" in p.stdout


def test_dialogue_system(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cli("dialogue", "synth", "--out", str(cases), "--n-miu", "8", "--n-uim", "2")
    run = tmp_path / "mine"
    p = cli("dialogue", "run", "--cases", str(cases), "--system", "dialogue_system:PatientListener:patience_ms=400",
            "--out", str(run))
    assert "16 cases (0 failed)" in p.stdout and ":patience_ms400|" in p.stdout
    p = cli("dialogue", "score", str(run), "--fail-under", "MiU.recall=1")
    assert "dialogue score: exit 0: 1 gate held" in p.stderr
