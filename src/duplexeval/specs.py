"""Plugin specs, `NAME[:key=value,...]` or `module.path:Class[:key=value,...]`: one grammar for every plugin.

Systems, dialogue systems, EOT detectors, controllers, judges and ASR backends are all named this way
on the command line (docs/cli.md section 2). The parameters start at the first `:` that is followed by
`key=`, so a name may hold colons (`module:Class`, `baseline:silence`) and a value may hold colons
(URLs); a comma separates parameters only where the next part starts with `key=`, so a value may hold
commas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject, Kwargs

# `group.name` fills a dict-valued parameter (telephony's param.NAME)
_KEY = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)?"
_PARAMS_START = re.compile(rf":(?=\s*{_KEY}\s*=)")
_SPLIT = re.compile(rf",(?=\s*{_KEY}\s*=)")
_KEY_ONLY = re.compile(rf"^{_KEY}$")


def split_spec(spec: str, builtin: Callable[[str], bool] | None = None) -> tuple[str, str]:
    """`NAME:k=v,...` -> ("NAME", "k=v,..."); a spec without parameters -> (spec, "").

    `builtin(name)` says whether a name is a built-in one; the text after a built-in name's `:` is its
    parameters even when they are malformed (so the error is about them, not an unknown module)."""
    head, sep, tail = spec.partition(":")
    if sep and builtin is not None and builtin(head.strip()):
        return head.strip(), tail
    m = _PARAMS_START.search(spec)
    if m is None:
        name = spec.strip()
        return (name[:-1], "") if name.endswith(":") else (name, "")
    return spec[: m.start()].strip(), spec[m.end():]


def parse_spec(spec: str, flag: str, builtin: Callable[[str], bool] | None = None) -> tuple[str, dict[str, str]]:
    """The plugin's name and its raw `key=value` parameters (text; the plugin types them)."""
    name, rest = split_spec(spec, builtin)
    if not name:
        raise InputError(f"{flag} {spec!r}: no plugin name before the parameters")
    params: dict[str, str] = {}
    if rest.strip():
        for part in _SPLIT.split(rest):
            key, eq, value = part.partition("=")
            key = key.strip()
            if not eq or not _KEY_ONLY.match(key):
                raise InputError(f"{flag} {spec!r}: expected key=value, got {part!r}")
            if key in params:
                raise InputError(f"{flag} {spec!r}: {key} given twice")
            params[key] = value
    return name, params


def json_values(params: Mapping[str, str]) -> JsonObject:
    """Raw values read as JSON when they parse (numbers, true/false, null), else kept as text: how plugins
    without declared field types (detectors, controllers) receive their parameters."""
    out: JsonObject = {}
    for key, raw in params.items():
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def with_params(spec: str, items: Iterable[str]) -> str:
    """`spec` with more `key=value` parameters appended (how an old separate option joins the spec)."""
    name, rest = split_spec(spec)
    parts = [p for p in (rest, *items) if p]
    return f"{name}:{','.join(parts)}" if parts else name


def known_params(flag: str, spec: str, params: Mapping[str, str], known: Iterable[str]) -> None:
    """One line naming an unknown parameter and the known ones."""
    allowed = list(known)
    for key in params:
        if key not in allowed:
            raise InputError(f"{flag} {spec!r}: no parameter {key!r} (known: {', '.join(allowed) or 'none'})")


def typed_params(flag: str, spec: str, params: Mapping[str, str],
                 kinds: Mapping[str, Callable[[str], Any]]) -> Kwargs:
    """Each raw value read by its key's type (`int`, `float`, `str`, `Path`...): one line naming the key otherwise."""
    out: Kwargs = {}
    for key, value in params.items():
        kind = kinds[key]
        try:
            out[key] = kind(value)
        except ValueError:
            raise InputError(
                f"{flag} {spec!r}: {key}={value!r} is not a valid {getattr(kind, '__name__', 'value')}") from None
    return out
