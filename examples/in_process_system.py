"""An in-process system under test: copy this file, change `reply_to`, and score it.

    duplexeval systems check in_process_system:EchoAgent            # one sample, what it produced
    duplexeval fdb export --system in_process_system:EchoAgent:silence_ms=600 --dataset demo --out trees/echo
    duplexeval fdb asr trees/echo && duplexeval fdb score trees/echo

Run these from the folder that holds this file (a `module:Class` spec finds modules in the current
folder). The agent listens to 80 ms frames of 16 kHz PCM16, decides with a simple energy detector
when the user has stopped, and answers with espeak-ng speech. It runs on a virtual clock: a sample
takes milliseconds, not its length, and gives the same bytes every run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from duplexeval.audio import to_pcm16
from duplexeval.systems.base import OutputChunk, Received, SampleInfo
from duplexeval.tts import synthesize


@dataclass
class EchoAgent:
    """Answers once the user has been silent for `silence_ms`; its fields are its `key=value` parameters."""

    silence_ms: int = 700  # how long the user must be quiet before the agent answers
    threshold_dbfs: float = -40.0  # a frame louder than this is the user speaking
    reply: str = "I heard you say something and I am answering now"
    name: str = "echo-agent"

    def params(self) -> dict[str, object]:
        """Every parameter that changes the output (recorded in the tree's manifest)."""
        return {k: v for k, v in asdict(self).items() if k != "name"}

    def version(self) -> str:
        return "echo-agent 1"

    async def open_session(self, info: SampleInfo) -> EchoSession:
        return EchoSession(self, info)


class EchoSession:
    """One conversation: push_input gets every input frame in order, poll_output returns what was said."""

    def __init__(self, agent: EchoAgent, info: SampleInfo) -> None:
        self.agent = agent
        self.heard_speech = False  # has the user spoken since our last answer?
        self.quiet_since: float | None = None
        self.outbox: list[Received] = []

    async def push_input(self, frame: bytes, t_s: float) -> None:
        audio = np.frombuffer(frame, dtype="<i2").astype(np.float32) / 32768.0
        level = 20 * np.log10(max(float(np.sqrt(np.mean(audio**2))), 1e-10))
        end = t_s + len(audio) / 16000
        if level > self.agent.threshold_dbfs:
            self.heard_speech, self.quiet_since = True, None
        elif self.heard_speech:
            self.quiet_since = t_s if self.quiet_since is None else self.quiet_since
            if end - self.quiet_since >= self.agent.silence_ms / 1000:
                self.say(self.agent.reply, at=end)  # never before the frame that decided it has ended
                self.heard_speech = False

    def say(self, text: str, at: float) -> None:
        speech = synthesize(text).audio  # espeak-ng, 16 kHz float32
        self.outbox.append(OutputChunk(to_pcm16(speech).astype("<i2").tobytes(), 16000, at))

    async def poll_output(self, t_s: float) -> list[Received]:
        ready = [x for x in self.outbox if x.emitted_at_s <= t_s]
        self.outbox = [x for x in self.outbox if x.emitted_at_s > t_s]
        return ready

    async def close(self) -> None:
        self.outbox = []
