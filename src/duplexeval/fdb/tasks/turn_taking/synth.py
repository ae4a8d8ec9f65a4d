"""`fdb synth` of a turn-taking sample: one user turn; E is its last word's end."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from duplexeval.fdb.synth.render import round_s
from duplexeval.fdb.tasks.base import SynthRecipe


class TurnSynth(SynthRecipe):
    """`text`, then silence; turn_taking.json's item spans [E, E + partner_gap]."""

    keys = {"text": None, "lead": 0.2, "tail": 8.0, "partner_gap": 0.4}

    def render(self, spec: Mapping[str, Any], tl: Any, speak: Callable[[str], Any]) -> tuple[Any, dict[str, Any]]:
        placed = tl.speech(speak(spec["text"]))
        end = placed[-1][2]
        return [{"text": "[TURN-TAKING]", "timestamp": [round_s(end), round_s(end + spec["partner_gap"])]}], {}
