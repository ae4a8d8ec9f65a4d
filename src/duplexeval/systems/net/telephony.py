"""`telephony`: drive a voice bot as a phone carrier does, over a media-stream WebSocket (four dialects).

```
--system 'telephony:url=ws://HOST:PORT/ws[,dialect=twilio|telnyx|plivo|exotel,codec=...,rate=...,param.NAME=VALUE]'
```

We are the carrier (shapes in `telephony_wire.py`): after the upgrade the client sends `connected`
(not Plivo) and `start` (stream and call ids derived from the sample, the media format, custom
parameters from `param.NAME=VALUE`), then the input as `media` messages of `chunk_ms` (20 ms) each on
their own absolute schedule (chunk j of the 80 ms frame at slot + j x 20 ms), and `stop` after T.

What the bot sends is played as the carrier plays it: audio at real time from its arrival, FIFO
(the offline playout, run live in `LivePlayout` for the marks); `clear` (`clearAudio`) stops it at the
receipt time and drops what was queued; a `mark` (`checkpoint`) is answered when the audio queued before
it has played (Twilio, Telnyx and Exotel answer the pending ones at a clear; Plivo drops them and
answers the clear with `clearedAudio`). Bad base64, an odd-length L16 payload, a binary frame, a Plivo
`playAudio` in another codec than the stream's, a marker without a name, another carrier's event or
another stream's id are protocol violations; unknown events are recorded (`ignored`) as a carrier
ignores them. By protocol the bot owes the carrier nothing, so a silent bot is only a silent sample;
`reply_within_s=S` makes "no message at all within S seconds of the first input" a `timeout`.

A parameter that carries a credential (its name holds token, secret, password, auth or key) must be
given as `param.NAME=env:VAR`: the value is read from the environment when the session starts, sent
only inside `start`, and declared through `secrets()`, so it is never written anywhere.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from typing import ClassVar

from duplexeval.audio import audio_library_versions
from duplexeval.systems.base import ProtocolViolation, SampleInfo
from duplexeval.systems.net.chunked import CHUNK_MS, ChunkedSession
from duplexeval.systems.net.live import LivePlayout
from duplexeval.systems.net.session import NetSession, NetSystem, with_query
from duplexeval.systems.net.telephony_wire import (
    CODECS,
    DIALECT,
    DIALECTS,
    NAME_CHARS,
    CarrierMessages,
    call_ids,
    check_codec,
    default_codec,
    parse_bot,
)
from duplexeval.systems.net.trace import TraceRecord
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

MAX_PENDING_MARKS = 1000
_CREDENTIAL = re.compile(r"token|secret|password|passwd|auth|key", re.IGNORECASE)
ENV_PREFIX = "env:"


class TelephonySession(ChunkedSession):
    system: Telephony

    def __init__(self, system: Telephony, info: SampleInfo) -> None:
        codec, rate = system.wire_format()
        super().__init__(system, info, rate, system.chunk_ms)
        self.codec, self.rate = codec, rate
        key = f"{info.subset}/{info.sample_id}"
        self.ids = call_ids(system.dialect, key, system.account_id)
        self.dialect = DIALECT[system.dialect]
        self.msgs = CarrierMessages(system.dialect, self.ids, self.codec, self.rate, system.resolved_params(),
                                    system.chunk_ms)
        self.live = LivePlayout()
        self._chunks = 0
        self._marks: list[tuple[str, float, asyncio.Task[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._replied = False

    # ---------------------------------------------------------- carrier -> bot
    async def handshake(self) -> None:
        first = self.msgs.first()
        kinds = ["connected", "start"] if len(first) == 2 else ["start"]
        for kind, msg in zip(kinds, first):
            if kind == "start":
                await self.send(kind, msg, stream=self.ids.stream, call=self.ids.call, codec=self.codec, rate=self.rate,
                                params=sorted(self.system.param))  # parameter names only, never values
            else:
                await self.send(kind, msg)

    async def open(self) -> None:
        await super().open()
        if self.system.reply_within_s > 0:
            self._tasks.append(asyncio.get_running_loop().create_task(self._reply_watch(self.system.reply_within_s)))

    async def _reply_watch(self, within_s: float) -> None:
        await self.clock.sleep_until(within_s)
        if not self._replied and not self.dead:
            self.wire.meta("no_reply", within_s=within_s)

    def encode_chunk(self, pcm16: bytes) -> tuple[str, str | bytes]:
        return "media", self.msgs.media(pcm16)

    async def finish_input(self) -> None:
        stop = self.msgs.stop()
        if stop is not None:
            await self.send("stop", stop)

    async def close(self) -> None:
        for _, _, task in self._marks:
            task.cancel()
        for task in self._tasks:
            task.cancel()
        await super().close()

    # ---------------------------------------------------------- bot -> carrier
    def on_message(self, rec: TraceRecord, data: str | bytes) -> None:
        self._replied = True
        ev = parse_bot(data, self.system.dialect, self.ids.stream, self.codec, self.rate)
        rec.kind = ev.event
        t = float(rec.t)
        if ev.kind == "media":
            self.output_audio(rec, ev.pcm16, ev.rate)
            self.live.add(str(self._chunks), ev.pcm16, ev.rate, t)
            self._chunks += 1
        elif ev.kind == "marker":
            self._marker(rec, ev.name, t)
        elif ev.kind == "clear":
            self._clear(rec, t)
        elif ev.kind == "error":
            self.server_error(rec, ev.message)
        else:
            rec.fields["ignored"] = True

    def _marker(self, rec: TraceRecord, name: str, t: float) -> None:
        """Answer the marker when everything queued before it has played (at once when nothing is queued)."""
        self._marks = [m for m in self._marks if not m[2].done()]
        if len(self._marks) >= MAX_PENDING_MARKS:
            raise ProtocolViolation(f"{self.dialect.marker}: more than {MAX_PENDING_MARKS} markers pending")
        at = max(t, self.live.queue_end / INPUT_SAMPLE_RATE)
        rec.fields["name"] = name[:NAME_CHARS]
        rec.fields["plays_at_s"] = round(at, 6)
        task = asyncio.get_running_loop().create_task(self._answer(name, at, cleared=False))
        self._marks.append((name, at, task))

    async def _answer(self, name: str, at: float, cleared: bool) -> None:
        await self.clock.sleep_until(at)
        await self.send(self.dialect.marker_reply, self.msgs.marker_reply(name), name=name[:NAME_CHARS],
                        **({"cleared": True} if cleared else {}))

    def _clear(self, rec: TraceRecord, t: float) -> None:
        self.clear_queue(rec, reason=self.dialect.clear)
        self.live.clear(t)
        pending = [(n, at) for n, at, task in self._marks if not task.done() and at > t]
        for _, _, task in self._marks:
            if not task.done():
                task.cancel()
        self._marks = []
        rec.fields["pending_marks"] = len(pending)
        loop = asyncio.get_running_loop()
        if self.dialect.echo_on_clear:  # the cleared audio's markers are answered now, in order
            for name, _ in pending:
                self._tasks.append(loop.create_task(self._answer(name, t, cleared=True)))
        cleared = self.msgs.cleared()
        if cleared is not None:
            self._tasks.append(loop.create_task(self._send_cleared(cleared)))

    async def _send_cleared(self, msg: str) -> None:
        assert self.dialect.cleared is not None
        await self.send(self.dialect.cleared, msg)


@dataclass(frozen=True)
class Telephony(NetSystem):
    """A voice bot reached as a phone call: Twilio / Telnyx / Plivo / Exotel media streams, we play the carrier."""

    name: ClassVar[str] = "telephony"
    protocol: ClassVar[str] = "telephony"
    session_class: ClassVar[type[NetSession]] = TelephonySession

    url: str = "ws://127.0.0.1:8765/ws"
    dialect: str = "twilio"
    codec: str = ""  # "" = the dialect's default (mulaw; exotel: l16)
    rate: int = 0  # 0 = the dialect's default (8000)
    chunk_ms: int = 20
    account_id: str = ""  # the account id in `start` ("" = a placeholder in the carrier's shape)
    reply_within_s: float = 0.0  # > 0: the bot must send something within this long of the first input
    param: dict[str, str] = field(default_factory=dict)  # custom parameters (`param.NAME=VALUE`, `env:VAR`)

    def wire_format(self) -> tuple[str, int]:
        codec, rate = default_codec(self.dialect)
        return (self.codec or codec, self.rate or rate)

    def resolved_params(self) -> dict[str, str]:
        """The custom parameters with `env:VAR` values read from the environment (never stored)."""
        out = {}
        for k, v in self.param.items():
            out[k] = os.environ.get(v[len(ENV_PREFIX):], "") if v.startswith(ENV_PREFIX) else v
        return out

    def secrets(self) -> tuple[str, ...]:
        return tuple(v for k, v in self.resolved_params().items() if self.param[k].startswith(ENV_PREFIX) and v)

    def connect_url(self, info: SampleInfo) -> str:
        codec, rate = self.wire_format()
        if self.dialect == "exotel" and rate != 8000:  # Exotel asks for other rates in the URL
            return with_query(self.url, "sample-rate", rate)
        return self.url

    def version(self) -> str:
        codec, rate = self.wire_format()
        return f"{super().version()}; dialect {self.dialect}; {codec}@{rate}; {audio_library_versions()}"

    def validate(self) -> None:
        super().validate()
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {self.dialect!r}")
        if self.codec and self.codec not in CODECS:
            raise ValueError(f"codec must be one of {', '.join(CODECS)}, got {self.codec!r}")
        codec, rate = self.wire_format()
        check_codec(self.dialect, codec, rate)
        if self.chunk_ms not in CHUNK_MS:
            raise ValueError(f"chunk_ms must be one of {', '.join(map(str, CHUNK_MS))} (a divisor of the 80 ms frame), "
                             f"got {self.chunk_ms}")
        if not (0 <= self.reply_within_s <= 3600):
            raise ValueError(f"reply_within_s must be between 0 (off) and 3600 seconds, got {self.reply_within_s}")
        if len(self.param) > 32:
            raise ValueError(f"at most 32 custom parameters, got {len(self.param)}")
        for k, v in self.param.items():
            if len(k) > 64 or len(v) > 512:
                raise ValueError(f"param.{k[:64]}: names are at most 64 and values 512 characters")
            if v.startswith(ENV_PREFIX):
                var = v[len(ENV_PREFIX):]
                if not var or os.environ.get(var) is None:
                    raise ValueError(f"param.{k}={v}: the environment variable {var!r} is not set")
            elif _CREDENTIAL.search(k):
                raise ValueError(f"param.{k} looks like a credential: give it as param.{k}=env:VARIABLE "
                                 "(read from the environment, never written)")
