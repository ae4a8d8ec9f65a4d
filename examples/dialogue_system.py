"""A duplex dialogue manager (spec 004): copy this file, change `on_event`, and score it.

    duplexeval dialogue synth --out cases.jsonl --n-miu 40 --n-uim 10
    duplexeval dialogue run --cases cases.jsonl --system dialogue_system:PatientListener:patience_ms=400 --out runs/mine
    duplexeval dialogue score runs/mine                              # FTED, PIR/PRR, precision, recall (offline judge)
    duplexeval dialogue run --cases cases.jsonl --system half-duplex --out runs/hd
    duplexeval dialogue compare runs/hd runs/mine                    # paired B - A, McNemar

Run them from this folder (a `module:Class` spec finds modules in the current folder). The manager sees
timed events (`user_chunk` as the ASR delivers words, `user_end`, `playback_done`, and the `timer`s it
asked for) and answers each with actions: control tokens (`[S.SPEAK]` take the turn, `[S.LISTEN]` yield)
and text tokens to speak; `Wait(ms)` asks for a timer. Its dataclass fields are its `key=value` parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from duplexeval.dialogue.protocol import S_LISTEN, S_SPEAK, TIMER, USER_CHUNK, USER_END, Action, CaseView, Event, Wait


@dataclass
class PatientListener:
    """Answers `patience_ms` after the user stops; when the user talks over it, yields unless it is noise."""

    patience_ms: int = 600
    heard: list[str] = field(default_factory=list, init=False)
    speaking: bool = field(default=False, init=False)
    answered: bool = field(default=False, init=False)

    def settings(self) -> dict[str, object]:
        """What goes into the signature: every parameter that changes a decision."""
        return {"patience_ms": self.patience_ms}

    def reset(self, view: CaseView) -> None:
        self.heard = []
        self.speaking = view.family == "UiM"  # in a UiM case the machine is talking when the case starts
        self.answered = False

    def on_event(self, event: Event) -> Sequence[Action]:
        if event.kind == USER_CHUNK:
            self.heard.append(event.text)
            if self.speaking and len(" ".join(self.heard).split()) >= 2:  # two words is not a cough: yield
                self.speaking = False
                return [S_LISTEN]
            return []
        if event.kind == USER_END and not self.answered:
            return [Wait(self.patience_ms)]
        if event.kind == TIMER and not self.answered:
            self.answered = True
            return [S_SPEAK, "I", "see,", *" ".join(self.heard).split()[-3:]]
        return []
