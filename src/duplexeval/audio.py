"""Audio I/O: read any rate, resample with soxr, write exact-length 16 kHz PCM16 deterministically."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_bytes
from duplexeval.units import SAMPLE_RATE


def read_audio_channels(path: str | os.PathLike[str], raw: bytes | None = None,
                        where: str | None = None) -> tuple[np.ndarray, int]:
    """Read a sound file as float32 (frames, channels) with its own sample rate; InputError naming the file.

    `raw`: the file's bytes when the caller has read them already (a hash-checked read); decoded from memory.
    `where`: what messages start with instead of the path (`PATH: sample SUBSET/ID`)."""
    return _decode(Path(path), raw, pcm16_as_int16=False, where=where)


def _decode(path: Path, raw: bytes | None, pcm16_as_int16: bool, where: str | None = None) -> tuple[np.ndarray, int]:
    """(frames, channels) samples and rate: float32, or int16 for a PCM16 file when `pcm16_as_int16`."""
    where = str(path) if where is None else where
    if raw is None and not path.exists():  # libsndfile says only "System error" for a missing file
        raise InputError(f"{where}: file not found")
    short = wav_truncation(raw) if raw is not None else _wav_truncation_of(path)
    if short is not None:
        raise InputError(f"{where}: {short}")
    try:
        with sf.SoundFile(io.BytesIO(raw) if raw is not None else str(path)) as f:  # what sf.read does
            dtype = "int16" if pcm16_as_int16 and f.subtype == "PCM_16" else "float32"
            data, sr = f.read(dtype=dtype, always_2d=True), f.samplerate
    except FileNotFoundError:
        raise InputError(f"{where}: file not found") from None
    except (RuntimeError, sf.LibsndfileError, OSError) as exc:
        raise InputError(f"{where}: cannot read audio: {' '.join(str(exc).split())}") from None
    if data.shape[1] == 0:
        raise InputError(f"{where}: audio has no channels")
    return data, int(sr)


def read_audio_16k_stored(path: str | os.PathLike[str], raw: bytes | None = None) -> np.ndarray:
    """A mono 16 kHz file's samples exactly as stored, for the VAD: int16 for PCM16 (x / 32768 is the float
    `read_audio` gives, in half the memory), float32 for any other encoding; `raw` as above. Never resampled: a
    file at another rate or with more than one channel is an InputError naming it."""
    data, sr = _decode(Path(path), raw, pcm16_as_int16=True)
    if sr != SAMPLE_RATE or data.shape[1] != 1:
        raise InputError(f"{path}: expected mono {SAMPLE_RATE // 1000} kHz, got {data.shape[1]} channels at {sr} Hz")
    return np.ascontiguousarray(data[:, 0])


_UNKNOWN_SIZES = (0, 0xFFFFFFFF)  # a streaming writer's "size not known" (and RF64's placeholder)


def wav_truncation(data: bytes, total: int | None = None) -> str | None:
    """The problem when a RIFF/WAVE file's data chunk claims more bytes than the file holds (libsndfile reads what
    is there and says nothing), else None. `data`: the file, or at least its first chunks; `total`: its size."""
    total = len(data) if total is None else total
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    pos = 12
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        if cid == b"data":
            have = total - (pos + 8)
            if size not in _UNKNOWN_SIZES and size > have + 1:  # + 1: a missing pad byte after an odd-sized chunk
                return f"truncated WAV: its header claims {size} bytes of audio, the file holds {max(have, 0)}"
            return None
        pos += 8 + size + (size & 1)
    return None


def _wav_truncation_of(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
            total = os.fstat(fh.fileno()).st_size
    except OSError:
        return None  # the decoder below reports it
    return wav_truncation(head, total)


def read_audio(path: str | os.PathLike[str], raw: bytes | None = None) -> tuple[np.ndarray, int]:
    """Read a sound file as mono float32 in [-1, 1] with its own sample rate (channels averaged); `raw` as above."""
    data, sr = read_audio_channels(path, raw)
    mono = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0]
    return np.ascontiguousarray(mono, dtype=np.float32), int(sr)


def audio_info(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(frames, sample rate) of a sound file without reading its samples."""
    frames, sr, _ = audio_format(path)
    return frames, sr


