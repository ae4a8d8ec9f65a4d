"""`duplexeval serve PROTOCOL --system NAME --port 0`: a loopback reference server for one protocol.

One command per entry of `server.SERVER_PROTOCOLS`; faults and protocol options are parsed here once.
The first line on stdout is `serving PROTOCOL (SYSTEM) on ws://127.0.0.1:PORT/...` (a harness reads the port).
`serve moshi` also takes `--flavor` (which upstream server to behave like; the server option `flavor`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import typer

from duplexeval.errors import InputError


def parse_options(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, eq, raw = v.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--option {v!r}: expected key=value")
        out[key.strip()] = raw.strip()
    return out


SYSTEM_OPT = typer.Option("turn-based", "--system", help="The in-process system to serve: NAME[:k=v,...] or "
                                                         "module.path:Class[:k=v,...].")
PORT_OPT = typer.Option(0, "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0 = any free port, printed).")
FAULT_OPT = typer.Option(None, "--fault", help="disconnect@S | error@S | stall@S | oversize@S | malformed@S | busy=N | "
                                               "jitter_ms=J | slow_start_ms=M (repeatable; S = seconds after the first "
                                               "input audio).")
OPTION_OPT = typer.Option(None, "--option", help="A protocol option key=value (repeatable), e.g. dialect=beta, speed=2 "
                                                 "(see docs/network.md).")
VERBOSE_OPT = typer.Option(False, "--verbose", "-v", help="Log connections and faults on stderr.")
FLAVOR_OPT = typer.Option("kyutai", "--flavor", help="Which server to behave like: kyutai (Kyutai's Python server), "
                                                     "rust (the moshi-backend), personaplex (NVIDIA PersonaPlex).")


def _command(protocol: str) -> Callable[..., None]:
    if protocol == "moshi":
        def moshi_command(system: str = SYSTEM_OPT, port: int = PORT_OPT, fault: list[str] | None = FAULT_OPT,
                          option: list[str] | None = OPTION_OPT, flavor: str = FLAVOR_OPT,
                          verbose: bool = VERBOSE_OPT) -> None:
            _serve(protocol, system, port, fault, [f"flavor={flavor}", *(option or [])], verbose)

        moshi_command.__doc__ = ("Serve an in-process system over the moshi protocol on 127.0.0.1, behaving like the "
                                 "--flavor's server (Ctrl-C stops it).")
        return moshi_command

    def command(system: str = SYSTEM_OPT, port: int = PORT_OPT, fault: list[str] | None = FAULT_OPT,
                option: list[str] | None = OPTION_OPT, verbose: bool = VERBOSE_OPT) -> None:
        _serve(protocol, system, port, fault, option or [], verbose)

    command.__doc__ = f"Serve an in-process system over the {protocol} protocol on 127.0.0.1 (Ctrl-C stops it)."
    return command


def _serve(protocol: str, system: str, port: int, fault: list[str] | None, option: list[str], verbose: bool) -> None:
    from duplexeval.systems.net.faults import parse_faults
    from duplexeval.systems.net.server import make_server, run_forever

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(name)s: %(message)s")
    faults = parse_faults(fault or [])
    options = parse_options(option)
    server = make_server(protocol, system, faults, port=port, options=options)
    path = getattr(server.session_cls, "default_path", "/")

    flavor = f", flavor {options['flavor']}" if "flavor" in options else ""

    def announce(url: str) -> None:
        typer.echo(f"serving {protocol} ({system}{flavor}) on {url.rstrip('/')}{path}; faults: {faults.describe()}")

    try:
        run_forever(server, announce)
    except OSError as exc:
        raise InputError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None


def webrtc_command(system: str = SYSTEM_OPT, port: int = PORT_OPT, fault: list[str] | None = FAULT_OPT,
                   verbose: bool = VERBOSE_OPT) -> None:
    """Serve an in-process system over WebRTC (SmallWebRTC offer/answer at /api/offer, Opus) on 127.0.0.1."""
    import asyncio

    from duplexeval.systems.net.faults import parse_faults
    from duplexeval.systems.net.server import ServeConfig
    from duplexeval.systems.registry import make_system

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(name)s: %(message)s")
    faults = parse_faults(fault or [])
    served = make_system(system)
    try:
        from duplexeval.systems.net.webrtc_server import WebRtcLoopback
    except ImportError as exc:
        raise InputError(f"serve webrtc needs aiortc: pip install 'duplexeval[webrtc]' ({exc})") from None
    server = WebRtcLoopback(ServeConfig(served, faults), port=port)

    async def main() -> None:
        await server.start()
        typer.echo(f"serving webrtc ({system}) on {server.url()}; faults: {faults.describe()}")
        import sys

        sys.stdout.flush()
        await asyncio.Future()

    try:
        asyncio.run(main())
    except OSError as exc:
        raise InputError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None


def _bool(flag: str, value: str) -> bool:
    low = value.strip().lower()
    if low not in ("true", "false"):
        raise InputError(f"{flag} {value!r}: expected true or false")
    return low == "true"


def pipecat_command(
    transport: str = typer.Option("telephony", "--transport",
                                  help="telephony (a carrier's media stream: twilio, telnyx, plivo, exotel, told apart "
                                       "by pipecat) | pipecat-ws (protobuf frames) | webrtc (SmallWebRTC "
                                       "offer/answer)."),
    turn: str = typer.Option("vad", "--turn", help="vad (Silero VAD, the turn ends stop_secs after speech) | "
                                                   "smart-turn (pipecat's Smart Turn v3 decides)."),
    stop_secs: float = typer.Option(0.2, "--stop-secs", help="Silero VAD's stop_secs (pipecat's default 0.2)."),
    allow_interruptions: str = typer.Option("true", "--allow-interruptions",
                                            help="true | false: whether the user's speech interrupts the bot "
                                                 "(pipecat's VADUserTurnStartStrategy)."),
    speech_timeout: float = typer.Option(0.0, "--speech-timeout",
                                         help="vad: the extra wait of pipecat's SpeechTimeoutUserTurnStopStrategy "
                                              "after VAD's stop (its default is 0.6)."),
    think_ms: int = typer.Option(300, "--think-ms", help="The scripted responder's think time after a user turn ends."),
    reply: str | None = typer.Option(None, "--reply", help="The reply text (default: the turn-based baseline's)."),
    sample_rate: int = typer.Option(0, "--sample-rate", help="The pipeline's audio rate (0 = 8000 for telephony, "
                                                             "16000 otherwise)."),
    warm: int = typer.Option(16, "--warm", min=0, max=256, help="Speech and turn analyzers kept built ahead of the "
                                                                "calls (their model load is most of a call's start)."),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0 = any free port, printed)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="pipecat's log at DEBUG on stderr (else WARNING)."),
) -> None:
    """Serve the reference pipecat bot (pipecat's own transport, VAD, Smart Turn and turn handling; offline) on 127.0.0.1."""  # noqa: E501 - typer prints this line as the summary
    from duplexeval.systems.pipecat.stack import TRANSPORTS, BotConfig

    cfg = BotConfig(transport=transport, turn=turn, stop_secs=stop_secs,
                    allow_interruptions=_bool("--allow-interruptions", allow_interruptions),
                    speech_timeout_s=speech_timeout, think_ms=think_ms, sample_rate=sample_rate)
    if reply is not None:
        cfg = dataclasses.replace(cfg, reply=reply)
    try:
        if transport not in TRANSPORTS:
            raise ValueError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        cfg.validate()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:
        from duplexeval.systems.pipecat.serve import serve
    except ImportError as exc:
        raise InputError(f"serve pipecat needs the pipecat extra: pip install 'duplexeval[pipecat]' ({exc})") from None

    def announce(url: str) -> None:
        typer.echo(f"serving pipecat ({cfg.describe()}) on {url}; faults: none", color=False)
        import sys

        sys.stdout.flush()

    try:
        serve(cfg, port, announce, verbose, warm)
    except OSError as exc:
        raise InputError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None


def register(apps: Any) -> None:
    """Add `serve PROTOCOL` for every protocol server, and `serve pipecat` (the reference bot)."""
    from duplexeval.systems.net.server import SERVER_PROTOCOLS

    for protocol in SERVER_PROTOCOLS:
        apps.serve.command(protocol)(_command(protocol))
    apps.serve.command("webrtc")(webrtc_command)
    apps.serve.command("pipecat")(pipecat_command)
