"""An output never replaces an input: the check every command runs before any work, and the guard at write time.

`check_outputs` compares each output path with each input path of a command. Paths are compared as
the files they name: after `..` and symlinks are resolved, and by device and inode, so a hard link to
an input is that input. An output is refused when it is an input, when it lies inside an input folder
the command does not write into (or is a hard link of a file there) (`Input.owned` lists the names a command writes into
a folder it owns),
and, for an output folder, when an input lies inside it (at one of the names the command writes there,
or anywhere when the command writes the whole folder).

`protect(inputs)` makes `jsonio`'s writers refuse, for the rest of a command, to replace an input file:
the last line of defence for files a command writes that its declaration did not foresee.
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from duplexeval.errors import InputError


@dataclass(frozen=True)
class Input:
    """A path a command reads; `owned` names (glob patterns, relative) what the command writes inside it."""

    option: str
    path: Path
    owned: tuple[str, ...] | None = None  # None: read only


@dataclass(frozen=True)
class Output:
    """A path a command writes: a file, or a folder (`writes` the names it writes there; None: all of it)."""

    option: str
    path: Path
    folder: bool = False
    writes: tuple[str, ...] | None = None
    beside: Path | None = None  # the path the user gave, when this is a file the command writes next to it

    @property
    def what(self) -> str:
        if self.beside is not None:
            return f"{self.option} {self.beside} (writes {self.path} beside it)"
        return f"{self.option} {self.path}"


def _resolved(p: Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(p)))


def _ident(p: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def same_path(a: Path, b: Path) -> bool:
    """`a` and `b` name the same file or folder (resolved path, or same device and inode)."""
    if _resolved(a) == _resolved(b):
        return True
    ia = _ident(a)
    return ia is not None and ia == _ident(b)


def is_inside(child: Path, folder: Path) -> bool:
    """`child` lies strictly inside `folder` (both resolved; a folder reached through a hard link is not followed)."""
    c, f = _resolved(child), _resolved(folder)
    return c != f and c.is_relative_to(f)


def _matches(rel: Path, patterns: Sequence[str]) -> bool:
    """`rel` (relative to a folder) is, or lies inside, something the patterns name."""
    parts = rel.parts
    for pat in patterns:
        n = len(Path(pat).parts)
        if len(parts) >= n and fnmatch.fnmatchcase("/".join(parts[:n]), pat):
            return True
    return False


def _in_owned(inner: Path, folder: Path, patterns: Sequence[str]) -> bool:
    return _matches(_resolved(inner).relative_to(_resolved(folder)), patterns)


def _hard_link_inside(path: Path, folder: Path) -> Path | None:
    """The file inside `folder` that `path` is another hard link of (only looked for when `path` is an existing file
    with more than one link, so the walk is rare); None otherwise."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_nlink < 2 or not os.path.isfile(path) or is_inside(path, folder):
        return None
    for root, _dirs, files in os.walk(folder):
        for name in files:
            inner = Path(root) / name
            try:
                ist = os.stat(inner, follow_symlinks=False)
            except OSError:
                continue
            if (ist.st_dev, ist.st_ino) == (st.st_dev, st.st_ino):
                return inner
    return None


def check_outputs(outputs: Sequence[Output], inputs: Sequence[Input]) -> None:
    """One InputError line naming the option, the output and the input, for the first output that would
    replace or write inside an input (see the module docstring)."""
    existing = [i for i in inputs if i.path.exists()]
    for k, out in enumerate(outputs):
        for other in outputs[:k]:
            if same_path(out.path, other.path):
                raise InputError(f"{out.what}: the same path as {other.what}; give each output its own path")
        for inp in existing:
            what = out.what
            if same_path(out.path, inp.path):
                raise InputError(f"{what}: is the input {inp.option} {inp.path}; it would be replaced; "
                                 "write the output somewhere else")
            if inp.path.is_dir() and is_inside(out.path, inp.path):
                if inp.owned is None or _in_owned(out.path, inp.path, inp.owned):
                    raise InputError(f"{what}: lies inside the input {inp.option} {inp.path}, which this command only "
                                     "reads; write the output outside it")
            if inp.path.is_dir() and not out.folder:
                inner = _hard_link_inside(out.path, inp.path)
                if inner is not None and (inp.owned is None or _in_owned(inner, inp.path, inp.owned)):
                    raise InputError(f"{what}: is a hard link of {inner}, inside the input {inp.option} {inp.path}; "
                                     "it would be replaced; write the output somewhere else")
            if out.folder and is_inside(inp.path, out.path):
                if out.writes is None or _in_owned(inp.path, out.path, out.writes):
                    raise InputError(f"{what}: the input {inp.option} {inp.path} lies inside this output folder, "
                                     "where it would be replaced; write the output to a folder of its own")
    for inp in existing:  # an input inside a folder the command owns, at a name the command writes
        for owner in existing:
            if owner is inp or owner.owned is None or not owner.path.is_dir():
                continue
            if is_inside(inp.path, owner.path) and _in_owned(inp.path, owner.path, owner.owned):
                raise InputError(f"{inp.option} {inp.path}: lies inside {owner.option} {owner.path} at a name this "
                                 "command writes; it would be replaced; give a copy outside it")


# ---------------------------------------------------------------- the guard at write time

_Protected = tuple[Input, Path, "tuple[int, int] | None"]
_FILES: list[_Protected] = []
_LOCK = threading.Lock()


@contextmanager
def protect(inputs: Sequence[Input]) -> Iterator[None]:
    """While active, `check_write` refuses to replace any input file (process-wide: one command per process)."""
    files = [(inp, _resolved(inp.path), _ident(inp.path)) for inp in inputs if inp.path.is_file()]
    with _LOCK:
        prev = list(_FILES)
        _FILES[:] = files
    try:
        yield
    finally:
        with _LOCK:
            _FILES[:] = prev


def check_write(path: Path) -> None:
    """Refuse (InputError) writing `path` when it is an input file of the running command."""
    files = _FILES
    if not files:
        return
    ident = _ident(path)
    res = _resolved(path)
    for inp, rpath, rid in files:
        if res == rpath or (ident is not None and ident == rid):
            raise InputError(f"{path}: is the input {inp.option} {inp.path}; refusing to replace it")
