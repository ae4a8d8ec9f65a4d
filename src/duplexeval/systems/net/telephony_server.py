"""The telephony loopback bot: serve any in-process system as a media-stream bot (`duplexeval serve telephony`).

It is the bot side of `telephony_wire.py`: it waits for the carrier's `start` (after `connected`)
and recognises the dialect by pipecat's own rules (`--option dialect=auto`), or insists on one
(`--option dialect=twilio`: any other carrier's `start` is closed with 1008); decodes each `media`
chunk in the stream's codec and feeds the served system; sends the system's audio as the dialect's
audio messages of `out_chunk_ms` (20 ms) each, paced as a bot paces them (chunk i at the reply's start
+ i x 20 ms, `lead_ms` = 40 ahead; `--option pace=false` sends a reply at once, for the carrier to
buffer), then a marker (`mark` / `checkpoint`, named `reply-N`) unless `--option marks=false`; at the
system's barge-in it withdraws what it had not sent of the reply and sends `clear` (`clearAudio`);
records the carrier's marker answers in `server.events`; ends at `stop` or the close.
`--option corrupt=base64` breaks every audio payload's base64, `corrupt=codec` sends audio the stream
cannot carry (Plivo: another contentType; Exotel: an odd-length L16 payload; Twilio, Telnyx: raw PCM16
in binary frames).

A `start` that names no known carrier, an encoding the dialect does not stream, or media before
`start` closes the call with 1008 (a bot cannot decode it). Faults: `error@S` sends
`{"event": "error"}` (no carrier defines a bot error event; the client takes it at its word),
`malformed@S` a non-JSON text frame, `oversize@S` a media message of max_size + 1 KiB.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any, ClassVar

from duplexeval.systems.base import ControlEvent, ProtocolViolation
from duplexeval.systems.net.pcm import StreamResampler
from duplexeval.systems.net.server import ServerEvent, ServerSession, check_option_values, resample_pcm16
from duplexeval.systems.net.telephony_wire import (
    DIALECT,
    DIALECTS,
    CallStart,
    b64_payload,
    bot_clear,
    bot_marker,
    bot_media,
    decode_audio,
    parse_carrier,
    read_start,
)
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

SERVER_OPTIONS = {"dialect": "auto", "out_chunk_ms": "20", "marks": "true", "corrupt": "none", "pace": "true",
                  "lead_ms": "40"}
CORRUPT = ("none", "base64", "codec")


class TelephonyServerSession(ServerSession):
    """One call: the carrier's `start`, then media in and the served system's audio, clears and markers out."""

    protocol: ClassVar[str] = "telephony"
    default_path: ClassVar[str] = "/ws"

    @classmethod
    def check_options(cls, options: dict[str, str]) -> None:
        check_option_values(cls.protocol, options, {
            "dialect": lambda v: v in ("auto", *DIALECTS), "out_chunk_ms": lambda v: 10 <= int(v) <= 1000,
            "marks": lambda v: v.lower() in ("true", "false"), "corrupt": lambda v: v in CORRUPT,
            "pace": lambda v: v.lower() in ("true", "false"), "lead_ms": lambda v: 0 <= int(v) <= 10000})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opts = {**SERVER_OPTIONS, **self.config.options}
        self.want_dialect = str(opts["dialect"])
        self.out_chunk_ms = int(opts["out_chunk_ms"])
        self.marks = str(opts["marks"]).lower() == "true"
        self.corrupt = str(opts["corrupt"])
        self.pace = str(opts["pace"]).lower() == "true"
        self.lead_s = int(opts["lead_ms"]) / 1000.0
        self.call: CallStart | None = None
        self.replies = 0
        self.current: str | None = None  # the tag of the reply being sent

    async def run(self) -> None:
        to16k: StreamResampler | None = None
        async for message in self.ws:
            if self.stalled:
                continue
            try:
                msg = parse_carrier(message)
            except ValueError as exc:
                await self.ws.close(1008, f"not a carrier message: {exc}"[:120])
                return
            ev = msg["event"]
            if self.call is None:
                if ev == "connected":
                    continue
                try:
                    self.call = read_start(msg)
                except (ValueError, KeyError, TypeError) as exc:
                    await self.ws.close(1008, f"no call: {exc}"[:120])
                    return
                if self.want_dialect not in ("auto", self.call.dialect):
                    await self.ws.close(1008, f"this bot takes {self.want_dialect} calls, got {self.call.dialect}")
                    return
                self.server.events.append(ServerEvent("start", dialect=self.call.dialect, codec=self.call.codec,
                                                      rate=self.call.rate, params=sorted(self.call.params)))
                to16k = StreamResampler(self.call.rate, INPUT_SAMPLE_RATE)
                continue
            if ev == "media":
                assert to16k is not None
                try:
                    pcm = decode_audio(b64_payload((msg.get("media") or {}).get("payload"), "media"), self.call.codec,
                                       "media")
                except ProtocolViolation as exc:
                    await self.ws.close(1008, str(exc)[:120])
                    return
                self.input_audio(len(pcm) / 2 / self.call.rate)
                await self.driver.feed(to16k(pcm))
            elif ev == DIALECT[self.call.dialect].marker_reply:
                name = msg.get("name") if self.call.dialect == "plivo" else (msg.get("mark") or {}).get("name")
                self.server.events.append(ServerEvent("marker_played", name=name, at_s=round(self.now_s(), 6)))
            elif ev == "stop":
                return

    def on_audio(self, pcm16k: bytes, at_s: float) -> None:
        if self.call is None:
            return
        pcm = resample_pcm16(pcm16k, INPUT_SAMPLE_RATE, self.call.rate)
        step = self.call.rate * self.out_chunk_ms // 1000 * 2
        msgs = [self._audio_message(pcm[off : off + step]) for off in range(0, len(pcm), step)]
        self.replies += 1
        tag = f"reply-{self.replies}"
        if self.pace:  # as a bot sends: at real time from the reply's start, `lead_ms` ahead
            last = self.deliver_stream(at_s, msgs, self.out_chunk_ms / 1000.0, self.lead_s, tag, self._log_send)
        else:  # the whole reply at once (the carrier buffers it)
            last = at_s
            for msg in msgs:
                self.deliver(at_s, msg, tag, self._log_send)
        if self.marks:
            self.deliver(last, bot_marker(self.call, tag), tag)
        self.current = tag

    def _audio_message(self, pcm: bytes) -> str | bytes:
        """The bot's audio message, or the broken one `--option corrupt=` asks for."""
        assert self.call is not None
        if self.corrupt == "base64":
            msg = json.loads(bot_media(self.call, pcm))
            msg["media"]["payload"] = "not*base64" + msg["media"]["payload"][10:]
            return json.dumps(msg)
        if self.corrupt == "codec":
            if self.call.dialect == "plivo":  # another codec than the stream's
                msg = json.loads(bot_media(self.call, pcm))
                msg["media"].update(contentType="audio/x-l16", sampleRate=16000)
                return json.dumps(msg)
            if self.call.dialect == "exotel":  # not 16-bit PCM
                msg = json.loads(bot_media(self.call, pcm))
                msg["media"]["payload"] = base64.b64encode(pcm[:-1]).decode("ascii")
                return json.dumps(msg)
            return pcm  # raw PCM16 in a binary frame, where the carrier reads JSON mu-law
        return bot_media(self.call, pcm)

    def _log_send(self) -> None:
        """When each audio message went on the wire (monotonic; benchmarks/pipecat_transport_timing.py)."""
        if self.server.send_log is not None:
            self.server.send_log.append(time.monotonic())

    def on_clear(self, at_s: float, event: ControlEvent) -> None:
        if self.call is not None:
            if self.current is not None:  # what the bot had not sent yet of the reply it stops
                self.cancel(self.current, at_s)
            self.deliver(at_s, bot_clear(self.call))

    def error_message(self, text: str) -> str | bytes:
        return json.dumps({"event": "error", "message": text})

    def oversize_message(self, nbytes: int) -> str | bytes:
        return json.dumps({"event": "media", "media": {"payload": "A" * nbytes}})
