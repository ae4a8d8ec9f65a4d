"""Baseline dialogue managers with known answers (spec 004), registered by name.

- ``half-duplex``: waits for the end of user speech, then ``delay_ms``, then answers; never cuts
  in; always yields when interrupted. On MiU its FTED is exactly ``delay_ms`` + the clock's
  first-token overhead, and every case ends in ``end``.
- ``eager``: cuts in at the first clause boundary (every MiU case with two or more clauses is a
  mid-utterance interruption); on UiM yields at the first chunk and answers it at once.
- ``keyword``: cuts in when a clause holds an error cue from a word list; on UiM yields on denial
  and topic-shift cues, keeps speaking on noise, acknowledges affirmation.

Replies are built from the words the manager heard (an echo), so an offline judge that looks for
the case's cue words can score them; they are baselines, not dialogue systems.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from duplexeval.dialogue.chat import ChatManager
from duplexeval.dialogue.protocol import (
    C_SPEAK,
    S_LISTEN,
    S_SPEAK,
    TIMER,
    USER_CHUNK,
    USER_END,
    Action,
    CaseView,
    Event,
    Wait,
)
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import guard, json_value, returned
from duplexeval.registry import Registry

_WORD = re.compile(r"[a-z0-9']+")


def words_of(text: str) -> list[str]:
    """Lower-case words without punctuation."""
    return _WORD.findall(text.lower())


@dataclass
class _Base:
    """Shared bookkeeping: family, what was heard, whether the turn was taken."""

    family: str = field(default="", init=False, repr=False)
    heard: list[str] = field(default_factory=list, init=False, repr=False)
    clause: list[str] = field(default_factory=list, init=False, repr=False)
    done: bool = field(default=False, init=False, repr=False)

    def reset(self, view: CaseView) -> None:
        self.family = view.family
        self.heard = []
        self.clause = []
        self.done = False

    def settings(self) -> JsonObject:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    def _hear(self, ev: Event) -> None:
        self.heard.append(ev.text)
        self.clause.append(ev.text)


@dataclass
class HalfDuplex(_Base):
    """Answers ``delay_ms`` after the end of user speech; yields to every interruption."""

    delay_ms: int = 500

    def on_event(self, ev: Event) -> Sequence[Action]:
        if ev.kind == USER_CHUNK:
            self._hear(ev)
            if self.family == "UiM" and len(self.heard) == 1:
                return [S_LISTEN]
            return []
        if ev.kind == USER_END:
            return [Wait(self.delay_ms)]
        if ev.kind == TIMER and not self.done:
            self.done = True
            return [S_SPEAK, "Okay,", *" ".join(self.heard).split()]
        return []


@dataclass
class Eager(_Base):
    """Cuts in at the first clause boundary; on UiM yields and answers the first chunk at once."""

    def on_event(self, ev: Event) -> Sequence[Action]:
        if self.done or ev.kind not in (USER_CHUNK, USER_END):
            return []
        if ev.kind == USER_CHUNK:
            self._hear(ev)
            if not ev.clause_end:
                return []
        self.done = True
        if self.family == "UiM":
            return [S_LISTEN, S_SPEAK, "Sure,", *" ".join(self.heard).split()]
        return [S_SPEAK, "Sorry", "to", "cut", "in,", "about", *" ".join(self.heard).split()[-4:]]


ERROR_CUES = ("never", "always", "everyone", "nobody", "every", "impossible", "definitely", "all")
DENIAL_CUES = ("no", "not", "wrong", "meant")
SHIFT_CUES = ("actually", "also", "what", "what's", "how", "instead", "question")
AFFIRM_CUES = ("yes", "yeah", "right", "exactly", "perfect", "great", "sounds")


@dataclass
class Keyword(_Base):
    """Word lists decide: an error cue in a MiU clause cuts in; UiM cue words pick the reaction."""

    error_cues: tuple[str, ...] = ERROR_CUES
    denial_cues: tuple[str, ...] = DENIAL_CUES
    shift_cues: tuple[str, ...] = SHIFT_CUES
    affirm_cues: tuple[str, ...] = AFFIRM_CUES
    reaction: str = field(default="", init=False, repr=False)

    def reset(self, view: CaseView) -> None:
        super().reset(view)
        self.reaction = ""

    def on_event(self, ev: Event) -> Sequence[Action]:
        if self.family == "UiM":
            return self._uim(ev)
        if self.done:
            return []
        if ev.kind == USER_CHUNK:
            self._hear(ev)
            if not ev.clause_end:
                return []
            hit = set(words_of(" ".join(self.clause))) & set(self.error_cues)
            self.clause = []
            if not hit:
                return []
            self.done = True
            return [S_SPEAK, "Sorry", "to", "cut", "in,", "but", "I", "don't", "think", "that", "is", "right."]
        if ev.kind == USER_END:
            self.done = True
            return [S_SPEAK, "Sure,", *" ".join(self.heard).split()[-4:]]
        return []

    def _uim(self, ev: Event) -> Sequence[Action]:
        if ev.kind == USER_CHUNK:
            self._hear(ev)
            if self.reaction:
                return []
            w = set(words_of(ev.text))
            if w & set(self.denial_cues):
                self.reaction = "denial"
                return [S_LISTEN]
            if w & set(self.shift_cues):
                self.reaction = "shift"
                return [S_LISTEN]
            if w & set(self.affirm_cues):
                self.reaction = "affirmation"
                return [C_SPEAK, "Great,", "glad", "that", "works."]
            return [C_SPEAK]
        if ev.kind == USER_END and self.reaction in ("denial", "shift") and not self.done:
            self.done = True
            lead = ["Sorry,", "my", "mistake:"] if self.reaction == "denial" else ["Sure,"]
            return [S_SPEAK, *lead, *" ".join(self.heard).split()]
        return []


def _load_builtins() -> None:
    SYSTEMS.register("half-duplex", HalfDuplex)
    SYSTEMS.register("eager", Eager)
    SYSTEMS.register("keyword", Keyword)

    SYSTEMS.register("openai-chat", ChatManager)


KIND = "dialogue system"
SYSTEMS: Registry[Any] = Registry(KIND, loader=_load_builtins)
BASELINES = ("half-duplex", "eager", "keyword")


def parse_params(pairs: Sequence[str]) -> dict[str, str]:
    """`key=value` strings (a spec's parameters) into a dict; one-line error on a bad one."""
    out: dict[str, str] = {}
    for p in pairs:
        key, eq, value = p.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise InputError(f"--system parameter {p!r}: expected key=value")
        if key in out:
            raise InputError(f"--system parameter {key} given twice")
        out[key] = value
    return out


def _coerce(name: str, key: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            low = raw.strip().lower()
            if low not in ("true", "false", "1", "0"):
                raise ValueError
            return low in ("true", "1")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            v = float(raw)
            if not math.isfinite(v):
                raise ValueError
            return v
        if isinstance(default, tuple):
            return tuple(w.strip() for w in raw.split("|") if w.strip())
        return raw
    except ValueError:
        raise InputError(f"--system {name}: {key}={raw!r} is not a valid {type(default).__name__}") from None


def make_manager(name: str, params: dict[str, str] | None = None) -> Any:
    """The manager `name` (registry name or `module:Class`) built with `params` checked against its fields."""
    factory = SYSTEMS.get(name)
    params = dict(params or {})
    if dataclasses.is_dataclass(factory) and isinstance(factory, type):
        fields = {f.name: f for f in dataclasses.fields(factory) if f.init}
        kwargs: dict[str, object] = {}
        for key, raw in params.items():
            if key not in fields:
                raise InputError(f"--system {name}: no parameter {key!r} (known: {', '.join(fields) or 'none'})")
            f = fields[key]
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else ""
            )
            kwargs[key] = _coerce(name, key, raw, default)
        manager = SYSTEMS.build(name, **kwargs)
    else:
        manager = SYSTEMS.build(name, **params)
    if not (callable(getattr(manager, "reset", None)) and callable(getattr(manager, "on_event", None))):
        raise InputError(f"system {name!r}: needs reset(view) and on_event(event) methods "
                         "(duplexeval.dialogue.protocol)")
    return guard(manager, KIND, name)


def manager_settings(manager: Any, name: str) -> JsonObject:
    """A manager's settings for the signature (its `settings()` if it has one: a dict of plain JSON values)."""
    manager = guard(manager, KIND, name)
    fn = getattr(manager, "settings", None)
    if callable(fn):
        out = returned(KIND, name, "settings", fn(), dict, "a dict of its settings")
        return json_value(KIND, name, "settings", {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()})
    return {}
