"""Shared test helpers, imported as a package (`from tests.helpers.fdb import write_tree`), and the paths tests use.

Tests run with the repository root on sys.path (pytest puts it there: every test folder is a package), so a child
process or a Ray worker that imports a helper needs `ROOT` on its PYTHONPATH, and a `module:Class` spec names a
helper by its dotted path (`tests.helpers.net:Echo`)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SRC = ROOT / "src"
DATA = TESTS / "data"
EXAMPLES = ROOT / "examples"
BENCHMARKS = ROOT / "benchmarks"
