"""`fdb synth` of a pause-handling sample: speech parts with pauses between them, each pause annotated."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from duplexeval.fdb.synth.render import place_parts
from duplexeval.fdb.tasks.base import SynthRecipe


class PauseSynth(SynthRecipe):
    """`parts` (at least one pause); pause.json lists every pause from the end of a word to the next word's start."""

    keys = {"parts": None, "lead": 0.2, "tail": 0.0}
    parts_need_pause = True

    def render(self, spec: Mapping[str, Any], tl: Any, speak: Callable[[str], Any]) -> tuple[Any, dict[str, Any]]:
        return place_parts(spec["parts"], tl, speak), {}
