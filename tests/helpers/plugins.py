"""A user's plugin module on sys.path, and an installed-package stand-in that declares entry points for it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str) -> Path:
    """Write `module`.py holding `source` into a fresh folder on sys.path; returns the folder."""
    d = tmp_path / "plugins"
    d.mkdir()
    (d / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(d))
    return d


def declare_entry_point(folder: Path, dist: str, group: str, name: str, target: str) -> dict[str, str]:
    """A `<dist>-0.1.dist-info` in `folder` with `[group] name = target`; returns an environment whose
    PYTHONPATH finds it (and this interpreter's path), for a subprocess that sees it as installed."""
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
