"""`duplexeval eot check SPEC`: a detector's scores on two short turns, before a whole run.

Each turn has mid-sentence pauses (holds: the user is not done) and a true end of turn. A detector that
helps scores the end higher than the holds; the report shows, per span, its scores at a few silence
lengths, and warns when the scores never change or when the end never scores above the holds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from duplexeval.eot.demo import demo_script
from duplexeval.eot.predict_stage import PredictSettings, TurnTask, predict_turn_task
from duplexeval.eot.sources import span_set_from_script
from duplexeval.eot.spans import SpanSet
from duplexeval.fdb.synth import parse_script
from duplexeval.jsontypes import JsonObject

SHOWN_AT_S = (0.2, 0.5, 1.0, 2.0)  # silence lengths the report shows a score at
CHECK_TURNS = 2


@dataclass(frozen=True)
class SpanScores:
    """One silence span of a turn and the detector's scores on its grid (silence length, p_eot)."""

    turn: str
    label: str  # "hold" or "eot"
    duration_s: float
    scores: tuple[tuple[float, float | None], ...]

    def at(self, silence_s: float) -> float | None:
        """The score at the last grid time up to `silence_s` of silence (None past the span's end)."""
        if silence_s > self.duration_s + 1e-9:
            return None
        got = [p for s, p in self.scores if s <= silence_s + 1e-9]
        return got[-1] if got else None

    @property
    def top(self) -> float | None:
        vals = [p for _s, p in self.scores if p is not None]
        return max(vals) if vals else None


def check_spans() -> SpanSet:
    """The first turns of the eot demo (espeak-ng, with their pauses and the true end)."""
    script = demo_script()
    script["samples"] = script["samples"][:CHECK_TURNS]
    return span_set_from_script(parse_script(script, "<eot check turns>"), "<eot check turns>")


def check(detector: str, options: JsonObject, spans: SpanSet | None = None) -> list[SpanScores]:
    """The detector's scores on every span of the check turns."""
    ss = spans or check_spans()
    out = []
    options_json = json.dumps(options, sort_keys=True)
    for turn in ss.turns:
        rows = predict_turn_task(TurnTask(detector, options_json, turn, PredictSettings()))
        for sp in turn.spans:
            got = tuple((r[3], r[4]) for r in rows if r[0] == sp.index)
            out.append(SpanScores(turn.id, sp.label, round(sp.end_s - sp.start_s, 3), got))
    return out


def warnings(spans: list[SpanScores]) -> list[str]:
    """Why this detector's sweep would be meaningless, one line each (empty: its scores react to the audio)."""
    vals = [p for s in spans for _t, p in s.scores if p is not None]
    if not vals:
        return ["the detector gave no score at all"]
    if max(vals) - min(vals) < 1e-9:
        return [f"every score is {vals[0]:.3f}: the detector does not react to the audio (a sweep finds nothing)"]
    return []


def notes(spans: list[SpanScores]) -> list[str]:
    """What the scores say at equal silence lengths: does the end of turn score above the pauses?"""
    gaps = []
    for t in SHOWN_AT_S:
        hold = [p for s in spans if s.label == "hold" and (p := s.at(t)) is not None]
        end = [p for s in spans if s.label == "eot" and (p := s.at(t)) is not None]
        if hold and end:
            gaps.append((t, sum(end) / len(end) - sum(hold) / len(hold)))
    if not gaps:
        return []
    text = ", ".join(f"{round(d, 3) + 0.0:+.3f} at {t:g} s" for t, d in gaps)
    if all(d <= 1e-9 for _t, d in gaps):
        return [f"at equal silence the end of turn scores no higher than the pauses ({text}): on these turns the "
                "detector tells no more than a silence timer does"]
    return [f"end of turn minus pause, mean score at equal silence: {text}"]


def _p(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def format_check(detector: str, spans: list[SpanScores]) -> list[str]:
    """A table of scores per span at a few silence lengths; notes and warnings last."""
    from duplexeval.progress import text_table

    rows = [[s.turn.rsplit("/", 1)[-1], s.label, f"{s.duration_s:.2f} s", *(_p(s.at(t)) for t in SHOWN_AT_S)]
            for s in spans]
    table = text_table(["turn", "span", "length", *(f"p_eot at {t:g} s" for t in SHOWN_AT_S)], rows,
                       right=set(range(2, 3 + len(SHOWN_AT_S))))
    lines = [f"eot check: {detector} on {CHECK_TURNS} espeak-ng turns (hold: a pause inside the turn; eot: "
             "its true end; - : the silence is shorter)", *("  " + ln for ln in table.splitlines())]
    lines += [f"  note: {n}" for n in notes(spans)]
    lines += [f"  warning: {w}" for w in warnings(spans)]
    return lines
