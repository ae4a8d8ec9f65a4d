"""A carrier token passed as a custom parameter (`param.auth_token=env:VAR`) reaches the bot in `start` and no
written file, printed line or log record, in any encoding: a telephony bot echoes it back as an event name
(plain, base64, base64url, percent-encoded, hex in either case, cut at 60 characters), a marker name, an error text and
a close reason, and
`fdb export` / `fdb replay` run through the CLI."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import urllib.parse
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection

from duplexeval import redaction
from duplexeval.cli import main
from tests.helpers.net import WsServerThread
from tests.helpers.secrets import KEY, KEY_ENV, assert_no_key, key_env  # noqa: F401 - key_env: a fixture
from tests.helpers.systems import one_sample_dataset


def assert_no_hex(data: bytes, where: str) -> None:
    """Neither case of the token's hex, nor a run of it as long as the cut-short forms redaction removes."""
    h = KEY.encode().hex().encode()
    for cut in (redaction.PARTIAL_MIN, len(h) // 2, len(h)):
        assert h[:cut] not in data.lower() and h[-cut:] not in data.lower(), (where, "hex", cut)


def echoes(stream: str, key: str) -> list[str]:
    """Twilio-shaped bot messages that carry the token back."""
    b = key.encode()
    forms = [key, base64.b64encode(b).decode(), base64.urlsafe_b64encode(b).decode().rstrip("="),
             urllib.parse.quote(key, safe=""), b.hex(), b.hex().upper()]
    out = [json.dumps({"event": f, "streamSid": stream}) for f in forms]  # unknown events: recorded by name
    out.append(json.dumps({"event": "mark", "streamSid": stream, "mark": {"name": key}}))
    out.append(json.dumps({"event": "mark", "streamSid": stream, "mark": {"name": "m-" + forms[1]}}))
    out.append(json.dumps({"event": "error", "message": f"token {key} refused ({forms[1]})"}))
    return out


class EchoBot(WsServerThread):
    """A media-stream bot that echoes the `start` message's `auth_token` parameter (the tokens it got in `keys`)."""

    def __init__(self) -> None:
        super().__init__(self._call)
        self.keys: list[str] = []

    async def _call(self, ws: ServerConnection) -> None:
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("event") == "start":
                key = str(msg["start"]["customParameters"].get("auth_token", ""))
                self.keys.append(key)
                for m in echoes(msg["streamSid"], key):
                    await ws.send(m)
                await asyncio.sleep(0.3)
                await ws.close(4000, f"bad token {key}"[:120])
                return


def test_a_carrier_token_echoed_back_is_never_written(tmp_path: Path, key_env: str,  # noqa: F811
                                                      capsys: pytest.CaptureFixture[str],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    ds = one_sample_dataset(tmp_path / "ds")
    tree = tmp_path / "tree"
    with EchoBot() as bot:
        spec = f"telephony:url=ws://127.0.0.1:{bot.port}/ws,param.auth_token=env:{KEY_ENV},param.customer=42,stall_s=2"
        with pytest.raises(SystemExit) as ex:
            main(["fdb", "export", "--system", spec, "--dataset", str(ds), "--out", str(tree)])
        assert ex.value.code in (0, 1)
    assert bot.keys == [KEY]  # the bot got the token, inside `start`, and echoed it back
    trace = (tree / "candor_turn_taking/1/trace.jsonl").read_text()
    assert trace.count("[redacted]") >= 9  # every echo reached the trace, redacted
    start = next(json.loads(x) for x in trace.splitlines() if '"type":"start"' in x)
    assert start["params"] == ["auth_token", "customer"]  # the names only
    manifest = (tree / "manifest.json").read_text()
    assert f"env:{KEY_ENV}" in manifest  # the manifest keeps where the value came from
    with pytest.raises(SystemExit) as ex:
        main(["fdb", "replay", "--tree", str(tree), "--check"])
    assert ex.value.code == 0
    out = capsys.readouterr()
    assert "server_error" in out.out + out.err  # the error echo was reported, redacted
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 6
    for p in written:
        assert_no_key(p.read_bytes(), str(p))
        assert_no_hex(p.read_bytes(), str(p))
    for where, text in (("stdout", out.out), ("stderr", out.err), ("log", caplog.text)):
        assert_no_key(text.encode(), where)
        assert_no_hex(text.encode(), where)
