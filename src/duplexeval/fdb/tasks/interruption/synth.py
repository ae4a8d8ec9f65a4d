"""`fdb synth` of an interruption sample: a context turn, a gap (the model's time to talk), then the interrupt."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from duplexeval.fdb.synth.render import round_s
from duplexeval.fdb.tasks.base import SynthRecipe


class InterruptionSynth(SynthRecipe):
    """interrupt.json's [S, R] is the interrupt's first word start and last word end; both parts are kept as WAVs."""

    keys = {"context": None, "interrupt": None, "lead": 0.2, "gap": 7.0, "tail": 15.0}

    def render(self, spec: Mapping[str, Any], tl: Any, speak: Callable[[str], Any]) -> tuple[Any, dict[str, Any]]:
        ctx = speak(spec["context"])
        itr = speak(spec["interrupt"])
        tl.speech(ctx)
        tl.silence(spec["gap"])
        placed = tl.speech(itr)
        annotation = [
            {
                "context": spec["context"],
                "interrupt": spec["interrupt"],
                "timestamp": [round_s(placed[0][1]), round_s(placed[-1][2])],
            }
        ]
        return annotation, {"context.wav": ctx.audio, "interrupt.wav": itr.audio}
