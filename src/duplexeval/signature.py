"""Signatures: every setting that changes a number, stored in full and printed as one compact line.

sacrebleu's idea: a number is only comparable with one made the same way, so every artifact carries
the definitions version, duplexeval's version, the models (with hashes), the settings and the input
hashes, and every printed table ends with the compact form, e.g.
``fdb-v1.0-unified-4|asr:whisper-align:tiny.en@1a5afae0|vad:silero-6.2.3@1a153a22:t0.5,s250|boot:2000@0``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from duplexeval import __version__
from duplexeval.jsontypes import JsonObject
from duplexeval.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

HASH_CHARS = 8  # hash prefix in the compact line


def short_hash(h: str | None) -> str:
    return "none" if not h else h[:HASH_CHARS]


@dataclass(frozen=True)
class Component:
    """One part of a signature: a name, an optional version/model and hash, and its settings."""

    name: str
    value: str = ""
    hash: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    detail: Mapping[str, Any] = field(default_factory=dict)  # stored in full, never printed (e.g. every ASR option)

    def compact(self) -> str:
        out = f"{self.name}:{self.value}" if self.value else self.name
        if self.hash:
            out += f"@{short_hash(self.hash)}"
        if self.settings:
            out += ":" + ",".join(f"{k}{_fmt(v)}" for k, v in self.settings.items())
        return out

    def to_json(self) -> JsonObject:
        js: JsonObject = {"name": self.name, "value": self.value, "hash": self.hash}
        js["settings"] = {k: self.settings[k] for k in self.settings}
        if self.detail:
            js["detail"] = {k: self.detail[k] for k in self.detail}
        return js


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


@dataclass(frozen=True)
class Signature:
    """The definitions version plus components in a fixed order; ``compact()`` is the printed line."""

    definitions: str
    components: tuple[Component, ...] = ()
    inputs: Mapping[str, str] = field(default_factory=dict)  # name -> SHA-256 of what the numbers came from
    version: str = __version__

    def with_bootstrap(self, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Signature:
        boot = Component("boot", f"{resamples}@{seed}")
        return Signature(self.definitions, (*self.components, boot), self.inputs, self.version)

    def compact(self) -> str:
        parts = [self.definitions, *(c.compact() for c in self.components)]
        parts.append(f"v:{self.version}")
        return "|".join(parts)

    def to_json(self) -> JsonObject:
        return {
            "definitions": self.definitions,
            "duplexeval": self.version,
            "components": [c.to_json() for c in self.components],
            "inputs": {k: self.inputs[k] for k in sorted(self.inputs)},
            "compact": self.compact(),
        }

    @classmethod
    def from_json(cls, js: Mapping[str, Any]) -> Signature:
        comps = tuple(
            Component(c["name"], c.get("value", ""), c.get("hash"), dict(c.get("settings") or {}),
                      dict(c.get("detail") or {}))
            for c in js.get("components", [])
        )
        return cls(js["definitions"], comps, dict(js.get("inputs") or {}), js.get("duplexeval", __version__))
