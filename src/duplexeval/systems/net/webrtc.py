"""`webrtc`: drive a bot over WebRTC as pipecat's SmallWebRTC clients do (one Opus audio track each way, aiortc).

```
--system 'webrtc:url=http://HOST:PORT/api/offer[,wait_ready=true,ready_timeout_s=10]'
```

Signalling is pipecat's SmallWebRTC HTTP offer/answer: the client makes an `RTCPeerConnection` with one
`sendrecv` audio transceiver (index 0, as pipecat's clients put it) and an ordered data channel `chat`,
gathers its ICE candidates into the offer (aiortc gathers before it returns the local description, so
nothing is trickled), POSTs `{sdp, type: "offer", pc_id: null, restart_pc: false}` and applies the
answer (`{sdp, type, pc_id}`). HTTP 503 and a refused connection are retried like a WebSocket connect;
the session counts as opened when the peer connection is `connected` and the data channel is open
(bounded by `open_timeout_s`). Then, as pipecat's client does: a `trackStatus` signalling message for the
microphone, a `ping: <ms>` keepalive every second, RTVI `client-ready` and (with `wait_ready`) a bounded
wait for `bot-ready` before slot 0.

Media. The input goes out as 20 ms frames at 48 kHz (Opus's rate, through `StreamResampler`) on the
absolute schedule: chunk j of the 80 ms frame at slot + j x 20 ms; each is a `send` record stamped when
it went to the encoder. Before slot 0 and after T the track sends silence, as a live microphone does.
The bot's track is decoded by aiortc (Opus, 48 kHz stereo), mixed to mono, resampled continuously to
16 kHz and played on its media clock, as a WebRTC client's playout buffer does: frame n plays at
anchor + its RTP time (`play_t`), the anchor being the smallest receipt-minus-RTP-time seen so far (the
earliest frame's delay), or at its receipt when it came later than that; frames that arrive in a burst
(a starved receiver) are spread back to their media times instead of queueing one behind the other, FIFO.
A frame whose peak is at most 2 LSB is recorded as `silent` and not queued (the rule of docs/network.md
for streams that never stop). WebRTC has no "clear": a bot
interrupted stops sending speech, and its RTVI `bot-stopped-speaking` / `bot-interrupted` arrive on the
data channel and are recorded as such.

The receive jitter buffer is aiortc's own (capacity 16, prefetch 4: a frame is released when the 4 after
it are in, so about 80 ms at 20 ms per frame), with arrival stamps (`webrtc_media.StampingJitterBuffer`):
every received frame's record keeps its RTP timestamp (`rtp_ts`, rebased to the first as aiortc does),
how long the buffer held it (`jb_s`: from its packet's arrival to its release) and how long the decoder
took to hand it over (`decode_s`), so its packet arrived at t - decode_s - jb_s; the `jitter_buffer`
meta record at the end summarises the holds (median, p90, max). The bot's own receive jitter buffer (aiortc's in
pipecat's SmallWebRTC) is not
visible from here; `benchmarks/pipecat_transport_timing.py` measures both directions on loopback.

Reasons: `connect_failed` (no answer: refused, 503 four times, another HTTP status, no connection or data
channel within `open_timeout_s`), `protocol_violation` (an answer that is not an SDP answer, a data
channel message that is not JSON), `disconnected` (the peer connection failed or closed, or the bot sent
`peerLeft`, before T), `server_error` (an RTVI `error` with `fatal`), `timeout` (no `bot-ready`; no audio
frame for more than `stall_s` once the stream started: a WebRTC track never stops while connected).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np

from duplexeval import __version__
from duplexeval.audio import audio_library_versions
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation, SampleInfo
from duplexeval.systems.net.pcm import StreamResampler
from duplexeval.systems.net.pipecat_ws import ready_handshake, rtvi_message
from duplexeval.systems.net.session import NetSession, NetSystem, SessionOpenFailed, wire_len
from duplexeval.systems.net.transport import CONNECT_RETRIES, RETRY_DELAY_S, redact
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

OPUS_RATE = 48000
FRAME_BYTES_16K = 320 * 2
SILENT_PEAK = 2
DATA_CHANNEL = "chat"


class _Link:
    """What the base calls its receiver for a peer connection: `closed` (set once) and `close()`."""

    def __init__(self, session: WebRtcSession) -> None:
        self.session = session
        self.closed = asyncio.Event()
        self.closing_by_client = False
        self.last_t: float | None = None

    def lost(self, reason: str) -> None:
        """The other side went away (its close, a failed connection, `peerLeft`)."""
        if not self.closed.is_set() and not self.closing_by_client:
            self.session.wire.meta("closed", by="server", code=None, reason=reason[:200])
            self.closed.set()

    async def close(self) -> None:
        if self.closed.is_set():
            return
        self.closing_by_client = True
        try:
            await asyncio.wait_for(self.session.close_peer(), timeout=2.0)
        except Exception:  # noqa: BLE001 - best effort, recorded as the client's close either way
            pass
        self.session.wire.meta("closed", by="client", code=None, reason="")
        self.closed.set()


class _Channel:
    """What the base calls its socket: `send(data)` over the data channel."""

    close_timeout = 2.0

    def __init__(self, dc: Any) -> None:
        self.dc = dc

    async def send(self, data: str | bytes) -> None:
        if self.dc.readyState != "open":
            raise ConnectionError("the data channel is not open")
        self.dc.send(data)


class WebRtcSession(NetSession):
    system: WebRtc

    def __init__(self, system: WebRtc, info: SampleInfo) -> None:
        super().__init__(system, info)
        self.pc: Any = None
        self.dc: Any = None
        self.track: Any = None
        self.jb: Any = None
        self.to48k = StreamResampler(INPUT_SAMPLE_RATE, OPUS_RATE)
        self.to16k = StreamResampler(OPUS_RATE, INPUT_SAMPLE_RATE)
        self._tasks: list[asyncio.Task[Any]] = []
        self._held: list[float] = []
        self._streaming = False
        self._offset = float("inf")  # min over frames of receipt - media time (the playout clock's anchor)

    # ---------------------------------------------------------- connection
    async def _post_offer(self, sdp: str) -> JsonObject:
        import aiohttp

        url = self.system.url
        body = {"sdp": sdp, "type": "offer", "pc_id": None, "restart_pc": False}
        timeout = aiohttp.ClientTimeout(total=self.system.open_timeout_s)
        last = ""
        for attempt in range(1, CONNECT_RETRIES + 2):
            t = self.wire.now()
            retry = False
            try:
                async with aiohttp.ClientSession(timeout=timeout) as http, http.post(url, json=body) as resp:
                    raw = await resp.content.read(self.system.max_size + 1)
                    if resp.status == 200 and len(raw) <= self.system.max_size:
                        self.wire.meta("connect_attempt", t, attempt=attempt, result="ok")
                        return self._answer(raw)
                    outcome = f"http_{resp.status}" if len(raw) <= self.system.max_size else "answer over max_size"
                    retry = resp.status == 503
            except aiohttp.ClientConnectorError as exc:
                outcome, retry = (("refused", True) if isinstance(exc.os_error, ConnectionRefusedError)
                                  else (type(exc).__name__, False))
            except (asyncio.TimeoutError, TimeoutError):
                outcome = "timeout"
            except aiohttp.ClientError as exc:
                outcome = type(exc).__name__
            last = redact(outcome, self.system.secrets())
            self.wire.meta("connect_attempt", t, attempt=attempt, result=outcome)
            if retry and attempt <= CONNECT_RETRIES:
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            break
        raise SessionOpenFailed(f"connect_failed: {last}", self.wire)

    def _answer(self, raw: bytes) -> JsonObject:
        try:
            ans = json.loads(raw)
        except json.JSONDecodeError:
            ans = None
        if not isinstance(ans, dict) or ans.get("type") != "answer" or not isinstance(ans.get("sdp"), str) \
                or "m=audio" not in ans["sdp"]:
            self.wire.meta("violation", what="the offer's answer is not an SDP answer with an audio section")
            raise SessionOpenFailed("connect_failed: no SDP answer", self.wire)
        return ans

    async def connect_transport(self) -> None:
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

        from duplexeval.systems.net.webrtc_media import PacedTrack, install_stamping_buffer

        self.pc = pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.track = PacedTrack(OPUS_RATE, self._sent)
        transceiver = pc.addTransceiver(self.track, direction="sendrecv")
        self.jb = install_stamping_buffer(transceiver.receiver)
        self.dc = dc = pc.createDataChannel(DATA_CHANNEL, ordered=True)
        link = _Link(self)
        opened = asyncio.Event()
        dc.on("open", opened.set)
        dc.on("message", self._dc_message)
        dc.on("close", lambda: link.lost("data channel closed"))

        @pc.on("connectionstatechange")
        def _state() -> None:
            if pc.connectionState in ("failed", "closed"):
                link.lost(f"peer connection {pc.connectionState}")

        @pc.on("track")
        def _track(track: Any) -> None:
            if track.kind == "audio":
                self._tasks.append(asyncio.get_running_loop().create_task(self._receive(track)))

        offer = await pc.createOffer()
        await pc.setLocalDescription(offer)
        answer = await self._post_offer(pc.localDescription.sdp)
        try:
            await pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))
        except Exception as exc:  # noqa: BLE001 - a broken answer is the server's violation
            self.wire.meta("violation", what=f"the SDP answer: {type(exc).__name__}: {exc}"[:300])
            await self.close_peer()
            raise SessionOpenFailed("connect_failed: the SDP answer was refused", self.wire) from None
        try:
            await asyncio.wait_for(opened.wait(), timeout=self.system.open_timeout_s)
        except asyncio.TimeoutError:
            self.wire.meta("connect_attempt", attempt=1, result="no connection or data channel")
            await self.close_peer()
            raise SessionOpenFailed("connect_failed: no WebRTC connection within open_timeout_s", self.wire) from None
        self.wire.meta("opened", pc_id=str(answer.get("pc_id", ""))[:100])
        self.ws = _Channel(dc)
        self.receiver = link  # type: ignore[assignment]
        await self.send("signalling", json.dumps({"type": "signalling", "message": {
            "type": "trackStatus", "receiver_index": 0, "enabled": True}}))
        self._tasks.append(asyncio.get_running_loop().create_task(self._keepalive()))

    async def close_peer(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self.pc is not None:
            await self.pc.close()

    async def _keepalive(self) -> None:
        while not self.dead:
            await asyncio.sleep(1.0)
            await self.send("ping", f"ping: {int(time.time() * 1000)}")

    async def handshake(self) -> None:
        if self.system.client_ready:
            async def send_ready(msg: JsonObject) -> None:
                await self.send("client-ready", json.dumps(msg))

            await ready_handshake(self, send_ready, self.system.wait_ready, self.system.ready_timeout_s)

    async def open(self) -> None:
        await super().open()
        assert self.wire.origin is not None
        self.track.anchor(self.wire.origin)  # the input's first frame is due at slot 0
        self.track.waiting = True

    # ---------------------------------------------------------- input
    def _sent(self, tag: Any, mono: float) -> None:
        seq, slot = tag
        t = self.wire.mono_to_t(mono)
        self.wire.send(t, "audio", 1920, seq=seq, slot_s=slot, t_done=t)

    async def push_input(self, frame: bytes, t_s: float) -> None:
        if self.dead or (self.receiver is not None and self.receiver.closed.is_set()):
            self.dead = True
            return
        pcm = self.to48k(frame)
        step = OPUS_RATE // 50 * 2
        for j, off in enumerate(range(0, len(pcm), step)):
            self.track.put(pcm[off : off + step], (self.seq, round(t_s + j * 0.02, 6)))
            self.seq += 1

    async def close(self) -> None:
        if self.track is not None:
            self.track.waiting = False
        self._summarise()
        await super().close()

    # ---------------------------------------------------------- output
    async def _receive(self, track: Any) -> None:
        from aiortc.mediastreams import MediaStreamError

        from duplexeval.systems.net.webrtc_media import mono_pcm16

        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            mono = time.monotonic()
            t = self.wire.mono_to_t(mono)
            pcm48 = mono_pcm16(frame)
            rec = self.wire.recv(t, "audio", len(pcm48))
            rec.fields["rtp_ts"] = int(frame.pts) if frame.pts is not None else None
            held = self.jb.held(int(frame.pts)) if frame.pts is not None else None
            if held is not None:  # the packet's arrival, the jitter buffer's hold, the decoder's time
                arrived, released = held
                rec.fields["jb_s"] = round(released - arrived, 6)
                rec.fields["decode_s"] = round(mono - released, 6)
                self._held.append(released - arrived)
            if frame.sample_rate != OPUS_RATE:
                rec.violation = f"audio at {frame.sample_rate} Hz, Opus decodes at {OPUS_RATE}"
                continue
            pcm = self.to16k(pcm48)
            if not self._streaming:
                self._streaming = True
                self.expect("stream")  # a WebRTC track never stops while the connection is up
            if frame.pts is not None:  # the media clock: the earliest arrival's offset, as a playout buffer keeps it
                media_s = float(frame.pts) / OPUS_RATE
                self._offset = min(self._offset, t - media_s)
            if int(np.abs(np.frombuffer(pcm, dtype="<i2")).max(initial=0)) <= SILENT_PEAK:
                rec.fields["silent"] = len(pcm) // 2
            else:
                if frame.pts is not None:
                    rec.play_t = round(max(t, self._offset + media_s), 6)
                self.output_audio(rec, pcm, INPUT_SAMPLE_RATE)

    def _dc_message(self, data: str | bytes) -> None:
        t = self.wire.now()
        rec = self.wire.recv(t, "message", wire_len(data))
        try:
            if wire_len(data) > self.system.max_size:
                raise ProtocolViolation(f"a message over the size bound ({self.system.max_size} bytes)")
            if isinstance(data, bytes):
                raise ProtocolViolation("a binary data channel message (pipecat's are JSON text)")
            if data.startswith("ping"):
                rec.kind = "ping"
                return
            try:
                obj = json.loads(data)
            except json.JSONDecodeError:
                raise ProtocolViolation("a data channel message that is not JSON") from None
            if isinstance(obj, dict) and obj.get("type") == "signalling":
                inner: JsonObject = obj["message"] if isinstance(obj.get("message"), dict) else {}
                rec.kind = f"signalling.{str(inner.get('type'))[:40]}"
                if inner.get("type") == "peerLeft" and isinstance(self.receiver, _Link):
                    self.receiver.lost("peerLeft")
                return
            rtvi_message(self, rec, obj)
        except ProtocolViolation as exc:
            rec.violation = str(exc)

    def _summarise(self) -> None:
        from duplexeval.systems.net.webrtc_media import JB_CAPACITY, JB_PREFETCH, HoldStats

        self.wire.meta("jitter_buffer", capacity=JB_CAPACITY, prefetch=JB_PREFETCH, ptime_ms=20,
                       **HoldStats.of(self._held).to_json())


@dataclass(frozen=True)
class WebRtc(NetSystem):
    """A bot over WebRTC with pipecat's SmallWebRTC signalling (HTTP offer/answer), Opus 48 kHz one track each way."""

    name: ClassVar[str] = "webrtc"
    protocol: ClassVar[str] = "webrtc"
    session_class: ClassVar[type[NetSession]] = WebRtcSession

    url: str = "http://127.0.0.1:7860/api/offer"
    client_ready: bool = True
    wait_ready: bool = True
    ready_timeout_s: float = 10.0

    def version(self) -> str:
        import aiortc

        from duplexeval.systems.net.webrtc_media import JB_CAPACITY, JB_PREFETCH

        return (f"duplexeval {__version__}; aiortc {aiortc.__version__}; protocol webrtc (SmallWebRTC offer/answer, "
                f"Opus {OPUS_RATE}); receive jitter buffer capacity {JB_CAPACITY} prefetch {JB_PREFETCH} (about "
                f"{JB_PREFETCH * 20} ms); {audio_library_versions()}")

    def validate(self) -> None:
        for url in self.urls():
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"url must be http:// or https:// (the SmallWebRTC offer endpoint), got {url!r}")
        ws_like = ",".join(u.replace("http", "ws", 1) for u in self.urls())  # the base's other checks
        from dataclasses import replace

        NetSystem.validate(replace(self, url=ws_like))
        if self.wait_ready and not self.client_ready:
            raise ValueError("wait_ready=true needs client_ready=true (bot-ready answers client-ready)")
        if not (0 < self.ready_timeout_s <= 600):
            raise ValueError(f"ready_timeout_s must be in (0, 600], got {self.ready_timeout_s}")
