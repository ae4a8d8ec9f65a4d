"""The Ray processes a run started die with it, even when it is killed: a small watcher process, started by the Ray
executor right after it starts a local Ray instance, notes every Ray process below the driver while the driver lives
and, once the driver is gone (SIGKILL included), stops those still running.

Ray's raylet and GCS die with their parent already; its dashboard and runtime-env agents (children of the raylet)
poll for their parent and linger about a minute after it died (measured: 66 s after a SIGKILL of `eot predict
--executor ray`). Linux only (it reads /proc); elsewhere it exits at once. Processes are named by (pid, start time),
so a pid the system has given to another process since is never signalled.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

POLL_S = 0.5
GRACE_S = 2.0
PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, or None."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold spaces and brackets
    return int(fields[1]), int(fields[19])


def _is_ray(pid: int) -> bool:
    try:
        cmd = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return cmd.startswith(b"ray::") or b"/ray/" in cmd


def _ray_below(root: int) -> dict[int, int]:
    """{pid: start time} of the Ray processes descended from `root`."""
    children: dict[int, list[int]] = {}
    start: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry.name))
                start[int(entry.name)] = st[1]
    below: dict[int, int] = {}
    frontier = [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in below:
                below[child] = start[child]
                frontier.append(child)
    return {pid: t for pid, t in below.items() if _is_ray(pid)}


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == started


def watch(driver: int) -> None:
    """Follow `driver`'s Ray processes while it lives; then stop the ones it left behind."""
    if not PROC.is_dir():
        return
    me = _stat(driver)
    if me is None:
        return
    seen: dict[int, int] = {}
    while _alive(driver, me[1]):
        try:
            seen.update(_ray_below(driver))
            seen = {pid: t for pid, t in seen.items() if _alive(pid, t)}
        except (OSError, ValueError, IndexError):  # a process that changed while /proc was read: next poll
            pass
        time.sleep(POLL_S)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = {pid: t for pid, t in seen.items() if _alive(pid, t)}
        for pid, t in left.items():
            if _alive(pid, t):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        if not left:
            return
        time.sleep(GRACE_S)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
