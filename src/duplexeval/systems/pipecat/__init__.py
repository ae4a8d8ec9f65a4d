"""The reference pipecat bot: a real pipecat pipeline, offline, reached as people deploy it (docs/pipecat.md).

- `stack`: what the bot is (turn stack, transport, the two stand-ins' settings), with no pipecat import.
- `pipeline`: the pipecat pipeline itself (pipecat's transport, serializer, Silero VAD, Smart Turn v3 and
  user-turn / interruption handling; a scripted responder and an espeak-ng TTS service as the stand-ins).
- `serve`: `duplexeval serve pipecat`: the bot over telephony, pipecat-ws or webrtc on 127.0.0.1.
"""
