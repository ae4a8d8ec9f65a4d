"""Start and stop the reference bot as a child process (`duplexeval serve pipecat ...`) for tests and benchmarks.

Its own interpreter, as a deployed bot is; the URL comes from the first line it prints. No pipecat import here.
"""

from __future__ import annotations

from duplexeval.systems.net.server import ServerProcess
from duplexeval.systems.pipecat.stack import BotConfig

CLIENT_SYSTEM = {"telephony": "telephony", "pipecat-ws": "pipecat-ws", "webrtc": "webrtc"}


class BotProcess(ServerProcess):
    """`duplexeval serve pipecat` with `cfg`, on a free port (use as a context manager; `client()` is the client
    spec)."""

    def __init__(self, cfg: BotConfig, warm: int = 16, start_timeout_s: float = 120.0) -> None:
        import sys

        super().__init__("pipecat", "", start_timeout_s=start_timeout_s)
        self.cfg = cfg
        self.args = [sys.executable, "-m", "duplexeval", "serve", "pipecat", "--transport", cfg.transport,
                     "--turn", cfg.turn, "--stop-secs", repr(cfg.stop_secs),
                     "--allow-interruptions", "true" if cfg.allow_interruptions else "false",
                     "--speech-timeout", repr(cfg.speech_timeout_s), "--think-ms", str(cfg.think_ms),
                     "--reply", cfg.reply, "--sample-rate", str(cfg.sample_rate), "--warm", str(warm), "--port", "0"]

    def client(self, extra: str = "") -> str:
        """The `--system` spec that reaches this bot (`extra`: more client parameters, e.g. `dialect=plivo`)."""
        spec = f"{CLIENT_SYSTEM[self.cfg.transport]}:url={self.url()}"
        return spec + (f",{extra}" if extra else "")
