"""openai-realtime against the installed `openai` SDK's own types, both dialects (tests/helpers/openai_sdk.py).

- The server's `session.update` field lists are the SDK's session types' fields.
- Every client event over a seeded sample of the client's parameter space validates strictly.
- Live sessions against `serve openai-realtime` (a turn with a completed reply, a barge-in that cancels a
  reply, `interrupt_response=false` with `response.cancel`, `create_response=false` with `response.create`):
  every event the client sent and every event the server sent validates strictly, and the server's
  responses carry the whole event sequence for completed and cancelled responses alike.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from openai.types.beta.realtime.session_update_event import Session as BetaUpdateSession
from openai.types.realtime import RealtimeSessionCreateRequest

from duplexeval.errors import InputError
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net import openai_realtime as oai
from duplexeval.systems.net import openai_realtime_server as srv
from duplexeval.systems.net.replicas import forget_pools
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import verdict
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import run_session_async
from tests.helpers.net import SERVED, USER, T, user_turn
from tests.helpers.openai_sdk import check_client_event, check_server_event


def test_server_session_fields_are_the_sdk_s() -> None:
    assert srv.GA_FIELDS == set(RealtimeSessionCreateRequest.model_fields)
    assert srv.BETA_FIELDS == set(BetaUpdateSession.model_fields)


def _sample_params(rng: random.Random) -> str:
    dialect = rng.choice(["ga", "beta"])
    td = rng.choice(["server_vad", "semantic_vad", "none"])
    parts = [f"dialect={dialect}", f"turn_detection={td}",
             f"voice={rng.choice(['alloy', 'ash', 'coral', 'verse', 'marin'])}",
             f"threshold={rng.choice([0.0, 0.3, 0.5, 0.91, 1.0])}", f"prefix_padding_ms={rng.choice([0, 300, 1234])}",
             f"silence_duration_ms={rng.choice([0, 200, 500, 10000])}",
             f"interrupt_response={rng.choice(['true', 'false'])}", f"create_response={rng.choice(['true', 'false'])}",
             f"eagerness={rng.choice(['low', 'medium', 'high', 'auto'])}",
             f"model={rng.choice(['', 'gpt-realtime', 'my-model'])}"]
    if rng.random() < 0.5:
        parts.append("instructions=Be brief, and kind.")
    return ",".join(parts)


def test_every_client_event_over_a_sample_of_parameters_validates_strictly() -> None:
    rng = random.Random(20251)
    for _ in range(64):
        spec = f"openai-realtime:url=ws://127.0.0.1:1/v1/realtime,{_sample_params(rng)}"
        cfg = make_system(spec)
        dialect = cfg.dialect  # type: ignore[attr-defined]
        events = [oai.session_update(cfg), oai.append_event(bytes(3840)),  # type: ignore[arg-type]
                  oai.truncate_event("item_0007", rng.randrange(1, 90000)), oai.cancel_event(), oai.create_event()]
        for ev in events:
            assert check_client_event(dialect, ev) == [], (spec, ev)


def test_a_rate_other_than_24k_is_refused_in_one_line() -> None:
    for dialect in ("ga", "beta"):
        with pytest.raises(InputError, match=f"rate=16000: dialect={dialect} carries .* leave rate unset"):
            make_system(f"openai-realtime:url=ws://h:1/v1/realtime,dialect={dialect},rate=16000")
    with pytest.raises(oai.ProtocolViolation, match="carries audio/pcm at 24000 Hz only"):
        oai.granted_rates("ga", {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}})


# A turn and its reply, then the user talks over the second reply (a barge-in).
BARGE_SPANS = (USER, (2.6, 3.3))
CASES = [  # (name, client parameters, input spans)
    ("ga_turn", "dialect=ga", (USER,)),
    ("ga_barge_in", "dialect=ga", BARGE_SPANS),
    ("ga_no_interrupt", "dialect=ga,interrupt_response=false", BARGE_SPANS),
    ("ga_create", "dialect=ga,create_response=false", (USER,)),
    ("beta_turn", "dialect=beta", (USER,)),
    ("beta_barge_in", "dialect=beta", BARGE_SPANS),
    ("beta_no_interrupt", "dialect=beta,interrupt_response=false,create_response=false", BARGE_SPANS),
]
SERVED_LONG = "turn-based:vad=energy,think_ms=0,text=this is a rather long answer that keeps on going for a while"


def _run_cases() -> dict[str, dict[str, Any]]:
    forget_pools()
    out: dict[str, dict[str, Any]] = {}
    servers = []
    for name, _, _ in CASES:
        s = make_server("openai-realtime", SERVED_LONG if "barge" in name or "interrupt" in name else SERVED,
                        options={"speed": "1.5"})
        s.record_sends = True
        servers.append(ServerThread(s).start())

    async def one(th: ServerThread, name: str, client: str, spans: Any) -> Any:
        pcm = user_turn(T, spans)
        system = make_system(f"openai-realtime:url={th.url('/v1/realtime')},{client}")
        return await run_session_async(system, pcm, SampleInfo("s", name, T, pcm.shape[0]))

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(one(th, n, c, sp) for th, (n, c, sp) in zip(servers, CASES))))

    try:
        traces = asyncio.run(main())
    finally:
        for th in servers:
            th.stop()
    for th, (name, client, _), tr in zip(servers, CASES, traces):
        out[name] = {"dialect": "beta" if "beta" in client else "ga", "trace": tr,
                     "sent": [json.loads(m) for _, _, m in th.server.sends],
                     "received": [json.loads(m) for _, _, m in th.server.received],
                     "events": th.server.events}
    return out


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    return _run_cases()


def test_every_event_both_ways_validates_strictly(runs: dict[str, dict[str, Any]]) -> None:
    for name, run in runs.items():
        assert not set(verdict(run["trace"].wire.records, T, 10.0).reasons) - {"input_pacing_late"}, name
        for ev in run["received"]:
            assert check_client_event(run["dialect"], ev) == [], (name, ev["type"])
        for ev in run["sent"]:
            assert check_server_event(run["dialect"], ev) == [], (name, ev["type"])


def _responses(sent: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The event types of each response, in the order sent."""
    out: dict[str, list[str]] = {}
    for ev in sent:
        rid = ev.get("response_id") or (ev.get("response") or {}).get("id")
        if rid:
            out.setdefault(rid, []).append(ev["type"])
    return out


