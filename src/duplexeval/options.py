"""Repeatable `key=value` flags (`--rule`) as one dict; values read as JSON when they parse."""

from __future__ import annotations

from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.specs import json_values


def key_values(items: list[str] | None, flag: str) -> JsonObject:
    """key=value pairs; values parsed as JSON when they are (numbers, true/false, null), else kept as strings."""
    raw: dict[str, str] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise InputError(f"{flag}: expected key=value, got {item!r}")
        raw[k] = v
    return json_values(raw)
