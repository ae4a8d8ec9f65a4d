"""A server that echoes the API key back in every place and encoding: no written file, printed line or log record
holds the key in any of them (an independent base64 detector included), and URL credentials are refused unechoed.

The server speaks just enough OpenAI Realtime for the real client adapter: `session.created`, `session.updated`,
then the echoes (an error text, an error code, an event `type`, an item and a response id, a URL with the key
percent-encoded, base64 / base64url of the key and of a blob holding it at every offset modulo 3, audio whose
PCM bytes hold the key) and a close whose reason holds it. `fdb export` and `fdb replay` run through the CLI.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection

from duplexeval import redaction
from duplexeval.cli import main
from tests.helpers.net import WsServerThread
from tests.helpers.secrets import KEY, KEY_ENV, assert_no_key, key_env  # noqa: F401 - key_env: a fixture
from tests.helpers.systems import one_sample_dataset


class EchoServer(WsServerThread):
    """A websockets server on 127.0.0.1, in a thread, that echoes the Authorization header's key."""

    def __init__(self) -> None:
        super().__init__(self._session)
        self.keys: list[str] = []

    async def _session(self, ws: ServerConnection) -> None:
        key = str(ws.request.headers.get("Authorization", "")).removeprefix("Bearer ")  # type: ignore[union-attr]
        self.keys.append(key)
        await ws.send(json.dumps({"type": "session.created", "session": {}}))
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("type") == "session.update":
                break
        await ws.send(json.dumps({"type": "session.updated", "session": {}}))
        b = key.encode()
        for message in echoes(key, b):
            await ws.send(message)
        await asyncio.sleep(0.3)
        await ws.close(4000, f"bad key {key}"[:120])


def echoes(key: str, b: bytes) -> list[str]:
    """Every message that carries the key back."""
    pct = urllib.parse.quote(key, safe="")
    b64 = base64.b64encode(b).decode()
    blobs = [base64.b64encode(bytes(range(i)) + b + b"tail").decode() for i in range(3)]
    blobs += [base64.urlsafe_b64encode(bytes(range(i + 3)) + b + b"!").decode().rstrip("=") for i in range(3)]
    pcm = np.zeros(2400, dtype="<i2").tobytes()
    pcm_with_key = pcm[:1000] + b + (b"\0" if len(b) % 2 else b"") + pcm[1000:]
    return [
        json.dumps({"type": "error", "error": {"code": key, "message": f"invalid key {key}"}}),
        json.dumps(
            {"type": "error", "error": {"message": f"see wss://h.example/v1/realtime?api_key={pct} for details"}}),
        json.dumps(
            {"type": "error",
             "error": {"message": f"key b64 {b64} url {base64.urlsafe_b64encode(b).decode().rstrip('=')}"}}),
        json.dumps({"type": "error", "error": {"message": "blobs " + " ".join(blobs)}}),
        json.dumps({"type": "error", "error": {"message": "x" * 280 + key}}),  # cut at 300 characters: half a key
        json.dumps({"type": key}),
        json.dumps({"type": "conversation.item.created", "item_id": key, "response_id": "resp_" + key,
                    "item": {"id": key, "content": [{"type": "input_text", "text": key}]}}),
        json.dumps({"type": "response.output_audio.delta", "item_id": "it1",
                    "delta": base64.b64encode(pcm_with_key).decode()}),
    ]


def test_an_echoing_server_leaves_no_key_anywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  key_env: str,  # noqa: F811 - the fixture
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    ds = one_sample_dataset(tmp_path / "ds")
    tree = tmp_path / "tree"
    with EchoServer() as srv:
        spec = (f"openai-realtime:url=ws://127.0.0.1:{srv.port}/v1/realtime,api_key_env={KEY_ENV},"
                "stall_s=2,drain_s=1,session_extra_s=3")
        with pytest.raises(SystemExit) as ex:
            main(["fdb", "export", "--system", spec, "--dataset", str(ds), "--out", str(tree)])
        assert ex.value.code in (0, 1)
    assert srv.keys == [KEY]  # the server did get the key, and echoed it back
    trace = (tree / "candor_turn_taking/1/trace.jsonl").read_text()
    assert trace.count("[redacted]") >= 10  # the echoes reached the trace, each redacted
    with pytest.raises(SystemExit) as ex:
        main(["fdb", "replay", "--tree", str(tree), "--check"])
    assert ex.value.code == 0  # the redacted trace still rebuilds the same files
    out = capsys.readouterr()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 6
    for p in written:
        assert_no_key(p.read_bytes(), str(p))
    for where, text in (("stdout", out.out), ("stderr", out.err), ("log", caplog.text)):
        assert_no_key(text.encode(), where)


@pytest.mark.parametrize("credential", ["?api_key=SECRETVALUE99", "?token=SECRETVALUE99", "?apikey=SECRETVALUE99",
                                        "?auth_token=SECRETVALUE99", "?access_token=SECRETVALUE99",
                                        "?key=SECRETVALUE99", "?api-key=SECRETVALUE99",
                                        "?model=m&Authorization=SECRETVALUE99", "#token=ab", "USERINFO"])
