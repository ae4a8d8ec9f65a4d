"""G.711 mu-law and A-law for the telephony wire, as lookup tables (bit-exact with Python's `audioop`).

`audioop` left the standard library in Python 3.13, and the carriers' codecs are two small tables, so
they are built here once with the reference algorithm (Sun's g711.c, which `audioop` implements): the
encoders map every int16 sample, the decoders every byte. `tests/systems/net/test_telephony_wire.py` checks all
65,536 samples and 256 codes against `audioop` where it exists.
"""

from __future__ import annotations

import numpy as np

_BIAS = 0x84


def _search(values: np.ndarray, ends: tuple[int, ...]) -> np.ndarray:
    """The index of the first segment end >= value (len(ends) when none)."""
    return np.searchsorted(np.asarray(ends), values, side="left")


def _ulaw_encode_table() -> np.ndarray:
    s = np.arange(-32768, 32768, dtype=np.int32) >> 2  # 14-bit
    mask = np.where(s < 0, 0x7F, 0xFF)
    mag = np.minimum(np.abs(s), 8159) + (_BIAS >> 2)
    seg = _search(mag, (0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF))
    code = np.where(seg >= 8, 0x7F, (np.minimum(seg, 7) << 4) | ((mag >> (np.minimum(seg, 7) + 1)) & 0xF))
    return ((code ^ mask) & 0xFF).astype(np.uint8)


def _ulaw_decode_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    t = (((u & 0x0F) << 3) + _BIAS) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, _BIAS - t, t - _BIAS).astype(np.int16)


def _alaw_encode_table() -> np.ndarray:
    s = np.arange(-32768, 32768, dtype=np.int32) >> 3  # 13-bit
    mask = np.where(s >= 0, 0xD5, 0x55)
    mag = np.where(s >= 0, s, -s - 1)
    seg = _search(mag, (0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF))
    segc = np.minimum(seg, 7)
    quant = np.where(segc < 2, (mag >> 1) & 0x0F, (mag >> segc) & 0x0F)
    code = np.where(seg >= 8, 0x7F, (segc << 4) | quant)
    return ((code ^ mask) & 0xFF).astype(np.uint8)


def _alaw_decode_table() -> np.ndarray:
    a = np.arange(256, dtype=np.int32) ^ 0x55
    t = (a & 0x0F) << 4
    seg = (a & 0x70) >> 4
    t = np.where(seg == 0, t + 8, t + 0x108)
    t = np.where(seg > 1, t << np.maximum(seg - 1, 0), t)
    return np.where(a & 0x80, t, -t).astype(np.int16)


_ULAW_ENC = _ulaw_encode_table()
_ULAW_DEC = _ulaw_decode_table()
_ALAW_ENC = _alaw_encode_table()
_ALAW_DEC = _alaw_decode_table()


def _index(pcm16: bytes) -> np.ndarray:
    return np.frombuffer(pcm16, dtype="<i2").astype(np.int32) + 32768


def lin2ulaw(pcm16: bytes) -> bytes:
    """PCM16 little-endian -> mu-law bytes (one per sample)."""
    return bytes(_ULAW_ENC[_index(pcm16)].tobytes())


def ulaw2lin(data: bytes) -> bytes:
    """mu-law bytes -> PCM16 little-endian."""
    return bytes(_ULAW_DEC[np.frombuffer(data, dtype=np.uint8)].astype("<i2").tobytes())


def lin2alaw(pcm16: bytes) -> bytes:
    """PCM16 little-endian -> A-law bytes (one per sample)."""
    return bytes(_ALAW_ENC[_index(pcm16)].tobytes())


def alaw2lin(data: bytes) -> bytes:
    """A-law bytes -> PCM16 little-endian."""
    return bytes(_ALAW_DEC[np.frombuffer(data, dtype=np.uint8)].astype("<i2").tobytes())
