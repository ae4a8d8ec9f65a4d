"""The reference bot's WebRTC front: pipecat's SmallWebRTC offer/answer (`POST /api/offer`) on FastAPI.

As pipecat's examples serve SmallWebRTC: a `SmallWebRTCRequestHandler` (several connections at once)
answers each offer with a `SmallWebRTCConnection`, and the bot runs on a `SmallWebRTCTransport` over it
in the background. No `from __future__ import annotations` here either (FastAPI reads the signatures).
"""

from typing import Any

from fastapi import BackgroundTasks, FastAPI

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.pipecat.pipeline import run_bot
from duplexeval.systems.pipecat.stack import BotConfig


def webrtc_app(cfg: BotConfig, warm_size: int) -> FastAPI:
    from pipecat.transports.base_transport import TransportParams
    from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequest, SmallWebRTCRequestHandler
    from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport

    handler = SmallWebRTCRequestHandler()
    app = FastAPI()

    @app.post("/api/offer", response_model=None)  # the answer as is, not validated against the return annotation
    async def offer(request: JsonObject, background_tasks: BackgroundTasks) -> dict[str, str] | None:
        async def on_connection(connection: Any) -> None:
            transport = SmallWebRTCTransport(webrtc_connection=connection,
                                             params=TransportParams(audio_in_enabled=True, audio_out_enabled=True))
            background_tasks.add_task(run_bot, cfg, transport, warm_size)

        return await handler.handle_web_request(SmallWebRTCRequest.from_dict(request), on_connection)

    return app
