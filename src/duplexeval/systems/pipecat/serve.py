"""`duplexeval serve pipecat`: the reference pipecat bot on 127.0.0.1, one pipeline per connection.

- `--transport telephony`: a FastAPI WebSocket route `/ws`, as pipecat's telephony bots are written: the
  carrier's first messages go through pipecat's `parse_telephony_websocket`, which picks the serializer
  (`TwilioFrameSerializer`, `TelnyxFrameSerializer`, `PlivoFrameSerializer`, `ExotelFrameSerializer`,
  hang-up off: there is no carrier REST API offline), on a `FastAPIWebsocketTransport`. Telnyx audio goes
  back in the stream's own encoding; Exotel's rate comes from the URL's `sample-rate` (8000 when absent).
- `--transport pipecat-ws`: the same route with pipecat's `ProtobufFrameSerializer` (frames.proto).
- `--transport webrtc`: pipecat's SmallWebRTC signalling (`POST /api/offer` with an SDP offer, answered by
  a `SmallWebRTCConnection`) and `SmallWebRTCTransport`, one audio track each way.

This module must not use `from __future__ import annotations`: FastAPI reads the WebSocket route's
annotations at run time, and as strings they make the upgrade fail with HTTP 403.
"""

import asyncio
import socket
import sys
from typing import Any

from fastapi import FastAPI, WebSocket
from loguru import logger

from duplexeval.systems.pipecat.pipeline import run_bot, speech_pcm, warm
from duplexeval.systems.pipecat.stack import BotConfig


def telephony_serializer(kind: str, call: Any, websocket: WebSocket) -> Any:
    """pipecat's serializer for the carrier `parse_telephony_websocket` recognised (None: not a carrier call)."""
    if kind == "twilio":
        from pipecat.serializers.twilio import TwilioFrameSerializer

        return TwilioFrameSerializer(call["stream_id"], call["call_id"],
                                     params=TwilioFrameSerializer.InputParams(auto_hang_up=False))
    if kind == "telnyx":
        from pipecat.serializers.telnyx import TelnyxFrameSerializer

        enc = call["outbound_encoding"] or "PCMU"
        return TelnyxFrameSerializer(call["stream_id"], enc, enc, call_control_id=call["call_id"],
                                     params=TelnyxFrameSerializer.InputParams(auto_hang_up=False))
    if kind == "plivo":
        from pipecat.serializers.plivo import PlivoFrameSerializer

        return PlivoFrameSerializer(call["stream_id"], call["call_id"],
                                    params=PlivoFrameSerializer.InputParams(auto_hang_up=False))
    if kind == "exotel":
        from pipecat.serializers.exotel import ExotelFrameSerializer

        rate = int(websocket.query_params.get("sample-rate", "8000"))
        return ExotelFrameSerializer(call["stream_id"], call["call_id"],
                                     params=ExotelFrameSerializer.InputParams(exotel_sample_rate=rate))
    return None


def websocket_app(cfg: BotConfig, warm_size: int) -> FastAPI:
    """The FastAPI app of the telephony and pipecat-ws transports."""
    from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport

    app = FastAPI()

    @app.websocket("/ws")
    async def conversation(websocket: WebSocket) -> None:
        await websocket.accept()
        if cfg.transport == "telephony":
            from pipecat.runner.utils import parse_telephony_websocket

            try:
                kind, call = await parse_telephony_websocket(websocket)
            except ValueError:
                return
            serializer = telephony_serializer(kind, call, websocket)
            if serializer is None:
                await websocket.close(code=1008, reason="not a call from a known carrier")
                return
        else:
            from pipecat.serializers.protobuf import ProtobufFrameSerializer

            serializer = ProtobufFrameSerializer()
        params = FastAPIWebsocketParams(audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False,
                                        serializer=serializer)
        await run_bot(cfg, FastAPIWebsocketTransport(websocket=websocket, params=params), warm_size)

    return app


def configure_logging(verbose: bool) -> None:
    """pipecat logs through loguru at DEBUG by default: WARNING unless asked (--verbose: DEBUG)."""
    logger.remove()
    logger.add(sys.stderr, level="DEBUG" if verbose else "WARNING")


def serve(cfg: BotConfig, port: int, announce: Any, verbose: bool = False, warm_size: int = 4) -> None:
    """Serve the bot until interrupted; `announce(url)` once it listens (and `warm_size` analyzers are built)."""
    import uvicorn

    configure_logging(verbose)
    speech_pcm(cfg.reply, cfg.voice, cfg.rate, cfg.pipeline_rate)  # synthesize once before the first call
    for kind in ("vad", "smart-turn") if cfg.turn == "smart-turn" else ("vad",):
        warm(kind, cfg, warm_size).fill()
    if cfg.transport == "webrtc":
        from duplexeval.systems.pipecat.webrtc_app import webrtc_app

        app, path, scheme = webrtc_app(cfg, warm_size), "/api/offer", "http"
    else:
        app, path, scheme = websocket_app(cfg, warm_size), "/ws", "ws"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", ws_ping_interval=None))

    async def main() -> None:
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            announce(f"{scheme}://127.0.0.1:{bound}{path}")
        await task

    asyncio.run(main())