def test_a_url_credential_is_refused_and_never_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      credential: str) -> None:
    ds = one_sample_dataset(tmp_path / "ds")
    url = "ws://user:SECRETVALUE99@127.0.0.1:9/v1" if credential == "USERINFO" else f"ws://127.0.0.1:9/v1{credential}"
    for argv in (["fdb", "export", "--system", f"openai-realtime:url={url}", "--dataset", str(ds),
                  "--out", str(tmp_path / "t")],
                 ["fdb", "export", "--system", f"openai-realtime:url={url},bogus=1", "--dataset", str(ds),
                  "--out", str(tmp_path / "t")],
                 ["fdb", "export", "--system", f"loopback:client=url={url}", "--dataset", str(ds),
                  "--out", str(tmp_path / "t")]):
        with pytest.raises(SystemExit) as ex:
            main(argv)
        err = capsys.readouterr().err
        assert ex.value.code == 2 and err.count("\n") == 1 and "must not carry a credential" in err, err
        assert "SECRETVALUE99" not in err and "token=ab" not in err, err
    assert not (tmp_path / "t").exists()


def test_a_chat_server_echoing_the_key_leaves_no_form_in_the_cache_or_log(
        tmp_path: Path, key_env: str) -> None:  # noqa: F811 - the fixture
    from duplexeval.dialogue.http import CachedChat
    from tests.helpers.judge import ScriptedServer

    b = KEY.encode()
    reply = (f"ok {base64.b64encode(b).decode()} {base64.urlsafe_b64encode(b'x' + b).decode()} "
             f"{urllib.parse.quote(KEY, safe='')}")
    with ScriptedServer([("good", reply)]) as srv:
        chat = CachedChat(srv.url, "m", KEY_ENV, "test", tmp_path / "log.jsonl", tmp_path / "cache", timeout_s=5,
                          max_attempts=1)
        ans = chat.ask({"messages": [{"role": "user", "content": "hi"}]}, lambda s: s, {})
    assert ans.content is not None and ans.content.startswith("ok [redacted]")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 2
    for p in files:
        assert_no_key(p.read_bytes(), str(p))
        assert p.stat().st_mode & 0o777 == 0o600  # a remote service's answers: private


def test_a_judge_echoing_the_key_in_base64_leaves_no_form_in_rating_or_log(
        tmp_path: Path, key_env: str) -> None:  # noqa: F811 - the fixture
    from duplexeval.fdb.official import judge as J
    from tests.helpers.judge import GOOD, ScriptedServer, rate

    b = KEY.encode()
    echo = f"Analysis: your key was {base64.b64encode(b).decode()} ({base64.b64encode(b'Bearer ' + b).decode()})."
    with ScriptedServer([("good", GOOD.replace("Analysis: ", echo + " "))]) as srv:
        j = J.Judge.create(J.JudgeConfig(base_url=srv.url, api_key_env=KEY_ENV, timeout_s=5.0), tmp_path)
        r = rate(j, tmp_path)
    assert r.rating == 4 and "[redacted]" in (r.analysis or "")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} == {"rating.json", "judge-log.jsonl"}
    for p in files:
        assert_no_key(p.read_bytes(), str(p))
        assert p.stat().st_mode & 0o777 == 0o600


# How each network adapter takes a key (None: it takes none). A new adapter must say so here.
SECRET_DECLARATIONS = {
    "openai-realtime": "openai-realtime:url=ws://127.0.0.1:9/v1/realtime,api_key_env={var}",
    "telephony": "telephony:url=ws://127.0.0.1:9/ws,param.token=env:{var}",
    "ws-pcm": None,
    "loopback": None,
    "moshi": None,
    "native-duplex": None,
    "pipecat-ws": None,
    "webrtc": None,
    "pipecat": None,
}


def test_every_network_adapter_s_secrets_reach_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from duplexeval.registry import import_object
    from duplexeval.systems.registry import DEFERRED_IN_PROCESS, NETWORK_SYSTEMS, make_system

    deferred = {**NETWORK_SYSTEMS, **DEFERRED_IN_PROCESS}  # pipecat: in-process, but its imports are deferred too
    assert set(SECRET_DECLARATIONS) == set(deferred)
    for name, spec in SECRET_DECLARATIONS.items():
        cls = import_object(deferred[name], "system")
        if spec is None:  # takes no key: no `*_env` field, no secrets() of its own
            assert not [f.name for f in dataclasses.fields(cls) if f.name.endswith("_env")], name
            assert "secrets" not in vars(cls), name
            continue
        redaction.forget_all()
        value = f"sk-{name}-" + secrets.token_hex(10)
        monkeypatch.setenv("ADAPTER_TEST_KEY", value)
        make_system(spec.format(var="ADAPTER_TEST_KEY"))
        assert value in redaction.known(), name
