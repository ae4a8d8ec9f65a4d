"""`fdb synth` of a turn-taking sample: one user turn; E is its last word's end."""

from __future__ import annotations

from collections.abc import Callable

from duplexeval.fdb.synth.parse import SampleSpec
from duplexeval.fdb.synth.render import Timeline, Utterance, round_s
from duplexeval.fdb.tasks.base import Rendered, SynthRecipe


class TurnSynth(SynthRecipe):
    """`text`, then silence; turn_taking.json's item spans [E, E + partner_gap]."""

    keys = {"text": None, "lead": 0.2, "tail": 8.0, "partner_gap": 0.4}

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        placed = tl.speech(speak(spec.text("text")))
        end = placed[-1][2]
        return Rendered([{"text": "[TURN-TAKING]",
                          "timestamp": [round_s(end), round_s(end + spec.seconds("partner_gap"))]}])
