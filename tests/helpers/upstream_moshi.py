"""What the Moshi-family servers put on the wire, written down from their sources (our words and bytes).

Each constant names the upstream file it was read from. These are the definitions the conformance tests
hold our client and our loopback servers to; they are not copied code.
"""

from __future__ import annotations

# kyutai-labs/moshi rust/protocol.md: byte 0 of every message is its type.
KINDS = {"handshake": 0, "audio": 1, "text": 2, "control": 3, "metadata": 4, "error": 5, "ping": 6}
# kyutai-labs/moshi rust/protocol.md: "Messages with an unknow message types should be discarded."
UNKNOWN_KIND_IS_DISCARDED = True

# kyutai-labs/moshi moshi/moshi/server.py (ServerState.handle_chat): the handshake is the bare type byte.
KYUTAI_HANDSHAKE = b"\x00"
# NVIDIA/personaplex moshi/moshi/server.py (handle_chat): the same single byte, sent after the prompts ran.
PERSONAPLEX_HANDSHAKE = b"\x00"
# kyutai-labs/moshi rust/moshi-backend/src/stream_both.rs (MsgSender::send_ready): the type byte and two
# u32 fields, protocol version 0 and model version 0, little endian.
RUST_HANDSHAKE = b"\x00" + (0).to_bytes(4, "little") + (0).to_bytes(4, "little")
# kyutai-labs/moshi rust/moshi-backend/src/stream_both.rs (StreamingModel::run): the metadata message
# (type 4, a JSON object) is queued before the processing loop sends Ready, i.e. before the handshake.
# The object's keys (struct MetaData):
RUST_METADATA_KEYS = frozenset({"text_temperature", "text_topk", "audio_temperature", "audio_topk", "pad_mult",
                                "repetition_penalty_context", "repetition_penalty", "lm_model_file",
                                "mimi_model_file", "build_info", "instance_name"})
# kyutai-labs/moshi rust/moshi-backend/src/stream_both.rs: OPUS_ENCODER_FRAME_SIZE = 960 samples at 24 kHz
# (40 ms) per Opus packet, each written as its own page (EndPage) and sent as its own message; the
# OpusHead and OpusTags pages are written at construction and go out with the first audio message.
RUST_SAMPLES_PER_PAGE = 960
RUST_PAGES_PER_MESSAGE = 1
# kyutai-labs/moshi rust/moshi-backend/src/stream_both.rs (spawn_recv_loops): the backend reads the client's
# messages with MsgType::from_u8, which fails on an unknown type and ends the receive loop.
RUST_UNKNOWN_CLIENT_KIND_ENDS_SESSION = True
# kyutai-labs/moshi rust/moshi-backend/src/standalone.rs (stream_handler): the query is deserialised into
# SessionConfigReq; these are its numeric fields (a non-number is refused before the upgrade).
RUST_QUERY_NUMBERS = frozenset({"text_temperature", "text_topk", "audio_temperature", "audio_topk", "max_steps",
                                "audio_seed", "text_seed", "pad_mult", "repetition_penalty_context",
                                "repetition_penalty"})
# kyutai-labs/moshi rust/moshi-backend/src/standalone.rs: no lock around handle_socket, so conversations
# run side by side.
RUST_ONE_CONVERSATION_AT_A_TIME = False

# kyutai-labs/moshi moshi/moshi/server.py (recv_loop): skip_frames = 1, the first input frame is the past.
KYUTAI_SKIPPED_INPUT_FRAMES = 1
# NVIDIA/personaplex moshi/moshi/server.py (opus_loop): no frame is skipped.
PERSONAPLEX_SKIPPED_INPUT_FRAMES = 0
# kyutai-labs/moshi moshi/moshi/server.py and NVIDIA/personaplex moshi/moshi/server.py: ws.prepare() runs
# before `async with self.lock`, so a second client is upgraded and waits; no HTTP 503.
PYTHON_SERVERS_QUEUE_CONVERSATIONS = True
# NVIDIA/personaplex moshi/moshi/server.py (handle_chat): request.query["text_prompt"] and
# request.query["voice_prompt"] are read unconditionally; the seed is read as request["seed"] whenever
# "seed" is in the query (the request mapping, not the query: a KeyError).
PERSONAPLEX_REQUIRED_QUERY = ("text_prompt", "voice_prompt")
PERSONAPLEX_SEED_IN_QUERY_FAILS = True
# NVIDIA/personaplex README.md (Voices): the packaged voice prompts.
PERSONAPLEX_VOICES = ("NATF0", "NATF1", "NATF2", "NATF3", "NATM0", "NATM1", "NATM2", "NATM3",
                      "VARF0", "VARF1", "VARF2", "VARF3", "VARF4", "VARM0", "VARM1", "VARM2", "VARM3", "VARM4")
# NVIDIA/personaplex client/src/pages/Conversation/Conversation.tsx: the web client sends text_prompt and
# voice_prompt (and its sampling settings) but no seed.
PERSONAPLEX_WEB_CLIENT_SENDS_SEED = False
