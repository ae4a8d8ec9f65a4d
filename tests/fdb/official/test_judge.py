"""The interruption judge against a real loopback HTTP server speaking chat completions.

The server replies from a script: good, unparsable, HTTP 500, slow (past the client timeout),
redirect. We check ratings, attempts, the log, rating.json reuse, labels, and that the key is sent
in the header but never written to any file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official import judge as J
from tests.helpers.judge import GOOD, KEY, ScriptedServer, all_tree_bytes, rate


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)


def make_judge(tmp_path: Path, url: str, **kw) -> J.Judge:
    cfg = J.JudgeConfig(base_url=url, api_key_env="JUDGE_TEST_KEY", timeout_s=kw.pop("timeout_s", 5.0), **kw)
    return J.Judge.create(cfg, tmp_path)


# ---- parsing ------------------------------------------------------------------------------------


def test_parse_reply():
    assert J.parse_reply(GOOD) == ("The reply addresses the interruption directly.", 4)
    two = "Analysis: first\nI would rate the AI's response as 1\nAnalysis: second\nI would rate the AI's response as 12"
    assert J.parse_reply(two) == ("second", 12)  # last match wins; any integer, as the official regex
    assert J.parse_reply("Analysis: ok. I would rate the AI's response as 3") is None  # needs the newline
    assert J.parse_reply("Rating: 5") is None


# ---- the HTTP path ------------------------------------------------------------------------------


def test_good_reply(tmp_path):
    with ScriptedServer([("good", GOOD)]) as srv:
        j = make_judge(tmp_path, srv.url)
        r = rate(j, tmp_path)
    assert (r.rating, r.attempts, r.error) == (4, 1, None)
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == f"Bearer {KEY}"
    body = req["body"]
    assert body["model"] == "gpt-4-turbo" and body["seed"] == 0 and "temperature" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "wait, what time is it" in body["messages"][1]["content"] and "it is noon" in body["messages"][1]["content"]
    saved = json.loads((tmp_path / "synthetic_user_interruption/1/rating.json").read_text())
    assert saved["rating"] == 4 and saved["analysis"].startswith("The reply")
    log = [json.loads(x) for x in (tmp_path / "judge-log.jsonl").read_text().splitlines()]
    assert [x["event"] for x in log] == ["exchange"] and log[0]["rating"] == 4
    assert KEY.encode() not in all_tree_bytes(tmp_path)


def test_unparsable_then_good_counts_a_retry(tmp_path):
    with ScriptedServer([("good", "I like it. 5/5"), ("good", GOOD)]) as srv:
        j = make_judge(tmp_path, srv.url)
        r = rate(j, tmp_path)
    assert (r.rating, r.attempts) == (4, 2) and j.stats["retries"] == 1 and len(srv.requests) == 2
    log = [json.loads(x) for x in (tmp_path / "judge-log.jsonl").read_text().splitlines()]
    assert log[0]["error"].startswith("unparsable") and log[0]["reply"] == "I like it. 5/5"


def test_three_errors_give_up_without_a_rating(tmp_path):
    with ScriptedServer([("status", 500), ("good", "nope"), ("status", 503), ("good", GOOD)]) as srv:
        j = make_judge(tmp_path, srv.url)
        r = rate(j, tmp_path)
    assert r.rating is None and r.attempts == 3 and "HTTP 503" in r.error
    assert len(srv.requests) == 3  # never a 4th attempt
    assert j.stats == {"requests": 3, "retries": 2, "failed": 1, "reused": 0}
    assert not (tmp_path / "synthetic_user_interruption/1/rating.json").exists()
    text = (tmp_path / "judge-log.jsonl").read_text()
    assert "HTTP 500" in text and "[redacted]" in text  # the server echoed the header; the key was removed
    assert KEY.encode() not in all_tree_bytes(tmp_path)


def test_slow_reply_times_out_and_is_retried(tmp_path):
    with ScriptedServer([("slow", 1.5), ("good", GOOD)]) as srv:
        j = make_judge(tmp_path, srv.url, timeout_s=0.4)
        t0 = time.monotonic()
        r = rate(j, tmp_path)
        elapsed = time.monotonic() - t0
    assert (r.rating, r.attempts) == (4, 2)
    assert elapsed < 1.4  # did not wait for the slow reply
    log = [json.loads(x) for x in (tmp_path / "judge-log.jsonl").read_text().splitlines()]
    assert "timed out" in log[0]["error"]


def test_not_a_chat_completion_and_oversized_reply(tmp_path):
    big = json.dumps({"choices": [{"message": {"content": "x" * (J.MAX_RESPONSE_BYTES + 10)}}]}).encode()
    with ScriptedServer([("raw", b"<html>proxy</html>"), ("raw", big), ("good", GOOD)]) as srv:
        j = make_judge(tmp_path, srv.url)
        r = rate(j, tmp_path)
    assert (r.rating, r.attempts) == (4, 3)
    log = [json.loads(x) for x in (tmp_path / "judge-log.jsonl").read_text().splitlines()]
    assert "not a chat completion" in log[0]["error"] and "larger than" in log[1]["error"]


def test_redirect_is_not_followed(tmp_path):
    with ScriptedServer(
        [("redirect", "http://127.0.0.1:9/steal"), ("redirect", "/v1/other"), ("redirect", "/x")]) as srv:
        j = make_judge(tmp_path, srv.url)
        r = rate(j, tmp_path)
    assert r.rating is None and "HTTP 307" in r.error
    assert [q["path"] for q in srv.requests] == ["/v1/chat/completions"] * 3


def test_rating_json_is_reused_for_the_same_request(tmp_path):
    with ScriptedServer([("good", GOOD)]) as srv:
        first = rate(make_judge(tmp_path, srv.url), tmp_path)
        j2 = make_judge(tmp_path, srv.url)
        second = rate(j2, tmp_path)
        j3 = make_judge(tmp_path, srv.url, model="other-model")
        third = rate(j3, tmp_path)
    assert first.rating == second.rating == 4 and second.attempts == first.attempts
    assert j2.stats["reused"] == 1 and j2.stats["requests"] == 0
    assert j3.stats["requests"] == 1 and third.rating == 4  # a different model asks again
    assert len(srv.requests) == 2


def test_missing_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_TEST_KEY")
    with pytest.raises(RefusalError, match="JUDGE_TEST_KEY"):
        make_judge(tmp_path, "http://127.0.0.1:9/v1")


def test_base_url_must_be_http(tmp_path):
    with pytest.raises(InputError):
        make_judge(tmp_path, "file:///etc/passwd")


def test_sanitize_url_drops_credentials_and_query():
    assert J.sanitize_url("https://user:pw@host.example:8443/v1?key=abc#x") == "https://host.example:8443/v1"


# ---- prompts and labels -------------------------------------------------------------------------

# A stand-in for the official evaluator file, with our own words: only its *structure* (a function
# eval_user_interruption assigning a string system_msg and a three-field f-string user_msg) matters.
FAKE_EVALUATOR = '''
def eval_user_interruption(root_dir, client):
    system_msg = """Rate the reply from 0 to 5.
