"""Build a system from `NAME[:key=value,...]`, with one-line errors for unknown names, keys and bad values."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, cast

from duplexeval import redaction
from duplexeval.errors import InputError
from duplexeval.plugins import PluginError, call, returned
from duplexeval.registry import Registry
from duplexeval.specs import parse_spec
from duplexeval.systems.base import System


def _register_builtins() -> None:
    # Lazy: the network server imports this registry at `--help` time; the baselines bring VAD, TTS and audio I/O.
    from duplexeval.systems.baselines import BASELINES

    for name, cls in BASELINES.items():
        SYSTEMS.register(name, cls)
    for name, spec in {**NETWORK_SYSTEMS, **DEFERRED_IN_PROCESS}.items():
        SYSTEMS.register_deferred(name, spec)


# The built-ins, then the systems installed packages publish under the entry-point group `duplexeval.systems`.
SYSTEMS: Registry[type] = Registry("system", loader=_register_builtins)

# Network adapters, imported on first use (module:Class).
NETWORK_SYSTEMS: dict[str, str] = {
    "openai-realtime": "duplexeval.systems.net.openai_realtime:OpenAIRealtime",
    "ws-pcm": "duplexeval.systems.net.ws_pcm:WsPcm",
    "loopback": "duplexeval.systems.net.loopback:Loopback",
    "moshi": "duplexeval.systems.net.moshi:MoshiSystem",
    "native-duplex": "duplexeval.systems.net.native:NativeDuplexSystem",
    "telephony": "duplexeval.systems.net.telephony:Telephony",
    "pipecat-ws": "duplexeval.systems.net.pipecat_ws:PipecatWs",
    "webrtc": "duplexeval.systems.net.webrtc:WebRtc",
}
# In-process systems imported on first use: `pipecat` runs pipecat-ai's pipeline in this process (no wire).
DEFERRED_IN_PROCESS: dict[str, str] = {
    "pipecat": "duplexeval.systems.pipecat.inprocess:PipecatInProcess",
}
_PLUGIN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_.]*)(?::(.*))?$",
                     re.DOTALL)


def register_system(name: str, cls: type) -> None:
    """Make a dataclass system available under `name` (a different class under a taken name is an error)."""
    SYSTEMS.register(name, cls)


def split_plugin(spec: str) -> tuple[str, str] | None:
    """`module.path:Class[:k=v,...]` -> ("module.path:Class", "k=v,...") for a plugin spec, else None."""
    m = _PLUGIN.match(spec.strip())
    if m is None or m.group(1) in SYSTEMS:
        return None
    return f"{m.group(1)}:{m.group(2)}", m.group(3) or ""


def system_names() -> list[str]:
    """Every name `--system` accepts besides `module.path:Class`: the built-ins, then installed plugins."""
    return SYSTEMS.names(sort=False)


def _coerce(spec: str, key: str, raw: str, default: Any) -> Any:
    kind = type(default)
    try:
        if kind is bool:
            low = raw.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        if kind is int:
            return int(raw.strip())
        if kind is float:
            value = float(raw.strip())
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError
            return value
        return raw
    except ValueError:
        raise InputError(f"--system {spec!r}: {key}={raw!r} is not a valid {kind.__name__}") from None


def parse_system_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split `NAME[:k=v,...]` (or `module.path:Class[:k=v,...]`) into the name and raw values (no type checks yet)."""
    return parse_spec(spec, "--system", lambda name: name in SYSTEMS)


def make_system(spec: str) -> System:
    """Build the system `spec` names, with every parameter checked."""
    for url in redaction.urls_in(spec):  # before any message can echo the spec
        redaction.refuse_url_credentials(url, f"--system {spec.partition(':')[0].strip()}: a URL")
    name, raw = parse_system_spec(spec)
    if split_plugin(spec) is None and name not in SYSTEMS:
        raise InputError(f"--system {spec!r}: unknown system {name!r} (known: {', '.join(system_names())})")
    cls = SYSTEMS.get(name)  # a registered name (built-in or entry point) or `module.path:Class`
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise InputError(f"--system {spec!r}: {name} is not a dataclass (its fields are its parameters)")
    for attr in ("name", "params", "version", "open_session"):
        if not hasattr(cls, attr):
            raise InputError(f"--system {spec!r}: {name} does not implement the System protocol (no {attr})")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, object] = {}
    groups: dict[str, dict[str, str]] = {}
    for key, value in raw.items():
        if "." in key:  # `field.name=value` collects into the dict field `field` (telephony's `param.NAME`)
            prefix, _, sub = key.partition(".")
            f = fields.get(prefix)
            if f is None or f.default_factory is not dict:
                raise InputError(f"--system {spec!r}: {name} has no parameter group {prefix!r} (for {key}=...)")
            kwargs[prefix] = group = groups.setdefault(prefix, {})
            group[sub] = value
            continue
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise InputError(f"--system {spec!r}: {name} has no parameter {key!r} (known: {known})")
        kwargs[key] = _coerce(spec, key, value, fields[key].default)
    system = cast(System, call("system", name, "__init__", cls, **kwargs))  # the protocol was checked above
    check: Callable[[], None] | None = getattr(system, "validate", None)
    if check is not None:
        try:
            call("system", name, "validate", check)
        except PluginError as exc:
            if not isinstance(exc.__cause__, ValueError):
                raise
            raise InputError(f"--system {spec!r}: {exc.__cause__}") from None
    declared: Callable[[], Any] | None = getattr(system, "secrets", None)
    if declared is not None:  # what the system declares is redacted from every file and line of this process
        values = returned("system", name, "secrets", call("system", name, "secrets", declared), (tuple, list),
                          "a tuple of strings")
        redaction.register(*(v for v in values if isinstance(v, str)))
    return system
