"""Synth scripts: read a YAML/JSON script, validate it and apply defaults (format: docs/synth.md)."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import yaml

from duplexeval.errors import InputError
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import (
    subset_order,
    validate_sample_id,
    validate_subset,
)
from duplexeval.jsonio import dumps, read_text, sha256_bytes
from duplexeval.jsontypes import JsonObject


@dataclass(frozen=True)
class Voice:
    """The espeak-ng voice of a sample: voice name, rate (words per minute) and pitch (0-100)."""

    voice: str
    rate: int
    pitch: int

    def to_json(self) -> JsonObject:
        return {"voice": self.voice, "rate": self.rate, "pitch": self.pitch}


DEFAULT_VOICE = Voice("en-us", 160, 50)


@dataclass(frozen=True)
class Pause:
    """A `{pause: seconds}` item of a sample's `parts`: silence between two speech parts."""

    seconds: float

    def to_json(self) -> JsonObject:
        return {"pause": self.seconds}


Part: TypeAlias = str | Pause  # a speech part (its text) or a pause
SpecValue: TypeAlias = str | float | tuple[Part, ...]


@dataclass(frozen=True)
class SampleSpec:
    """One normalised sample of a script: subset, id, voice, and the task's keys (`SynthRecipe.keys`, in their
    declared order, defaults applied): `parts` a tuple of speech and `Pause` items, any other required key a text,
    the rest numbers of seconds."""

    subset: str
    id: str
    voice: Voice
    values: Mapping[str, SpecValue]

    def text(self, key: str) -> str:
        v = self.values[key]
        if not isinstance(v, str):
            raise TypeError(f"sample {self.subset}/{self.id}: {key!r} is not a text")
        return v

    def seconds(self, key: str) -> float:
        v = self.values[key]
        if not isinstance(v, float):
            raise TypeError(f"sample {self.subset}/{self.id}: {key!r} is not a number of seconds")
        return v

    @property
    def parts(self) -> tuple[Part, ...]:
        v = self.values["parts"]
        if not isinstance(v, tuple):
            raise TypeError(f"sample {self.subset}/{self.id}: 'parts' is not a list of parts")
        return v

    def to_json(self) -> JsonObject:
        out: JsonObject = {"subset": self.subset, "id": self.id, **self.voice.to_json()}
        for k, v in self.values.items():
            out[k] = [p.to_json() if isinstance(p, Pause) else p for p in v] if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class Script:
    """A normalised synth script: every sample has every key, defaults applied; `sha256` is of its canonical JSON."""

    name: str
    samples: tuple[SampleSpec, ...]
    source: str

    def to_json(self) -> JsonObject:
        return {"name": self.name, "samples": [s.to_json() for s in self.samples]}

    @property
    def sha256(self) -> str:
        return sha256_bytes(dumps(self.to_json()).encode("utf-8"))


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read a YAML or JSON synth script and validate it (one-line InputError naming file and sample)."""
    path = Path(path)
    text = read_text(path)
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: invalid YAML/JSON: {str(exc).splitlines()[0]}") from None
    return parse_script(obj, str(path))


def _num(v: Any, where: str, key: str, lo: float = 0.0, hi: float = 600.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
        raise InputError(f"{where}: '{key}' must be a number in [{lo:g}, {hi:g}], got {v!r}")
    return float(v)


def _text(v: Any, where: str, key: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise InputError(f"{where}: '{key}' must be a non-empty string")
    return " ".join(v.split())


def _parts(v: Any, where: str, need_pause: bool, task: str) -> tuple[Part, ...]:
    if not isinstance(v, list) or not v:
        raise InputError(f"{where}: 'parts' must be a non-empty list of strings and {{pause: seconds}} items")
    out: list[Part] = []
    for i, p in enumerate(v):
        if isinstance(p, str):
            out.append(_text(p, where, f"parts[{i}]"))
        elif isinstance(p, dict) and set(p) == {"pause"}:
            out.append(Pause(_num(p["pause"], where, f"parts[{i}].pause", 0.05, 60.0)))
        else:
            raise InputError(f"{where}: parts[{i}] must be a string or {{pause: seconds}}, got {p!r}")
    if isinstance(out[0], Pause) or isinstance(out[-1], Pause):
        raise InputError(f"{where}: 'parts' must start and end with speech")
    if any(isinstance(a, Pause) and isinstance(b, Pause) for a, b in itertools.pairwise(out)):
        raise InputError(f"{where}: two pauses in a row in 'parts'")
    if need_pause and not any(isinstance(p, Pause) for p in out):
        raise InputError(f"{where}: a {task.replace('_', '-')} sample needs at least one {{pause: seconds}} in 'parts'")
    return tuple(out)


def _voice_fields(obj: Mapping[str, object], base: Voice, where: str) -> Voice:
    voice = obj.get("voice", base.voice)
    if not isinstance(voice, str) or not voice or any(c.isspace() for c in voice):
        raise InputError(f"{where}: 'voice' must be an espeak-ng voice name such as en-us or en-us+f3")
    rate = obj.get("rate", base.rate)
    pitch = obj.get("pitch", base.pitch)
    if isinstance(rate, bool) or not isinstance(rate, int) or not 80 <= rate <= 450:
        raise InputError(f"{where}: 'rate' must be an integer in 80..450 words/min, got {rate!r}")
    if isinstance(pitch, bool) or not isinstance(pitch, int) or not 0 <= pitch <= 100:
        raise InputError(f"{where}: 'pitch' must be an integer in 0..100, got {pitch!r}")
    return Voice(voice, rate, pitch)


def parse_script(obj: Any, source: str = "<script>") -> Script:
    """Validate a parsed script object and apply defaults."""
    if not isinstance(obj, dict):
        raise InputError(f"{source}: a synth script is a mapping with 'name' and 'samples'")
    unknown = set(obj) - {"name", "defaults", "samples"}
    if unknown:
        raise InputError(f"{source}: unknown top-level key(s) {sorted(unknown)} (allowed: name, defaults, samples)")
    name = obj.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise InputError(f"{source}: 'name' must be a non-empty string")
    defaults = obj.get("defaults", {}) or {}
    if not isinstance(defaults, dict) or set(defaults) - set(DEFAULT_VOICE.to_json()):
        raise InputError(f"{source}: 'defaults' may only set voice, rate, pitch")
    base = _voice_fields(defaults, DEFAULT_VOICE, f"{source}: defaults")
    raw = obj.get("samples")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{source}: 'samples' must be a non-empty list")
    seen: set[tuple[str, str]] = set()
    samples: list[SampleSpec] = []
    for i, s in enumerate(raw):
        if not isinstance(s, dict):
            raise InputError(f"{source}: samples[{i}] must be a mapping")
        subset = validate_subset(s.get("subset"), f"{source}: samples[{i}]")
        sid = s.get("id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        sid = validate_sample_id(sid, f"{source}: samples[{i}]")
        where = f"{source}: sample {subset}/{sid}"
        owner = task_of(subset)
        task = owner.name
        if owner.synth is None:
            raise InputError(f"{where}: subset {subset} (task {task}) cannot be synthesized")
        owner.dataset.check_id(subset, sid, where)
        if (subset, sid) in seen:
            raise InputError(f"{where}: duplicate sample")
        seen.add((subset, sid))
        spec = owner.synth.keys
        unknown = set(s) - {"subset", "id", "voice", "rate", "pitch"} - set(spec)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {sorted(unknown)} for task {task} (allowed: {', '.join(spec)}, "
                             "voice, rate, pitch)")
        voice = _voice_fields(s, base, where)
        values: dict[str, SpecValue] = {}
        for key, default in spec.items():
            if default is None:  # required content
                if key not in s:
                    raise InputError(f"{where}: missing '{key}'")
                values[key] = (_parts(s[key], where, owner.synth.parts_need_pause, task) if key == "parts"
                               else _text(s[key], where, key))
            else:
                values[key] = _num(s.get(key, default), where, key)
        samples.append(SampleSpec(subset, sid, voice, values))
    order = subset_order()
    samples.sort(key=lambda d: (order.index(d.subset), _id_key(d.id)))
    return Script(name=name, samples=tuple(samples), source=source)


def _id_key(sid: str) -> tuple[int, int, str]:
    return (0, int(sid), "") if sid.isdigit() else (1, 0, sid)
