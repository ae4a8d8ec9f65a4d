"""The one hash-checked read of a tree's files: the bytes, or one line naming the file, the sample and the problem.

Every stage that reads a file another stage recorded (an annotation or output.wav in manifest.json, a transcript
in asr.json) reads it through `read_verified`, which hashes the bytes it has read anyway (no second read) and
raises `VerifyError` when the file is missing, unreadable or not the bytes the record names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import parse_json_text, sha256_bytes, sha256_file


class VerifyError(RefusalError, InputError):
    """A recorded file is missing, unreadable or changed since the stage that recorded it.

    One type for the one fault; it is both a refusal (the stage will not go on with a changed tree) and an
    input error (the tree the user gave is not what its records say), so callers catching either still do.
    """

    def __init__(self, path: Path, sample: str | None, problem: str, digest: str | None = None) -> None:
        self.path, self.sample, self.problem, self.digest = path, sample, problem, digest
        super().__init__(f"{path}: sample {sample}: {problem}" if sample else f"{path}: {problem}")


def read_verified(path: str | os.PathLike[str], sha256: str | None, sample: str | None = None,
                  against: str = "manifest.json") -> bytes:
    """The file's bytes when their SHA-256 is `sha256` (the hash `against` records for sample `sample`).

    `sha256` None (a record without a hash for the file) checks only that the file is there and readable.
    `sample` (`<subset>/<id>`) goes into the message; leave it out when the caller names the sample itself.
    A mismatch's `VerifyError.digest` is the hash of the bytes found.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise VerifyError(path, sample, "file not found") from None
    except OSError as exc:
        raise VerifyError(path, sample, f"cannot read: {' '.join(str(exc).split())}") from None
    digest = sha256_bytes(data)
    if sha256 is not None and digest != sha256:
        name = path.name
        raise VerifyError(path, sample, f"file differs from {against} ({name} differs from the hash in {against}: "
                                        f"sha256 {digest[:12]}..., recorded {sha256[:12]}...); "
                                        "rerun the stage that wrote it", digest)
    return data


def read_verified_json(path: str | os.PathLike[str], sha256: str | None, sample: str | None = None,
                       against: str = "manifest.json") -> Any:
    """`read_verified`, then the bytes parsed as UTF-8 JSON (InputError naming the file and sample when they are
    not)."""
    return parse_json(read_verified(path, sha256, sample, against), f"{path}: sample {sample}" if sample else str(path))


def read_json_hashed(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """A JSON file and the SHA-256 of the very bytes parsed (one read; for the files a later stage pins by hash)."""
    data = read_verified(path, None)
    return parse_json(data, str(path)), sha256_bytes(data)


def parse_json(data: bytes, where: str) -> Any:
    """Bytes already read, as UTF-8 JSON (a leading BOM dropped), with `jsonio.read_json`'s messages prefixed by
    `where`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: cannot read: {' '.join(str(exc).split())}") from None
    return parse_json_text(text, where)


def file_matches(path: str | os.PathLike[str], sha256: str) -> bool:
    """Whether the file exists and still has the hash `sha256` (for a resume check that redoes, never refuses)."""
    try:
        return sha256_file(path) == sha256
    except OSError:
        return False
