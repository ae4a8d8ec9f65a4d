"""Small controller clips built by hand for the controller and report tests."""

from __future__ import annotations

import numpy as np

from duplexeval.controller.format.data import Clip, ClipFrames, ClipMeta, PauseProbe, TurnProbe


def turn_clip(cid, group, fire_at, n=60, turn_end=2.0):
    s = np.zeros(n)
    if fire_at is not None:
        s[fire_at - 1 :] = 0.95  # fires at frame fire_at (after warmup)
    meta = ClipMeta(cid, n, group=group, turn_probes=[TurnProbe(turn_end)], pause_probes=[PauseProbe(0.8, 1.2)])
    return Clip(meta, ClipFrames(n, endpoint=s, level_db=np.full(n, -20.0)))
