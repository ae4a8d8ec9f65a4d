"""A test API key, every encoding a file or a line may hold it in, and an independent detector of it."""

from __future__ import annotations

import base64
import json
import re
import secrets
import urllib.parse

import pytest

from duplexeval import redaction

B64 = re.compile(rb"[A-Za-z0-9+/_-]{4,}")

def encodings(key: str) -> dict[str, str]:
    """The forms of the key a file or a line may hold, each built here from its definition."""
    b = key.encode("utf-8")
    once = json.dumps(key)[1:-1]
    return {
        "raw": key,
        "json": once,
        "json-utf8": json.dumps(key, ensure_ascii=False)[1:-1],
        "json-twice": json.dumps(once)[1:-1],
        "percent": urllib.parse.quote(key, safe=""),
        "percent-lower": re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(key, safe="")),
        "percent-plus": urllib.parse.quote_plus(key),
        "base64": base64.b64encode(b).decode(),
        "base64-nopad": base64.b64encode(b).decode().rstrip("="),
        "base64url": base64.urlsafe_b64encode(b).decode(),
        "base64url-nopad": base64.urlsafe_b64encode(b).decode().rstrip("="),
        "base64-percent": urllib.parse.quote(base64.b64encode(b).decode(), safe=""),
        "hex": b.hex(),
        "hex-upper": b.hex().upper(),
    }

def decodes_to_key(data: bytes, key: bytes) -> bool:
    """An independent detector: does any run of base64 characters, read at any alignment, decode to bytes
    holding the key?"""
    for m in B64.finditer(data):
        run = m.group(0)
        for alphabet in (None, b"-_"):
            for start in range(4):
                chunk = run[start:]
                chunk = chunk[: len(chunk) - len(chunk) % 4]
                try:
                    raw = (base64.b64decode(chunk, altchars=alphabet, validate=False) if alphabet
                           else base64.b64decode(chunk))
                except ValueError:
                    continue
                if key in raw:
                    return True
    return False


KEY = 'sk-E2e"q\\u/+&=%20_' + secrets.token_hex(12)  # header-safe ASCII with JSON- and URL-special characters

KEY_ENV = "DUPLEXEVAL_ECHO_TEST_KEY"

@pytest.fixture()
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """The key in its environment variable, and no proxy between the client and the loopback server."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY

def assert_no_key(data: bytes, where: str, key: str = KEY) -> None:
    for name, form in encodings(key).items():
        assert form.encode() not in data, (where, name)
    for cut in (redaction.PARTIAL_MIN, len(key) // 2):
        assert key[:cut].encode() not in data, (where, "prefix", cut)
    assert not decodes_to_key(data, key.encode()), (where, "base64 inside a blob")
