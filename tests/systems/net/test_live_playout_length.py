"""The live playout places each chunk by its 16 kHz length computed arithmetically; it must equal the length
the offline playout gets by resampling the chunk (else truncate offsets drift from what was played)."""

from __future__ import annotations

import numpy as np
import pytest

from duplexeval.audio import resample, resampled_length
from duplexeval.systems.net.live import LivePlayout


@pytest.mark.parametrize("sr_in", [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 96000])
def test_resampled_length_equals_soxr(sr_in: int) -> None:
    rng = np.random.default_rng(sr_in)
    for n in [*range(1, 400), *rng.integers(400, 50_000, size=60).tolist()]:
        audio = rng.standard_normal(n).astype(np.float32) * 0.1
        assert resampled_length(n, sr_in) == resample(audio, sr_in).shape[0], (sr_in, n)


def test_live_playout_queues_chunks_back_to_back_at_16k() -> None:
    live = LivePlayout()
    live.add("a", b"\x00\x00" * 1920, 24000, 1.0)  # 80 ms at 24 kHz -> 1280 samples at 16 kHz
    live.add("a", b"\x00\x00" * 733, 24000, 1.0)   # 733 * 2/3 = 488.67 -> 489
    assert live.received_samples("a") == 1280 + 489
    assert live.played_samples("a", 1.05) == 800
