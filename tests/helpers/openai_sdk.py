"""Strict validation of realtime events against the installed `openai` SDK's own types, both dialects.

`TypeAdapter(<the SDK's event type>).validate_python(event, strict=True)` checks every field's type (the
event type is the member of the SDK's union of client or server events whose `type` it is); the
SDK's models allow extra fields, so `undeclared` also walks the validated model and lists every field the
SDK does not declare (a session object is held to the SDK's session object of its dialect, which declares
`id`, `object` and `expires_at`).
"""

from __future__ import annotations

import typing
from typing import Any

from openai.types.beta.realtime import RealtimeClientEvent as BetaClientEvent
from openai.types.beta.realtime import RealtimeServerEvent as BetaServerEvent
from openai.types.beta.realtime import Session as BetaSession
from openai.types.realtime import RealtimeClientEvent as GaClientEvent
from openai.types.realtime import RealtimeServerEvent as GaServerEvent
from openai.types.realtime import RealtimeSessionCreateResponse as GaSession
from pydantic import BaseModel, TypeAdapter


def _by_type(union: Any) -> dict[str, TypeAdapter[Any]]:
    """{event type: a TypeAdapter of the union member with that `type` literal}."""
    members = (typing.get_args(typing.get_args(union)[0]) if typing.get_origin(union) is typing.Annotated
               else typing.get_args(union))
    out = {}
    for m in members:
        for t in typing.get_args(m.model_fields["type"].annotation):
            out[t] = TypeAdapter(m)
    return out


SERVER = {"ga": _by_type(GaServerEvent), "beta": _by_type(BetaServerEvent)}
CLIENT = {"ga": _by_type(GaClientEvent), "beta": _by_type(BetaClientEvent)}
SESSION = {"ga": TypeAdapter(GaSession), "beta": TypeAdapter(BetaSession)}


def _validate(adapters: dict[str, TypeAdapter[Any]], event: dict[str, Any]) -> Any:
    adapter = adapters.get(event.get("type"))  # type: ignore[arg-type]
    if adapter is None:
        raise ValueError(f"the SDK has no event of type {event.get('type')!r} in this dialect")
    return adapter.validate_python(event, strict=True)


def undeclared(obj: Any, where: str = "") -> list[str]:
    """Every field of a validated SDK model (nested) that its type does not declare."""
    out: list[str] = []
    if isinstance(obj, BaseModel):
        for key in obj.model_extra or {}:
            out.append(f"{where}.{key}")
        for name in type(obj).model_fields:
            out += undeclared(getattr(obj, name), f"{where}.{name}")
    elif isinstance(obj, list):
        for i, x in enumerate(obj):
            out += undeclared(x, f"{where}.{i}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out += undeclared(v, f"{where}.{k}")
    return out


def check_server_event(dialect: str, event: dict[str, Any]) -> list[str]:
    """What is wrong with one server event for the SDK (empty: it validates strictly and declares everything)."""
    try:
        model = _validate(SERVER[dialect], event)
    except Exception as exc:  # a pydantic ValidationError names every problem
        return [f"{event.get('type')}: {exc}"]
    if event.get("type") in ("session.created", "session.updated"):
        session = event["session"]
        try:
            sess = SESSION[dialect].validate_python(session, strict=True)
        except Exception as exc:
            return [f"{event['type']}.session: {exc}"]
        return [f"{event['type']}.session{p}" for p in undeclared(sess)]
    return [f"{event['type']}{p}" for p in undeclared(model)]


def check_client_event(dialect: str, event: dict[str, Any]) -> list[str]:
    """What is wrong with one client event for the SDK (empty: it validates strictly and declares everything)."""
    try:
        model = _validate(CLIENT[dialect], event)
    except Exception as exc:
        return [f"{event.get('type')}: {exc}"]
    return [f"{event['type']}{p}" for p in undeclared(model)]
