"""Dialogue cases (spec 004): typed, strict records for the two families, machine-interrupts-user (MiU)
and user-interrupts-machine (UiM).

Validation is strict (no type coercion, no extra keys, no inf/nan) so a malformed case is refused
with one line naming the file, the line and the problem, never half-read. Times are seconds on the
case's speech clock; the simulator turns them into integer microseconds.
"""

from __future__ import annotations

import re
import string
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"  # case ids name evidence rows and cache entries
REASONS = ("noise", "denial", "affirmation", "shift")
Reason = Literal["noise", "denial", "affirmation", "shift"]
Behaviour = Literal["continue", "yield", "acknowledge"]

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)
_TRAILING_PUNCT = re.compile("[" + re.escape(string.punctuation + "…。，！？") + r"\s]+$")


def strip_trailing_punctuation(text: str) -> str:
    """Streaming ASR emits no punctuation; a full stop would leak the end of the sentence (notes 1)."""
    return _TRAILING_PUNCT.sub("", text.strip())


class Chunk(BaseModel):
    """One piece of timed speech text: ``[start_s, end_s]`` on the case's speech clock."""

    model_config = _STRICT

    text: str = Field(min_length=1)
    start_s: float = Field(ge=0)
    end_s: float = Field(ge=0)

    @field_validator("text")
    @classmethod
    def _strip(cls, v: str) -> str:
        out = strip_trailing_punctuation(v)
        if not out:
            raise ValueError("chunk text is empty once trailing punctuation is stripped")
        return out

    @model_validator(mode="after")
    def _order(self) -> Chunk:
        if self.end_s < self.start_s:
            raise ValueError(f"chunk ends ({self.end_s}) before it starts ({self.start_s})")
        return self


class Turn(BaseModel):
    """One prior turn of the dialogue context."""

    model_config = _STRICT

    role: Literal["user", "assistant"]
    text: str = Field(min_length=1)


def _check_chunks(chunks: list[Chunk], what: str) -> None:
    for i in range(1, len(chunks)):
        if chunks[i].start_s < chunks[i - 1].end_s:
            raise ValueError(f"{what} chunk {i} starts at {chunks[i].start_s} before chunk {i - 1} ends at {chunks[i - 1].end_s}")


class MiUExpected(BaseModel):
    """Labels for the offline judge: from which boundary a cut-in is appropriate (None: never), and
    words an appropriate reply mentions (any one suffices; empty: any non-empty reply)."""

    model_config = _STRICT

    cut_in_from: int | None = Field(ge=0)
    reply_cues: list[str] = Field(default_factory=list)
    kind: str = ""  # what makes the case (error, informative, complete), for breakdowns only


class MiUCase(BaseModel):
    """Machine interrupts user: the user's last utterance arrives chunk by chunk; a decision is asked
    at each clause boundary (an index into ``chunks``; the last chunk is always one)."""

    model_config = _STRICT

    family: Literal["MiU"]
    id: str = Field(pattern=ID_PATTERN)
    context: list[Turn] = Field(default_factory=list)
    chunks: list[Chunk] = Field(min_length=1)
    boundaries: list[int] = Field(min_length=1)
    expected: MiUExpected | None = None
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> MiUCase:
        _check_chunks(self.chunks, "utterance")
        b = self.boundaries
        if any(x < 0 or x >= len(self.chunks) for x in b):
            raise ValueError(f"boundaries must index chunks 0..{len(self.chunks) - 1}, got {b}")
        if any(b[i] <= b[i - 1] for i in range(1, len(b))):
            raise ValueError(f"boundaries must be strictly increasing, got {b}")
        if b[-1] != len(self.chunks) - 1:
            raise ValueError(f"the last chunk ({len(self.chunks) - 1}) must be the last boundary, got {b}")
        exp = self.expected
        if exp is not None and exp.cut_in_from is not None and exp.cut_in_from >= len(b):
            raise ValueError(f"expected.cut_in_from {exp.cut_in_from} is not a boundary index (0..{len(b) - 1})")
        return self

    @property
    def end_s(self) -> float:
        """End of user speech."""
        return self.chunks[-1].end_s


class UiMExpected(BaseModel):
    """Labels for the offline judge: the right behaviour and words an appropriate reply mentions."""

    model_config = _STRICT

    behaviour: Behaviour
    reply_cues: list[str] = Field(default_factory=list)


class Interruption(BaseModel):
    """The user's interruption: its reason and its timed chunks (the first start is its time)."""

    model_config = _STRICT

    reason: Reason
    chunks: list[Chunk] = Field(min_length=1)

    @property
    def start_s(self) -> float:
        return self.chunks[0].start_s

    @property
    def end_s(self) -> float:
        return self.chunks[-1].end_s

    @property
    def text(self) -> str:
        return " ".join(c.text for c in self.chunks)


class UiMCase(BaseModel):
    """User interrupts machine: the machine is saying ``machine`` (timed chunks) when the user cuts in."""

    model_config = _STRICT

    family: Literal["UiM"]
    id: str = Field(pattern=ID_PATTERN)
    context: list[Turn] = Field(default_factory=list)
    machine: list[Chunk] = Field(min_length=1)
    interruption: Interruption
    expected: UiMExpected | None = None
    source: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> UiMCase:
        _check_chunks(self.machine, "machine")
        _check_chunks(self.interruption.chunks, "interruption")
        t = self.interruption.start_s
        if t < self.machine[0].start_s or t > self.machine[-1].end_s:
            raise ValueError(
                f"interruption starts at {t}, outside the machine's utterance "
                f"[{self.machine[0].start_s}, {self.machine[-1].end_s}]: the machine must be speaking"
            )
        return self


Case = Annotated[MiUCase | UiMCase, Field(discriminator="family")]
