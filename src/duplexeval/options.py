"""Repeatable `key=value` flags (`--rule`) as one dict; values read as JSON when they parse."""

from __future__ import annotations

import json
from typing import Any

from duplexeval.errors import InputError


def key_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """key=value pairs; values parsed as JSON when they are (numbers, true/false, null), else kept as strings."""
    out: dict[str, Any] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise InputError(f"{flag}: expected key=value, got {item!r}")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out
