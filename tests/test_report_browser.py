"""The HTML report in a real browser: Debian's headless Chromium opens the page made from demo-like trees,
dumps its DOM (every subset and sample must be in the text) and takes a screenshot (not blank)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report import BC, SP, TT, UI, P, demo_like_tree

from duplexeval.report.build import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def _keys(tree: Path) -> list[str]:
    m = json.loads((tree / "manifest.json").read_text())
    return [f"{s['subset']}/{s['id']}" for s in m["samples"]]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("browser")
    return [demo_like_tree(base / "wait", "wait"), demo_like_tree(base / "talk", "talk")]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_chromium_renders_every_subset_and_sample(trees: list[Path], tmp_path: Path) -> None:
    from PIL import Image

    html = write_report(trees, tmp_path / "report.html", jobs=1)
    prof = tmp_path / "profile"
    url = html.resolve().as_uri()
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={prof}", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    for subset in (P, SP, TT, UI, BC):
        assert subset in text
    for tree in trees:
        for key in _keys(tree):
            assert key in text, key
    assert "F(t)" in text and "stop latency" in text
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={prof}", "--window-size=1280,1800", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    im = Image.open(shot).convert("RGB")
    assert im.size == (1280, 1800)
    colors = im.getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 50  # text, tables and figures were drawn, not a blank page


