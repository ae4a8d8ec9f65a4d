"""Read a case set: our JSONL (optionally led by an artifact header line) or the open reproduction's
tape shape (a JSON array of ``{"id", "tape", "eval_targets"}``, or one such item per JSONL line),
validated case by case.

Any fault is one line naming the file, the line (JSONL) or item (tape) and the problem.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from duplexeval.artifacts import check_kind
from duplexeval.dialogue.cases import (
    REASONS,
    Chunk,
    Interruption,
    MiUCase,
    Turn,
    UiMCase,
    strip_trailing_punctuation,
)
from duplexeval.errors import InputError
from duplexeval.jsonio import json_lines, read_text, sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import describe, validate

CASESET_KIND = "duplexeval.dialogue.caseset"
CASESET_SCHEMA = 1

# The reproduction's tape vocabulary (notes section 1).
TAPE_USER_PREFIX = "<interlocutor>"
TAPE_SILENCE = "<SIL>"
TAPE_TOKENS = frozenset({"[S.SPEAK]", "[S.LISTEN.NATURAL]", "[S.LISTEN.INTERRUPT]", "[C.SPEAK]", "[C.LISTEN]"})
TAPE_WORD_S = 0.32  # seconds per word when a tape (untimed text) is laid on the speech clock


@dataclass(frozen=True)
class CaseSet:
    """Validated cases in file order, with the SHA-256 of the file they came from."""

    cases: tuple[MiUCase | UiMCase, ...]
    sha256: str
    path: str
    shape: str  # "jsonl" or "tape"

    @property
    def n_miu(self) -> int:
        return sum(1 for c in self.cases if c.family == "MiU")

    @property
    def n_uim(self) -> int:
        return len(self.cases) - self.n_miu


def parse_case(obj: Any, where: str) -> MiUCase | UiMCase:
    """One case from a JSON object; `where` ("FILE: line N") leads the error line."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object (one case), got {type(obj).__name__}")
    if obj.get("family") not in ("MiU", "UiM"):
        raise InputError(f"{where}: 'family' must be 'MiU' or 'UiM', got {obj.get('family')!r}")
    cid = obj.get("id")
    label = f"{where}: case {cid!r}" if isinstance(cid, str) else where
    model: type[MiUCase | UiMCase] = MiUCase if obj["family"] == "MiU" else UiMCase
    return validate(obj, model, label)


def _finish(cases: Sequence[MiUCase | UiMCase], wheres: Sequence[str], path: Path, data: bytes, shape: str) -> CaseSet:
    if not cases:
        raise InputError(f"{path}: no cases")
    seen: dict[str, str] = {}
    for case, where in zip(cases, wheres):
        if case.id in seen:
            raise InputError(f"{where}: duplicate case id {case.id!r} (first at {seen[case.id]})")
        seen[case.id] = where
    return CaseSet(tuple(cases), sha256_bytes(data), str(path), shape)


def load_cases(path: str | Path) -> CaseSet:
    """Load and validate a case file of either shape (a JSON array is read as tapes)."""
    path = Path(path)
    text = read_text(path)
    data = text.encode("utf-8")
    if text.lstrip().startswith("["):
        return _load_tapes(path, text, data)
    cases: list[MiUCase | UiMCase] = []
    wheres: list[str] = []
    for k, (lineno, obj) in enumerate(json_lines(text, path)):
        where = f"{path}: line {lineno}"
        if k == 0 and isinstance(obj, dict) and "kind" in obj:
            check_kind(obj, CASESET_KIND, path, CASESET_SCHEMA)
            continue
        if isinstance(obj, dict) and "tape" in obj and "family" not in obj:
            cases.append(tape_to_case(obj, where))  # a tape item on one line
        else:
            cases.append(parse_case(obj, where))
        wheres.append(where)
    return _finish(cases, wheres, path, data, "jsonl")


# ---------------------------------------------------------------------------------------------
# The reproduction's tape shape


def _time_texts(texts: Sequence[str], start_s: float, word_s: float) -> list[Chunk]:
    """Lay untimed clauses end to end on the clock at `word_s` per word."""
    out: list[Chunk] = []
    t = start_s
    for text in texts:
        n = max(1, len(text.split()))
        end = round(t + n * word_s, 6)
        out.append(Chunk(text=text, start_s=round(t, 6), end_s=end))
        t = end
    return out


