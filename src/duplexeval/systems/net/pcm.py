"""Helpers for the wire: exact-frame stream resampling of PCM16, strict base64 and strict JSON message decoding."""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from duplexeval.audio import from_pcm16, to_pcm16
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import ProtocolViolation
from duplexeval.systems.net.resample_stream import StreamResampler as FirResampler


class StreamResampler:
    """PCM16 bytes at `sr_in` -> PCM16 bytes at `sr_out`, chunk by chunk (identity when the rates match).

    Exact frames: 80 ms in gives exactly 80 ms out (a causal FIR with carried state, `resample_stream`,
    a constant delay of about 1 ms). soxr's stream mode emits in blocks of 734 samples at 24 kHz and holds
    7-35 ms back, so a server's 80 ms frame k was only complete when packet k + 1 arrived: every reply came
    up to one frame late (the 24 kHz gap in benchmarks/README.md, measured by benchmarks/network_stages.py).
    """

    def __init__(self, sr_in: int, sr_out: int) -> None:
        self.sr_in, self.sr_out = int(sr_in), int(sr_out)
        self._fir = FirResampler(self.sr_in, self.sr_out) if self.sr_in != self.sr_out else None

    @property
    def delay_s(self) -> float:
        """The constant delay the resampling adds (0 for the identity)."""
        return 0.0 if self._fir is None else self._fir.delay_samples / self.sr_out

    def __call__(self, pcm16: bytes) -> bytes:
        if self._fir is None:
            return pcm16
        y = self._fir.process(from_pcm16(np.frombuffer(pcm16, dtype="<i2")))
        return to_pcm16(y).astype("<i2").tobytes()


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


def json_message(data: str | bytes, key: str) -> JsonObject:
    """A JSON text message that must be an object with a string `key` (its event type); ProtocolViolation otherwise."""
    if isinstance(data, bytes):
        raise ProtocolViolation("a binary frame where this protocol sends JSON text")
    try:
        msg = json.loads(data)
    except json.JSONDecodeError:
        raise ProtocolViolation("a text message is not JSON") from None
    if not isinstance(msg, dict) or not isinstance(msg.get(key), str):
        raise ProtocolViolation(f"a JSON message without a string {key!r}")
    return msg
