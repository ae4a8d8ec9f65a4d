"""Per-case evidence rows (``cases.jsonl``) and decision-log lines (``decisions.jsonl``) from a replay.

Rows are the primary artifact: each holds the case's outcome, the times it came from, the reply the
judge reads, the transcript and the case's expected labels, so scoring needs nothing else. A row is a
typed record (`MiURow`, `UiMRow`, or `ErrorRow` for a case whose system failed); `to_json()` is its
line of cases.jsonl and `row_from_json` reads one back with one-line errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import ClassVar, Literal, TypeAlias

from duplexeval.dialogue.cases import MiUCase, MiUExpected, UiMCase, UiMExpected
from duplexeval.dialogue.metrics import CONTINUED, ERROR, YIELDED, classify_miu
from duplexeval.dialogue.protocol import S_SPEAK, USER_CHUNK
from duplexeval.dialogue.simulator import Clock, Replay
from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import validate
from duplexeval.units import to_s

Family: TypeAlias = Literal["MiU", "UiM"]
Transcript: TypeAlias = tuple[tuple[str, str], ...]  # (role, text) turns, the judge's view of the case


def _s(us: int | None) -> float | None:
    return None if us is None else to_s(us)


def _context(case: MiUCase | UiMCase) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in case.context]


def _transcript_json(t: Transcript) -> list[list[str]]:
    return [[role, text] for role, text in t]


def _expected_json(exp: MiUExpected | UiMExpected | None) -> JsonObject | None:
    return exp.model_dump(mode="json") if exp is not None else None


class _Fields:
    """Typed reads of one parsed row; a wrong or missing field is one line naming the file, the line and the key."""

    def __init__(self, js: JsonObject, where: str) -> None:
        self.js, self.where = js, where

    def _bad(self, key: str, what: str) -> InputError:
        shown = repr(self.js.get(key))
        return InputError(f"{self.where}: '{key}' must be {what}, got {shown[:60]}")

    def str_(self, key: str, default: str | None = None) -> str:
        v = self.js.get(key, default)
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        return v

    def opt_str(self, key: str) -> str | None:
        v = self.js.get(key)
        if v is not None and not isinstance(v, str):
            raise self._bad(key, "a string or null")
        return v

    def int_(self, key: str, default: int | None = None) -> int:
        v = self.js.get(key, default)
        if not isinstance(v, int) or isinstance(v, bool):
            raise self._bad(key, "an integer")
        return v

    def opt_int(self, key: str) -> int | None:
        v = self.js.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise self._bad(key, "an integer or null")
        return v

    def opt_num(self, key: str) -> float | None:
        v = self.js.get(key)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise self._bad(key, "a number or null")
        return v

    def transcript(self) -> Transcript:
        v = self.js.get("transcript")
        if not isinstance(v, list) or not all(isinstance(t, list) and len(t) == 2 and all(isinstance(x, str) for x in t)
                                              for t in v):
            raise self._bad("transcript", "a list of [role, text] pairs")
        return tuple((t[0], t[1]) for t in v)

    def miu_expected(self) -> MiUExpected | None:
        v = self.js.get("expected")
        return None if v is None else validate(v, MiUExpected, f"{self.where}: 'expected'")

    def uim_expected(self) -> UiMExpected | None:
        v = self.js.get("expected")
        return None if v is None else validate(v, UiMExpected, f"{self.where}: 'expected'")


@dataclass(frozen=True)
class MiURow:
    """A machine-interrupts-user case replayed: outcome (mid > end > miss), take time, chunks heard, FTED and the
    reply after the take."""

    family: ClassVar[Literal["MiU"]] = "MiU"
    error: ClassVar[None] = None

    id: str
    kind: str  # the case's kind (error / informative / complete); "" when it has no labels
    outcome: str  # mid | end | miss
    speech_end_s: float | None
    take_s: float | None
    heard_chunks: int
    n_chunks: int
    cut_in_chunk: int | None  # the chunk from which a cut-in is appropriate (None: never, or no labels)
    first_token_s: float | None
    fted_s: float | None
    reply: str
    transcript: Transcript
    expected: MiUExpected | None
    system_errors: int = 0

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "family": self.family,
            "kind": self.kind,
            "outcome": self.outcome,
            "speech_end_s": self.speech_end_s,
            "take_s": self.take_s,
            "heard_chunks": self.heard_chunks,
            "n_chunks": self.n_chunks,
            "cut_in_chunk": self.cut_in_chunk,
            "first_token_s": self.first_token_s,
            "fted_s": self.fted_s,
            "reply": self.reply,
            "transcript": _transcript_json(self.transcript),
            "expected": _expected_json(self.expected),
            "system_errors": self.system_errors,
            "error": None,
        }

    @classmethod
    def from_json(cls, js: JsonObject, where: str) -> MiURow:
        f = _Fields(js, where)
        return cls(f.str_("id"), f.str_("kind", ""), f.str_("outcome"), f.opt_num("speech_end_s"), f.opt_num("take_s"),
                   f.int_("heard_chunks"), f.int_("n_chunks"), f.opt_int("cut_in_chunk"), f.opt_num("first_token_s"),
                   f.opt_num("fted_s"), f.str_("reply"), f.transcript(), f.miu_expected(), f.int_("system_errors", 0))


@dataclass(frozen=True)
class UiMRow:
    """A user-interrupts-machine case replayed: yielded during the interruption or not, when the machine stopped,
    and the reply after the interruption began."""

    family: ClassVar[Literal["UiM"]] = "UiM"
    error: ClassVar[None] = None

    id: str
    reason: str
    outcome: str  # yielded | continued
    interruption_s: float | None
    speech_end_s: float | None
    yield_s: float | None
    machine_stop_s: float | None
    first_reply_s: float | None
    reply: str
    transcript: Transcript
    expected: UiMExpected | None
    system_errors: int = 0

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "family": self.family,
            "reason": self.reason,
            "outcome": self.outcome,
            "interruption_s": self.interruption_s,
            "speech_end_s": self.speech_end_s,
            "yield_s": self.yield_s,
            "machine_stop_s": self.machine_stop_s,
            "first_reply_s": self.first_reply_s,
            "reply": self.reply,
            "transcript": _transcript_json(self.transcript),
            "expected": _expected_json(self.expected),
            "system_errors": self.system_errors,
            "error": None,
        }

    @classmethod
    def from_json(cls, js: JsonObject, where: str) -> UiMRow:
        f = _Fields(js, where)
        return cls(f.str_("id"), f.str_("reason", ""), f.str_("outcome"), f.opt_num("interruption_s"),
                   f.opt_num("speech_end_s"), f.opt_num("yield_s"), f.opt_num("machine_stop_s"),
                   f.opt_num("first_reply_s"), f.str_("reply"), f.transcript(), f.uim_expected(),
                   f.int_("system_errors", 0))


@dataclass(frozen=True)
class ErrorRow:
    """A case whose system failed: kept and counted (under its kind or reason), with the reason it failed."""

    outcome: ClassVar[str] = ERROR
    system_errors: ClassVar[int] = 0

    id: str
    family: Family
    error: str
    kind: str | None = None  # MiU: the case's kind ("" without labels; None in rows written before it was kept)
    reason: str | None = None  # UiM: the interruption's reason
    expected: MiUExpected | UiMExpected | None = None

    def to_json(self) -> JsonObject:
        row: JsonObject = {"id": self.id, "family": self.family, "outcome": ERROR, "error": self.error}
        if self.family == "UiM":
            if self.reason is not None:
                row["reason"] = self.reason
        elif self.kind is not None:
            row["kind"] = self.kind
        row["expected"] = _expected_json(self.expected)
        return row

    @classmethod
    def from_json(cls, js: JsonObject, where: str) -> ErrorRow:
        f = _Fields(js, where)
        if js["family"] == "MiU":
            return cls(f.str_("id"), "MiU", f.str_("error", ""), kind=f.opt_str("kind"), expected=f.miu_expected())
        return cls(f.str_("id"), "UiM", f.str_("error", ""), reason=f.opt_str("reason"), expected=f.uim_expected())


CaseRow: TypeAlias = MiURow | UiMRow | ErrorRow


def row_from_json(js: object, where: str) -> CaseRow:
    """One parsed line of cases.jsonl as its row (`where`: 'PATH: line N', the prefix of every message)."""
    if not isinstance(js, dict) or js.get("family") not in ("MiU", "UiM") or not isinstance(js.get("id"), str) \
            or "outcome" not in js:
        raise InputError(f"{where}: not a dialogue case row (needs id, family, outcome)")
    if js["outcome"] == ERROR:
        return ErrorRow.from_json(js, where)
    return MiURow.from_json(js, where) if js["family"] == "MiU" else UiMRow.from_json(js, where)


def miu_row(case: MiUCase, rep: Replay) -> MiURow:
    """Outcome (mid > end > miss), take time, chunks heard, FTED and the reply after the take."""
    outcome = classify_miu(rep.takes, rep.speech_end_us)
    take = min(rep.takes) if rep.takes else None
    heard = 0
    for t, what, text, _idx in rep.steps:
        if what == USER_CHUNK:
            heard += 1
        elif what == "action" and text == S_SPEAK and t == take:
            break
    if take is None:
        heard = len(case.chunks)
    first = next((t for t, _ in rep.said if take is not None and t >= take), None)
    # the reply is what the first take said: its tokens up to its yield (a yield at the take's own instant ends it
    # with nothing said; a later take's words are not this cut-in's reply)
    stop = next((y for y in rep.yields if take is not None and y >= take), None)
    reply = " ".join(tok for t, tok in rep.said if take is not None and t >= take and (stop is None or t < stop))
    user_heard = " ".join(c.text for c in case.chunks[:heard])
    fted = None if first is None or outcome == "mid" else first - rep.speech_end_us
    exp = case.expected
    return MiURow(
        id=case.id,
        kind=exp.kind if exp is not None else "",
        outcome=outcome,
        speech_end_s=_s(rep.speech_end_us),
        take_s=_s(take),
        heard_chunks=heard,
        n_chunks=len(case.chunks),
        cut_in_chunk=case.boundaries[exp.cut_in_from] if exp is not None and exp.cut_in_from is not None else None,
        first_token_s=_s(first),
        fted_s=_s(fted),
        reply=reply,
        transcript=(*_context(case), ("user", user_heard), ("assistant", reply)),
        expected=exp,
    )


def uim_row(case: UiMCase, rep: Replay, clock: Clock) -> UiMRow:
    """Yield during the interruption or not, when the machine stopped, and the reply after it began."""
    eos = rep.speech_end_us + clock.endpoint_ms * 1000
    y = next((t for t in rep.yields if rep.interruption_us <= t <= eos), None)
    reply = " ".join(tok for t, tok in rep.said if t >= rep.interruption_us)
    first = next((t for t, _ in rep.said if t >= rep.interruption_us), None)
    machine_heard = " ".join(text for _, what, text, _ in rep.steps if what == "machine")
    return UiMRow(
        id=case.id,
        reason=case.interruption.reason,
        outcome=YIELDED if y is not None else CONTINUED,
        interruption_s=_s(rep.interruption_us),
        speech_end_s=_s(rep.speech_end_us),
        yield_s=_s(y),
        machine_stop_s=_s(rep.machine_stop_us),
        first_reply_s=_s(first),
        reply=reply,
        transcript=(*_context(case), ("assistant", machine_heard), ("user", case.interruption.text),
                    ("assistant", reply)),
        expected=case.expected,
    )


def error_row(case: MiUCase | UiMCase, reason: str) -> ErrorRow:
    """A case whose system failed: kept, counted, with the reason."""
    if isinstance(case, UiMCase):
        return ErrorRow(case.id, "UiM", reason, reason=case.interruption.reason, expected=case.expected)
    # counted under its kind's errors
    return ErrorRow(case.id, "MiU", reason, kind=case.expected.kind if case.expected is not None else "",
                    expected=case.expected)


def decision_lines(rep: Replay) -> list[JsonObject]:
    """Every event and action with its time, each line of decisions.jsonl as written; `say` is a token at the time
    it starts being heard."""
    out = []
    for t, what, text, idx in rep.steps:
        line: JsonObject = {"case": rep.case_id, "t_s": to_s(t), "what": what}
        if text:
            line["text"] = text
        if what in (USER_CHUNK, "machine"):
            line["chunk"] = idx
        elif what == "action" and idx == 1:
            line["implicit"] = True  # a text token while listening took the turn
        out.append(line)
    return out


def decision_text(rep: Replay) -> str:
    """``decision_lines`` as JSONL text, formatted directly (the same bytes as ``jsonio.dumps_line`` on
    each line, about four times faster; a test holds the two equal)."""
    cid = encode_basestring(rep.case_id)
    out = []
    for t, what, text, idx in rep.steps:
        line = f'{{"case":{cid},"t_s":{to_s(t)!r},"what":"{what}"'
        if text:
            line += ',"text":' + encode_basestring(text)
        if what in (USER_CHUNK, "machine"):
            line += f',"chunk":{idx}'
        elif what == "action" and idx == 1:
            line += ',"implicit":true'
        out.append(line + "}\n")
    return "".join(out)
