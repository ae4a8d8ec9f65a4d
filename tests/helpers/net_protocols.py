"""Helpers for the moshi / native-duplex network tests: a tone input, loopback servers, sessions run at once.

A scenario is one session of a real adapter against a real loopback server (its own, with its own
faults) serving the turn-based baseline with the energy detector. Scenarios of a batch run
concurrently on one event loop (each server on its own thread), so a batch takes about T of wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duplexeval.systems.base import SampleInfo, System
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.server import ServerThread, make_server
from duplexeval.systems.net.trace import Verdict, received_items, verdict
from duplexeval.systems.playout import Playout, playout
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import SessionTrace, run_session_async

SR = 16000
T_S = 2.0
SPEECH_S = 0.6
SERVED = "turn-based:vad=energy,think_ms=0,silence_ms=300"
RERUNS = 2
LOUD = 500  # |sample| above this is audible output (the baseline's espeak reply peaks near 10000)


def tone_input(speech_s: float = SPEECH_S, total_s: float = T_S) -> np.ndarray:
    """A 300 Hz tone (the 'user') then silence, int16 at 16 kHz."""
    n = round(total_s * SR)
    x = np.zeros(n, dtype=np.float32)
    m = round(speech_s * SR)
    x[:m] = 0.3 * np.sin(2 * np.pi * 300 * np.arange(m) / SR)
    return (x * 32767).astype(np.int16)


def first_loud_s(audio: np.ndarray) -> float | None:
    idx = np.flatnonzero(np.abs(audio.astype(np.int32)) > LOUD)
    return None if idx.size == 0 else float(idx[0]) / SR


@dataclass
class Scenario:
    """One session: protocol, server faults/options, client parameters (k=v,... appended to url=)."""

    name: str
    protocol: str
    faults: list[str] = field(default_factory=list)
    client: str = ""
    options: dict[str, str] = field(default_factory=dict)
    server: bool = True  # False: nothing listens on the port (connection refused)
    holder: bool = False  # moshi: another conversation holds the server while this one connects
    system_factory: Callable[[str], System] | None = None  # build the client from its spec (test subclasses)
    server_max_size: int = 65536  # the server's bound (its oversize fault sends 1 KiB more than this)


@dataclass
class Outcome:
    scenario: Scenario
    trace: SessionTrace
    verdict: Verdict
    playout: Playout
    records: list[dict[str, Any]]  # the trace's records as their JSON lines

    @property
    def reasons(self) -> list[str]:
        return self.verdict.reasons

    def events(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["dir"] == "meta" and r.get("event") == name]

    def received(self, type_: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["dir"] == "recv" and r.get("type") == type_]

    @property
    def starved(self) -> bool:
        """Sends ran late although the scenario does not make them late (the machine was overloaded)."""
        return self.scenario.system_factory is None and "input_pacing_late" in self.reasons

    @property
    def first_loud_s(self) -> float | None:
        return first_loud_s(self.playout.audio)

    def onset_s(self) -> float | None:
        """The first audible sample minus the delay of the frame that plays it: where the server put it."""
        at = self.first_loud_s
        if at is None:
            return None
        frames = [r for r in self.records if r["dir"] == "recv" and r.get("type") in AUDIO_TYPES]
        with_audio = [k for k, r in enumerate(frames) if "audio" in r]
        starts = {p.item: p for p in self.playout.placements}
        audio_items = [i for i, it in enumerate(self._items()) if it.kind == "audio"]
        for k, i in zip(with_audio, audio_items):
            p = starts.get(i)
            if p is not None and p.start / SR <= at < p.end / SR:
                return at - (p.start / SR - k * 0.08)
        raise AssertionError(f"{self.scenario.name}: no output frame plays {at} s")

    def _items(self) -> list[Any]:
        return received_items(self.trace.wire.records, self.trace.wire.pcm())


def skip_if_starved(*outcomes: Outcome) -> None:
    """Skip (never pass) a check whose session the machine's load starved even when run alone."""
    import pytest

    for o in outcomes:
        if o.starved:
            pytest.skip(f"{o.scenario.name}: sends up to {o.verdict.max_send_lateness_s:.3f} s late "
                        "(machine overloaded)")


def warm_up() -> None:
    """Synthesize the served baseline's reply once (cached per process), so no server does it mid-session."""
    from duplexeval.systems.runner import run_session

    run_session(make_system(SERVED), tone_input(), SampleInfo("warm", "up", T_S, int(T_S * SR)))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _hold(url: str, hold_s: float) -> None:
    """Hold one conversation open on a moshi server for `hold_s` seconds (as another user would)."""
    import websockets

    async with websockets.connect(url, compression=None, ping_interval=None) as ws:
        await ws.recv()  # the handshake: the conversation is on
        await asyncio.sleep(hold_s)


def run_batch(scenarios: list[Scenario], parallel: int = 4, pcm: np.ndarray | None = None) -> dict[str, Outcome]:
    """Run the scenarios `parallel` at a time, each against its own loopback server; outcomes by name.

    A moshi session costs some 10 ms of Opus encoding per 80 ms frame (client and server) on this
    2-core machine under load, so more sessions at once would make the sends late.
    """
    warm_up()
    pcm = tone_input() if pcm is None else pcm
    out: dict[str, Outcome] = {}
    for i in range(0, len(scenarios), parallel):
        out.update(_run_together(scenarios[i : i + parallel], pcm))
    # A session whose sends ran late was starved by the machine's load, not by the protocol: run it
    # again alone (at most twice). A test skips, never passes, a scenario that stays starved.
    for _ in range(RERUNS):
        starved = [sc for sc in scenarios if out[sc.name].starved]
        for sc in starved:
            out.update(_run_together([sc], pcm))
    return out


