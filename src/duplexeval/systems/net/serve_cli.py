"""`duplexeval serve PROTOCOL --system NAME --port 0`: a loopback reference server for one protocol.

One command per entry of `server.SERVER_PROTOCOLS`; faults and protocol options are parsed here once.
The first line on stdout is `serving PROTOCOL (SYSTEM) on ws://127.0.0.1:PORT/...` (a harness reads the port).
`serve moshi` also takes `--flavor` (which upstream server to behave like; the server option `flavor`).
"""

from __future__ import annotations

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


SYSTEM_OPT = typer.Option("turn-based", "--system", help="The in-process system to serve: NAME[:k=v,...] or module.path:Class[:k=v,...].")
PORT_OPT = typer.Option(0, "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0 = any free port, printed).")
FAULT_OPT = typer.Option(None, "--fault", help="disconnect@S | error@S | stall@S | oversize@S | malformed@S | busy=N | jitter_ms=J | slow_start_ms=M (repeatable; S = seconds after the first input audio).")
OPTION_OPT = typer.Option(None, "--option", help="A protocol option key=value (repeatable), e.g. dialect=beta, speed=2 (see docs/network.md).")
VERBOSE_OPT = typer.Option(False, "--verbose", "-v", help="Log connections and faults on stderr.")
FLAVOR_OPT = typer.Option("kyutai", "--flavor", help="Which server to behave like: kyutai (Kyutai's Python server), rust (the moshi-backend), personaplex (NVIDIA PersonaPlex).")


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


def register(apps: Any) -> None:
    """Add `serve PROTOCOL` for every protocol server."""
    from duplexeval.systems.net.server import SERVER_PROTOCOLS

    for protocol in SERVER_PROTOCOLS:
        apps.serve.command(protocol)(_command(protocol))
