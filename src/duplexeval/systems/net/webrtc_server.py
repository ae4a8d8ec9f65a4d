"""The WebRTC loopback bot: serve any in-process system over SmallWebRTC signalling and one Opus track each way.

`duplexeval serve webrtc --system SPEC --port 7860` answers `POST /api/offer` as pipecat's
`SmallWebRTCRequestHandler` does (`{sdp, type, pc_id}`, several connections at once), with aiortc: the
client's audio (transceiver 0) is decoded, mixed to mono and resampled to 16 kHz for the served system
(its input timeline starts at the first input frame: `input_clock.InputClock`, as the WebSocket servers keep it);
the system's audio goes out on the same transceiver as 20 ms frames at 48 kHz from the moment it was
emitted, silence otherwise (pipecat's `RawAudioTrack` with auto-silence); its barge-in drops what was
queued; RTVI over the client's data channel: `bot-ready` answers `client-ready`, `user-started-speaking`
/ `user-stopped-speaking` from the system's listener, `bot-started-speaking` with each reply and
`bot-stopped-speaking` at a barge-in. Both ends use `webrtc_media.StampingJitterBuffer`, so the uplink's
hold times are kept too (`server.uplink_held`, for benchmarks/pipecat_transport_timing.py).

Faults (`--fault`, S after the first input frame): `disconnect@S` closes the peer connection, `error@S`
sends an RTVI `error` with `fatal`, `malformed@S` a data channel message that is not JSON, `oversize@S`
one of max_size + 1 KiB or 64 KiB, the most an SCTP message carries, whichever is smaller, `stall@S` stops the audio
stream and the processing (the connection stays up);
`busy=N` answers the first N offers with HTTP 503, `jitter_ms=J` delays each outgoing frame by U(0, J) ms,
`slow_start_ms=M` waits before answering the offer.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ControlEvent
from duplexeval.systems.net.input_clock import InputClock
from duplexeval.systems.net.pcm import StreamResampler
from duplexeval.systems.net.server import ServeConfig, ServerEvent, SystemDriver, resample_pcm16
from duplexeval.systems.net.webrtc_media import PTIME_S, HoldStats
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

log = logging.getLogger("duplexeval.serve")
OPUS_RATE = 48000
OFFER_PATH = "/api/offer"
SCTP_MAX_MESSAGE = 65536


def _rtvi(kind: str, msg_id: str = "", data: JsonObject | None = None) -> str:
    out: JsonObject = {"label": "rtvi-ai", "type": kind, "id": msg_id}
    if data is not None:
        out["data"] = data
    return json.dumps(out)


class WebRtcServerSession:
    """One peer connection of the loopback bot (the SystemDriver's sink, like a `ServerSession`)."""

    protocol = "webrtc"
    default_path = OFFER_PATH

    def __init__(self, server: WebRtcLoopback, pc: Any) -> None:
        from duplexeval.systems.net.webrtc_media import PacedTrack

        self.server = server
        self.config = server.config
        self.pc = pc
        self.driver = SystemDriver(self.config.system, self)  # type: ignore[arg-type]  # the same sink hooks
        self.track = PacedTrack(OPUS_RATE, self._sent)
        self.track.rng = random.Random(self.config.seed + server.connections)
        self.track.jitter_s = self.config.faults.jitter_ms / 1000.0
        self.dc: Any = None
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self.clock = InputClock(self.config.faults.at, self._fault, self._wake)  # as a WebSocket server session's
        self.stalled = False
        self.jb: Any = None

    # ---------------------------------------------------------- the SystemDriver's sink
    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        pcm = resample_pcm16(pcm16k, INPUT_SAMPLE_RATE, OPUS_RATE)
        step = int(OPUS_RATE * PTIME_S) * 2
        if len(pcm) % step:
            pcm += bytes(step - len(pcm) % step)
        frames = [pcm[o : o + step] for o in range(0, len(pcm), step)]

        def play() -> None:
            self.send_dc(_rtvi("bot-started-speaking"))
            for i, f in enumerate(frames):
                self.track.put(f, i)

        self._at(at_s, play)

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        def clear() -> None:
            self.track.clear()
            self.send_dc(_rtvi("bot-stopped-speaking"))

        self._at(at_s, clear)

    def on_user(self, kind: str, at_s: float, audio_s: float) -> None:
        self._at(at_s, lambda: self.send_dc(_rtvi(f"user-{kind}-speaking")))

    def _sent(self, index: Any, mono: float) -> None:
        """A reply's frame went to the encoder (its first: logged for benchmarks/pipecat_transport_timing.py)."""
        if index == 0 and self.server.send_log is not None:
            self.server.send_log.append(mono)

    # ---------------------------------------------------------- timing
    def _at(self, at_s: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (at_s, self._seq, action))
        self._seq += 1
        self._wake.set()

    async def _scheduler(self) -> None:
        while True:
            if not self._heap or self.clock.t0 is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            due, _, action = self._heap[0]
            delay = self.clock.wait_s(due)
            if delay > 0:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass
                continue
            heapq.heappop(self._heap)
            if not self.stalled:
                action()

    def input_audio(self, seconds: float) -> None:
        """An input packet arrived: the input clock's rule, as `ServerSession.input_audio`
        (`input_clock.InputClock`)."""
        self._tasks += self.clock.heard(seconds)

    async def _fault(self, kind: str, s: float) -> None:
        assert self.clock.t0 is not None
        await asyncio.sleep(max(0.0, self.clock.wait_s(s)))
        log.info("fault %s at %.3f s", kind, s)
        if kind == "stall":
            self.stalled = self.track.stalled = True
        elif self.stalled:
            return
        elif kind == "disconnect":
            await self.pc.close()
        elif kind == "error":
            self.send_dc(_rtvi("error", "", {"message": f"fault injection: error at {s:g} s", "fatal": True}))
        elif kind == "malformed":
            self.send_dc("{this is not json")
        elif kind == "oversize":  # SCTP carries at most 64 KiB per message (aiortc's maxMessageSize)
            n = min(self.config.max_size + 1024, SCTP_MAX_MESSAGE) - 64
            self.send_dc(json.dumps({"label": "rtvi-ai", "type": "x", "data": "A" * n}))

    # ---------------------------------------------------------- media and data
    def send_dc(self, text: str) -> None:
        if self.dc is not None and self.dc.readyState == "open" and not self.stalled:
            self.dc.send(text)

    async def _receive(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError

        from duplexeval.systems.net.webrtc_media import mono_pcm16

        to16k = StreamResampler(OPUS_RATE, INPUT_SAMPLE_RATE)
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            mono = time.monotonic()
            held = self.jb.held(int(frame.pts)) if frame.pts is not None else None
            if held is not None and len(self.server.uplink_held) < 100000:
                self.server.uplink_held.append(held[1] - held[0])
            del mono
            if self.stalled:
                continue
            pcm = to16k(mono_pcm16(frame))
            self.input_audio(len(pcm) / 2 / INPUT_SAMPLE_RATE)
            await self.driver.feed(pcm)

    def _on_message(self, message: Any) -> None:
        if not isinstance(message, str) or message.startswith("ping"):
            return
        try:
            obj = json.loads(message)
        except json.JSONDecodeError:
            return  # pipecat logs and ignores it
        if isinstance(obj, dict) and obj.get("type") == "client-ready" and obj.get("label") == "rtvi-ai":
            self.send_dc(_rtvi("bot-ready", str(obj.get("id", "")), {"version": "2.2.0"}))

    async def answer(self, sdp: str) -> dict[str, str]:
        from aiortc import RTCSessionDescription

        from duplexeval.systems.net.webrtc_media import install_stamping_buffer

        pc = self.pc

        @pc.on("datachannel")  # type: ignore[untyped-decorator]  # aiortc's (pyee) event registration is untyped
        def _dc(channel: Any) -> None:
            self.dc = channel
            channel.on("message", self._on_message)

        @pc.on("track")  # type: ignore[untyped-decorator]  # aiortc's (pyee) event registration is untyped
        def _track(track: Any) -> None:
            if track.kind == "audio":
                self._tasks.append(asyncio.get_running_loop().create_task(self._receive(track)))

        @pc.on("connectionstatechange")  # type: ignore[untyped-decorator]  # aiortc's (pyee) event registration is untyped
        async def _state() -> None:
            if pc.connectionState in ("failed", "closed"):
                await self.close()

        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
        transceivers = pc.getTransceivers()
        if not transceivers or transceivers[0].kind != "audio":
            raise ValueError("the offer has no audio transceiver first")
        self.jb = install_stamping_buffer(transceivers[0].receiver)
        transceivers[0].sender.replaceTrack(self.track)
        transceivers[0].direction = "sendrecv"
        await self.driver.open()
        self._tasks.append(asyncio.get_running_loop().create_task(self._scheduler()))
        await pc.setLocalDescription(await pc.createAnswer())
        return {"sdp": pc.localDescription.sdp, "type": pc.localDescription.type, "pc_id": f"duplexeval-{id(self):x}"}

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        await self.driver.close()
        self.server.sessions.discard(self)


class WebRtcLoopback:
    """An aiohttp server on 127.0.0.1 answering SmallWebRTC offers, one `WebRtcServerSession` per connection."""

    session_cls = WebRtcServerSession

    def __init__(self, config: ServeConfig, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config
        self.host = host
        self.port = port
        self.connections = 0
        self.sessions: set[WebRtcServerSession] = set()
        self.uplink_held: list[float] = []
        self.events: list[ServerEvent] = []
        self.send_log: list[float] | None = None  # a list here: when each reply's first frame went to the encoder
        self._runner: Any = None

    async def _offer(self, request: Any) -> Any:
        from aiohttp import web
        from aiortc import RTCConfiguration, RTCPeerConnection

        self.connections += 1
        if self.connections <= self.config.faults.busy:
            return web.Response(status=503, text="busy (fault injection)\n")
        try:
            body = await request.json()
            sdp = body["sdp"]
            if body.get("type") != "offer" or not isinstance(sdp, str):
                raise ValueError("not an offer")
        except (ValueError, KeyError, TypeError):
            return web.Response(status=400, text="expected {sdp, type: offer}\n")
        if self.config.faults.slow_start_ms:
            await asyncio.sleep(self.config.faults.slow_start_ms / 1000.0)
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        session = WebRtcServerSession(self, pc)
        self.sessions.add(session)
        try:
            answer = await session.answer(sdp)
        except Exception as exc:  # noqa: BLE001 - an offer we cannot answer is the client's error
            await pc.close()
            await session.close()
            return web.Response(status=400, text=f"cannot answer the offer: {type(exc).__name__}\n")
        self.events.append(ServerEvent("offer", pc_id=answer["pc_id"]))
        return web.json_response(answer)

    async def start(self) -> int:
        from aiohttp import web

        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_post(OFFER_PATH, self._offer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
        return self.port

    def url(self, path: str = OFFER_PATH) -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def stop(self) -> None:
        for s in list(self.sessions):
            await s.pc.close()
            await s.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def uplink_summary(self) -> HoldStats:
        return HoldStats.of(self.uplink_held)
