"""Read end-of-turn pairs from CSV or JSONL with line-numbered one-line errors (never a dropped row).

An empty or null commit means the detector never fired (a *missed* commit): it is kept as a commit at +inf,
which spec 003's functions count as a hang at every band and never as a false cutoff.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from duplexeval.eot.pairs import EOTPair
from duplexeval.errors import InputError
from duplexeval.jsonio import json_lines, read_text
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.schemas.eot import EOTPairRow

TRUE_KEYS = ("true_turn_end_s", "true_end_s")
COMMIT_KEYS = ("detector_commit_s", "commit_s")
GROUP_KEYS = ("conversation", "conversation_id")


@dataclass(frozen=True)
class PairRow:
    """One pair with its optional id and conversation (``missed``: the detector never committed)."""

    pair: EOTPair
    id: str | None
    conversation: str | None

    @property
    def missed(self) -> bool:
        return math.isinf(self.pair.detector_commit_s)


def _present(row: JsonObject, keys: tuple[str, ...], where: str, required: bool = True) -> str | None:
    present = [k for k in keys if k in row]
    if not present:
        if required:
            raise InputError(f"{where}: missing column {keys[0]} (or {', '.join(keys[1:])})")
        return None
    if len(present) > 1:
        raise InputError(f"{where}: both {present[0]} and {present[1]} given; use one")
    return present[0]


def _time(row: JsonObject, keys: tuple[str, ...], where: str, allow_missing: bool) -> float:
    key = _present(row, keys, where)
    assert key is not None
    v = row[key]
    if isinstance(v, str):
        if not v.strip() and allow_missing:
            return math.inf
        try:
            v = float(v.strip())
        except ValueError:
            raise InputError(f"{where}: {key} is not a number: {row[key]!r}") from None
    if v is None and allow_missing:
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        extra = " (leave it empty or null for a detector that never fired)" if allow_missing else ""
        raise InputError(f"{where}: {key} must be a finite number, got {row[key]!r}{extra}")
    return v  # range-checked by schemas.eot.EOTPairRow


def _label(row: JsonObject, key: str | None, where: str, what: str) -> str | None:
    if key is None:
        return None
    v = row[key]
    if v in (None, ""):
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise InputError(f"{where}: {what} must be a string, got {v!r}")
    s = str(v)
    if any(ord(c) < 32 for c in s):
        raise InputError(f"{where}: {what} {s!r} contains a control character")
    return s


def pair_row(row: JsonObject, where: str) -> PairRow:
    """One pair (with its optional ``id`` and ``conversation``) from a CSV/JSONL row; times and id are checked by
    ``schemas.eot.EOTPairRow`` (>= 0, within a day, no control characters), a missed commit is kept as +inf."""
    true_end = _time(row, TRUE_KEYS, where, False)
    commit = _time(row, COMMIT_KEYS, where, True)
    missed = isinstance(commit, float) and math.isinf(commit)
    rid = _label(row, "id" if "id" in row else None, where, "id")
    rec = validate({"true_turn_end_s": true_end, "detector_commit_s": 0.0 if missed else commit, "id": rid}, EOTPairRow,
                   where)
    conv = _label(row, _present(row, GROUP_KEYS, where, required=False), where, "conversation")
    pair = EOTPair(float(rec.true_turn_end_s), math.inf if missed else float(rec.detector_commit_s))
    return PairRow(pair, rec.id, conv)


def pair_from_row(row: JsonObject, where: str) -> tuple[EOTPair, str | None]:
    """One pair and its optional id (kept for callers of the first version)."""
    r = pair_row(row, where)
    return r.pair, r.id


def read_pair_rows(path: str | Path) -> list[PairRow]:
    """Pair rows from a ``.csv`` (header row; a UTF-8 BOM is accepted) or ``.jsonl`` file; refuses an empty file
    and duplicate ids."""
    path = Path(path)
    text = read_text(path).lstrip("\ufeff")
    rows: list[PairRow] = []
    lines: list[int] = []
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        if reader.fieldnames is not None:
            for row in reader:
                where = f"{path}: line {reader.line_num}"
                if None in row or any(v is None for v in row.values()):
                    raise InputError(f"{where}: expected {len(reader.fieldnames)} columns")
                rows.append(pair_row(row, where))
                lines.append(reader.line_num)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        for lineno, obj in json_lines(text, path):
            where = f"{path}: line {lineno}"
            if not isinstance(obj, dict):
                raise InputError(f"{where}: each line must be a JSON object")
            rows.append(pair_row(obj, where))
            lines.append(lineno)
    else:
        raise InputError(f"{path}: unknown pair file type {suffix!r} (use .csv or .jsonl)")
    if not rows:
        raise InputError(f"{path}: no pairs (the file has no data rows)")
    seen: dict[str, int] = {}
    for r, line in zip(rows, lines):
        if r.id is not None:
            if r.id in seen:
                raise InputError(f"{path}: line {line}: duplicate id {r.id!r} (first on line {seen[r.id]})")
            seen[r.id] = line
    return rows


def read_pairs(path: str | Path) -> tuple[list[EOTPair], list[str | None]]:
    """Pairs and ids (see ``read_pair_rows``)."""
    rows = read_pair_rows(path)
    return [r.pair for r in rows], [r.id for r in rows]
