"""`fdb synth` of a pause-handling sample: speech parts with pauses between them, each pause annotated."""

from __future__ import annotations

from collections.abc import Callable

from duplexeval.fdb.synth.parse import SampleSpec
from duplexeval.fdb.synth.render import Timeline, Utterance, place_parts
from duplexeval.fdb.tasks.base import Rendered, SynthRecipe


class PauseSynth(SynthRecipe):
    """`parts` (at least one pause); pause.json lists every pause from the end of a word to the next word's start."""

    keys = {"parts": None, "lead": 0.2, "tail": 0.0}
    parts_need_pause = True

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        return Rendered(place_parts(spec.parts, tl, speak))
