"""The dialogue-manager protocol: timed events in, control tokens and text tokens out.

A manager runs the two-state machine of spec 004 (SPEAK / LISTEN) over one timeline. It sees only
what has arrived: user text chunks as the ASR delivers them, the end of user speech, the end of its
own playback, and timers it asked for. It answers each event with a list of actions:

- ``[S.SPEAK]`` listening -> speaking (answer, or cut in on the user); ``[S.LISTEN]`` speaking ->
  listening (yield); ``[C.SPEAK]`` / ``[C.LISTEN]`` keep the current state;
- any other string is a text token to be spoken (a text token while listening takes the turn);
- ``Wait(ms)`` asks for a ``timer`` event ``ms`` milliseconds later (a manager's own delay).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

S_SPEAK = "[S.SPEAK]"
S_LISTEN = "[S.LISTEN]"
C_SPEAK = "[C.SPEAK]"
C_LISTEN = "[C.LISTEN]"
CONTROL_TOKENS = (S_SPEAK, S_LISTEN, C_SPEAK, C_LISTEN)

USER_CHUNK = "user_chunk"
USER_END = "user_end"
PLAYBACK_DONE = "playback_done"
TIMER = "timer"
EVENT_KINDS = (USER_CHUNK, USER_END, PLAYBACK_DONE, TIMER)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing the manager is told, at ``t_us`` on the virtual clock (integer microseconds)."""

    kind: str
    t_us: int
    text: str = ""  # user_chunk: the chunk's text
    index: int = -1  # user_chunk: the chunk's index in the utterance
    clause_end: bool = False  # user_chunk: a clause ends here (a decision point)


@dataclass(frozen=True, slots=True)
class Wait:
    """Ask for a timer event after ``ms`` milliseconds."""

    ms: int


Action = str | Wait


@dataclass(frozen=True)
class CaseView:
    """What a manager may know before the case starts: never the user's words to come."""

    family: str  # "MiU" or "UiM"
    id: str
    context: tuple[tuple[str, str], ...]  # (role, text) prior turns
    machine_text: str = ""  # UiM: what the machine is saying when the case starts


@runtime_checkable
class DialogueManager(Protocol):
    """A system under test: ``reset`` per case, then ``on_event`` for each event in time order."""

    def reset(self, view: CaseView) -> None:
        """Forget the last case; `view` is all that may be known before this one starts."""
        ...

    def on_event(self, event: Event) -> Sequence[Action]:
        """The actions taken at ``event.t_us`` in answer to `event` (possibly none)."""
        ...
