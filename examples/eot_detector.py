"""An end-of-turn detector: copy this file, change `p_end`, and sweep it as eot-bench does.

    duplexeval eot check eot_detector:QuietAndDone                  # its scores at pauses and at the end of two turns
    duplexeval eot predict --detector eot_detector:QuietAndDone:hold=0.2 --spans turns.yaml --out preds/mine.parquet
    duplexeval eot sweep preds/mine.parquet --out sweeps/mine        # operating points, with 95% intervals
    duplexeval eot predict --detector silence --spans turns.yaml --out preds/silence.parquet
    duplexeval eot compare preds/silence.parquet preds/mine.parquet  # paired B - A at every budget

Run them from this folder (a `module:Class` spec finds modules in the current folder); `turns.yaml` is a
synth script of three espeak-ng turns with pauses (docs/synth.md). The contract is eot-bench's:
`predict_batch(items) -> list[float]`, one probability in [0, 1] that the user's turn has ended per item.
An item is a dict with the audio so far (`audio: {array, sampling_rate}`), `silence_dur` (seconds of
silence at this point), `timestamp` and `messages` (the words heard so far, 0.5 s late, as chat turns).
Causal by construction: an item holds no audio after its timestamp.
"""

from __future__ import annotations

from typing import Any


class QuietAndDone:
    """A silence timer that waits longer when the last word heard cannot end a sentence ("about", "the", ...)."""

    CONTINUES = frozenset("a an the to of and or but about is was by in for with that my your if".split())

    def __init__(self, horizon_s: float = 1.0, hold: float = 0.3) -> None:
        self.horizon_s = horizon_s  # seconds of silence that make the score reach 1 on its own
        self.hold = hold  # the score is multiplied by this after a word that cannot end a sentence

    def info(self) -> dict[str, Any]:
        """What goes into the signature: a version and every setting that changes a score."""
        return {"value": "1", "hash": None, "settings": {"horizon_s": self.horizon_s, "hold": self.hold}}

    def p_end(self, silence_s: float, last_word: str) -> float:
        p = min(1.0, silence_s / self.horizon_s)
        return p * self.hold if last_word.lower() in self.CONTINUES else p

    def predict_batch(self, items: list[dict[str, Any]]) -> list[float]:
        out = []
        for it in items:
            words = " ".join(m.get("content", "") for m in it.get("messages", []) if m.get("role") == "user").split()
            out.append(self.p_end(float(it["silence_dur"]), words[-1] if words else ""))
        return out
