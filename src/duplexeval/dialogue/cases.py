"""Dialogue cases (spec 004): typed, strict records for the two families, machine-interrupts-user (MiU)
and user-interrupts-machine (UiM).

Built on the project's schema layer (``duplexeval.schemas.base``): strict types, no extra keys, finite
times within a day, ids usable as names, no control characters, so a malformed case is refused with
one line naming the file, the line and the problem, never half-read. Times are seconds on the case's
speech clock; the simulator turns them into integer microseconds.
"""

from __future__ import annotations

import re
import string
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from duplexeval.schemas.base import NonNegTime, Record, Text, fail, is_safe_id

REASONS = ("noise", "denial", "affirmation", "shift")
Reason = Literal["noise", "denial", "affirmation", "shift"]
Behaviour = Literal["continue", "yield", "acknowledge"]



def _case_id(v: str) -> str:
    if not is_safe_id(v):
        raise fail("'id' must be 1-128 letters, digits, '.', '_' or '-' starting with a letter or digit, without "
                   f"'..', got {v!r}")
    return v


CaseId = Annotated[str, AfterValidator(_case_id)]  # ids name evidence rows
_TRAILING_PUNCT = re.compile("[" + re.escape(string.punctuation + "…。，！？") + r"\s]+$")


def strip_trailing_punctuation(text: str) -> str:
    """Streaming ASR emits no punctuation; a full stop would leak the end of the sentence (notes 1)."""
    return _TRAILING_PUNCT.sub("", text.strip())


class Chunk(Record):
    """One piece of timed speech text: ``[start_s, end_s]`` on the case's speech clock."""

    text: Text = Field(min_length=1)
    start_s: NonNegTime
    end_s: NonNegTime

    @field_validator("text")
    @classmethod
    def _strip(cls, v: str) -> str:
        out = strip_trailing_punctuation(v)
        if not out:
            raise fail("'text' is empty once trailing punctuation is stripped")
        return out

    @model_validator(mode="after")
    def _order(self) -> Chunk:
        if self.end_s < self.start_s:
            raise fail(f"chunk ends ({self.end_s}) before it starts ({self.start_s})")
        return self


class Turn(Record):
    """One prior turn of the dialogue context."""

    role: Literal["user", "assistant"]
    text: Text = Field(min_length=1)


def _check_chunks(chunks: list[Chunk], what: str) -> None:
    for i in range(1, len(chunks)):
        if chunks[i].start_s < chunks[i - 1].end_s:
            raise fail(f"{what} chunk {i} starts at {chunks[i].start_s} before chunk {i - 1} ends at "
                       f"{chunks[i - 1].end_s}")


class MiUExpected(Record):
    """Labels for the offline judge: from which boundary a cut-in is appropriate (None: never), and
    words an appropriate reply mentions (any one suffices; empty: any non-empty reply)."""

    cut_in_from: int | None = Field(ge=0)
    reply_cues: list[Text] = Field(default_factory=list)
    kind: Text = ""  # what makes the case (error, informative, complete), for breakdowns only


class MiUCase(Record):
    """Machine interrupts user: the user's last utterance arrives chunk by chunk; a decision is asked
    at each clause boundary (an index into ``chunks``; the last chunk is always one)."""

    family: Literal["MiU"]
    id: CaseId
    context: list[Turn] = Field(default_factory=list)
    chunks: list[Chunk] = Field(min_length=1)
    boundaries: list[int] = Field(min_length=1)
    expected: MiUExpected | None = None
    source: Text = ""

    @model_validator(mode="after")
    def _consistent(self) -> MiUCase:
        _check_chunks(self.chunks, "utterance")
        b = self.boundaries
        if any(x < 0 or x >= len(self.chunks) for x in b):
            raise fail(f"boundaries must index chunks 0..{len(self.chunks) - 1}, got {b}")
        if any(b[i] <= b[i - 1] for i in range(1, len(b))):
            raise fail(f"boundaries must be strictly increasing, got {b}")
        if b[-1] != len(self.chunks) - 1:
            raise fail(f"the last chunk ({len(self.chunks) - 1}) must be the last boundary, got {b}")
        exp = self.expected
        if exp is not None and exp.cut_in_from is not None and exp.cut_in_from >= len(b):
            raise fail(f"expected.cut_in_from {exp.cut_in_from} is not a boundary index (0..{len(b) - 1})")
        return self

    @property
    def end_s(self) -> float:
        """End of user speech."""
        return self.chunks[-1].end_s


class UiMExpected(Record):
    """Labels for the offline judge: the right behaviour and words an appropriate reply mentions."""

    behaviour: Behaviour
    reply_cues: list[Text] = Field(default_factory=list)


class Interruption(Record):
    """The user's interruption: its reason and its timed chunks (the first start is its time)."""

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


class UiMCase(Record):
    """User interrupts machine: the machine is saying ``machine`` (timed chunks) when the user cuts in."""

    family: Literal["UiM"]
    id: CaseId
    context: list[Turn] = Field(default_factory=list)
    machine: list[Chunk] = Field(min_length=1)
    interruption: Interruption
    expected: UiMExpected | None = None
    source: Text = ""

    @model_validator(mode="after")
    def _consistent(self) -> UiMCase:
        _check_chunks(self.machine, "machine")
        _check_chunks(self.interruption.chunks, "interruption")
        t = self.interruption.start_s
        if t < self.machine[0].start_s or t > self.machine[-1].end_s:
            raise fail(
                f"interruption starts at {t}, outside the machine's utterance "
                f"[{self.machine[0].start_s}, {self.machine[-1].end_s}]: the machine must be speaking"
            )
        return self


Case = Annotated[MiUCase | UiMCase, Field(discriminator="family")]
