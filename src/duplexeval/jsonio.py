"""Deterministic JSON, atomic writes and SHA-256: the file conventions every stage shares.

Every file a stage writes goes through `atomic_write_bytes` / `atomic_write_text` / `write_json` /
`append_text`: the one place where bytes reach a file. There every secret the process knows is removed
(`redaction`), an input of the running command is never replaced (`overwrite.check_write`), and the file
gets its mode: the umask's (0644 under the usual 022) or, for `private=True` files that hold what a
remote service sent (wire traces, request/answer logs and caches), 0600.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from duplexeval import overwrite, redaction
from duplexeval.errors import InputError

PRIVATE_MODE = 0o600


def dumps(obj: Any) -> str:
    """Canonical JSON text: insertion-ordered keys, 2-space indent, no NaN/Infinity, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def dumps_line(obj: Any) -> str:
    """One compact JSON line (for .jsonl files), deterministic, no NaN/Infinity."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_writable_base(path: Path, base: Path, what: str) -> Path:
    """`path` can be made under `base` (its nearest existing ancestor): base is a folder we may write in."""
    if not base.is_dir():
        raise InputError(f"{path}: {what} cannot be created: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"{path}: {what} is not writable (no write permission in {base})")
    return path


def check_output_dir(path: str | os.PathLike[str], what: str = "output folder") -> Path:
    """Refuse (one InputError line) an output folder that is an existing file or cannot be created or written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: {what} is an existing file, not a folder; give a folder path")
    return _check_writable_base(path, _nearest_existing(path), what)


def check_output_path(path: str | os.PathLike[str], what: str = "output") -> Path:
    """The checks valid for a file or a folder output: its nearest existing ancestor is a writable folder."""
    path = Path(path)
    return _check_writable_base(path, path.parent if path.exists() else _nearest_existing(path), what)


def check_output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """Refuse (one InputError line) an output file path that is a folder or whose folder cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: {what} is an existing folder; give a file path")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{path}: {what} is not writable")
    check_output_dir(path.parent, f"folder of {what}")
    return path


def _write_problem(path: Path, exc: OSError) -> str:
    if path.is_dir():
        return "it is an existing folder; give a file path"
    base = _nearest_existing(path.parent)
    if not base.is_dir():
        return f"{base} is a file, not a folder"
    return str(exc.strerror or exc)


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def file_mode(private: bool = False) -> int:
    """The mode a new output file gets: 0600 when private, else what open() would give (0666 minus the umask)."""
    return PRIVATE_MODE if private else 0o666 & ~_umask()


def folder_mode() -> int:
    """The mode mkdir would give a new folder (0777 minus the umask)."""
    return 0o777 & ~_umask()


def _write_raw(path: Path, data: bytes, private: bool) -> None:
    overwrite.check_write(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {_write_problem(path, exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), file_mode(private))
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write: {_write_problem(path, exc)}") from None
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> str:
    """Write to a temporary file in the same folder, fsync, then rename: a killed run never leaves half a file.

    Known secrets are overwritten with `*` bytes of the same length (offsets into the file stay valid).
    Returns the SHA-256 of the bytes written. Any OS error becomes one InputError line naming the file.
    """
    data = redaction.scrub_bytes(data)
    _write_raw(Path(path), data, private)
    return sha256_bytes(data)


def make_output_dir(path: str | os.PathLike[str], what: str = "output folder") -> Path:
    """Create an output folder (and parents); one InputError line when a file is in the way or it is not writable."""
    path = check_output_dir(path, what)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be created: {exc.strerror or exc}") from None
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str, *, private: bool = False) -> str:
    """Atomic UTF-8 text write, known secrets replaced by [redacted]; returns the SHA-256 of the bytes written."""
    data = redaction.scrub_text(text).encode("utf-8")
    _write_raw(Path(path), data, private)
    return sha256_bytes(data)


def write_json(path: str | os.PathLike[str], obj: Any, *, private: bool = False) -> str:
    """Write canonical JSON atomically; returns the SHA-256 of the bytes written."""
    return atomic_write_text(path, dumps(obj), private=private)


def append_text(path: str | os.PathLike[str], text: str, *, private: bool = False, durable: bool = False) -> None:
    """Append UTF-8 text (a journal or log line) with known secrets redacted; the file is created with its mode.

    `durable`: fsync before returning (a resume journal whose lines must survive a killed run)."""
    path = Path(path)
    overwrite.check_write(path)
    data = redaction.scrub_text(text).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode(private))
        with os.fdopen(fd, "ab") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {_write_problem(path, exc)}") from None


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a user's UTF-8 text file (a leading BOM, as Excel writes, is dropped); InputError naming the file when
    it is missing, a folder, unreadable or not UTF-8."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {' '.join(str(exc).split())}") from None


class _NotJsonNumber(ValueError):
    """NaN, Infinity or -Infinity in a JSON text: Python reads them, JSON has no such numbers."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonNumber(name)


def loads_strict(text: str) -> Any:
    """``json.loads`` without NaN / Infinity (every file we write has none; one that does is broken, not a number)."""
    return json.loads(text, parse_constant=_refuse_constant)


def json_lines(text: str, path: str | os.PathLike[str]) -> list[tuple[int, Any]]:
    """(line number, object) of each non-blank line of JSONL text; InputError naming the file and line on bad JSON
    (NaN and Infinity included)."""
    out: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((lineno, loads_strict(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {lineno}: invalid JSON: {exc.msg}") from None
        except _NotJsonNumber as exc:
            raise InputError(f"{path}: line {lineno}: {exc} is not a number JSON allows") from None
    return out


def parse_json_text(text: str, path: str | os.PathLike[str]) -> Any:
    """JSON text to objects; bad JSON and NaN / Infinity are one-line InputErrors naming `path`."""
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except _NotJsonNumber as exc:
        raise InputError(f"{path}: {exc} is not a number JSON allows") from None


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; raises InputError naming the file on a missing file or bad JSON (NaN and Infinity included)."""
    path = Path(path)
    return parse_json_text(read_text(path), path)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def finite_or_none(x: float | None) -> float | None:
    """JSON has no infinity: map non-finite floats to None (callers flag what None means)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)
