"""`fdb synth` of a backchannel sample: speech parts with pauses (no annotation), and the ground-truth rule: a
timing distribution over 0.2 s bins from the pauses of the speech, written as icc_gt_distribution.json
(docs/synth.md)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from duplexeval.fdb.synth.parse import SampleSpec
from duplexeval.fdb.synth.render import SampleTiming, Timeline, Utterance, place_parts
from duplexeval.fdb.tasks.backchannel.groundtruth import ICC_GT_FILE
from duplexeval.fdb.tasks.base import Rendered, SynthRecipe
from duplexeval.jsontypes import JsonObject

BC_BIN_S = 0.2
BC_MIN_GAP_S = 0.25
BC_WINDOW_S = 0.6
BC_WEIGHT_CAP_S = 1.0
BC_EPSILON = 1e-12


def backchannel_gt(words: list[tuple[str, float, float]], T: float) -> list[float]:
    """Timing distribution over 0.2 s bins: mass after each pause of >= 0.25 s (docs/synth.md), eps-smoothed, sums to 1.

    Bins: int(T / 0.2) + 1, the binning the official evaluator uses for a T-second output. For every
    silent gap [a, b] between consecutive words with b - a >= 0.25 s, weight min(b - a, 1.0) is spread
    evenly over the bins that [a, a + min(b - a, 0.6)] touches. Then 1e-12 is added to every bin and
    the array is normalised. With no such gap the distribution is uniform.
    """
    n = int(T / BC_BIN_S) + 1
    dist = np.zeros(n, dtype=np.float64)
    for (_, _, a), (_, b, _) in itertools.pairwise(words):
        g = b - a
        if g < BC_MIN_GAP_S:
            continue
        lo = min(int(a / BC_BIN_S), n - 1)
        hi = min(int((a + min(g, BC_WINDOW_S)) / BC_BIN_S), n - 1)
        dist[lo : hi + 1] += min(g, BC_WEIGHT_CAP_S) / (hi - lo + 1)
    if not dist.any():
        dist[:] = 1.0
    dist += BC_EPSILON
    dist /= dist.sum()
    return [float(x) for x in dist]


class BackchannelSynth(SynthRecipe):
    """`parts` with optional pauses; each sample's distribution goes into icc_gt_distribution.json (ids in order)."""

    keys = {"parts": None, "lead": 0.2, "tail": 0.0}

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        place_parts(spec.parts, tl, speak)
        return Rendered()

    def dataset_files(self, rendered: Sequence[SampleTiming]) -> dict[str, JsonObject]:
        gt = {r.id: backchannel_gt(r.words, r.T) for r in rendered}
        return {ICC_GT_FILE: {k: gt[k] for k in sorted(gt, key=int)}}
