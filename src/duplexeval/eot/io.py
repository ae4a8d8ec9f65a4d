"""Read end-of-turn pairs from CSV or JSONL with line-numbered one-line errors (never a dropped row)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from duplexeval.eot.pairs import EOTPair
from duplexeval.errors import InputError
from duplexeval.jsonio import json_lines, read_text
from duplexeval.schemas import validate
from duplexeval.schemas.eot import EOTPairRow

TRUE_KEYS = ("true_turn_end_s", "true_end_s")
COMMIT_KEYS = ("detector_commit_s", "commit_s")


def _pick(row: dict[str, Any], keys: tuple[str, ...], where: str) -> float:
    present = [k for k in keys if k in row]
    if not present:
        raise InputError(f"{where}: missing column {keys[0]} (or {', '.join(keys[1:])})")
    if len(present) > 1:
        raise InputError(f"{where}: both {present[0]} and {present[1]} given; use one")
    v = row[present[0]]
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            raise InputError(f"{where}: {present[0]} is not a number: {row[present[0]]!r}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise InputError(f"{where}: {present[0]} must be a finite number, got {row[present[0]]!r}")
    return v


def pair_from_row(row: dict[str, Any], where: str) -> tuple[EOTPair, str | None]:
    """One pair (and its optional ``id``) from a CSV/JSONL row, checked by schemas.eot.EOTPairRow."""
    rid = row.get("id")
    rec = validate({"true_turn_end_s": _pick(row, TRUE_KEYS, where), "detector_commit_s": _pick(row, COMMIT_KEYS, where),
                    "id": None if rid in (None, "") else str(rid)}, EOTPairRow, where)
    return EOTPair(float(rec.true_turn_end_s), float(rec.detector_commit_s)), rec.id


def _check_ids(ids: list[str | None], lines: list[int], path: Path) -> None:
    seen: dict[str, int] = {}
    for rid, line in zip(ids, lines):
        if rid is None:
            continue
        if rid in seen:
            raise InputError(f"{path}: line {line}: duplicate id {rid!r} (first on line {seen[rid]})")
        seen[rid] = line


def read_pairs(path: str | Path) -> tuple[list[EOTPair], list[str | None]]:
    """Pairs and ids from a ``.csv`` (header row) or ``.jsonl``/``.json`` (one object per line) file."""
    path = Path(path)
    text = read_text(path)
    pairs: list[EOTPair] = []
    ids: list[str | None] = []
    lines: list[int] = []
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        if reader.fieldnames is None:
            raise InputError(f"{path}: no pairs (the file is empty)")
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if None in row or any(v is None for v in row.values()):
                raise InputError(f"{where}: expected {len(reader.fieldnames)} columns")
            p, rid = pair_from_row(row, where)
            pairs.append(p)
            ids.append(rid)
            lines.append(reader.line_num)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        for lineno, obj in json_lines(text, path):
            where = f"{path}: line {lineno}"
            if not isinstance(obj, dict):
                raise InputError(f"{where}: each line must be a JSON object")
            p, rid = pair_from_row(obj, where)
            pairs.append(p)
            ids.append(rid)
            lines.append(lineno)
    else:
        raise InputError(f"{path}: unknown pair file type {suffix!r} (use .csv or .jsonl)")
    if not pairs:
        raise InputError(f"{path}: no pairs (only a header or blank lines); nothing to score")
    _check_ids(ids, lines, path)
    return pairs, ids
