"""Test-session settings: keep every cache inside the session's temporary folder (never the user's home)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp_path_factory.mktemp("duplexeval-cache"))


@pytest.fixture(scope="session")
def ray_local():
    """One real local Ray instance (2 CPUs) for the whole test session; workers see src/ and tests/ on their path."""
    ray = pytest.importorskip("ray")
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(os.path.dirname(here), "src")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, here, old) if p)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    yield ray
    ray.shutdown()