def _run_together(scenarios: list[Scenario], pcm: np.ndarray) -> dict[str, Outcome]:
    T = pcm.shape[0] / SR
    threads: list[ServerThread] = []
    systems: list[System] = []
    holders: list[str] = []
    try:
        for sc in scenarios:
            srv = make_server(sc.protocol, SERVED, parse_faults(sc.faults), options=sc.options,
                              max_size=sc.server_max_size)
            if sc.server:
                threads.append(ServerThread(srv).start())
                base = threads[-1].url(srv.session_cls.default_path)  # type: ignore[attr-defined]
            else:
                base = f"ws://127.0.0.1:{_free_port()}{srv.session_cls.default_path}"  # type: ignore[attr-defined]
            holders.append(base if sc.holder else "")
            spec = f"{sc.protocol}:url={base}" + (f",{sc.client}" if sc.client else "")
            systems.append(sc.system_factory(spec) if sc.system_factory else make_system(spec))

        async def main() -> list[SessionTrace]:
            hold = [asyncio.ensure_future(_hold(h, 2.5)) for h in holders if h]
            await asyncio.sleep(0.3 if hold else 0.0)
            traces = await asyncio.gather(
                *(run_session_async(s, pcm, SampleInfo("test", sc.name, T, pcm.shape[0]))
                  for s, sc in zip(systems, scenarios))
            )
            for h in hold:
                with contextlib.suppress(Exception):
                    await h
            return list(traces)

        traces = asyncio.run(main())
    finally:
        for th in threads:
            th.stop()
    out = {}
    for sc, system, tr in zip(scenarios, systems, traces):
        assert tr.wire is not None, f"{sc.name}: no wire trace ({tr.error})"
        records = tr.wire.records
        v = verdict(records, T, float(getattr(system, "stall_s", 10.0)))
        pl = playout(received_items(records, tr.wire.pcm()), pcm.shape[0], T)
        out[sc.name] = Outcome(sc, tr, v, pl, [r.to_json() for r in records])
    return out


def short_interruption(ds: Any, sid: str, context: str, interrupt: str) -> None:
    """Context, 2.5 s of silence (the baseline starts its reply), the interruption over the reply, 4 s tail."""
    from duplexeval.tts import synthesize
    from tests.helpers.systems import _z, add_sample

    c = synthesize(context)
    i = synthesize(interrupt)
    c_len = len(c.audio) / SR
    S = c_len + 2.5 + i.words[0].start_s
    R = c_len + 2.5 + i.words[-1].end_s
    audio = np.concatenate([c.audio, _z(2.5), i.audio, _z(4.0)])
    add_sample(ds, "synthetic_user_interruption", sid, audio,
               [{"context": context, "interrupt": interrupt, "timestamp": [round(S, 6), round(R, 6)]}])


def timing_datasets(root: Any) -> tuple[Any, Any]:
    """Two turn-taking, one pause and one interruption sample; and the same inputs after Ogg/Opus.

    What a Moshi server hears is the input after Ogg/Opus: the served baseline's VAD decides on that
    (tens of ms apart from the clean input), so its in-process run on the second set is moshi's
    timing reference.
    """
    import json

    import soundfile as sf

    from duplexeval.systems.net.moshi_wire import opus_round_trip
    from tests.helpers.systems import Dataset, add_sample, pause, turn_taking

    ds = Dataset("net-timing", root / "ds")
    turn_taking(ds, "1", "Can you tell me what time it is in London right now?", tail_s=3.0)
    turn_taking(ds, "2", "What is the capital city of France?", voice="en-gb", tail_s=3.0)
    pause(ds, "1", "I went to the shop", "and bought some bread", gap_s=1.5)
    short_interruption(ds, "1", "Please tell me about the weather.", "Wait, tell me about the sea instead.")
    heard = Dataset("net-timing-opus", root / "ds-opus")
    for s in ds.rows:
        audio, _ = sf.read(str(s.input_path), dtype="int16")
        ann = json.loads(s.annotation_path.read_text()) if s.annotation_path else None
        add_sample(heard, s.subset, s.id, opus_round_trip(audio).astype(np.float32) / 32768.0, ann)
    return ds, heard


AUDIO_TYPES = ("audio", "response.output_audio.delta")


def frame_delay(sdir: Any, at_s: float) -> float:
    """Playout start minus slot (k * 80 ms) of the k-th output frame, the one that plays the sample at `at_s`.

    That is the frame's receipt after its slot (transport and server work: machine speed) plus any
    queueing; it is read from the sample's trace.json and trace.jsonl.
    """
    import json

    doc = json.loads((sdir / "trace.json").read_text())
    played = [it for it in doc["items"] if it["kind"] == "audio"]
    records = [json.loads(line) for line in (sdir / "trace.jsonl").read_text().splitlines()[1:]]
    frames = [r for r in records if r["dir"] == "recv" and r.get("type") in AUDIO_TYPES]
    with_audio = [k for k, r in enumerate(frames) if "audio" in r]
    assert len(with_audio) == len(played)
    for k, it in zip(with_audio, played):
        if it["play_start_s"] is not None and it["play_start_s"] <= at_s < it["play_end_s"]:
            return float(it["play_start_s"]) - k * 0.08
    raise AssertionError(f"{sdir}: no output frame plays {at_s} s")
