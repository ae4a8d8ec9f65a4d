"""The telephony client against the loopback bot: every dialect's call, the carrier's playout rules (real time
from arrival, `clear` cuts at the ms played, markers answered when their audio has played), and every fault and
bad input with its reason (the same bad bots through `fdb export`: tests/systems/net/test_telephony_export.py; a carrier
token passed as a parameter: tests/systems/net/test_telephony_secrets.py).

All sessions run at once on one event loop (each against its own loopback server thread), so the module
takes about one session's wall time. The user speaks 0.3-1.3 s; the reply starts ~2.0 s; in the barge-in
cases the user speaks again from 2.4 s and the served system clears ~0.25 s later; T = 4.5 s. What the
carrier rules fix exactly (where a clear cuts, that a marker is never answered early) is checked exactly;
wall-clock times get the slack a loaded shared machine needs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from duplexeval.systems.net.telephony_wire import DIALECT, DIALECTS
from duplexeval.systems.net.transport import CONNECT_RETRIES
from duplexeval.systems.playout import playout
from tests.helpers.net import Case, run_cases

T = 4.5
BARGE = ((0.3, 1.3), (2.4, 3.3))
CLIENT = "stall_s=3.0,open_timeout_s=5"
MID = 2.4


def _case(name: str, dialect: str, *, faults: tuple[str, ...] = (), client: str = "", options: dict | None = None,
          spans: tuple[tuple[float, float], ...] = ((0.3, 1.3),), no_server: bool = False) -> Case:
    extra = f",{client}" if client else ""
    return Case(name, "telephony", faults, f"dialect={dialect},{CLIENT}{extra}", options=options or {}, spans=spans,
                T=T, no_server=no_server)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    """The calls of every dialect, codec and rate (one group of sessions at once)."""
    cs = []
    for d in DIALECTS:
        cs.append(_case(f"{d}-clean", d))
        cs.append(_case(f"{d}-barge", d, spans=BARGE, options={"pace": "false"}))  # the reply buffered at the carrier
    cs += [
        _case("twilio-barge-paced", "twilio", spans=BARGE),
        _case("telnyx-alaw", "telnyx", client="codec=alaw"),
        _case("plivo-l16", "plivo", client="codec=l16,rate=16000"),
        _case("exotel-16k", "exotel", client="rate=16000"),
    ]
    return {c.name: c for c in run_cases(cs)}


@pytest.fixture(scope="module")
def faults() -> dict[str, Case]:
    """Every fault and bad input (a second group, so neither loads the shared machine with 30 sessions at once)."""
    cs = [
        _case("disconnect", "twilio", faults=(f"disconnect@{MID}",)),
        _case("error", "twilio", faults=(f"error@{MID}",)),
        _case("malformed", "twilio", faults=(f"malformed@{MID}",)),
        _case("oversize", "twilio", faults=(f"oversize@{MID}",), client="max_size=262144"),
        _case("busy-ok", "twilio", faults=(f"busy={CONNECT_RETRIES}",)),
        _case("busy-fail", "twilio", faults=(f"busy={CONNECT_RETRIES + 1}",)),
        _case("refused", "twilio", no_server=True),
        _case("never-replies", "twilio", faults=("stall@0",), client="reply_within_s=1.5"),
        _case("silent-allowed", "twilio", faults=("stall@0",)),
        _case("bad-base64", "twilio", options={"corrupt": "base64"}),
        _case("wrong-codec-plivo", "plivo", options={"corrupt": "codec"}),
        _case("wrong-codec-exotel", "exotel", options={"corrupt": "codec"}),
        _case("wrong-codec-twilio", "twilio", options={"corrupt": "codec"}),
        _case("wrong-dialect", "twilio", options={"dialect": "plivo"}),
        _case("jitter", "telnyx", faults=("jitter_ms=40",)),
    ]
    return {c.name: c for c in run_cases(cs)}


def _first_audio(case: Case) -> float:
    return min(it.received_at_s for it in case.items() if it.kind == "audio")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_clean_call_in_every_dialect(cases: dict[str, Case], dialect: str) -> None:
    c = cases[f"{dialect}-clean"]
    assert c.reasons_without_pacing() == set()
    d = DIALECT[dialect]
    sends = [r["type"] for r in c.records(dir="send")]
    assert sends[: 2 if d.connected else 1] == (["connected", "start"] if d.connected else ["start"])
    assert ("stop" in sends) == d.sends_stop
    media = c.records(dir="send", type="media")
    assert len(media) == math.ceil(T / 0.08) * 4  # 20 ms chunks of every 80 ms frame
    assert [r["slot_s"] for r in media[:5]] == [0.0, 0.02, 0.04, 0.06, 0.08]
    assert 1.9 < _first_audio(c) < 3.0  # the reply is due at ~2.0 s (later only on a loaded machine)
    start = c.server.events[1]
    assert start.event == "start" and start.dialect == dialect


@pytest.mark.parametrize("dialect", DIALECTS)
def test_markers_are_answered_when_their_audio_has_played(cases: dict[str, Case], dialect: str) -> None:
    c = cases[f"{dialect}-clean"]
    d = DIALECT[dialect]
    marker = c.records(dir="recv", type=d.marker)
    assert [m["name"] for m in marker] == ["reply-1"]
    audio = [it for it in c.items() if it.kind == "audio"]
    end = playout(audio, round(T * 16000)).stats
    queued_end = max(p.end for p in playout(audio, round(10 * 16000)).placements) / 16000
    assert marker[0]["plays_at_s"] == pytest.approx(queued_end, abs=1e-5)
    answers = c.records(dir="send", type=d.marker_reply)
    if queued_end < T - 0.3:
        assert len(answers) == 1 and answers[0]["name"] == "reply-1"
        # sent when the audio has played: never before, and late only by the event loop's own lag
        assert queued_end - 0.001 <= answers[0]["t"] < queued_end + 0.25
        played = [e for e in c.server.events if e.event == "marker_played"]
        assert [e.name for e in played] == ["reply-1"]
    elif queued_end > T:  # still playing at T: the call ended first, no answer
        assert answers == [] and end.playing_at_T


@pytest.mark.parametrize("dialect", DIALECTS)
def test_clear_stops_playout_at_its_receipt_and_settles_the_markers(cases: dict[str, Case], dialect: str) -> None:
    c = cases[f"{dialect}-barge"]
    assert c.reasons_without_pacing() == set()
    d = DIALECT[dialect]
    clears = c.records(dir="recv", type=d.clear)
    assert len(clears) == 1 and clears[0]["control"] == "clear_queue"
    t_clear = clears[0]["t"]
    assert 2.45 < t_clear < 3.7  # ~0.25 s into the user's speech (later only on a loaded machine)
    pl = playout(c.items(), round(T * 16000))
    audio = pl.audio
    cut = round(t_clear * 16000)
    assert np.any(audio[cut - 320 : cut])  # it was speaking up to the clear
    later = [it.received_at_s for it in c.items() if it.kind == "audio" and it.received_at_s > t_clear]
    stop = round(min(later) * 16000) if later else audio.shape[0]
    assert not np.any(audio[cut:stop])  # nothing of the cleared audio plays
    assert pl.stats.dropped_by_clear_s > 0.2
    answers = c.records(dir="send", type=d.marker_reply)
    if d.echo_on_clear:  # the pending marker is answered at the clear
        assert [(a["name"], a.get("cleared")) for a in answers] == [("reply-1", True)]
        assert t_clear <= answers[0]["t"] < t_clear + 0.25
    else:  # plivo: dropped, and the clear itself is answered
        assert answers == []
        assert len(c.records(dir="send", type="clearedAudio")) == 1
    assert clears[0]["pending_marks"] == 1


def test_a_paced_bot_withdraws_the_rest_of_its_reply_at_the_barge_in(cases: dict[str, Case]) -> None:
    c = cases["twilio-barge-paced"]
    assert c.reasons_without_pacing() == set()
    t_clear = c.records(dir="recv", type="clear")[0]["t"]
    media = [r for r in c.records(dir="recv", type="media")]
    # paced at real time, 40 ms ahead: at the clear only the lead was queued, and nothing of reply-1 follows it
    pl = playout(c.items(), round(T * 16000))
    assert 0.0 < pl.stats.dropped_by_clear_s < 0.2
    after = [r["t"] for r in media if r["t"] > t_clear]
    assert not after or min(after) > t_clear + 0.5  # the next audio is the reply to the second turn
    assert ([m["name"] for m in c.records(dir="recv", type="mark")] == ["reply-2"]
            or not c.records(dir="recv", type="mark"))
    before = [r["t"] for r in media if r["t"] < t_clear]
    # at real time, not in one burst: n chunks span (n - 1) x 20 ms, less the lead and a late first send
    assert before[-1] - before[0] >= (len(before) - 1) * 0.02 - 0.04 - 0.2


def test_other_codecs_and_rates(cases: dict[str, Case]) -> None:
    for name, codec, rate in (("telnyx-alaw", "alaw", 8000), ("plivo-l16", "l16", 16000), ("exotel-16k", "l16", 16000)):
        c = cases[name]
        assert c.reasons_without_pacing() == set(), name
        start = c.records(dir="send", type="start")[0]
        assert (start["codec"], start["rate"]) == (codec, rate)
        assert c.server.events[1].codec == codec and c.server.events[1].rate == rate
        assert all(it.sample_rate == rate for it in c.items() if it.kind == "audio")
        assert 1.9 < _first_audio(c) < 3.0


@pytest.mark.parametrize(("name", "reasons"), [
    ("disconnect", {"disconnected"}),
    ("error", {"server_error"}),
    ("malformed", {"protocol_violation"}),
    ("oversize", {"protocol_violation"}),
    ("busy-ok", set()),
    ("busy-fail", {"connect_failed"}),
    ("refused", {"connect_failed"}),
    ("never-replies", {"timeout"}),
    ("silent-allowed", set()),
    ("bad-base64", {"protocol_violation"}),
    ("wrong-codec-plivo", {"protocol_violation"}),
    ("wrong-codec-exotel", {"protocol_violation"}),
    ("wrong-codec-twilio", {"protocol_violation"}),
    ("wrong-dialect", {"disconnected"}),
    ("jitter", set()),
])
def test_every_fault_and_bad_input_gets_its_reason(faults: dict[str, Case], name: str, reasons: set[str]) -> None:
    c = faults[name]
    assert c.reasons_without_pacing() == reasons
    what = (c.verdict.first_problem.what if c.verdict.first_problem is not None else None) or ""
    expect = {"bad-base64": "media: bad base64", "wrong-codec-plivo": "wrong codec 'audio/x-l16'",
              "wrong-codec-exotel": "odd-length L16", "wrong-codec-twilio": "a binary frame",
              "malformed": "not JSON", "oversize": "size bound", "error": "fault injection"}.get(name)
    if expect:
        assert expect in what, what
    if name == "never-replies":
        assert c.records(event="no_reply")[0]["within_s"] == 1.5
    if name == "wrong-dialect":
        closed = c.records(event="closed")[0]
        assert (closed["by"] == "server" and closed["code"] == 1008
                and "takes plivo calls, got twilio" in closed["reason"])
    if name == "disconnect":
        assert c.records(event="closed")[0]["code"] == 1011
