"""`duplexeval serve` children die with their parent: SIGKILL an `fdb export` of a loopback system, or a `duplexeval
demo` whose network export is a child process (with its own `serve` child), and every descendant exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duplexeval import children
from duplexeval.demo import NETWORK_DEMO
from tests.helpers.processes import alive, child_pids
from tests.helpers.systems import one_sample_dataset

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the child processes")


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for k in child_pids(todo.pop()):
            found.append(k)
            todo.append(k)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _kill_and_expect_descendants_gone(argv: list[str], want: list[str], timeout_s: float = 120.0) -> None:
    """Run `duplexeval ARGV`, wait until descendants matching every word in `want` run, SIGKILL it, and require
    every descendant to exit within 5 s."""
    proc = subprocess.Popen([sys.executable, "-m", "duplexeval", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    seen: list[int] = []
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            seen = _descendants(proc.pid)
            lines = [_cmdline(p) for p in seen]
            if all(any(w in line for line in lines) for w in want):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"the children never appeared: {lines}; {err[-500:]}")
            time.sleep(0.1)
        time.sleep(0.5)  # let the run get under way
        seen = _descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while any(alive(p) for p in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [(p, _cmdline(p)) for p in seen if alive(p)]
        assert not left, f"outlived their killed parent: {left}"
    finally:
        for p in [proc.pid, *seen]:
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_sigkill_of_an_export_takes_its_serve_child(tmp_path: Path) -> None:
    ds = one_sample_dataset(tmp_path / "ds", T=30.0)
    _kill_and_expect_descendants_gone(["fdb", "export", "--system",
                                       "loopback:protocol=openai-realtime,serve=turn-based", "--dataset", str(ds),
                                       "--out", str(tmp_path / "tree"), "-q"], ["serve"])


def test_sigkill_of_the_demo_takes_its_network_export_and_its_server(tmp_path: Path) -> None:
    _kill_and_expect_descendants_gone(["demo", "--systems", NETWORK_DEMO, "--out", str(tmp_path / "demo")],
                                      ["fdb export", "serve"])


def test_a_child_whose_parent_pipe_closes_exits_and_others_ignore_the_watch() -> None:
    code = "from duplexeval import children; import time; children.watch_parent(); time.sleep(30)"
    proc = children.start([sys.executable, "-c", code])
    time.sleep(0.5)
    assert proc.poll() is None  # the parent lives: the child runs on
    children.release(proc)  # this end of the pipe closes, as a dead parent's would
    assert proc.wait(5) == children.ORPHAN_EXIT
    os.environ.pop(children.PARENT_FD_ENV, None)
    children.watch_parent()  # not a child made by `start`: nothing happens
