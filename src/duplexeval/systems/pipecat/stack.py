"""What the reference pipecat bot is: its turn stack, its transport and its two stand-ins (no pipecat import here).

The turn stacks are pipecat's own: speech detection is `VADProcessor(SileroVADAnalyzer(VADParams(stop_secs)))`;
a user turn starts at VAD's speech start (`VADUserTurnStartStrategy`, where interruptions are switched on or
off) and ends by `SpeechTimeoutUserTurnStopStrategy(user_speech_timeout, wait_for_transcript=False)` for
`vad` or `TurnAnalyzerUserTurnStopStrategy(LocalSmartTurnAnalyzerV3, wait_for_transcript=False)` for
`smart-turn`. The bot has no speech-to-text, so neither stop strategy may wait for a transcript (with
pipecat's default it would never end a turn). `speech_timeout_s` defaults to 0, so for `vad` the turn
ends when VAD's `stop_secs` of silence have passed, as pipecat's VAD-only turn-taking did before 1.0;
pipecat's own default (0.6 s) is one parameter away.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from duplexeval.jsontypes import JsonObject
from duplexeval.systems.baselines import DEFAULT_REPLY

TRANSPORTS = ("telephony", "pipecat-ws", "webrtc")
# the `pipecat` system: the same pipeline in duplexeval's process (systems/pipecat/inprocess.py)
IN_PROCESS = "in-process"
TURNS = ("vad", "smart-turn")
DIALECTS = ("twilio", "telnyx", "plivo", "exotel")
VAD_STOP_SECS_DEFAULT = 0.2  # pipecat's VADParams default (pipecat.audio.vad.vad_analyzer.VAD_STOP_SECS)


@dataclass(frozen=True)
class BotConfig:
    """Every setting of the reference bot (recorded in what it announces and in its signature)."""

    transport: str = "telephony"
    turn: str = "vad"
    stop_secs: float = VAD_STOP_SECS_DEFAULT
    speech_timeout_s: float = 0.0  # vad: SpeechTimeoutUserTurnStopStrategy's user_speech_timeout
    allow_interruptions: bool = True
    think_ms: int = 300  # the scripted responder waits this long after a user turn ends
    reply: str = DEFAULT_REPLY
    voice: str = "en-us"
    rate: int = 170  # espeak-ng words per minute
    sample_rate: int = 0  # the pipeline's audio rate; 0 = 8000 for telephony, 16000 otherwise

    @property
    def pipeline_rate(self) -> int:
        return self.sample_rate or (8000 if self.transport == "telephony" else 16000)

    def validate(self) -> None:
        """ValueError naming the setting."""
        if self.transport not in (*TRANSPORTS, IN_PROCESS):
            raise ValueError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.turn not in TURNS:
            raise ValueError(f"--turn must be one of {', '.join(TURNS)}, got {self.turn!r}")
        for key, option, lo, hi in (("stop_secs", "--stop-secs", 0.0, 10.0),
                                    ("speech_timeout_s", "--speech-timeout", 0.0, 10.0)):
            v = getattr(self, key)
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError(f"{option} must be between {lo:g} and {hi:g} seconds, got {v}")
        if not (0 <= self.think_ms <= 60000):
            raise ValueError(f"--think-ms must be between 0 and 60000, got {self.think_ms}")
        if not self.reply.strip():
            raise ValueError("--reply must not be empty")
        if self.sample_rate not in (0, 8000, 16000):
            raise ValueError(f"--sample-rate must be 8000 or 16000 (Silero's rates), got {self.sample_rate}")

    def describe(self) -> str:
        """One line: the turn stack and the transport (what `serve pipecat` announces)."""
        stack = f"{self.turn} stop_secs={self.stop_secs:g}"
        if self.turn == "vad":
            stack += f" speech_timeout={self.speech_timeout_s:g}"
        inter = "on" if self.allow_interruptions else "off"
        return f"{self.transport}, {stack}, interruptions {inter}, think {self.think_ms} ms, {self.pipeline_rate} Hz"

    def to_json(self) -> JsonObject:
        return asdict(self)
