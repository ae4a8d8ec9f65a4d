"""`fdb synth` of an interruption sample: a context turn, a gap (the model's time to talk), then the interrupt."""

from __future__ import annotations

from collections.abc import Callable

from duplexeval.fdb.synth.parse import SampleSpec
from duplexeval.fdb.synth.render import Timeline, Utterance, round_s
from duplexeval.fdb.tasks.base import Rendered, SynthRecipe


class InterruptionSynth(SynthRecipe):
    """interrupt.json's [S, R] is the interrupt's first word start and last word end; both parts are kept as WAVs."""

    keys = {"context": None, "interrupt": None, "lead": 0.2, "gap": 7.0, "tail": 15.0}

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        ctx = speak(spec.text("context"))
        itr = speak(spec.text("interrupt"))
        tl.speech(ctx)
        tl.silence(spec.seconds("gap"))
        placed = tl.speech(itr)
        annotation = [
            {
                "context": spec.text("context"),
                "interrupt": spec.text("interrupt"),
                "timestamp": [round_s(placed[0][1]), round_s(placed[-1][2])],
            }
        ]
        return Rendered(annotation, {"context.wav": ctx.audio, "interrupt.wav": itr.audio})
