"""Audio for the page: a waveform's peak envelope for the timelines, and Ogg Vorbis for the players.

Vorbis, not Opus: libsndfile's Opus encoder took 0.6-0.8 s per 11 s clip here against 0.06 s for Vorbis, for
15 KB against 27 KB. libsndfile gives each Ogg stream a random serial number, so the same audio would give other
bytes on every run; `ogg_bytes` rewrites the serial to a constant and recomputes each page's checksum (Ogg's
CRC-32, polynomial 0x04C11DB7, not the reflected one zlib computes), which keeps the page deterministic.
"""

from __future__ import annotations

import base64
import io
import struct

import numpy as np
import numpy.typing as npt

from duplexeval.units import SAMPLE_RATE

PEAK_BINS = 400
VORBIS_LEVEL = 1.0  # libsndfile's compression level: about 19 kbit/s for 16 kHz speech, plain enough to judge timing
OGG_MIME = "audio/ogg"
OGG_SERIAL = 0x64756578  # "duex"


def peaks(audio: npt.ArrayLike, bins: int = PEAK_BINS) -> npt.NDArray[np.uint8]:
    """The largest |sample| in each of `bins` equal slices, scaled so the loudest slice is 255 (all 0 for silence)."""
    a = np.abs(np.asarray(audio, dtype=np.float32).reshape(-1))
    if a.size == 0:
        return np.zeros(bins, dtype=np.uint8)
    edges = np.linspace(0, a.size, bins + 1).astype(np.int64)
    edges[1:] = np.maximum(edges[1:], edges[:-1] + 1)
    edges = np.minimum(edges, a.size)
    starts = np.minimum(edges[:-1], a.size - 1)
    out = np.maximum.reduceat(a, starts)
    top = float(out.max())
    if top <= 0:
        return np.zeros(bins, dtype=np.uint8)
    return np.round(out / top * 255).astype(np.uint8)


def peaks_b64(audio: npt.ArrayLike, bins: int = PEAK_BINS) -> str:
    return base64.b64encode(peaks(audio, bins).tobytes()).decode("ascii")


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else r << 1
        table.append(r & 0xFFFFFFFF)
    return table


_CRC = _crc_table()


def ogg_crc(data: bytes) -> int:
    c = 0
    for b in data:
        c = ((c << 8) & 0xFFFFFFFF) ^ _CRC[((c >> 24) & 0xFF) ^ b]
    return c


def fix_ogg_serial(data: bytes, serial: int = OGG_SERIAL) -> bytes:
    """Every page of a one-stream Ogg file with `serial` as its stream serial and a recomputed checksum."""
    out = bytearray(data)
    i = 0
    while i < len(out):
        if out[i : i + 4] != b"OggS" or i + 27 > len(out):
            raise ValueError(f"not an Ogg page at byte {i}")
        nseg = out[i + 26]
        size = 27 + nseg + sum(out[i + 27 : i + 27 + nseg])
        out[i + 14 : i + 18] = struct.pack("<I", serial)
        out[i + 22 : i + 26] = b"\0\0\0\0"
        out[i + 22 : i + 26] = struct.pack("<I", ogg_crc(bytes(out[i : i + size])))
        i += size
    return bytes(out)


def ogg_bytes(audio: npt.ArrayLike, sr: int = SAMPLE_RATE) -> bytes:
    """Mono audio (float in [-1, 1]) as Ogg Vorbis, the same bytes for the same audio."""
    import soundfile as sf  # encodes Ogg Vorbis (audio.py writes only WAV); reads no file

    a = np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0)
    buf = io.BytesIO()
    sf.write(buf, a, sr, format="OGG", subtype="VORBIS", compression_level=VORBIS_LEVEL)
    return fix_ogg_serial(buf.getvalue())
