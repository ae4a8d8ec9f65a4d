"""Child processes that die with their parent, however the parent dies (SIGKILL included).

`start(args)` runs a `duplexeval` child with the read end of a pipe whose write end only this process
holds; the child's `cli.main` calls `watch_parent()`, a thread blocked reading that pipe: when the
parent dies the kernel closes the write end, the read returns end-of-file, and the child exits at once
(its own children, started the same way, follow). A pipe rather than PR_SET_PDEATHSIG, which fires when
the *thread* that started the child exits (a child started from a worker thread would die early) and is
Linux-only. The local pool's workers use `executors.die_with_parent` (a parent-id watch) for the same job.
"""

from __future__ import annotations

import os
import subprocess
import threading
import weakref
from collections.abc import Sequence
from typing import Any

PARENT_FD_ENV = "DUPLEXEVAL_PARENT_FD"
ORPHAN_EXIT = 1


def start(args: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(args, **popen)` for a child that exits when this process dies (see the module docstring)."""
    read_end, write_end = os.pipe()
    env = dict(popen.pop("env", None) or os.environ)
    env[PARENT_FD_ENV] = str(read_end)
    try:
        proc = subprocess.Popen(list(args), env=env, pass_fds=(read_end,), **popen)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _HELD[proc] = weakref.finalize(proc, _close, write_end)  # held while the Popen object lives, or until release
    return proc


def release(proc: subprocess.Popen[Any]) -> None:
    """Close this process's end of `proc`'s pipe: the child exits as if this process had died."""
    done = _HELD.pop(proc, None)
    if done is not None:
        done()


_HELD: weakref.WeakKeyDictionary[subprocess.Popen[Any], weakref.finalize[Any, Any]] = weakref.WeakKeyDictionary()


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def watch_parent() -> None:
    """In a child made by `start`: exit as soon as the parent is gone. Does nothing in any other process."""
    raw = os.environ.pop(PARENT_FD_ENV, None)
    if raw is None or not raw.isdigit():
        return
    fd = int(raw)
    try:
        os.set_inheritable(fd, False)  # our own children get a pipe of their own, not this one
    except OSError:
        return  # no such descriptor: not started by `start` after all

    def wait() -> None:
        try:
            while os.read(fd, 64):  # the parent never writes; a read returns only at end-of-file
                pass
        except OSError:
            pass
        os._exit(ORPHAN_EXIT)

    threading.Thread(target=wait, daemon=True, name="duplexeval-parent-pipe").start()
