"""Test-session settings: keep every cache inside the session's temporary folder (never the user's home)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["DUPLEXEVAL_CACHE"] = str(tmp_path_factory.mktemp("duplexeval-cache"))