Answer as: Analysis: ... then I would rate the AI's response as N"""
    for d in []:
        a, b, c = 1, 2, 3
        user_msg = f"""
        - first: {a}
        - second: {b}
        - third: {c}
        """
'''


def fake_checkout(root: Path, layout: str = "evaluation") -> Path:
    p = root / layout / "eval_user_interruption.py"
    p.parent.mkdir(parents=True)
    p.write_text(FAKE_EVALUATOR)
    return root


def test_official_prompt_is_read_from_a_checkout(tmp_path):
    ref = fake_checkout(tmp_path / "ref")
    p = J.load_official_prompt(ref)
    assert p.source == "official" and p.system.startswith("Rate the reply")
    assert p.user("CTX", "INT", "RESP") == ("\n        - first: CTX\n        - second: INT\n        - third: "
                                            "RESP\n        ")
    assert p.file_sha256 and len(p.sha256) == 64
    # HEAD layout too
    assert J.load_official_prompt(fake_checkout(tmp_path / "head", "v1_v1.5/evaluation")).source == "official"


def test_official_prompt_errors(tmp_path):
    with pytest.raises(InputError, match="checkout"):
        J.load_official_prompt(tmp_path)
    p = tmp_path / "evaluation" / "eval_user_interruption.py"
    p.parent.mkdir()
    p.write_text("def eval_user_interruption():\n    system_msg = 'x'\n    user_msg = f'{a}'\n")
    with pytest.raises(InputError, match="1 fields"):
        J.load_official_prompt(tmp_path)


def test_labels(tmp_path):
    official = J.load_official_prompt(fake_checkout(tmp_path / "ref"))
    assert J.judge_label(official, "gpt-4-turbo", 0) == "official"
    assert J.judge_label(official, "gpt-4o", 0) == "gpt-4o"
    assert J.judge_label(official, "gpt-4-turbo", 1) == "gpt-4-turbo"
    assert J.judge_label(J.OUR_PROMPT, "gpt-4-turbo", 0) == "gpt-4-turbo (duplexeval prompt)"


def test_official_prompt_is_sent(tmp_path):
    ref = fake_checkout(tmp_path / "ref")
    with ScriptedServer([("good", GOOD)]) as srv:
        j = make_judge(tmp_path / "tree", srv.url, reference_source=str(ref))
        rate(j, tmp_path / "tree")
    assert j.label == "official" and j.signature().prompt.source == "official"
    msgs = srv.requests[0]["body"]["messages"]
    assert msgs[0]["content"].startswith("Rate the reply") and "- second: wait, what time is it" in msgs[1]["content"]
