"""The report in a real browser: Debian's headless Chromium, driven over the DevTools protocol
(tests/helpers/chromium.py).

It loads the page `duplexeval demo` writes (a small dataset, two systems, every stage real), checks the forest plot,
plays one audio element until it has advanced, filters and searches the sample list, opens a card and checks its
timeline; then opens the pages made from the dialogue and controller demos and does the same there."""

from __future__ import annotations

from pathlib import Path

import pytest

from duplexeval.report.build import write_report
from tests.helpers.chromium import CHROMIUM, Browser
from tests.helpers.systems import Dataset, interruption, pause, turn_taking

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install "
                                                          "-y chromium)")]

READY = "document.documentElement.getAttribute('data-ready') === '1'"
SHOWN = "document.querySelectorAll('article.smp:not(.hidden)').length"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from duplexeval.controller.demo import run_demo as controller_demo
    from duplexeval.demo import run_demo
    from duplexeval.dialogue.demo import run_demo as dialogue_demo

    base = tmp_path_factory.mktemp("browser")
    ds = Dataset("tiny", base / "ds")
    pause(ds, "1", "I went to the shop", "and bought some bread", gap_s=1.2)
    turn_taking(ds, "1", "What is the capital of France?", tail_s=4.0)
    turn_taking(ds, "2", "Could you tell me the time?", tail_s=4.0)
    interruption(ds, "1", "Tell me a long story about the sea", "wait, stop")
    res = run_demo(base / "demo", ["silent", "turn-based:vad=energy,text=Paris is the capital."], progress=False,
                   say=lambda s: None, dataset=ds)
    assert res.report is not None
    dialogue_demo(base / "dlg", 0, None)
    controller_demo(base / "ctl", n=2, exchanges=2)
    dlg = write_report([base / "dlg" / s for s in ("half-duplex", "eager", "keyword")], base / "dialogue.html")
    ctl = write_report([base / "ctl" / n for n in ("report-silence.json", "report-silero.json", "compare.json")],
                       base / "controller.html")
    return {"fdb": res.report, "dialogue": dlg, "controller": ctl}


@pytest.fixture(scope="module")
def browser() -> Browser:
    with Browser(1280, 900) as b:
        yield b


def _select(b: Browser, name: str, value: str) -> None:
    b.js(f"var s = document.querySelector('select[data-filter={name}]'); s.value = {value!r}; "
         "s.dispatchEvent(new Event('change')); 1")


def test_demo_report_forest_audio_and_filters(pages: dict[str, Path], browser: Browser, tmp_path: Path) -> None:
    b = browser
    b.open(pages["fdb"].resolve().as_uri())
    b.wait_for(READY)
    # the first screen is the forest plot: one row per headline metric, a dot per system, differences from turn-based
    assert b.js("document.querySelector('#summary .forest') !== null")
    assert b.js("document.querySelector('#summary h2').getBoundingClientRect().top") < 900
    assert "difference from turn-based-" in b.js("document.querySelector('#summary .forest').textContent")
    assert b.js("document.querySelectorAll('#summary .forest .fl').length") >= 6
    assert b.js("document.querySelectorAll('#summary .forest circle').length") >= 10
    assert b.js("[...document.querySelectorAll('#summary .forest circle title')].some(t => /silent: "
                "/.test(t.textContent))")
    # filter by subset and outcome, then search the words
    total = b.js(SHOWN)
    assert total == 4
    _select(b, "group", "candor_turn_taking")
    assert b.js(SHOWN) == 2
    _select(b, "group", "")
    _select(b, "outcome", "no_response")
    assert b.js(SHOWN) == 2 and b.js("document.querySelector('.count').textContent") == f"2 of {total} shown"
    _select(b, "outcome", "")
    b.js("var q = document.querySelector('input[type=search]'); q.value = 'paris'; q.dispatchEvent(new "
         "Event('input')); 1")
    assert 1 <= b.js(SHOWN) < total
    b.js("var q = document.querySelector('input[type=search]'); q.value = ''; q.dispatchEvent(new Event('input')); 1")
    assert b.js(SHOWN) == total
    # open a card: its timeline has the input and both outputs; play the user's input and see it advance
    b.js("document.querySelector('#x-candor_turn_taking-1 h4').click(); 1")
    assert b.js("document.querySelectorAll('#x-candor_turn_taking-1 svg.tl polygon').length") >= 2  # input + an output
    assert b.js("document.querySelectorAll('#x-candor_turn_taking-1 audio').length") == 3
    b.js("window.__a = document.querySelector('#x-candor_turn_taking-1 audio'); window.__a.play().then(() => 1)")
    b.wait_for("window.__a.currentTime > 0.3", timeout_s=30)
    # the playhead
    assert b.js("document.querySelector('#x-candor_turn_taking-1 svg.tl line[visibility=visible]') !== null")
    b.js("window.__a.pause(); 1")
    # a worst-case link opens its card
    b.js("location.hash = '#s0-candor_turn_taking-1'; 1")
    b.wait_for("document.querySelector('#x-candor_turn_taking-1').classList.contains('open')")
    shot = b.screenshot(tmp_path / "fdb.png")
    assert shot.stat().st_size > 20_000


def test_dialogue_and_controller_pages(pages: dict[str, Path], browser: Browser) -> None:
    b = browser
    b.open(pages["dialogue"].resolve().as_uri())
    b.wait_for(READY)
    assert "difference from half-duplex" in b.js("document.querySelector('#summary').textContent")
    assert b.js(SHOWN) == 800
    _select(b, "system", "1")
    _select(b, "verdict", "bad")
    eager_bad = b.js(SHOWN)
    assert 0 < eager_bad < 800
    b.js("document.querySelector('article.smp:not(.hidden) h4').click(); 1")
    assert b.js("document.querySelectorAll('article.smp.open .chat').length") == 3  # each system's transcript
    b.open(pages["controller"].resolve().as_uri())
    b.wait_for(READY)
    assert "difference from silence" in b.js("document.querySelector('#summary').textContent")
    assert b.js(SHOWN) == 2
    b.js("document.querySelector('#k-conv000 h4').click(); 1")
    # both controllers' endpoint curves
    assert b.js("document.querySelectorAll('#k-conv000 svg.tl polyline').length") == 2
    b.js("window.__b = document.querySelector('#k-conv000 audio'); window.__b.play().then(() => 1)")
    b.wait_for("window.__b.currentTime > 0.3", timeout_s=30)
    assert b.js("window.__b.pause(); window.__b.paused")