def _context(entries: Sequence[str]) -> list[Turn]:
    """Prior turns from tape entries: control tokens and silences dropped, same-speaker runs merged."""
    turns: list[Turn] = []
    for e in entries:
        e = e.strip()
        if not e or e in TAPE_TOKENS or e == TAPE_SILENCE:
            continue
        role: Literal["user", "assistant"] = "user" if e.startswith(TAPE_USER_PREFIX) else "assistant"
        text = e.removeprefix(TAPE_USER_PREFIX).strip()
        if not text:
            continue
        if turns and turns[-1].role == role:
            turns[-1] = Turn(role=role, text=turns[-1].text + " " + text)
        else:
            turns.append(Turn(role=role, text=text))
    return turns


def _tape_reason(cid: str) -> str | None:
    low = cid.lower()
    for key, reason in (("noise", "noise"), ("deni", "denial"), ("affirm", "affirmation"), ("shift", "shift"),
                        ("topic", "shift")):
        if key in low:
            return reason
    return None


def tape_to_case(item: Any, where: str, word_s: float = TAPE_WORD_S) -> MiUCase | UiMCase:
    """One reproduction tape item as a case: the clauses before each eval target are the last user
    utterance (MiU) or the interruption (UiM, reason read from the id); earlier entries are context."""
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object with id, tape, eval_targets")
    cid, tape, targets = item.get("id"), item.get("tape"), item.get("eval_targets")
    if not isinstance(cid, str) or not isinstance(tape, list) or not all(isinstance(e, str) for e in tape):
        raise InputError(f"{where}: needs a string 'id' and a 'tape' list of strings")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, int) and not isinstance(t, bool)
                                                               for t in targets):
        raise InputError(f"{where}: case {cid!r}: 'eval_targets' must be a non-empty list of tape indices")
    if any(t <= 0 or t >= len(tape) for t in targets) or sorted(set(targets)) != targets:
        raise InputError(f"{where}: case {cid!r}: eval_targets must be increasing indices 1..{len(tape) - 1}")
    is_uim = "uim" in cid.lower()
    if not is_uim and "miu" not in cid.lower():
        raise InputError(f"{where}: case {cid!r}: cannot tell the family (the id has neither 'MiU' nor 'UiM')")
    clauses: list[str] = []
    for t in targets:
        prev = tape[t - 1].strip()
        if not prev.startswith(TAPE_USER_PREFIX):
            raise InputError(f"{where}: case {cid!r}: tape[{t - 1}] before eval target {t} is not a user clause")
        clauses.append(strip_trailing_punctuation(prev.removeprefix(TAPE_USER_PREFIX)))
    if any(not c for c in clauses):
        raise InputError(f"{where}: case {cid!r}: a user clause is empty once punctuation is stripped")
    first = targets[0] - 1
    safe_id = "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in cid)[:128]
    try:
        if not is_uim:
            chunks = _time_texts(clauses, 0.0, word_s)
            return MiUCase(
                family="MiU", id=safe_id, context=_context(tape[:first]), chunks=chunks,
                boundaries=list(range(len(chunks))), source="tape",
            )
        reason = _tape_reason(cid)
        if reason is None:
            raise InputError(f"{where}: case {cid!r}: no reason ({', '.join(REASONS)}) in the id")
        k = first
        machine_texts: list[str] = []
        while k > 0 and not tape[k - 1].startswith(TAPE_USER_PREFIX) and tape[k - 1] not in ("[S.LISTEN.NATURAL]",):
            k -= 1
            e = tape[k].strip()
            if e and e not in TAPE_TOKENS and e != TAPE_SILENCE:
                machine_texts.insert(0, e)
        if not machine_texts:
            raise InputError(f"{where}: case {cid!r}: no machine speech before the interruption")
        machine = _time_texts(machine_texts, 0.0, word_s)
        inter = _time_texts(clauses, machine[-1].end_s, word_s)
        return UiMCase(
            family="UiM", id=safe_id, context=_context(tape[:k]), machine=machine,
            interruption=Interruption(reason=reason, chunks=inter), source="tape",  # type: ignore[arg-type]
        )
    except ValidationError as exc:
        raise InputError(f"{where}: case {cid!r}: {describe(exc, MiUCase if not is_uim else UiMCase, item)}") from None


def _load_tapes(path: Path, text: str, data: bytes) -> CaseSet:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(items, list):
        raise InputError(f"{path}: a tape file is a JSON array of items")
    cases, wheres = [], []
    for i, item in enumerate(items):
        where = f"{path}: item {i}"
        cases.append(tape_to_case(item, where))
        wheres.append(where)
    return _finish(cases, wheres, path, data, "tape")


def case_to_json(case: MiUCase | UiMCase) -> JsonObject:
    """A case as the JSON object our JSONL holds (keys in model order, defaults kept)."""
    return case.model_dump(mode="json")
