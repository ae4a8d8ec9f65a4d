"""Every eligibility reason and every loopback fault, for the moshi and native-duplex adapters.

Real adapters against real loopback servers on 127.0.0.1 (one per scenario, with its faults),
serving the turn-based baseline. The input is 2 s: 0.6 s of tone (the user), then silence; the
baseline answers about 0.4 s after the tone ends, so a fault at 0.3 s lands before the first reply
and one at 1.5 s mid-reply; one at 3 s is after T. Each check names the reasons exactly (nothing
else is added, nothing lost). Scenarios run a few at a time (3 moshi or 4 native sessions at once).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from duplexeval.systems.net.moshi import MoshiSession, MoshiSystem
from duplexeval.systems.net.native import NativeDuplexSystem, NativeSession
from duplexeval.systems.registry import make_system
from tests.helpers.net_protocols import (
    AUDIO_TYPES,
    T_S,
    Outcome,
    Scenario,
    run_batch,
    skip_if_starved,
)

pytestmark = pytest.mark.slow  # real-time sessions: about a minute of wall time on the loaded 2-core machine

# The baseline's reply starts about 1.0 s in; the energy detector and the codecs move it by
# tens of ms, jitter and load by more: the checks below allow 0.15 s.
REPLY_WINDOW_S = (0.85, 1.3)
SAME_PLAYOUT_TOL_S = 0.04  # a fault after T (or a harmless one) leaves the reply where the clean run has it


class _LateMoshiSession(MoshiSession):
    """A client that blocks its event loop for 0.2 s before packet 10 (a stuck encoder)."""

    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        if self.seq == 10:
            time.sleep(0.2)
        return super().encode_input(frame)


class _LateNativeSession(NativeSession):
    def encode_input(self, frame: bytes) -> tuple[str, str | bytes]:
        if self.seq == 10:
            time.sleep(0.2)
        return super().encode_input(frame)


class _LateMoshi(MoshiSystem):
    session_class = _LateMoshiSession


class _LateNative(NativeDuplexSystem):
    session_class = _LateNativeSession


def _late(spec: str) -> Any:
    base = make_system(spec)
    cls = _LateMoshi if isinstance(base, MoshiSystem) else _LateNative
    return cls(**base.params())


FAST = "stall_s=1"  # the timeout rule's gap, short enough for a 2 s input


def _common(p: str) -> list[Scenario]:
    return [
        Scenario("clean", p),
        Scenario("disconnect_before_reply", p, ["disconnect@0.3"]),
        Scenario("disconnect_mid_reply", p, ["disconnect@1.5"]),
        Scenario("disconnect_after_T", p, ["disconnect@3"]),
        Scenario("error_before_reply", p, ["error@0.3"]),
        Scenario("error_mid_reply", p, ["error@1.5"]),
        Scenario("error_after_T", p, ["error@3"]),
        Scenario("error_after_T_lingering", p, ["error@2.3"], "linger_s=1"),  # seen, after the window
        Scenario("stall_before_reply", p, ["stall@0.3"], FAST),
        Scenario("stall_mid_reply", p, ["stall@1.5"], "stall_s=0.4"),  # a gap of 0.4 s before T = 2 s
        Scenario("oversize_before_reply", p, ["oversize@0.3"], "max_size=65536"),  # the server sends 66560 bytes
        Scenario("oversize_mid_reply", p, ["oversize@1.5"], "max_size=65536"),
        Scenario("malformed_before_reply", p, ["malformed@0.3"]),
        Scenario("malformed_mid_reply", p, ["malformed@1.5"]),
        Scenario("busy_then_free", p, ["busy=2"]),
        Scenario("busy_always", p, ["busy=4"]),
        Scenario("refused", p, server=False),
        Scenario("jitter", p, ["jitter_ms=30"]),
        Scenario("slow_start", p, ["slow_start_ms=600"]),
    ]


@pytest.fixture(scope="module")
def moshi() -> dict[str, Outcome]:
    extra = [
        Scenario("handshake_timeout", "moshi", ["slow_start_ms=1500"], "handshake_timeout_s=0.4"),
        Scenario("one_at_a_time", "moshi", holder=True),
        Scenario("personaplex_query", "moshi", client="flavor=personaplex,text_prompt=You are "
                                                      "kind.,voice_prompt=NATF2.pt",
                 options={"flavor": "personaplex"}),
        Scenario("personaplex_seed", "moshi", client="flavor=personaplex,voice_prompt=NATF2.pt,seed=42",
                 options={"flavor": "personaplex"}),
    ]
    # The late client blocks the event loop: it runs alone, or every session would be late.
    late = run_batch([Scenario("pacing_late", "moshi", system_factory=_late)])
    return {**run_batch(_common("moshi") + extra, parallel=3), **late}


@pytest.fixture(scope="module")
def native() -> dict[str, Outcome]:
    extra = [
        Scenario("deployment_unit_40", "native-duplex", options={"native_unit_ms": "40"}),
        Scenario("refused_output_rate", "native-duplex", client="output_rate=22050"),
        Scenario("input_24k", "native-duplex",
                 options={"input_rate": "24000", "output_rate": "22050", "tail_policy": "pad"}),
    ]
    late = run_batch([Scenario("pacing_late", "native-duplex", system_factory=_late)])
    return {**run_batch(_common("native-duplex") + extra, parallel=4), **late}


EXPECTED = {
    "clean": [],
    "disconnect_before_reply": ["disconnected"],
    "disconnect_mid_reply": ["disconnected"],
    "disconnect_after_T": [],
    "error_before_reply": ["server_error"],
    "error_mid_reply": ["server_error"],
    "error_after_T": [],
    "error_after_T_lingering": [],
    "stall_before_reply": ["timeout"],
    "stall_mid_reply": ["timeout"],
    "oversize_before_reply": ["protocol_violation"],
    "oversize_mid_reply": ["protocol_violation"],
    "malformed_before_reply": ["protocol_violation"],
    "malformed_mid_reply": ["protocol_violation"],
    "busy_then_free": [],
    "busy_always": ["connect_failed"],
    "refused": ["connect_failed"],
    "jitter": [],
    "slow_start": [],
    "pacing_late": ["input_pacing_late"],
}


@pytest.mark.parametrize("name", list(EXPECTED))
@pytest.mark.parametrize("proto", ["moshi", "native"])
def test_fault_reason(proto: str, name: str, request: pytest.FixtureRequest) -> None:
    out: Outcome = request.getfixturevalue(proto)[name]
    skip_if_starved(out)
    assert out.reasons == EXPECTED[name], (name, out.verdict.to_json(), out.trace.error)
    clean: Outcome = request.getfixturevalue(proto)["clean"]
    skip_if_starved(clean)
    if not EXPECTED[name]:
        # Eligible: the server put the reply where it put the clean run's (the frame delay, machine
        # speed, taken out), and nothing is missing.
        a, b = out.onset_s(), clean.onset_s()
        assert a is not None and b is not None
        assert abs(a - b) <= SAME_PLAYOUT_TOL_S, (a, b, out.first_loud_s, clean.first_loud_s)
        frames = [r for r in out.records if r["dir"] == "recv" and r.get("type") in AUDIO_TYPES]
        assert len(frames) == round(T_S / 0.08)  # one output frame per input frame, none lost
    if name == "error_after_T_lingering":
        assert out.verdict.post_window_errors == 1  # recorded, not disqualifying
    if name.endswith("_mid_reply") and name != "stall_mid_reply":
        # The reply had started before the fault, and its audio up to the fault is kept.
        assert out.first_loud_s is not None and REPLY_WINDOW_S[0] <= out.first_loud_s <= REPLY_WINDOW_S[1]
    if name.endswith("_before_reply") and not name.startswith(("malformed", "error")):
        assert out.first_loud_s is None  # the session died (or went quiet) before the reply


@pytest.mark.parametrize("proto", ["moshi", "native"])
def test_clean_session_records(proto: str, request: pytest.FixtureRequest) -> None:
    out: Outcome = request.getfixturevalue(proto)["clean"]
    skip_if_starved(out)
    sends = [r for r in out.records if r["dir"] == "send" and "slot_s" in r]
    assert len(sends) == 25  # 2 s of 80 ms packets, each with its slot, start and completion
    assert all(r["t_done"] >= r["t"] for r in sends)
    assert out.first_loud_s is not None and REPLY_WINDOW_S[0] <= out.first_loud_s <= REPLY_WINDOW_S[1]
    assert out.verdict.post_window_errors == 0


def test_moshi_protocol_details(moshi: dict[str, Outcome]) -> None:
    clean = moshi["clean"]
    types = [r.get("type") for r in clean.records if r["dir"] != "meta"]
    # Nothing before the handshake; the lead frame (the server's skipped one) right after it.
    assert types[0] == "handshake" and types[1] == "audio.lead"
    assert len(clean.received("audio")) == 25  # one output frame per input frame (the lead one skipped)
    (hs,) = clean.events("handshake")
    assert hs["t"] < 0 and hs["handshake_s"] >= 0  # before input slot 0: never in a latency
    slow = moshi["slow_start"]
    (hs_slow,) = slow.events("handshake")
    assert hs_slow["handshake_s"] >= 0.55 and hs_slow["t"] < 0  # 600 ms of server prompts, excluded


def test_moshi_connect_rules(moshi: dict[str, Outcome]) -> None:
    assert [e["result"] for e in moshi["busy_then_free"].events("connect_attempt")] == ["http_503", "http_503", "ok"]
    assert [e["result"] for e in moshi["busy_always"].events("connect_attempt")] == ["http_503"] * 4
    assert [e["result"] for e in moshi["refused"].events("connect_attempt")] == ["refused"] * 4
    # Another conversation holds the server for 2.5 s: this one is upgraded at once and queued until then; the
    # wait is its handshake, before input slot 0, so the session is eligible and the wait is in no latency.
    held = moshi["one_at_a_time"]
    assert held.reasons == []
    assert [e["result"] for e in held.events("connect_attempt")] == ["ok"]
    (hs,) = held.events("handshake")
    assert hs["handshake_s"] > 1.5 and hs["t"] < 0
    assert moshi["handshake_timeout"].reasons == ["timeout"]
    assert moshi["handshake_timeout"].events("handshake_timeout")
    assert moshi["personaplex_query"].reasons == []
    # PersonaPlex main fails on any seed in the query (it reads request["seed"]): the connection ends
    # before the handshake, without a close frame.
    seeded = moshi["personaplex_seed"]
    assert seeded.reasons == ["disconnected"] and not seeded.events("handshake")
    assert seeded.events("closed")[0]["code"] is None


def test_native_protocol_details(native: dict[str, Outcome]) -> None:
    clean = native["clean"]
    sent = [r.get("type") for r in clean.records if r["dir"] == "send"]
    assert sent[0] == "session.update" and sent[-2:] == ["sglang.input_audio.end", "session.close"]
    assert not {"input_audio_buffer.commit", "response.create", "response.cancel"} & set(sent)
    (acc,) = clean.events("accounting")
    assert acc["checked"] and acc["problems"] == []
    # 25 whole units, and upstream's empty end-of-stream unit
    assert acc["appends"] == acc["accepted"] == 25 and acc["units_done"] == 26 and acc["input_ms"] == 2000
    assert acc["drained"] == {"consumed_ms": 2000, "discarded_ms": 0, "padding_ms": 0}
    (upd,) = clean.received("session.updated")
    assert upd["granted"]["native_unit_ms"] == 80 and upd["granted"]["output_rate"] == 24000
    # A deployment with 40 ms units: adopted (the appends stay 80 ms; two units each).
    unit40 = native["deployment_unit_40"]
    assert unit40.reasons == []
    (acc40,) = unit40.events("accounting")
    assert acc40["unit_ms"] == 40 and acc40["units_done"] == 51 and acc40["problems"] == []
    # A pinned output rate the deployment does not serve: refused, and the one line names both values.
    rej = native["refused_output_rate"]
    assert rej.reasons == ["server_error"]
    (why,) = rej.events("format_refused")
    assert why["what"] == ("format refused (unsupported PCM format or sample rate): output_rate=22050 asked, the "
                           "deployment serves 24000; leave output_rate unset to adopt the deployment's")
    assert rej.verdict.first_problem.what == why["what"]
    assert not [r for r in rej.records if r["dir"] == "send" and "slot_s" in r]  # no input was sent
    # A 24 kHz-in, 22.05 kHz-out, pad deployment: adopted, the input resampled exactly, the reply heard.
    in24 = native["input_24k"]
    assert in24.reasons == [] and in24.first_loud_s is not None
    (upd24,) = in24.received("session.updated")
    assert upd24["granted"]["input_rate"] == 24000 and upd24["granted"]["output_rate"] == 22050
    (acc24,) = in24.events("accounting")  # 25 appends of exactly 80 ms (1920 samples) at 24 kHz
    assert acc24["appends"] == 25 and acc24["input_ms"] == 2000 and acc24["problems"] == []
    # A fatal error ends the session: no drain is attempted, the accounting is recorded but not a verdict.
    (acc_err,) = native["error_before_reply"].events("accounting")
    assert not acc_err["checked"]
