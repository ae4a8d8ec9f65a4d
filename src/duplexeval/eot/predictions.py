"""Prediction files in eot-bench's columns (id, language, span_index, timestamp, silence_dur, p_eot, label).

One row per scored time inside a silence span. Read from parquet (pyarrow) or JSONL; written as both, with
our header (kind, schema_version, signature) in the parquet schema metadata so eot-bench's own tools read
the columns unchanged and ours can check what made them. Every bad row is one line naming file and row.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_bytes, dumps_line, json_lines, read_text
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.base import MAX_TIME_S

COLUMNS = ("id", "language", "span_index", "timestamp", "silence_dur", "p_eot", "label")
LABELS = ("hold", "eot")
PREDICTIONS_KIND = "duplexeval.eot.predictions"
META_KEY = b"duplexeval"


@dataclass(frozen=True)
class Predictions:
    """Column arrays of a predictions table (p_eot NaN = no score at that time); ``meta`` is our header or None."""

    id: np.ndarray  # object (str)
    language: np.ndarray  # object (str)
    span_index: np.ndarray  # int64
    timestamp: np.ndarray  # float64
    silence_dur: np.ndarray  # float64
    p_eot: np.ndarray  # float64
    label: np.ndarray  # object (str)
    source: str = "<predictions>"
    meta: Mapping[str, Any] | None = None

    def __len__(self) -> int:
        return int(self.id.size)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]], source: str = "<rows>",
                  meta: Mapping[str, Any] | None = None) -> Predictions:
        """Validate row dicts (each with the seven columns) into arrays."""
        cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        for k, row in enumerate(rows):
            missing = [c for c in COLUMNS if c not in row]
            if missing:
                raise InputError(f"{source}: row {k + 1}: missing column(s) {', '.join(missing)}")
            for c in COLUMNS:
                cols[c].append(row[c])
        return cls.from_columns(cols, source, meta)

    @classmethod
    def from_columns(cls, cols: Mapping[str, Sequence[Any]], source: str,
                     meta: Mapping[str, Any] | None = None) -> Predictions:
        """Validate column lists: ids and labels strings, span_index integers, times finite, p_eot finite or null."""
        missing = [c for c in COLUMNS if c not in cols]
        if missing:
            raise InputError(f"{source}: missing column(s) {', '.join(missing)} (eot-bench predictions need "
                             f"{', '.join(COLUMNS)})")
        n = len(cols["id"])
        ids = np.empty(n, dtype=object)
        langs = np.empty(n, dtype=object)
        labels = np.empty(n, dtype=object)
        for k in range(n):
            rid, lab, lang = cols["id"][k], cols["label"][k], cols["language"][k]
            if not isinstance(rid, str) or not rid or any(ord(ch) < 32 for ch in rid):
                if isinstance(rid, (int, np.integer)) and not isinstance(rid, bool):
                    rid = str(rid)
                else:
                    raise InputError(f"{source}: row {k + 1}: id must be a non-empty string without control "
                                     f"characters, got {rid!r}")
            if lab not in LABELS:
                raise InputError(f"{source}: row {k + 1}: label must be 'hold' or 'eot', got {lab!r}")
            ids[k], labels[k] = rid, lab
            langs[k] = "" if lang is None else str(lang)
        span_index = _ints(cols["span_index"], source, "span_index")
        timestamp = _floats(cols["timestamp"], source, "timestamp", allow_null=False)
        silence_dur = _floats(cols["silence_dur"], source, "silence_dur", allow_null=False)
        bad = np.flatnonzero(silence_dur < 0)
        if bad.size:
            raise InputError(f"{source}: row {bad[0] + 1}: silence_dur must be >= 0, got {silence_dur[bad[0]]}")
        p = _floats(cols["p_eot"], source, "p_eot", allow_null=True)
        return cls(ids, langs, span_index, timestamp, silence_dur, p, labels, source, meta)

    def rows(self) -> list[JsonObject]:
        """Plain row dicts (p_eot None where there is no score)."""
        out = []
        for k in range(len(self)):
            p = float(self.p_eot[k])
            out.append({"id": str(self.id[k]), "language": str(self.language[k]), "span_index": int(self.span_index[k]),
                        "timestamp": float(self.timestamp[k]), "silence_dur": float(self.silence_dur[k]),
                        "p_eot": None if math.isnan(p) else p, "label": str(self.label[k])})  # fmt: skip
        return out


_MAX_TIME_S = MAX_TIME_S  # the shared range check at load (schemas.base: one day)
_MAX_SPAN_INDEX = 1_000_000  # silences per turn; keeps (turn, span) keys far from int64 overflow


def _floats(values: Sequence[Any], source: str, name: str, allow_null: bool) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    for k, v in enumerate(values):
        if v is None:  # null: no score at this time (a NaN is a broken number, not a missing one)
            if not allow_null:
                raise InputError(f"{source}: row {k + 1}: {name} is missing")
            out[k] = math.nan
            continue
        if (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
            or not math.isfinite(float(v))):
            raise InputError(f"{source}: row {k + 1}: {name} must be a finite "
                             f"number{' or null' if allow_null else ''}, got {v!r}")
        if name == "p_eot" and not 0.0 <= float(v) <= 1.0:
            raise InputError(f"{source}: row {k + 1}: p_eot must be a probability in [0, 1] or null (no "
                             f"score), got {v!r}")
        if name != "p_eot" and abs(float(v)) > _MAX_TIME_S:
            raise InputError(f"{source}: row {k + 1}: {name} {v!r} is out of range (|t| <= {_MAX_TIME_S:g} s)")
        out[k] = float(v)
    return out


def _ints(values: Sequence[Any], source: str, name: str) -> np.ndarray:
    out = np.empty(len(values), dtype=np.int64)
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
            if isinstance(v, float) and v.is_integer() and v >= 0:
                v = int(v)
            else:
                raise InputError(f"{source}: row {k + 1}: {name} must be an integer >= 0, got {v!r}")
        if int(v) > _MAX_SPAN_INDEX:
            raise InputError(f"{source}: row {k + 1}: {name} {v!r} is out of range (<= {_MAX_SPAN_INDEX:,})")
        out[k] = int(v)
    return out


def read_predictions(path: str | Path) -> Predictions:
    """A predictions file: ``.parquet`` (pyarrow) or ``.jsonl`` (one row object per line)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        if not p.is_file():
            raise InputError(f"{p}: file not found")
        try:
            table = pq.read_table(p)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise InputError(f"{p}: cannot read parquet: {' '.join(str(exc).split())[:200]}") from None
        meta = None
        md = table.schema.metadata or {}
        if META_KEY in md:
            try:
                meta = json.loads(md[META_KEY].decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                meta = None
        names = set(table.column_names)
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise InputError(f"{p}: missing column(s) {', '.join(missing)} (eot-bench predictions need "
                             f"{', '.join(COLUMNS)})")
        fast = _from_arrow(table, str(p), meta)
        if fast is not None:
            return fast
        cols = {c: table.column(c).to_pylist() for c in COLUMNS}
        return Predictions.from_columns(cols, str(p), meta)
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        for lineno, obj in json_lines(read_text(p), p):
            if not isinstance(obj, dict):
                raise InputError(f"{p}: line {lineno}: each line must be a JSON object")
            missing = [c for c in COLUMNS if c not in obj]
            if missing:
                raise InputError(f"{p}: line {lineno}: missing column(s) {', '.join(missing)}")
            rows.append(obj)
        if not rows:
            raise InputError(f"{p}: no prediction rows")
        return Predictions.from_rows(rows, str(p))
    raise InputError(f"{p}: unknown predictions file type {suffix!r} (use .parquet or .jsonl)")


def _from_arrow(table: Any, source: str, meta: Mapping[str, Any] | None) -> Predictions | None:
    """Vectorised load when the columns have the expected types (strings, integers, floats); None -> the row checks."""
    import pyarrow as pa

    t = {c: table.column(c) for c in COLUMNS}
    ok = ((pa.types.is_string(t["id"].type) or pa.types.is_large_string(t["id"].type))
          and pa.types.is_integer(t["span_index"].type))
    ok = ok and all(pa.types.is_floating(t[c].type) or pa.types.is_integer(t[c].type)
                    for c in ("timestamp", "silence_dur", "p_eot"))
    ok = ok and pa.types.is_string(t["label"].type) and t["id"].null_count == 0 and t["label"].null_count == 0
    ok = ok and t["span_index"].null_count == 0 and t["timestamp"].null_count == 0 and t["silence_dur"].null_count == 0
    if not ok:
        return None
    ids = np.asarray(t["id"].to_numpy(zero_copy_only=False), dtype=object)
    labels = np.asarray(t["label"].to_numpy(zero_copy_only=False), dtype=object)
    si = t["span_index"].to_numpy().astype(np.int64)
    ts = t["timestamp"].to_numpy().astype(np.float64)
    sd = t["silence_dur"].to_numpy().astype(np.float64)
    pe_col = t["p_eot"].combine_chunks() if hasattr(t["p_eot"], "combine_chunks") else t["p_eot"]
    valid = pe_col.is_valid().to_numpy(zero_copy_only=False)  # a null is "no score"; a NaN value is a broken number
    pe = pe_col.to_numpy(zero_copy_only=False).astype(np.float64)  # nulls become NaN
    lang = (np.asarray(["" if x is None else str(x) for x in t["language"].to_pylist()], dtype=object)
            if t["language"].null_count
            else np.asarray(t["language"].cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object))
    bad_label = ~np.isin(labels, LABELS)
    checks: list[tuple[np.ndarray, Callable[[int], str]]] = [
        (np.flatnonzero(bad_label), lambda k: f"label must be 'hold' or 'eot', got {labels[k]!r}"),
        (np.flatnonzero(np.asarray([len(x) == 0 for x in ids])), lambda k: "id must be a non-empty string"),
        (np.flatnonzero((si < 0) | (si > _MAX_SPAN_INDEX)),
         lambda k: f"span_index must be an integer in [0, {_MAX_SPAN_INDEX:,}], got {si[k]}"),
        (np.flatnonzero(~np.isfinite(ts) | (np.abs(ts) > _MAX_TIME_S)),
         lambda k: f"timestamp {ts[k]!r} is not a finite time"),
        (np.flatnonzero(~np.isfinite(sd) | (sd < 0) | (sd > _MAX_TIME_S)),
         lambda k: f"silence_dur must be a finite number >= 0, got {sd[k]!r}"),
        (np.flatnonzero(valid & ~np.isfinite(pe)), lambda k: "p_eot must be a finite number or null, got "
                                                             f"{float(pe[k])!r}"),
        (np.flatnonzero(valid & np.isfinite(pe) & ((pe < 0) | (pe > 1))),
         lambda k: f"p_eot must be a probability in [0, 1] or null (no score), got {float(pe[k])!r}"),
    ]
    for bad, msg in checks:
        if bad.size:
            k = int(bad[0])
            raise InputError(f"{source}: row {k + 1}: {msg(k)}")
    if any(any(ord(ch) < 32 for ch in x) for x in set(ids.tolist())):
        raise InputError(f"{source}: an id contains a control character")
    return Predictions(ids, lang, si, ts, sd, pe, labels, source, meta)


def scored_only_at(p: Predictions) -> tuple[float, ...]:
    """The silences a table was scored at when it was scored at only a few (`eot predict --only-at`): from our
    header's settings, else from the rows (scores at at most 3 distinct silences while other grid times have none)."""
    settings = (p.meta or {}).get("settings") if isinstance(p.meta, Mapping) else None
    if isinstance(settings, Mapping) and isinstance(settings.get("only_at"), list):
        return tuple(float(x) for x in settings["only_at"])
    scored = ~np.isnan(p.p_eot)
    if scored.all() or not scored.any():
        return ()
    at = np.unique(np.round(p.silence_dur[scored], 6))
    return tuple(float(x) for x in at) if at.size <= 3 else ()


def mode_warning(p: Predictions, score_mode: str, name: str) -> str | None:
    """One line when predictions scored at a few silences only (a score-point model) are swept in `max` mode, the
    streaming detectors' rule: the numbers and the signature then say `mode:max` for what is a score-point policy."""
    at = scored_only_at(p)
    if score_mode != "max" or not at:
        return None
    pts = ", ".join(f"{a:g}" for a in at)
    return (f"warning: {name} was scored only at silence {pts} s (eot predict --only-at) but is swept in max mode, "
            "the rule for streaming detectors; for a score-point model pass --score-mode score_point "
            f"--score-point {at[0]:g}")


def write_predictions(path: str | Path, preds: Predictions, header: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write ``PATH`` (.parquet, header in the schema metadata) and the same rows as ``PATH`` with .jsonl; atomic."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    if p.suffix.lower() != ".parquet":
        raise InputError(f"{p}: the predictions output must end in .parquet (a .jsonl copy is written next to it)")
    table = pa.table(
        {
            "id": pa.array([str(x) for x in preds.id], pa.string()),
            "language": pa.array([str(x) for x in preds.language], pa.string()),
            "span_index": pa.array(preds.span_index, pa.int64()),
            "timestamp": pa.array(preds.timestamp, pa.float64()),
            "silence_dur": pa.array(preds.silence_dur, pa.float64()),
            "p_eot": pa.array([None if math.isnan(v) else float(v) for v in preds.p_eot], pa.float64()),
            "label": pa.array([str(x) for x in preds.label], pa.string()),
        }
    )
    table = table.replace_schema_metadata({META_KEY: json.dumps(dict(header), sort_keys=False).encode("utf-8")})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    atomic_write_bytes(p, buf.getvalue())
    jl = p.with_suffix(".jsonl")
    atomic_write_bytes(jl, "".join(dumps_line(r) for r in preds.rows()).encode("utf-8"))
    return p, jl
