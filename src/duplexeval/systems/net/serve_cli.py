"""`duplexeval serve PROTOCOL --system NAME --port 0`: a loopback reference server for one protocol.

One command per entry of `server.SERVER_PROTOCOLS`; faults and protocol options are parsed here once.
The first line on stdout is `serving PROTOCOL (SYSTEM) on ws://127.0.0.1:PORT/...` (a harness reads the port).
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


def _command(protocol: str) -> Callable[..., None]:
    def command(
        system: str = typer.Option("turn-based", "--system", help="The in-process system to serve: NAME[:k=v,...] or module.path:Class[:k=v,...]."),
        port: int = typer.Option(0, "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0 = any free port, printed)."),
        fault: list[str] | None = typer.Option(None, "--fault", help="disconnect@S | error@S | stall@S | oversize@S | malformed@S | busy=N | jitter_ms=J | slow_start_ms=M (repeatable; S = seconds after the first input audio)."),
        option: list[str] | None = typer.Option(None, "--option", help="A protocol option key=value (repeatable), e.g. dialect=beta, speed=2 (see docs/network.md)."),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Log connections and faults on stderr."),
    ) -> None:
        from duplexeval.systems.net.faults import parse_faults
        from duplexeval.systems.net.server import make_server, run_forever

        logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(name)s: %(message)s")
        faults = parse_faults(fault or [])
        server = make_server(protocol, system, faults, port=port, options=parse_options(option or []))
        path = getattr(server.session_cls, "default_path", "/")

        def announce(url: str) -> None:
            typer.echo(f"serving {protocol} ({system}) on {url.rstrip('/')}{path}; faults: {faults.describe()}")

        try:
            run_forever(server, announce)
        except OSError as exc:
            raise InputError(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None

    command.__doc__ = f"Serve an in-process system over the {protocol} protocol on 127.0.0.1 (Ctrl-C stops it)."
    return command


def register(apps: Any) -> None:
    """Add `serve PROTOCOL` for every protocol server."""
    from duplexeval.systems.net.server import SERVER_PROTOCOLS

    for protocol in SERVER_PROTOCOLS:
        apps.serve.command(protocol)(_command(protocol))
