"""The stream resampler's definition computed the long way, for its equivalence test and its CPU benchmark."""

from __future__ import annotations

import numpy as np

from duplexeval.systems.net.resample_stream import StreamResampler


def full_polyphase(r: StreamResampler, chunks: list[np.ndarray]) -> np.ndarray:
    """The resampler's definition, computed the long way: every upsampled sample of every phase (np.convolve
    over the carried input), then every `down`-th of them kept."""
    poly = [row[::-1] for row in r._poly_rev]
    hist, phase, out = np.zeros(r._m - 1), 0, []
    for x in chunks:
        if not x.shape[0]:
            continue  # nothing in, nothing out, the state unchanged
        xe = np.concatenate([hist, x.astype(np.float64)])
        hist = xe[xe.shape[0] - hist.shape[0] :]
        y = np.empty(x.shape[0] * r.up)
        frames = y.reshape(x.shape[0], r.up)
        for p, sub in enumerate(poly):
            frames[:, p] = np.convolve(xe, sub, mode="valid")
        out.append(y[phase :: r.down].astype(np.float32))
        phase = (phase - y.shape[0]) % r.down
    return np.concatenate(out)
