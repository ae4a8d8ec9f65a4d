"""The shared chat-completions layer: one client for the FDB judge and the dialogue family, and its old home."""

from __future__ import annotations

import subprocess
import sys

import pytest

from duplexeval import chat_http
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official import judge as J


def test_old_home_re_exports_the_same_objects() -> None:
    for name in ("ChatClient", "Exchange", "sanitize_url", "secret_variants", "redact_secret", "MAX_RESPONSE_BYTES"):
        assert getattr(J, name) is getattr(chat_http, name), name


def test_api_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAT_HTTP_TEST_KEY", raising=False)
    assert chat_http.api_key_from_env("", "x") == ""
    with pytest.raises(RefusalError, match=r"^--judge openai needs an API key in the environment variable "
                                           r"CHAT_HTTP_TEST_KEY .*api_key_env=VAR\)$"):
        chat_http.api_key_from_env("CHAT_HTTP_TEST_KEY", "--judge openai",
                                   "name another with --judge openai:api_key_env=VAR")
    monkeypatch.setenv("CHAT_HTTP_TEST_KEY", "k1")
    assert chat_http.api_key_from_env("CHAT_HTTP_TEST_KEY", "x") == "k1"


def test_client_refuses_a_non_http_url_without_echoing_credentials() -> None:
    with pytest.raises(InputError) as err:
        chat_http.ChatClient("ftp://user:secret@host/v1", "key")
    assert "secret" not in str(err.value) and "ftp://host/v1" in str(err.value)


def test_dialogue_family_does_not_import_the_fdb_family() -> None:
    code = (
        "import importlib, pkgutil, sys, duplexeval.dialogue as d\n"
        "for m in pkgutil.iter_modules(d.__path__): importlib.import_module('duplexeval.dialogue.' + m.name)\n"
        "print(sorted(k for k in sys.modules if k.startswith('duplexeval.fdb')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
