"""The judge's API key never reaches a file in any encoding: raw, JSON-escaped (once or twice) or URL-encoded.

A real HTTP server on loopback echoes the Authorization header back in a JSON error body (so the key arrives
JSON-escaped), and in a non-JSON body URL-encoded; the judge log and every other tree file must hold neither.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest

from duplexeval.fdb.official import judge as J
from tests.helpers.judge import ScriptedServer, all_tree_bytes, rate

NASTY_KEY = 'sk-"quo\\te/é+&=%20 key'


def forms(key: str) -> list[str]:
    once = json.dumps(key)[1:-1]
    return [key, once, json.dumps(key, ensure_ascii=False)[1:-1], json.dumps(once)[1:-1],
            urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key)]


def test_secret_variants_cover_every_encoding() -> None:
    for form in forms(NASTY_KEY):
        assert J.redact_secret(f"x {form} y", NASTY_KEY) == "x [redacted] y"
    assert J.redact_secret("nothing here", "") == "nothing here"


@pytest.fixture()
def nasty_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NASTY_KEY", NASTY_KEY)


def test_echoed_key_is_redacted_in_every_encoding(tmp_path: Path, nasty_env: None) -> None:
    quoted = urllib.parse.quote(NASTY_KEY, safe="")
    script = [("status", 500), ("raw", f"<html>key={quoted} or {NASTY_KEY}</html>"), ("status", 503)]
    with ScriptedServer(script) as srv:
        cfg = J.JudgeConfig(base_url=srv.url, api_key_env="NASTY_KEY", timeout_s=5.0)
        j = J.Judge.create(cfg, tmp_path)
        r = rate(j, tmp_path)
    assert srv.requests[0]["auth"] == f"Bearer {NASTY_KEY}"  # the server did get the key, and echoed it back
    assert r.rating is None and r.attempts == 3
    log = (tmp_path / "judge-log.jsonl").read_text()
    assert log.count("[redacted]") >= 3
    data = all_tree_bytes(tmp_path).decode("utf-8")
    for form in forms(NASTY_KEY):
        assert form not in data, form


def test_negative_judge_timeout_is_refused(tmp_path: Path, nasty_env: None) -> None:
    from duplexeval.errors import InputError

    for bad in (-1, 0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="timeout_s must be a positive number"):
            J.Judge.create(J.JudgeConfig(base_url="http://127.0.0.1:9/v1", api_key_env="NASTY_KEY", timeout_s=bad),
                           tmp_path)
