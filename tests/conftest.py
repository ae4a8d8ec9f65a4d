"""Test-session settings: keep every cache inside the session's temporary folder (never the user's home),
and mark the slow tests (listed in slow_tests.txt, plus every Ray test) so `make test-fast` can skip them.

The folders under tests/ mirror src/duplexeval/ (tests/fdb/unified/ tests duplexeval.fdb.unified); the tests of
top-level modules sit in tests/ itself, as those modules sit in duplexeval/ itself, rather than in a tests/core/
that has no counterpart in the package. Shared helpers are the package tests.helpers (see README.md here)."""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, SRC

_SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def _slow_ids() -> set[str]:
    lines = _SLOW_LIST.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the `slow` marker to the listed tests (parametrized cases by their base id) and to Ray tests."""
    slow = _slow_ids()
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        module = base.split("::", 1)[0]
        if base in slow or module in slow or item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp_path_factory.mktemp("duplexeval-cache"))


@pytest.fixture(scope="session")
def ray_local():
    """One real local Ray instance (2 CPUs) for the whole test session; workers see src/ and the repository root
    (for `tests.*` modules) on their path."""
    ray = pytest.importorskip("ray")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), str(ROOT), old) if p)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    yield ray
    ray.shutdown()




def _silence_shutdown_noise() -> None:
    """At interpreter exit, after pytest has printed its summary, send stderr to /dev/null.

    soxr's nanobind extension reports its stream-resampler objects as "leaked" while the interpreter
    finalizes (a binding-side refcount report); those lines would otherwise follow pytest's closing
    summary line, which CI reads. atexit handlers run after pytest is done and before that report.
    """
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


atexit.register(_silence_shutdown_noise)


@pytest.fixture(params=["sequence", "per-frame"])
def vad_path(request, monkeypatch):
    """Run a test through both VAD paths: Silero's sequence model (when installed) and the batched per-frame one."""
    from duplexeval import vad_batched
    from duplexeval.vad import load_sequence_vad

    if request.param == "sequence" and load_sequence_vad() is None:
        pytest.skip("silero_vad_16k_sequence.onnx not installed (pip install --no-deps silero-vad==6.2.3)")
    monkeypatch.setattr(vad_batched, "USE_SEQUENCE_MODEL", request.param == "sequence")
    return request.param


@pytest.fixture(autouse=True)
def _fresh_secret_registry():
    """Each test starts with no known secrets (the registry is process-wide)."""
    from duplexeval import redaction

    redaction.forget_all()
    yield
    redaction.forget_all()
