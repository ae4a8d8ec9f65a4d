"""Resume, refuse or `--force`: what a rerun does when its result is already there (docs/cli.md section 4).

Two results were made the same way from the same files when their headers (`artifacts.header`: kind,
signature, inputs) agree; duplexeval's own version is left out, since the definitions version inside
the signature already changes whenever a number's meaning does. `check_replace` says whether an
existing result is this run's (rewrite it, or skip the work) and refuses, in one line naming the first
difference, one that is not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplexeval.errors import RefusalError
from duplexeval.jsontypes import JsonObject
from duplexeval.signature import short_hash

NOT_OURS = "something duplexeval did not write"


def read_header(path: str | Path) -> JsonObject | None:
    """The header of a JSON or JSONL result at `path` (its first object), {} when it has none, None when absent."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        with open(p, encoding="utf-8") as fh:
            text = fh.read(1 << 22) if p.suffix.lower() == ".json" else fh.readline()
        obj = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) and "kind" in obj else {}


def _components(sig: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for c in sig.get("components") or ():
        text = c.get("name", "") + (f":{c['value']}" if c.get("value") else "") + (
            f"@{short_hash(c['hash'])}" if c.get("hash") else "")
        settings = c.get("settings") or {}
        if settings:
            text += ":" + ",".join(f"{k}{v}" for k, v in settings.items())
        out[str(c.get("name"))] = text + (" (+details)" if c.get("detail") else "")
    return out


def _detail(sig: Mapping[str, Any], name: str) -> Any:
    return next((c.get("detail") for c in sig.get("components") or () if c.get("name") == name), None)


def difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """How `old` was made differently from `new` (the first difference, in words), or None when they agree."""
    if old.get("kind") != new.get("kind"):
        return f"holds {old.get('kind') or NOT_OURS}, not {new.get('kind')}"
    oi, ni = dict(old.get("inputs") or {}), dict(new.get("inputs") or {})
    for key in sorted(set(oi) | set(ni)):
        if oi.get(key) != ni.get(key):
            return f"was made from other inputs ({key}: {short_hash(oi.get(key))} there, {short_hash(ni.get(key))} now)"
    osig, nsig = dict(old.get("signature") or {}), dict(new.get("signature") or {})
    if osig.get("definitions") != nsig.get("definitions"):
        return f"was made by other definitions ({osig.get('definitions')} there, {nsig.get('definitions')} now)"
    oc, nc = _components(osig), _components(nsig)
    for name in [*nc, *(n for n in oc if n not in nc)]:
        if oc.get(name) != nc.get(name) or _detail(osig, name) != _detail(nsig, name):
            return f"was made with other settings ({name}: {oc.get(name, 'none')} there, {nc.get(name, 'none')} now)"
    if dict(osig.get("inputs") or {}) != dict(nsig.get("inputs") or {}):
        return "was made from other inputs (the signature's input hashes differ)"
    return None


def check_replace(path: str | Path, new: Mapping[str, Any], force: bool, elsewhere: str | None = "--out",
                  old: Mapping[str, Any] | None = None) -> bool:
    """True when `path` holds this run's result already (the caller may skip the work or rewrite the same
    bytes); False when there is nothing there or `force`; a RefusalError naming the difference otherwise
    (`elsewhere`: the option that writes somewhere else instead, named in the refusal). `old`: the header
    when the caller read it itself (a file that is not JSON, such as parquet)."""
    old = read_header(path) if old is None else old
    if old is None or force:
        return False
    diff = difference(old, new)
    if diff is not None:
        other = f" (or write elsewhere with {elsewhere})" if elsewhere else ""
        raise RefusalError(f"{path}: exists and {diff}; pass --force to replace it{other}")
    return True
