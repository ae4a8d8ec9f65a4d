"""The real pipecat bot (`duplexeval serve pipecat`, pipecat's own transport, Silero VAD and turn handling) driven
end to end over each transport on the whole demo set: every sample eligible, `fdb replay --check` identical,
pipecat's own turn decisions (RTVI user/bot started/stopped speaking) in the pipecat-ws and webrtc traces, and
on the interruption subset pipecat's barge-in arrives as the protocol's signal and our playout stops with it.

A sample the shared machine starved (`input_pacing_late`) is captured again once, alone, when at most
MAX_RERUNS were starved; one still starved after that (or a run with more starved) skips the eligibility test,
never passes it. Any other reason fails it. The barge-in checks read the eligible interruption samples (on a
starved machine the bot itself falls seconds behind, and the user's interruption can come before its reply).
"""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pipecat")

from duplexeval.fdb.export_stage import export  # noqa: E402
from duplexeval.fdb.replay_stage import replay  # noqa: E402
from duplexeval.fdb.selection import resolve_dataset  # noqa: E402
from duplexeval.systems.net.trace import load_trace, received_items  # noqa: E402
from duplexeval.systems.pipecat.process import BotProcess  # noqa: E402
from duplexeval.systems.pipecat.stack import BotConfig  # noqa: E402
from duplexeval.systems.playout import playout  # noqa: E402

SR = 16000
CHUNK_S = 0.02
# (transport, client parameters, sessions at once): webrtc's aiortc work on both ends costs about three
# times a WebSocket session's CPU, so it runs fewer at once on the 2-core machine.
TRANSPORTS = [("telephony", "", 7), ("pipecat-ws", "", 7), ("webrtc", "", 4)]
MAX_RERUNS = 4
# pipecat's WebRTC output after an interruption: 40 ms chunk + 10 ms frames + 20 ms Opus frame, rounded up
WEBRTC_OUTPUT_S = 0.1


class _Only:
    """The demo dataset restricted to some samples (the starved ones, run again)."""

    def __init__(self, ds: Any, keys: set[tuple[str, str]]) -> None:
        self._ds, self.keys = ds, keys
        self.name, self.declared = ds.name, ds.declared

    def samples(self, subset: str | None = None) -> list[Any]:
        return [s for s in self._ds.samples(subset) if (s.subset, s.id) in self.keys]


def _manifest(tree: Path) -> list[dict[str, Any]]:
    return list(json.loads((tree / "manifest.json").read_text())["samples"])


