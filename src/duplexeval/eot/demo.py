"""`duplexeval eot demo`: espeak-ng turns with real pauses, the ``silence`` and ``silero`` detectors (and
``smart-turn`` at eot-bench's 0.2 s score point when pipecat-ai is installed), swept and compared, offline."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from duplexeval import eot
from duplexeval.eot.api import SweepSummary
from duplexeval.eot.compare_stage import format_compare
from duplexeval.eot.detectors import smart_turn_available
from duplexeval.eot.sources import span_set_from_script
from duplexeval.eot.spans import SpanSet, span_set_summary
from duplexeval.eot.sweep_report import format_summary
from duplexeval.fdb.synth import parse_script
from duplexeval.jsonio import write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.reruns import check_replace

VOICES = [("en-us", 160, 50), ("en-gb", 170, 40), ("en-us+f3", 165, 60), ("en-gb-x-rp", 145, 50)]
# (parts, tail after the last word). Pauses are mid-sentence holds; the tail is the true end of turn.
TURNS: list[list[Any]] = [
    ["So for the trip next month, we were thinking about", {"pause": 1.2},
     "maybe renting a small cabin near the lake."],
    ["The thing that really surprised me was", {"pause": 0.8}, "how quickly the whole team", {"pause": 0.5},
     "agreed on the plan."],
    ["Well, my sister lives out in", {"pause": 1.6}, "Colorado, and she keeps telling me to visit."],
    ["I was going to order the", {"pause": 0.4}, "um, the vegetable curry, I think."],
    ["Can you remind me", {"pause": 0.3}, "what time the pharmacy closes today?"],
    ["We should probably leave by", {"pause": 2.2}, "six, if we want to beat the traffic."],
    ["The report is mostly done, but the last section", {"pause": 0.9}, "still needs some numbers."],
    ["My favourite part of the film was", {"pause": 1.0}, "the scene at the train station."],
    ["If it rains tomorrow", {"pause": 0.6}, "we can just move the picnic indoors."],
    ["I think the answer is", {"pause": 1.4}, "forty two."],
    ["Honestly, I am not sure", {"pause": 0.7}, "whether the store is open on Sundays."],
    ["Let me check my calendar", {"pause": 2.8}, "yes, Thursday works for me."],
    ["The new phone has a better camera,", {"pause": 0.5}, "but the battery is worse."],
    ["Could you send me the address", {"pause": 1.1}, "of the restaurant?"],
    ["Last summer we drove all the way to", {"pause": 1.8}, "the coast and back."],
    ["I need to book a table for", {"pause": 0.35}, "four people at eight."],
]


def demo_script() -> JsonObject:
    """The demo as a `fdb synth` script: pause-handling samples with a 4 s tail (the EoT span)."""
    samples = []
    for k, parts in enumerate(TURNS):
        v, rate, pitch = VOICES[k % len(VOICES)]
        samples.append({"subset": "synthetic_pause_handling", "id": str(k + 1), "voice": v, "rate": rate,
                        "pitch": pitch, "parts": parts, "lead": 0.3, "tail": 4.0})  # fmt: skip
    return {"name": "eot-demo", "samples": samples}


def demo_spans() -> SpanSet:
    return span_set_from_script(parse_script(demo_script(), "<eot demo script>"), "<eot demo script>")


def run_demo(out: Path, force: bool = False, echo: Callable[[str], Any] = print,
             jobs: int = 1) -> dict[str, SweepSummary]:  # fmt: skip
    """Predict, sweep and compare with the family's API (`duplexeval.eot`, an example of it); returns the sweeps
    (also written under ``out``). A rerun finds its own files and redoes only the cheap steps; files of other
    settings there are refused unless `force`."""
    t0 = time.monotonic()
    spans = demo_spans()
    info = span_set_summary(spans)
    echo(f"eot demo: {info.n_turns} espeak-ng turns, {info.n_hold_spans} hold + {info.n_eot_spans} eot spans")
    out.mkdir(parents=True, exist_ok=True)
    # (detector, the silences it is scored at, the sweep's score mode and point)
    runs: list[tuple[str, tuple[float, ...], str, float | None]] = [("silence", (), "max", None),
                                                                   ("silero", (), "max", None)]  # fmt: skip
    why = smart_turn_available()
    if why is None:
        runs.append(("smart-turn", (0.2,), "score_point", 0.2))
    else:
        echo(f"smart-turn skipped: {why}")
    summaries: dict[str, SweepSummary] = {}
    for name, only_at, mode, point in runs:
        pred_path = out / f"{name}.parquet"
        r = eot.predict(spans, detector=name, out=pred_path, only_at=only_at, jobs=jobs, force=force, progress=False)
        when = "up to date (made by an earlier demo run)" if r.up_to_date else f"in {r.elapsed_s:.1f} s"
        echo(f"{name}: {r.n_scored} predictions ({r.n_predictions} grid rows) {when}")
        title = f"{name} on the eot demo turns"
        res = eot.sweep(pred_path, out=out / name, score_mode=mode, score_point=point, force=force, title=title)
        for note in res.notes:
            echo(note)
        echo(format_summary(res.document, title))
        summaries[name] = res
    cmp = eot.compare(out / "silence.parquet", out / "silero.parquet")
    check_replace(out / "compare.json", cmp.document, force)
    write_json(out / "compare.json", dict(cmp.document))
    echo(format_compare(cmp.document))
    echo(f"eot demo: done in {time.monotonic() - t0:.1f} s; files in {out}")
    return summaries
