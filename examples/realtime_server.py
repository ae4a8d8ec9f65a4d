"""A voice agent behind an OpenAI-Realtime-style WebSocket server: copy it, replace `answer`, and score it.

    python realtime_server.py --port 8765 &                      # prints: listening on ws://127.0.0.1:8765/v1/realtime
    duplexeval systems check openai-realtime:url=ws://127.0.0.1:8765/v1/realtime
    # a network system runs in real time: open sessions at once
    duplexeval fdb export --system openai-realtime:url=ws://127.0.0.1:8765/v1/realtime \\
        --dataset demo --out trees/my-server --concurrency 8
    duplexeval fdb asr trees/my-server && duplexeval fdb score trees/my-server

It speaks the GA dialect of the OpenAI Realtime API as duplexeval's `openai-realtime` client uses it (the
events below and nothing else): `session.created` at connect, `session.updated` granting 24 kHz PCM16,
`input_audio_buffer.append` in, the server's own voice detection as `input_audio_buffer.speech_started`
/ `speech_stopped`, and each answer as `response.created`, `response.output_audio.delta` (base64 PCM16),
`response.output_audio.done` and `response.done`. Your real agent (an LLM and a TTS) goes in `answer`;
here it says a fixed sentence with espeak-ng. Needs only duplexeval's own dependencies.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
from typing import Any

import numpy as np
import soxr
import websockets

from duplexeval.tts import synthesize

RATE = 24000  # what the server grants for input and output (the OpenAI Realtime default)
FRAME_S = 0.02  # how the input is looked at: 20 ms at a time
SPEECH_DBFS = -40.0  # louder than this is the user speaking
SILENCE_MS = 600  # this long below it ends the user's turn
CHUNK_S = 0.1  # the answer goes out in deltas of this much audio
ids = itertools.count(1)


def answer(turn_audio: np.ndarray) -> np.ndarray:
    """The agent: the user's turn (float32 mono at RATE) in, the reply (float32 mono at RATE) out."""
    speech = synthesize("thanks I heard you and this is my answer").audio  # 16 kHz
    return soxr.resample(speech, 16000, RATE).astype(np.float32)


def event(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "event_id": f"evt_{next(ids)}", **fields})


def pcm16_b64(audio: np.ndarray) -> str:
    return base64.b64encode((np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()).decode("ascii")


async def conversation(ws: Any) -> None:
    """One session: listen, detect the end of each user turn, answer it; stop answering when barged in."""
    await ws.send(event("session.created", session={"id": f"sess_{next(ids)}", "type": "realtime"}))
    frame = int(FRAME_S * RATE)
    buf = np.zeros(0, np.float32)
    turn: list[np.ndarray] = []
    speaking, quiet_ms, heard_s = False, 0.0, 0.0
    reply: asyncio.Task[None] | None = None
    async for raw in ws:
        msg = json.loads(raw)
        kind = msg.get("type")
        if kind == "session.update":
            fmt = {"type": "audio/pcm", "rate": RATE}
            granted = {"type": "realtime", "audio": {"input": {"format": fmt}, "output": {"format": fmt}}}
            await ws.send(event("session.updated", session=granted))
        elif kind == "input_audio_buffer.append":
            pcm = np.frombuffer(base64.b64decode(msg["audio"]), "<i2").astype(np.float32) / 32768
            buf = np.concatenate([buf, pcm])
            while buf.size >= frame:
                x, buf = buf[:frame], buf[frame:]
                heard_s += FRAME_S
                loud = 20 * np.log10(max(float(np.sqrt(np.mean(x**2))), 1e-10)) > SPEECH_DBFS
                if loud and not speaking:
                    speaking, turn = True, []
                    if reply is not None and not reply.done():
                        reply.cancel()  # barge-in: stop sending the answer
                    await ws.send(event("input_audio_buffer.speech_started", audio_start_ms=int(heard_s * 1000),
                                        item_id=f"item_{next(ids)}"))
                if speaking:
                    turn.append(x)
                    quiet_ms = 0.0 if loud else quiet_ms + FRAME_S * 1000
                    if quiet_ms >= SILENCE_MS:
                        speaking = False
                        await ws.send(event("input_audio_buffer.speech_stopped", audio_end_ms=int(heard_s * 1000),
                                            item_id=f"item_{next(ids)}"))
                        reply = asyncio.create_task(respond(ws, np.concatenate(turn)))
        # conversation.item.truncate, response.cancel: nothing to undo here (the answer task was cancelled)


async def respond(ws: Any, turn_audio: np.ndarray) -> None:
    """Send one answer as a response with streamed audio deltas."""
    rid, item = f"resp_{next(ids)}", f"item_{next(ids)}"
    await ws.send(event("response.created", response={"id": rid, "status": "in_progress"}))
    audio = answer(turn_audio)
    step = int(CHUNK_S * RATE)
    status = "completed"
    try:
        for k in range(0, audio.size, step):
            await ws.send(event("response.output_audio.delta", response_id=rid, item_id=item, output_index=0,
                                content_index=0, delta=pcm16_b64(audio[k:k + step])))
        await ws.send(
            event("response.output_audio.done", response_id=rid, item_id=item, output_index=0, content_index=0))
    except asyncio.CancelledError:
        status = "cancelled"
    await ws.send(event("response.done", response={"id": rid, "status": status}))


async def main(port: int) -> None:
    async with websockets.serve(conversation, "127.0.0.1", port, max_size=2**22) as server:
        bound = next(iter(server.sockets)).getsockname()[1]
        print(f"listening on ws://127.0.0.1:{bound}/v1/realtime", flush=True)
        await asyncio.Future()  # until Ctrl-C


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8765, help="TCP port on 127.0.0.1 (0: any free port, printed)")
    try:
        asyncio.run(main(ap.parse_args().port))
    except KeyboardInterrupt:
        pass