def _records(tree: Path, subset: str, sid: str) -> list[dict[str, Any]]:
    lines = (tree / subset / sid / "trace.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines[1:]]


def _wav(tree: Path, subset: str, sid: str) -> np.ndarray:
    with wave.open(str(tree / subset / sid / "output.wav")) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


@pytest.fixture(scope="module", params=TRANSPORTS, ids=[t[0] for t in TRANSPORTS])
def bot_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    transport, extra, concurrency = request.param
    base = tmp_path_factory.mktemp(transport)
    demo = resolve_dataset("demo")
    where: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    with BotProcess(BotConfig(transport=transport), warm=concurrency + 2) as bot:
        tree = base / "tree"
        export(bot.client(extra), demo, tree, progress=False, concurrency=concurrency)
        trees = [tree]
        for row in _manifest(tree):
            where[(row["subset"], row["id"])] = (tree, row)
        starved = {k for k, (_, row) in where.items() if row["reasons"] == ["input_pacing_late"]}
        if 0 < len(starved) <= MAX_RERUNS:
            again = base / "again"
            export(bot.client(extra), _Only(demo, starved), again, progress=False, concurrency=1)
            trees.append(again)
            for row in _manifest(again):
                if not row["reasons"]:
                    where[(row["subset"], row["id"])] = (again, row)
        log = bot.stderr_tail()
    return {"transport": transport, "where": where, "trees": trees, "log": log}


def test_every_demo_sample_is_eligible_and_replays_identically(bot_run: dict[str, Any]) -> None:
    where = bot_run["where"]
    assert len(where) == 14
    bad = {f"{s}/{i}": row["reasons"] for (s, i), (_, row) in where.items() if row["reasons"]}
    starved = {k for k, v in bad.items() if v == ["input_pacing_late"]}
    assert not (set(bad) - starved), f"{bot_run['transport']}: {bad}\n{bot_run['log']}"
    for tree in bot_run["trees"]:
        result = replay(tree, check=True)
        assert not result.changed and not result.manifest_changed
    if starved:
        pytest.skip(f"{len(starved)} sample(s) starved by the machine's load (input_pacing_late): {sorted(starved)}")


def turn_messages_problem(records: list[dict[str, Any]]) -> str | None:
    """What is wrong with pipecat's own turn decisions (RTVI user/bot started/stopped speaking) in a trace, if
    anything: marked `timing`, the user's turn started (every demo sample has the user speak), and when the bot
    spoke, the user's turn ended before and `bot-started-speaking` came with its first audio (the message may
    overtake the audio by a WebRTC jitter buffer's hold and the loaded machine's lag)."""
    first: dict[str, float] = {}
    for r in records:
        if r.get("timing"):
            first.setdefault(str(r["rtvi"]), float(r["t"]))
    audio = [float(r["t"]) for r in records if r["dir"] == "recv" and "audio" in r]
    want = ["user-started-speaking"] + (["user-stopped-speaking", "bot-started-speaking"] if audio else [])
    missing = [k for k in want if k not in first]
    if missing:
        return f"no {', '.join(missing)} in the trace"
    if audio:
        bot = first["bot-started-speaking"]
        if first["user-started-speaking"] > bot:
            return "bot-started-speaking before the user's first turn started"
        if not min(audio) - 1.0 <= bot <= min(audio) + 0.3:
            return f"first audio at {min(audio):.3f} s, bot-started-speaking at {bot:.3f} s"
    return None


def test_pipecats_turn_decisions_are_in_the_trace(bot_run: dict[str, Any]) -> None:
    transport = bot_run["transport"]
    if transport == "telephony":
        pytest.skip("a carrier's stream carries no turn messages (pipecat's telephony serializers drop RTVI)")
    checked = 0
    for (subset, sid), (tree, row) in sorted(bot_run["where"].items()):
        if row["reasons"]:
            continue
        problem = turn_messages_problem(_records(tree, subset, sid))
        assert problem is None, f"{transport} {subset}/{sid}: {problem}"
        checked += 1
    assert checked, f"{transport}: no eligible sample"


def _barge_ins(records: list[dict[str, Any]], transport: str) -> list[float]:
    """Receipt times of pipecat's barge-in signals that came while the bot's audio was queued or playing."""
    first_audio = min((r["t"] for r in records if r["dir"] == "recv" and "audio" in r), default=None)
    if first_audio is None:
        return []
    if transport == "webrtc":
        return [r["t"] for r in records if r.get("rtvi") == "bot-interrupted" and r["t"] > first_audio]
    return [r["t"] for r in records if r.get("control") == "clear_queue" and r["t"] > first_audio]


def test_barge_in_arrives_and_playout_stops_with_it(bot_run: dict[str, Any]) -> None:
    transport = bot_run["transport"]
    checked = 0
    for (subset, sid), (tree, row) in sorted(bot_run["where"].items()):
        if subset != "synthetic_user_interruption" or row["reasons"]:
            continue
        records = _records(tree, subset, sid)
        audio = _wav(tree, subset, sid)
        recv_audio = sorted(r["t"] for r in records if r["dir"] == "recv" and "audio" in r)
        cuts = _barge_ins(records, transport)
        assert cuts, f"{transport} {subset}/{sid}: no barge-in signal from pipecat while the bot spoke"
        jb = next((r for r in records if r.get("event") == "jitter_buffer"), None)
        for t in cuts:
            if transport == "webrtc":
                # WebRTC has no clear: the bot stops sending speech, and what it had sent still arrives. It must
                # arrive within the client's jitter-buffer hold plus pipecat's own output (a 40 ms transport
                # chunk, 10 ms track frames, the 20 ms Opus frame), and our playout must end one frame after it.
                starts = [r["t"] for r in records if r.get("rtvi") == "bot-started-speaking" and r["t"] > t]
                resume = min(starts) if starts else row["T"]
                spoken = [r for r in records if r["dir"] == "recv" and "audio" in r and r["t"] < resume]
                last = max(spoken, key=lambda r: r["t"])
                hold = float(jb["held_p90_s"]) if jb and jb.get("held_p90_s") is not None else 0.1
                assert last["t"] - t <= hold + WEBRTC_OUTPUT_S, (f"{subset}/{sid}: speech {last['t'] - t:.3f} s after "
                                                                 "bot-interrupted")
                # where our playout put that last frame: nothing may play after it (until the next reply)
                loaded = load_trace(tree / subset / sid)
                items = received_items(loaded.records, loaded.pcm)
                placed = playout(items, audio.shape[0], row["T"]).placements
                # all that had arrived
                stop = max(p.end for p in placed if items[p.item].emitted_at_s <= last["t"]) / SR
            else:
                later = [x for x in recv_audio if x > t]
                resume = later[0] if later else row["T"]
                stop = t + CHUNK_S
            a, b = round(stop * SR), round(resume * SR)
            if b > a:
                loud = np.flatnonzero(audio[a:b])
                assert loud.size == 0, (f"{transport} {subset}/{sid}: audio {loud[0] / SR + stop:.3f} s, after the "
                                        f"stop at {stop:.3f} s")
            checked += 1
    if not checked:  # every interruption sample starved: the bot's timing cannot be judged on this machine
        pytest.skip(f"{transport}: no interruption sample ran unstarved")
