"""`loopback`: an in-process system served over a real protocol on 127.0.0.1 and driven through the network adapter.

`--system 'loopback:protocol=openai-realtime,serve=turn-based'` starts a loopback reference server
(in a background thread, on a free port) the first time a session opens, and drives it with the
protocol's client adapter: the whole network path (resampling, base64, deltas, receipt stamps,
playout from receipts, truncate/cancel) on a known system. The port is not a parameter, so the run
identity (and resume) does not depend on it. `client` holds extra client parameters and `faults` /
`options` the server's, and `serve` the served system's parameters, all separated by `;`
(e.g. `serve=turn-based:silence_ms=700;think_ms=0`, `client=dialect=beta;linger_s=1`, `faults=error@2`).
`replicas=N` starts N such servers and gives the client all their addresses (`url=ws://a,ws://b`), so the
sessions are spread over them as over real replicas (at most `max_sessions_per_url` each; `client=` sets it).
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import SampleInfo
from duplexeval.systems.net.faults import parse_faults
from duplexeval.systems.net.serve_cli import parse_options
from duplexeval.systems.net.server import SERVER_PROTOCOLS, ServerProcess, ServerThread, make_server, server_class
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import DEFAULT_CALL_TIMEOUT_S

_SERVERS: dict[tuple[str, str, str, str, bool, int], Any] = {}
_LOCK = threading.Lock()


def _split(value: str) -> list[str]:
    return [p.strip() for p in value.split(";") if p.strip()]


class _ThreadHandle:
    """A started ServerThread with its URL."""

    def __init__(self, th: Any, url: str) -> None:
        self.th, self._url = th, url

    def url(self) -> str:
        return self._url

    def stop(self) -> None:
        self.th.stop()


def _stop_all() -> None:
    for th in list(_SERVERS.values()):
        try:
            th.stop()
        except Exception:  # noqa: BLE001, S110 - exiting anyway
            pass


atexit.register(_stop_all)


@dataclass(frozen=True)
class Loopback:
    """Serve `serve` over `protocol` on 127.0.0.1 and drive it with that protocol's adapter."""

    name: ClassVar[str] = "loopback"
    wall_clock: ClassVar[bool] = True

    protocol: str = "openai-realtime"
    serve: str = "turn-based"
    client: str = ""
    faults: str = ""
    options: str = ""
    in_process: bool = False  # serve from a thread of this process instead of a `duplexeval serve` child
    replicas: int = 1  # how many servers to start; the client gets all their addresses

    def params(self) -> JsonObject:
        return asdict(self)

    @property
    def served(self) -> str:
        """The served system's spec (`;` separates its parameters inside this one's)."""
        return self.serve.replace(";", ",")

    def _client_spec(self, url: str) -> str:
        extra = ",".join(_split(self.client))
        return f"{self.protocol}:url={url}" + (f",{extra}" if extra else "")

    def version(self) -> str:
        served = make_system(self.served)
        client = make_system(self._client_spec("ws://127.0.0.1:1/"))
        return f"{client.version()}; served {served.name}: {served.version()}"

    def validate(self) -> None:
        if not 1 <= self.replicas <= 16:
            raise ValueError(f"replicas must be between 1 and 16, got {self.replicas}")
        if self.protocol not in SERVER_PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(SERVER_PROTOCOLS)}, got {self.protocol!r}")
        try:
            make_system(self.served)
            make_system(self._client_spec("ws://127.0.0.1:1/"))
            parse_faults(_split(self.faults))
            server_class(self.protocol).check_options(parse_options(_split(self.options)))
        except InputError as exc:
            raise ValueError(str(exc)) from None

    def _server_url(self) -> str:
        """The servers' addresses, comma-separated (started on first use, one per replica)."""
        urls = []
        for k in range(self.replicas):
            key = (self.protocol, self.serve, self.faults, self.options, self.in_process, k)
            with _LOCK:
                th = _SERVERS.get(key)
                if th is None:
                    if self.in_process:
                        srv = make_server(self.protocol, self.served, parse_faults(_split(self.faults)),
                                          options=parse_options(_split(self.options)))
                        th = ServerThread(srv).start()
                        th = _ThreadHandle(th, str(th.url(getattr(srv.session_cls, "default_path", "/"))))
                    else:
                        th = ServerProcess(self.protocol, self.served, _split(self.faults),
                                           parse_options(_split(self.options))).start()
                    _SERVERS[key] = th
            urls.append(str(th.url()))
        return ",".join(urls)

    def _client(self) -> Any:
        return make_system(self._client_spec(self._server_url()))

    async def open_session(self, info: SampleInfo) -> Any:
        return await self._client().open_session(info)

    async def run_sample(self, pcm16: Any, info: SampleInfo, call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> Any:
        """The client adapter's `run_sample` (replicas and their retries)."""
        return await self._client().run_sample(pcm16, info, call_timeout_s)
