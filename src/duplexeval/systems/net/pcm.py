"""PCM16 helpers for the wire: streaming soxr resampling and strict base64 decoding."""

from __future__ import annotations

import base64
import binascii

import numpy as np

from duplexeval.systems.base import ProtocolViolation


class StreamResampler:
    """PCM16 bytes at `sr_in` -> PCM16 bytes at `sr_out`, chunk by chunk (soxr stream; identity when equal).

    The client side uses HQ (what a careful client sends); the loopback servers use QQ on their input,
    whose latency is under one sample, so a server reacts to audio as soon as it arrives.
    """

    def __init__(self, sr_in: int, sr_out: int, quality: str = "HQ") -> None:
        self.sr_in, self.sr_out = int(sr_in), int(sr_out)
        self._stream = None
        if self.sr_in != self.sr_out:
            import soxr  # type: ignore[import-untyped]

            self._stream = soxr.ResampleStream(self.sr_in, self.sr_out, 1, dtype="int16", quality=quality)

    def __call__(self, pcm16: bytes, last: bool = False) -> bytes:
        if self._stream is None:
            return pcm16
        x = np.frombuffer(pcm16, dtype="<i2").astype(np.int16)
        return np.asarray(self._stream.resample_chunk(x, last=last), dtype="<i2").tobytes()


def b64encode(pcm16: bytes) -> str:
    return base64.b64encode(pcm16).decode("ascii")


def b64decode_pcm(text: object, what: str) -> bytes:
    """Strict base64 -> PCM16 bytes; ProtocolViolation on bad base64 or an odd byte count."""
    if not isinstance(text, str):
        raise ProtocolViolation(f"{what}: audio is not a base64 string")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolViolation(f"{what}: bad base64") from None
    if len(data) % 2:
        raise ProtocolViolation(f"{what}: odd-length PCM16 ({len(data)} bytes)")
    return data
