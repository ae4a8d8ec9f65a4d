"""The one redaction point: every form of a known secret is removed from text, bytes, printed lines and log records;
URL credentials are refused by every common name without being echoed."""

from __future__ import annotations

import base64
import io
import logging
import os
import re
import secrets

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplexeval import redaction
from duplexeval.errors import InputError
from tests.helpers.secrets import decodes_to_key, encodings

KEY = 'sk-T3st"q\\u/é+&=%20 ' + secrets.token_hex(12)  # every character class an encoding treats specially
@pytest.fixture()
def known() -> str:
    redaction.register(KEY)
    return KEY


@pytest.mark.parametrize("name", list(encodings(KEY)))
def test_every_encoding_is_removed_from_text_and_bytes(known: str, name: str) -> None:
    form = encodings(known)[name]
    assert redaction.scrub_text(f"<{form}>") == "<[redacted]>"
    data = f"<{form}>".encode()
    scrubbed = redaction.scrub_bytes(data)
    assert len(scrubbed) == len(data) and scrubbed == b"<" + b"*" * (len(data) - 2) + b">"


@pytest.mark.parametrize("offset", range(7))
@pytest.mark.parametrize("urlsafe", [False, True])
def test_the_key_inside_a_longer_base64_blob_at_any_offset(known: str, offset: int, urlsafe: bool) -> None:
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = enc(os.urandom(offset) + known.encode() + os.urandom(5)).decode()
    assert decodes_to_key(blob.encode(), known.encode())  # the detector sees it before ...
    text = redaction.scrub_text(f"audio={blob}")
    assert "[redacted]" in text and not decodes_to_key(text.encode(), known.encode())  # ... and not after
    # exactly the characters holding only key bits are gone: the blob's own, and the one at each end that mixes
    # key bits with the blob's, stay
    left, right = text.removeprefix("audio=").split("[redacted]")
    n = len(known.encode())
    assert len(left) == -(-4 * offset // 3) and len(right) == len(blob) - 4 * (offset + n) // 3


def test_a_form_cut_short_is_removed_from_where_it_was_cut(known: str) -> None:
    for name, form in encodings(known).items():
        for cut in (redaction.PARTIAL_MIN, len(form) // 2, len(form) - 1):
            assert form[:cut] not in redaction.scrub_text(f"message: {form[:cut]}"), (name, cut)
            assert form[-cut:] not in redaction.scrub_text(f"{form[-cut:]} (end)"), (name, cut)
    assert redaction.scrub_text(known[: redaction.PARTIAL_MIN - 1]) == known[: redaction.PARTIAL_MIN - 1]


def test_short_values_are_not_secrets_and_nothing_is_known_at_first() -> None:
    assert redaction.known() == ()
    assert redaction.scrub_text("x key") == "x key"
    redaction.register("x", "", None, "1234567")
    assert redaction.known() == () and redaction.scrub_text("x 1234567") == "x 1234567"


def test_secret_from_env_registers_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDACTION_TEST_KEY", KEY)
    assert redaction.secret_from_env("REDACTION_TEST_KEY") == KEY
    assert redaction.secret_from_env("") == "" and KEY in redaction.known()
    redaction.register_headers({"Authorization": "Bearer sk-header-" + "z" * 20, "OpenAI-Beta": "realtime=v1"})
    assert "sk-header-" + "z" * 20 in redaction.known() and "realtime=v1" not in redaction.known()


def test_printed_lines_and_log_records_are_scrubbed(known: str, capsys: pytest.CaptureFixture[str]) -> None:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)  # a handler made before the guard, writing where the guard cannot see
    log = logging.getLogger("duplexeval.test.redaction")
    log.addHandler(handler)
    try:
        with redaction.guard_streams():
            print(f"error: {known}")
            import sys

            for i in range(0, len(known), 3):  # one line written in pieces, each too short to be recognised
                sys.stderr.write(known[i : i + 3])
            sys.stderr.write("\n")
            sys.stdout.write(f"\rprogress {encodings(known)['base64']}")
            log.warning("server said %s", encodings(known)["json"])
    finally:
        log.removeHandler(handler)
    out = capsys.readouterr()
    text = out.out + out.err + buf.getvalue()
    assert text.count("[redacted]") == 4
    for form in encodings(known).values():
        assert form not in text
    assert known[:6] not in text


@pytest.mark.parametrize("query", ["apikey", "api_key", "api-key", "key", "token", "auth_token", "access_token",
                                   "Authorization", "x-api-key", "client_secret", "password", "sig", "X-Amz-Signature",
                                   "subscription-key", "hf_token", "refresh_token"])
def test_url_credentials_are_refused_by_every_common_name_without_echo(query: str) -> None:
    value = "v4lue" + secrets.token_hex(8)
    for url in (f"wss://h.example/v1?model=m&{query}={value}", f"wss://h.example/v1#{query}={value}"):
        with pytest.raises(InputError) as err:
            redaction.refuse_url_credentials(url, "url")
        assert value not in str(err.value) and f"{query}=..." in str(err.value)
        assert value in redaction.known()


@pytest.mark.parametrize("userinfo", ["user:pa55word-long@", "tokenvalue123456@"])
def test_url_userinfo_is_refused_without_echo(userinfo: str) -> None:
    with pytest.raises(InputError) as err:
        redaction.refuse_url_credentials(f"wss://{userinfo}h.example/v1", "url")
    assert userinfo.rstrip("@").split(":")[-1] not in str(err.value)


def test_harmless_urls_pass() -> None:
    for url in ("ws://127.0.0.1:8000/v1/realtime?model=gpt-realtime",
                "wss://h/api/chat?text_prompt=hi&seed=42&rate=16000", "https://api.openai.com/v1"):
        redaction.refuse_url_credentials(url, "url")
    assert redaction.safe_url("https://u:p@h:8080/v1?key=k#x") == "https://h:8080/v1"


URL_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,;'\"]+")  # the definition of a URL inside a text


@given(st.lists(st.sampled_from(["a", "Z", "1", "+", ".", "-", ":", "/", "://", " ", ",", ";", "'", '"', "@", "?",
                                 "=", "&", "é", "http", "token=k"]), max_size=40).map("".join))
@settings(max_examples=600, deadline=None)
def test_urls_in_finds_what_the_url_pattern_finds(text: str) -> None:
    assert redaction.urls_in(text) == URL_PATTERN.findall(text)