GA_COMPLETED = ["response.created", "response.output_item.added", "response.content_part.added",
                "response.output_audio.delta", "response.output_audio_transcript.delta", "response.output_audio.done",
                "response.output_audio_transcript.done", "response.content_part.done", "response.output_item.done",
                "response.done"]
BETA_COMPLETED = [t.replace("output_audio", "audio") for t in GA_COMPLETED]


def test_completed_and_cancelled_responses_carry_the_whole_sequence(runs: dict[str, dict[str, Any]]) -> None:
    for name, run in runs.items():
        sent = run["sent"]
        want = GA_COMPLETED if run["dialect"] == "ga" else BETA_COMPLETED
        responses = {rid: types for rid, types in _responses(sent).items() if "response.done" in types}
        assert responses, name  # (a response still streaming when the client left at T has no done events)
        for rid, types in responses.items():
            seq = [t for i, t in enumerate(types) if "audio.delta" not in t or t not in types[:i]]  # deltas once
            assert seq == want, (name, rid, seq)
            (done,) = [ev for ev in sent if ev["type"] == "response.done" and ev["response"]["id"] == rid]
            item = done["response"]["output"][0]
            assert done["response"]["usage"] is not None and item["content"]
            if done["response"]["status"] == "cancelled":
                assert item["status"] == "incomplete"
                assert done["response"]["status_details"]["reason"] in ("turn_detected", "client_cancelled")
            else:
                assert done["response"]["status"] == "completed" and item["status"] == "completed"
        created = [i for i, ev in enumerate(sent) if ev["type"] == "response.created"]
        assert all(sent[i + 1]["type"] == "rate_limits.updated" for i in created), name
        items_added = [ev for ev in sent if ev["type"] == ("conversation.item.added" if run["dialect"] == "ga"
                                                           else "conversation.item.created")]
        assert {ev["item"]["role"] for ev in items_added} == {"user", "assistant"}
        assert all(ev["item"]["content"] is not None for ev in items_added)
        if run["dialect"] == "ga":  # every user item and the item of every finished response is done
            done_ids = {ev["item"]["id"] for ev in sent if ev["type"] == "conversation.item.done"}
            finished = {ev["response"]["output"][0]["id"] for ev in sent if ev["type"] == "response.done"}
            users = {ev["item"]["id"] for ev in items_added if ev["item"]["role"] == "user"}
            assert done_ids == users | finished, name
    statuses = {name: [ev["response"]["status"] for ev in run["sent"] if ev["type"] == "response.done"]
                for name, run in runs.items()}
    for name in ("ga_barge_in", "beta_barge_in"):
        assert "cancelled" in statuses[name], statuses[name]  # the server cancelled it at the barge-in
    for name in ("ga_no_interrupt", "beta_no_interrupt"):  # the client sent response.cancel itself
        assert "response.cancel" in [ev["type"] for ev in runs[name]["received"]], name
    assert "response.create" in [ev["type"] for ev in runs["ga_create"]["received"]]
    assert [e for e in runs["ga_barge_in"]["events"] if e.event == "truncate"]  # what was played, truncated


# What the API always returns, though the SDK's types make it optional (strict validation cannot see it missing).
GA_SESSION_KEYS = {"model", "instructions", "tools", "tool_choice", "max_output_tokens", "tracing", "prompt",
                   "expires_at", "include", "output_modalities"}
BETA_SESSION_KEYS = {"model", "instructions", "tools", "tool_choice", "max_response_output_tokens", "tracing",
                     "input_audio_transcription", "input_audio_noise_reduction", "speed", "modalities"}
RESPONSE_KEYS = {"ga": {"conversation_id", "output_modalities", "audio", "usage", "metadata"},
                 "beta": {"conversation_id", "modalities", "usage", "metadata"}}


def test_sessions_and_responses_carry_every_field_the_api_returns(runs: dict[str, dict[str, Any]]) -> None:
    for name, run in runs.items():
        dialect, sent = run["dialect"], run["sent"]
        sessions = [ev["session"] for ev in sent if ev["type"] in ("session.created", "session.updated")]
        assert len(sessions) >= 2, name
        for s in sessions:
            assert not (GA_SESSION_KEYS if dialect == "ga" else BETA_SESSION_KEYS) - set(s), (name, sorted(s))
            if dialect == "ga":
                assert {"transcription", "noise_reduction"} <= set(s["audio"]["input"]), name
                assert "speed" in s["audio"]["output"], name
        responses = [ev["response"] for ev in sent if ev["type"] in ("response.created", "response.done")]
        assert responses, name
        for r in responses:
            assert not RESPONSE_KEYS[dialect] - set(r), (name, sorted(r))
        done = [ev["response"] for ev in sent if ev["type"] == "response.done"]
        assert all(r["output"] and r["usage"] for r in done), name  # the item it produced, and what it cost
        committed = [ev for ev in sent if ev["type"] == "input_audio_buffer.committed"]
        assert committed and all("previous_item_id" in ev for ev in committed), name
        assert all(ev["previous_item_id"] is not None for ev in committed[1:]), name  # the item before it
