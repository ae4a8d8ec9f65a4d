"""Bad telephony bots through `duplexeval fdb export`: a bot that never replies, one that sends malformed base64,
one that sends the wrong codec, one that closes mid-call. Every sample gets its reason in the manifest, nothing
is lost (every sample has its row, its annotation and its wire trace; a failed session writes no output.wav), the export
prints one line naming the first
problem, and `fdb replay --check` rebuilds each tree byte for byte."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from duplexeval.cli import main
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.server import ServerThread, make_server
from tests.helpers.cli import run_cli
from tests.helpers.net import SERVED, user_turn
from tests.helpers.systems import Dataset, add_sample

T = 2.6
# name: (dialect, loopback faults, loopback options, client parameters, reason, the first problem's words)
BOTS: dict[str, tuple[str, tuple[str, ...], dict[str, str], str, str, str]] = {
    "never-replies": ("twilio", ("stall@0",), {}, "reply_within_s=1.5", "timeout",
                      "nothing from the bot within 1.5 s of the first input (reply_within_s)"),
    "bad-base64": ("telnyx", (), {"corrupt": "base64"}, "", "protocol_violation", "media: bad base64"),
    "wrong-codec": ("plivo", (), {"corrupt": "codec"}, "", "protocol_violation",
                    "playAudio: wrong codec 'audio/x-l16' at 16000 Hz, the stream is audio/x-mulaw at 8000 Hz"),
    "closes-mid-call": ("exotel", ("disconnect@1.9",), {}, "", "disconnected", "closed by the server (code 1011)"),
}


def _dataset(root: Path) -> Dataset:
    ds = Dataset("bad-bots", root)
    for i in range(2):
        pcm = user_turn(T, ((0.2, 0.8),), seed=i).astype("float32") / 32768.0
        add_sample(ds, "candor_turn_taking", str(i + 1), pcm, [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.5]}])
    return ds


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each bad bot's export tree and what `fdb export` printed."""
    base = tmp_path_factory.mktemp("bad-bots")
    ds = _dataset(base / "ds")
    out: dict[str, tuple[Path, str]] = {}
    for name, (dialect, faults, options, client, _, _) in BOTS.items():
        server = make_server("telephony", SERVED, parse_faults(faults), options=options)
        with ServerThread(server) as th:
            spec = f"telephony:url={th.url('/ws')},dialect={dialect},stall_s=3" + (f",{client}" if client else "")
            tree = base / name
            out[name] = (tree, _export(spec, ds.root, tree))
    return out


def _export(spec: str, ds: Path, tree: Path) -> str:
    """`fdb export` through the CLI (a module fixture cannot take capsys): what it printed."""
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as ex:
        main(["fdb", "export", "--system", spec, "--dataset", str(ds), "--out", str(tree), "--concurrency", "2",
              "--quiet"])
    assert ex.value.code in (0, 1), err.getvalue()  # a failed sample is a result, never a usage error
    assert "Traceback" not in err.getvalue()
    return buf.getvalue() + err.getvalue()


@pytest.mark.parametrize("name", list(BOTS))
def test_every_sample_gets_its_reason_and_nothing_is_lost(exports: dict[str, tuple[Path, str]], name: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    tree, printed = exports[name]
    reason, what = BOTS[name][4], BOTS[name][5]
    rows: list[dict[str, Any]] = json.loads((tree / "manifest.json").read_text())["samples"]
    assert sorted((r["subset"], r["id"]) for r in rows) == [("candor_turn_taking", "1"), ("candor_turn_taking", "2")]
    for r in rows:
        assert r["reasons"] == [reason], r
        sdir = tree / r["subset"] / r["id"]
        for f in ("trace.json", "trace.jsonl", "trace.pcm", "turn_taking.json"):
            assert (sdir / f).is_file(), (name, f)
        assert not (sdir / "output.wav").exists()  # a failed session leaves no output (docs/network.md section 2)
    assert f"ineligible, {reason}: 2 (candor_turn_taking/1, candor_turn_taking/2)" in printed
    assert f"first {reason}: candor_turn_taking/1: {what}" in printed, printed
    code, out, err = run_cli(["fdb", "replay", str(tree), "--check"], capsys)
    assert code == 0 and "2 identical, 0 changed; manifest.json identical" in out, out + err
