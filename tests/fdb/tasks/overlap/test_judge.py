"""The v1.5 behaviour judge against a scripted OpenAI-compatible server on 127.0.0.1: attempts, journal, reuse."""

from __future__ import annotations

import json

import pytest

from duplexeval.errors import InputError
from duplexeval.fdb.tasks.overlap import behavior
from duplexeval.fdb.tasks.overlap.judge import JOURNAL, BehaviorJudge, behavior_config, label
from tests.helpers.judge import ScriptedServer

KEY = "sk-v15-secret-key"
TRANSCRIPTS = {k: {"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.1, 0.4]}]} for k, _ in behavior.TRANSCRIPTS}
GOOD = 'Here you go: { "behaviour": ["C_RESUME"] }'


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("V15_KEY", KEY)


@pytest.fixture
def prompt(tmp_path):
    p = tmp_path / "behavior.txt"
    p.write_text("You tag behaviour.\n")
    return behavior.load_prompt(p)


def make(tmp_path, url, prompt, **kw):
    return BehaviorJudge.create(behavior_config(base_url=url, api_key_env="V15_KEY", **kw), prompt, tmp_path)


def test_request_shape_seed_schedule_and_bounded_attempts(tmp_path, prompt):
    script = [("good", "no json here"), ("status", 503), ("good", GOOD)]
    with ScriptedServer(script) as srv:
        j = make(tmp_path, srv.url, prompt)
        (tmp_path / "s").mkdir()
        v = j.judge("user_interruption/s", tmp_path / "s", TRANSCRIPTS)
    assert v.tags == ["C_RESUME"] and v.attempts == 3
    bodies = [r["body"] for r in srv.requests]
    assert [b["seed"] for b in bodies] == [1, 2, 3]  # the official first seeds, at most max_attempts of them
    assert all(b["model"] == "gpt-4o-2024-08-06" and "temperature" not in b for b in bodies)
    assert bodies[0]["messages"] == [{"role": "system", "content": "You tag behaviour.\n"},
                                     {"role": "user", "content": behavior.user_message(TRANSCRIPTS)}]
    saved = json.loads((tmp_path / "s" / behavior.TAG_FILE).read_text())
    assert saved["behaviour"] == ["C_RESUME"] and saved["duplexeval"]["attempts"] == 3


def test_gives_up_after_max_attempts_and_journals_every_exchange_without_the_key(tmp_path, prompt):
    with ScriptedServer([("good", '{"behaviour": "C_RESPOND"}'), ("status", 500)]) as srv:
        j = make(tmp_path, srv.url, prompt, max_attempts=2)
        (tmp_path / "s").mkdir()
        v = j.judge("x/s", tmp_path / "s", TRANSCRIPTS)
    assert v.tags is None and v.attempts == 2 and "HTTP 500" in v.error
    assert len(srv.requests) == 2 and j.stats == {"requests": 2, "retries": 1, "failed": 1, "reused": 0}
    text = (tmp_path / JOURNAL).read_text()
    assert KEY not in text and "[redacted]" in text  # the 500 body echoes the Authorization header
    lines = [json.loads(x) for x in text.splitlines()]
    assert [x["attempt"] for x in lines] == [1, 2]
    assert "'behaviour' must be" in lines[0]["error"]
    assert not (tmp_path / "s" / behavior.TAG_FILE).exists()


def test_rerun_reuses_the_tag_file_and_a_killed_run_reuses_the_journal(tmp_path, prompt):
    (tmp_path / "s").mkdir()
    with ScriptedServer([("good", GOOD)]) as srv:
        make(tmp_path, srv.url, prompt).judge("x/s", tmp_path / "s", TRANSCRIPTS)
        first_url = srv.url
    assert len(srv.requests) == 1
    # the request (body, base URL, attempt bound) is what identifies an answer: a new judge for the same URL asks
    # nothing
    with ScriptedServer([("status", 500)]) as srv3:
        j = BehaviorJudge.create(behavior_config(base_url=first_url, api_key_env="V15_KEY"), prompt, tmp_path)
        v = j.judge("x/s", tmp_path / "s", TRANSCRIPTS)
    assert v.reused and v.tags == ["C_RESUME"] and srv3.requests == []
    (tmp_path / "s" / behavior.TAG_FILE).unlink()  # killed between the answer and the file: the journal has it
    j = BehaviorJudge.create(behavior_config(base_url=first_url, api_key_env="V15_KEY"), prompt, tmp_path)
    v = j.judge("x/s", tmp_path / "s", TRANSCRIPTS)
    assert v.reused and v.tags == ["C_RESUME"] and j.stats["requests"] == 0
    assert json.loads((tmp_path / "s" / behavior.TAG_FILE).read_text())["behaviour"] == ["C_RESUME"]


def test_a_changed_prompt_or_model_is_a_new_request(tmp_path, prompt):
    (tmp_path / "s").mkdir()
    with ScriptedServer([("good", GOOD), ("good", '{"behaviour": ["C_UNKNOWN"]}')]) as srv:
        make(tmp_path, srv.url, prompt).judge("x/s", tmp_path / "s", TRANSCRIPTS)
        v = make(tmp_path, srv.url, prompt, model="other-model").judge("x/s", tmp_path / "s", TRANSCRIPTS)
    assert len(srv.requests) == 2 and v.tags == ["C_UNKNOWN"] and not v.reused


def test_prompt_from_a_checkout_and_the_official_label(tmp_path):
    d = tmp_path / "checkout" / "v1_v1.5" / "evaluation" / "instruction"
    d.mkdir(parents=True)
    (d / "behavior.txt").write_text("not the official text")
    p = behavior.load_prompt(tmp_path / "checkout")
    assert not p.official and p.path.endswith("behavior.txt")
    assert label(p, "gpt-4o-2024-08-06", 1).endswith("not the official file)")
    official = behavior.BehaviorPrompt("x", "f", behavior.OFFICIAL_PROMPT_SHA256)
    assert label(official, "gpt-4o-2024-08-06", 1) == "official"
    assert label(official, "gpt-4o-mini", 1) == "gpt-4o-mini seed 1"
    with pytest.raises(InputError, match="no v1_v1.5/evaluation/instruction/behavior.txt"):
        behavior.load_prompt(tmp_path)
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(InputError, match="empty"):
        behavior.load_prompt(tmp_path / "empty.txt")
