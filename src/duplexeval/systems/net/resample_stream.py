"""A stateful rational resampler: every input frame gives exactly its share of output samples.

Ogg/Opus frames must be exactly 1920 samples at 24 kHz, so the 16 kHz -> 24 kHz conversion of each
80 ms input frame must give exactly 1920 samples with no buffering lag. soxr's stream mode emits in
uneven blocks (up to ~36 ms behind at HQ), so this is a causal polyphase FIR (scipy's `firwin`, one
`np.convolve` per phase over the input with its last samples carried: the same sums as `lfilter` on the
zero-stuffed stream with carried state, without the zeros): a constant delay of `delay_samples` output
samples, nothing else. When few upsampled samples are kept (22.05 kHz -> 16 kHz keeps 1 in 441) only those
are computed, one dot product of a phase with the input window each; the two ways give the same float32
samples (tests/systems/net/test_moshi_wire.py, benchmarks/resampler_cost.py for the CPU of each).
"""

from __future__ import annotations

from math import gcd

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.signal import firwin

TAPS_PER_PHASE = 24  # filter length = taps_per_phase * up (odd-adjusted); ~1 ms of delay at 16/24 kHz
KEPT_ONLY_ABOVE = 8  # keep 1 upsampled sample in more than this many: compute the kept ones only


class StreamResampler:
    """Resample float32 mono audio from `sr_in` to `sr_out` chunk by chunk with carried filter state.

    `process(x)` returns exactly `len(x) * sr_out / sr_in` samples when that is an integer (the caller
    feeds whole frames); otherwise the fractional remainder is carried to the next call.
    """

    def __init__(self, sr_in: int, sr_out: int) -> None:
        if sr_in <= 0 or sr_out <= 0:
            raise ValueError(f"sample rates must be positive, got {sr_in} and {sr_out}")
        g = gcd(sr_in, sr_out)
        self.sr_in, self.sr_out = sr_in, sr_out
        self.up, self.down = sr_out // g, sr_in // g
        self._identity = self.up == self.down
        n_taps = TAPS_PER_PHASE * max(self.up, self.down) | 1
        cutoff = 0.92 / max(self.up, self.down)  # of the upsampled Nyquist, just inside the narrower band
        h = (firwin(n_taps, cutoff) * self.up).astype(np.float64)
        # Phase p of the upsampled output: y[i * up + p] = sum_m h[p + m * up] * x[i - m].
        self._m = -(-n_taps // self.up)
        padded = np.zeros(self._m * self.up, dtype=np.float64)
        padded[:n_taps] = h
        # Row p, reversed: a dot product with the input window xe[i : i + m] gives np.convolve(xe, phase p)'s
        # 'valid' sample i.
        self._poly = [padded[p :: self.up].copy() for p in range(self.up)]
        self._poly_rev = np.stack([sub[::-1] for sub in self._poly])
        self._hist = np.zeros(self._m - 1, dtype=np.float64)  # the last m - 1 input samples
        self._phase = 0  # index into the upsampled stream of the next kept sample (mod down)
        # Linear-phase FIR: group delay (n_taps - 1) / 2 at the upsampled rate.
        self.delay_samples = ((n_taps - 1) / 2) / self.down

    def process(self, x: np.ndarray) -> np.ndarray:
        """Resample one chunk (float32 mono); returns float32."""
        x = np.asarray(x, dtype=np.float64).ravel()
        if self._identity:
            return x.astype(np.float32)
        n_up = x.shape[0] * self.up
        if not n_up:
            return np.zeros(0, dtype=np.float32)
        xe = np.concatenate([self._hist, x])
        self._hist = xe[xe.shape[0] - self._hist.shape[0] :]
        if self.down > KEPT_ONLY_ABOVE:
            frame, phase = np.divmod(np.arange(self._phase, n_up, self.down), self.up)  # the kept upsampled samples
            windows = sliding_window_view(xe, self._m)  # windows[i] = xe[i : i + m], one per input sample
            kept = np.einsum("ij,ij->i", windows[frame], self._poly_rev[phase])
        else:  # every upsampled sample, one np.convolve per phase (fewer, faster numpy calls)
            y = np.empty(n_up, dtype=np.float64)
            frames = y.reshape(x.shape[0], self.up)
            for p, sub in enumerate(self._poly):
                frames[:, p] = np.convolve(xe, sub, mode="valid")
            kept = y[self._phase :: self.down]
        self._phase = (self._phase - n_up) % self.down
        return np.asarray(kept, dtype=np.float32)
