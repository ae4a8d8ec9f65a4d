"""The header every artifact file starts with: ``kind``, ``schema_version``, ``duplexeval``, ``signature``, ``inputs``.

Loaders check ``kind`` (and the schema version they understand) and refuse a file of another kind
with one line, so a compare.json is never read as a unified.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplexeval import __version__
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import Signature


def header(
    kind: str,
    schema_version: int,
    signature: Signature | None = None,
    inputs: Mapping[str, str] | None = None,
) -> JsonObject:
    """The leading keys of an artifact; merge the body after it (``{**header(...), **body}``) to keep them first."""
    out: JsonObject = {"kind": kind, "schema_version": schema_version, "duplexeval": __version__}
    if signature is not None:
        out["signature"] = signature.to_json()
    if inputs is not None:
        out["inputs"] = {k: inputs[k] for k in sorted(inputs)}
    return out


def check_kind(obj: Any, kind: str, path: str | Path, max_schema: int | None = None) -> JsonObject:
    """Return `obj` if it is an artifact of `kind` (and a schema version we read); else one-line InputError."""
    if not isinstance(obj, dict):
        raise InputError(f"{path}: not a duplexeval artifact (expected a JSON object of kind {kind!r})")
    got = obj.get("kind")
    if got != kind:
        raise InputError(f"{path}: is a {got!r} file, expected kind {kind!r}" if got
                         else f"{path}: has no 'kind'; expected a {kind!r} file")
    ver = obj.get("schema_version")
    if max_schema is not None and (not isinstance(ver, int) or isinstance(ver, bool) or ver > max_schema):
        raise InputError(f"{path}: {kind} schema_version {ver!r} is newer than this duplexeval reads (<= {max_schema})")
    return obj