def audio_format(path: str | os.PathLike[str], raw: bytes | None = None,
                 where: str | None = None) -> tuple[int, int, int]:
    """(frames, sample rate, channels) from a sound file's header (or from its bytes `raw`), without decoding its
    samples; InputError starting with `where` (default: the path)."""
    where = str(path) if where is None else where
    try:
        info = sf.info(io.BytesIO(raw) if raw is not None else str(path))
    except FileNotFoundError:
        raise InputError(f"{where}: file not found") from None
    except (RuntimeError, OSError) as exc:
        raise InputError(f"{where}: cannot read audio: {exc}") from None
    return int(info.frames), int(info.samplerate), int(info.channels)


def resample(audio: np.ndarray, sr_in: int, sr_out: int = SAMPLE_RATE) -> np.ndarray:
    """Resample mono float32 audio with soxr (HQ); a no-op when the rates match."""
    if sr_in == sr_out:
        return np.asarray(audio, dtype=np.float32)

    return np.asarray(soxr.resample(np.asarray(audio, dtype=np.float32), sr_in, sr_out, quality="HQ"), dtype=np.float32)


def audio_library_versions() -> str:
    """The resampler and sound-file library every number's audio went through (signed by the systems that resample)."""
    return f"soxr {soxr.__version__}; soundfile {sf.__version__} (libsndfile {sf.__libsndfile_version__})"


def resampled_length(n: int, sr_in: int, sr_out: int = SAMPLE_RATE) -> int:
    """The number of samples `resample` returns for `n` input samples, without resampling: soxr's one-shot
    length, floor(n * sr_out / sr_in + 1/2) in exact integers
    (tests/systems/net/test_live_playout_length.py checks it)."""
    if sr_in == sr_out:
        return n
    return (2 * n * sr_out + sr_in) // (2 * sr_in)


def read_audio_16k(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a file and return mono float32 at 16 kHz."""
    audio, sr = read_audio(path)
    return resample(audio, sr, SAMPLE_RATE)


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    """Float [-1, 1] to int16 at soundfile's scale (x 32768, clipped, rounded half to even); int16 passes through.

    The same scale as `read_audio` (1/32768), so a PCM16 file read as float and written back is unchanged.
    """
    a = np.asarray(audio)
    if a.dtype == np.int16:
        return a
    return np.clip(np.rint(a.astype(np.float64) * 32768.0), -32768, 32767).astype(np.int16)


def from_pcm16(pcm: np.ndarray) -> np.ndarray:
    """int16 to float32 in [-1, 1]."""
    return np.asarray(pcm, dtype=np.int16).astype(np.float32) / 32768.0


def fit_length(audio: np.ndarray, n_samples: int) -> np.ndarray:
    """Crop or zero-pad to exactly n_samples."""
    if audio.shape[0] >= n_samples:
        return audio[:n_samples]
    out = np.zeros(n_samples, dtype=audio.dtype)
    out[: audio.shape[0]] = audio
    return out


def n_samples_for(T: float, sr: int = SAMPLE_RATE) -> int:
    """The exact sample count of a T-second output: round(T * sr)."""
    return int(round(T * sr))


def wav_bytes_pcm16(audio: np.ndarray, sr: int = SAMPLE_RATE) -> bytes:
    """A mono PCM16 WAV as bytes (the same samples always give the same bytes)."""
    buf = io.BytesIO()
    sf.write(buf, to_pcm16(audio), sr, subtype="PCM_16", format="WAV")
    return buf.getvalue()


def write_wav_pcm16(path: str | os.PathLike[str], audio: np.ndarray, sr: int = SAMPLE_RATE) -> str:
    """Atomically write mono PCM16 WAV; returns its SHA-256."""
    return atomic_write_bytes(path, wav_bytes_pcm16(audio, sr))
