"""The chat manager and the openai judge against a real HTTP server on 127.0.0.1 (a fake of the paid API).

The server speaks the chat-completions wire format, echoes the API key back in its replies (as a
careless server might) and can fail on purpose; every file written is then searched for the key
in every encoding.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from duplexeval.dialogue import run_stage, score_stage
from duplexeval.dialogue.http import key_forms
from duplexeval.dialogue.judges import make_judge
from duplexeval.dialogue.load import load_cases
from duplexeval.dialogue.simulator import Clock
from duplexeval.dialogue.synth_stage import caseset_text
from duplexeval.errors import InputError, RefusalError
from tests.helpers import SRC

KEY = 'sk-te"st\\key/+&= 9%'  # quotes, backslash, slash, plus, ampersand, equals, space, percent
KEY_ENV = "DUPLEXEVAL_TEST_DIALOGUE_KEY"


class FakeServer:
    """A chat-completions server; `reply(body) -> (status, content or raw bytes, delay_s)` decides each answer."""

    def __init__(self, reply):
        self.reply = reply
        self.requests: list[dict] = []
        self.auth: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n))
                outer.requests.append(body)
                outer.auth.append(self.headers.get("Authorization", ""))
                status, content, delay = outer.reply(body, self.headers.get("Authorization", ""))
                if delay:
                    time.sleep(delay)
                if isinstance(content, bytes):
                    data = content
                else:
                    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _user_text(body) -> str:
    return body["messages"][-1]["content"]


def judge_reply(body, auth):
    """MiU verdicts from the transcript; UiM: 1 unless the reply is empty; echoes the key in the analysis."""
    key = auth.removeprefix("Bearer ")
    echo = f"key {key} / {urllib.parse.quote(key)} / {json.dumps(key)}"
    text = _user_text(body)
    if "timing" in body["messages"][0]["content"]:
        return 200, json.dumps({"analysis": echo, "timing": 1, "content": int("east" in text)}), 0
    return 200, "```json\n" + json.dumps({"analysis": echo, "score": 1}) + "\n```", 0


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture(scope="module")
def small_cases(tmp_path_factory):
    path = tmp_path_factory.mktemp("cases") / "cases.jsonl"
    path.write_text(caseset_text(1, 6, 2), encoding="utf-8")
    return load_cases(path)


def assert_no_key(root: Path) -> int:
    """Search every file under `root` for every spelling of the key; returns how many files were read."""
    n = 0
    forms = [*key_forms(KEY), json.dumps(KEY)[1:-1], urllib.parse.quote(KEY, safe=""), urllib.parse.quote_plus(KEY)]
    for p in root.rglob("*"):
        if p.is_file():
            n += 1
            data = p.read_bytes().decode("utf-8", "replace")
            for f in forms:
                assert f not in data, f"{p} holds the key as {f!r}"
    return n


def test_openai_judge_scores_logs_caches_and_never_writes_the_key(tmp_path, key_env, small_cases):
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    run_stage.run(small_cases, "eager", {}, Clock(), run_dir)
    with FakeServer(judge_reply) as srv:
        judge = make_judge("openai", run_dir, model="judge-model-x", base_url=srv.url, api_key_env=KEY_ENV,
                           cache_dir=cache)
        rep = score_stage.score(run_dir, judge)
        first = len(srv.requests)
        assert first > 0 and all(a == f"Bearer {KEY}" for a in srv.auth)
        assert (srv.requests[0]["model"] == "judge-model-x"
                and srv.requests[0]["response_format"]["type"] == "json_schema")
        # a rerun costs nothing: every reply comes from the cache
        judge2 = make_judge("openai", run_dir, model="judge-model-x", base_url=srv.url, api_key_env=KEY_ENV,
                            cache_dir=cache)
        rep2 = score_stage.score(run_dir, judge2)
        assert len(srv.requests) == first
    assert rep2["MiU"] == rep["MiU"] and rep2["UiM"] == rep["UiM"]
    assert rep["judge"]["label"] == "openai:judge-model-x" and rep["judge"]["model"] == "judge-model-x"
    assert "judge:openai:judge-model-x@" in rep["signature"]["compact"]
    assert rep["judge"]["judge_errors"] == 0
    assert (rep["MiU"]["PIR_mid"]["judge"] == "openai:judge-model-x"
            and rep["UiM"]["PRRavg"]["judge"] == "openai:judge-model-x")
    assert rep["MiU"]["counts"]["mid"] == 6 and rep["MiU"]["PIR_mid"]["value"] == 1.0
    log = [json.loads(x) for x in (run_dir / "judge-log.jsonl").read_text().splitlines()]
    assert sum(1 for r in log if r["event"] == "exchange") == first and any(r["event"] == "cached" for r in log)
    assert "[redacted]" in (run_dir / "judge-log.jsonl").read_text()
    assert assert_no_key(tmp_path) >= 6


def test_unparsable_replies_are_judge_errors_after_bounded_attempts(tmp_path, key_env, small_cases):
    run_dir = tmp_path / "run"
    run_stage.run(small_cases, "half-duplex", {}, Clock(), run_dir)
    with FakeServer(lambda body, auth: (200, "I think it was fine.", 0)) as srv:
        judge = make_judge("openai", run_dir, model="m", base_url=srv.url, api_key_env=KEY_ENV,
                           cache_dir=tmp_path / "c", max_attempts=2)
        rep = score_stage.score(run_dir, judge)
        assert len(srv.requests) == 2 * 8  # 8 UiM cases judged, 2 attempts each; half-duplex has no mid MiU case
    assert rep["judge"]["judge_errors"] == 8
    assert rep["UiM"]["PRR_noise"]["n"] == 0 and rep["UiM"]["PRR_noise"]["selected_bounds"] == [0.0, 1.0]
    assert rep["UiM"]["PRRavg"]["value"] is None
    rows = [json.loads(x) for x in (run_dir / "judgements.jsonl").read_text().splitlines()[1:]]
    errs = [r["verdict"]["judge_error"] for r in rows if r["verdict"]]
    assert len(errs) == 8 and all(e.startswith("judge_error: reply does not parse after 2 attempt(s)") for e in errs)


def test_http_errors_retry_then_succeed_and_timeouts_are_bounded(tmp_path, key_env, small_cases):
    run_dir = tmp_path / "run"
    run_stage.run(small_cases, "half-duplex", {}, Clock(), run_dir)
    calls = {"n": 0}

    def flaky(body, auth):
        calls["n"] += 1
        if calls["n"] % 2 == 1:
            return 500, b'{"error": "busy ' + auth.encode() + b'"}', 0
        return 200, json.dumps({"analysis": "ok", "score": 1}), 0

    with FakeServer(flaky) as srv:
        rep = score_stage.score(run_dir, make_judge("openai", run_dir, model="m", base_url=srv.url, api_key_env=KEY_ENV,
                                            cache_dir=tmp_path / "c", backoff_s=0.0))
    assert rep["judge"]["judge_errors"] == 0 and rep["UiM"]["PRRavg"]["value"] == 1.0
    assert "HTTP 500" in (run_dir / "judge-log.jsonl").read_text()

    slow_dir = tmp_path / "slow"
    one = load_cases_subset(small_cases, tmp_path, 1)
    run_stage.run(one, "half-duplex", {}, Clock(), slow_dir)
    with FakeServer(lambda body, auth: (200, "{}", 1.5)) as srv:
        t0 = time.monotonic()
        rep = score_stage.score(slow_dir, make_judge("openai", slow_dir, model="m", base_url=srv.url,
                                                     api_key_env=KEY_ENV, cache_dir=tmp_path / "c2", timeout_s=0.3,
                                                     max_attempts=2, backoff_s=0.2))
        assert 0.8 < time.monotonic() - t0 < 5  # two timeouts of 0.3 s and one backoff of 0.2 s
    assert rep["judge"]["judge_errors"] == 1
    assert "timed out after 0.3 s" in (slow_dir / "judge-log.jsonl").read_text()
    assert_no_key(tmp_path)


def load_cases_subset(cases, tmp_path, n_uim):
    """A case file with only the first `n_uim` UiM cases."""
    from duplexeval.dialogue.load import case_to_json

    uims = [c for c in cases.cases if c.family == "UiM"][:n_uim]
    p = tmp_path / "one.jsonl"
    p.write_text("".join(json.dumps(case_to_json(c)) + "\n" for c in uims), encoding="utf-8")
    return load_cases(p)


def test_missing_key_and_bad_settings_refuse(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RefusalError, match=f"environment variable {KEY_ENV}"):
        make_judge("openai", tmp_path, model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, "x")
    with pytest.raises(InputError, match="model name is needed"):
        make_judge("openai", tmp_path, model="", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    with pytest.raises(InputError, match="needs base_url=URL"):
        make_judge("openai", tmp_path, model="m", api_key_env=KEY_ENV)
    with pytest.raises(InputError, match="must be an http"):
        make_judge("openai", tmp_path, model="m", base_url="file:///etc/passwd", api_key_env=KEY_ENV)
    with pytest.raises(InputError, match="unknown judge 'gpt'"):
        make_judge("gpt", tmp_path)


# ---------------------------------------------------------------------------------------------
# The chat manager


def manager_reply(body, auth):
    """A toy dialogue manager: cuts in on 'west', yields on 'no', otherwise keeps its state."""
    text = _user_text(body)
    speaking = text.rstrip().endswith("You are SPEAKING.")
    if speaking:
        if "talking over you" in text and " no " in f" {text.split('talking over you): ')[-1].split(chr(10))[0]} ":
            return 200, "[S.LISTEN]", 0
        return 200, f"[C.SPEAK] {auth[-3:]}" if "dog" in text else "[C.SPEAK]", 0
    if "USER (still speaking)" in text and "west" in text and "stopped speaking" not in text:
        return 200, "[S.SPEAK] Sorry to cut in, the sun rises in the east.", 0
    if "stopped speaking" in text:
        return 200, "[S.SPEAK] Okay, noted.", 0
    return 200, "[C.LISTEN]", 0


def chat_cases(tmp_path):
    cases = [
        {"family": "MiU", "id": "west", "chunks": [{"text": "the sun", "start_s": 0, "end_s": 0.64},
                                                   {"text": "rises in the west", "start_s": 0.64, "end_s": 1.28},
                                                   {"text": "so when", "start_s": 1.28, "end_s": 1.92}],
         "boundaries": [1, 2], "expected": {"cut_in_from": 0, "reply_cues": ["east"]}},
        {"family": "MiU", "id": "plain",
         "chunks": [{"text": "play some", "start_s": 0, "end_s": 0.64},
                    {"text": "jazz please", "start_s": 0.64, "end_s": 1.28}],
         "boundaries": [0, 1], "expected": {"cut_in_from": None, "reply_cues": []}},
        {"family": "UiM", "id": "deny",
         "machine": [{"text": "your flight to", "start_s": 0, "end_s": 0.64},
                     {"text": "Boston leaves", "start_s": 0.64, "end_s": 1.28}],
         "interruption": {"reason": "denial", "chunks": [{"text": "no Austin", "start_s": 0.64, "end_s": 1.28}]},
         "expected": {"behaviour": "yield", "reply_cues": ["okay"]}},
        {"family": "UiM", "id": "gibberish",
         "machine": [{"text": "the soup needs", "start_s": 0, "end_s": 0.64},
                     {"text": "two onions", "start_s": 0.64, "end_s": 1.28}],
         "interruption": {"reason": "noise", "chunks": [{"text": "the dog barks", "start_s": 0.64, "end_s": 1.28}]},
         "expected": {"behaviour": "continue", "reply_cues": []}},
    ]
    p = tmp_path / "chat.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return load_cases(p)


def test_chat_manager_drives_the_simulator_and_caches(tmp_path, key_env):
    cases = chat_cases(tmp_path)
    with FakeServer(manager_reply) as srv:
        params = {"model": "dm-1", "base_url": srv.url, "api_key_env": KEY_ENV, "cache_dir": str(tmp_path / "cache")}
        res = run_stage.run(cases, "openai-chat", params, Clock(), tmp_path / "run")
        n = len(srv.requests)
        assert n > 0 and srv.requests[0]["messages"][0]["content"].startswith("You are the dialogue manager")
        res2 = run_stage.run(cases, "openai-chat", params, Clock(), tmp_path / "run2")
        assert len(srv.requests) == n  # rerun from the cache
    rows = {r.id: r for r in res.rows}
    assert rows["west"].outcome == "mid" and rows["west"].heard_chunks == 2 and "east" in rows["west"].reply
    assert rows["plain"].outcome == "end" and rows["plain"].fted_s == pytest.approx(0.3)
    assert rows["deny"].outcome == "yielded" and rows["deny"].reply == "Okay, noted."
    assert rows["gibberish"].outcome == "continued"
    assert res.rows == res2.rows
    assert (tmp_path / "run" / "decisions.jsonl").read_bytes() == (tmp_path / "run2" / "decisions.jsonl").read_bytes()
    assert "system:openai-chat@" in res.signature.compact() and "model" in res.signature.components[1].settings
    rep = score_stage.score(tmp_path / "run", make_judge("expected", tmp_path / "run"))
    assert (rep["MiU"]["ir_mid"]["count"] == 1 and rep["MiU"]["PIR_mid"]["value"] == 1.0
            and rep["MiU"]["PRR_mid"]["value"] == 1.0)
    assert assert_no_key(tmp_path) >= 8


def test_chat_manager_protocol_errors_are_counted(tmp_path, key_env):
    cases = chat_cases(tmp_path)
    with FakeServer(lambda body, auth: (200, "Sure thing!", 0)) as srv:
        params = {"model": "dm-1", "base_url": srv.url, "api_key_env": KEY_ENV, "cache_dir": str(tmp_path / "c"),
                  "max_attempts": "2"}
        res = run_stage.run(cases, "openai-chat", params, Clock(), tmp_path / "run")
    rows = {r.id: r for r in res.rows}
    assert rows["west"].outcome == "miss" and rows["west"].system_errors == 3  # two boundaries + end of speech
    assert rows["gibberish"].outcome == "continued" and rows["gibberish"].system_errors >= 1


def test_cli_score_with_the_openai_judge(tmp_path, small_cases):
    import os
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    run_stage.run(small_cases, "keyword", {}, Clock(), run_dir)
    src = str(SRC)
    with FakeServer(judge_reply) as srv:
        env = {"PYTHONPATH": src, "PATH": os.environ.get("PATH", "/usr/bin"), KEY_ENV: KEY, "COLUMNS": "200"}
        p = subprocess.run(
            [sys.executable, "-m", "duplexeval", "dialogue", "score", str(run_dir), "--judge",
             f"openai:model=jm,base_url={srv.url},api_key_env={KEY_ENV},cache_dir={tmp_path / 'cache'},attempts=2"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )
        assert p.returncode == 0, p.stderr
        assert len(srv.requests) == 8 + json.loads((run_dir / "dialogue.json").read_text())["MiU"]["counts"]["mid"]
    assert "judge openai:jm" in p.stdout and "|judge:openai:jm@" in p.stdout
    assert KEY not in p.stdout + p.stderr
    assert_no_key(tmp_path)


def test_oversized_request_is_not_sent(tmp_path, key_env):
    from duplexeval.dialogue.http import MAX_REQUEST_BYTES, CachedChat

    with FakeServer(judge_reply) as srv:
        chat = CachedChat(srv.url, "m", KEY_ENV, "test", tmp_path / "log.jsonl", tmp_path / "cache")
        ans = chat.ask({"messages": [{"role": "user", "content": "x" * MAX_REQUEST_BYTES}]},
                       lambda c: c, {"case": "big"})
        assert srv.requests == []
    assert ans.parsed is None and "over the 1048576-byte bound" in ans.error
    assert '"event":"refused"' in (tmp_path / "log.jsonl").read_text()
