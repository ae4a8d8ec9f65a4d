"""Pitch and intensity of a speech segment as the official v1.5 before/after script computes them, with Praat.

Praat runs through `praat-parselmouth` (an extra, pinned; its version and Praat's go into the signature).
The official script tries Praat, then librosa, then torchaudio, whichever is installed, and never says which
one produced a number (a known bug). We compute exactly one definition per value and name it:

- pitch: Praat `to_pitch` (time step 10 ms, floor 50 Hz, ceiling 600 Hz); voiced frames are finite, > 0 and
  <= 600 Hz; mean and sample std (ddof 1) in float32 as the script takes them; no voiced frame gives 0, 0 (the
  script's sentinel, kept). When Praat cannot analyse the segment (too short), the value is not computed: the
  script would fall back to librosa's pYIN or torchaudio's YIN, which we do not reproduce.
- intensity: Praat `to_intensity` (time step 10 ms) in dB re 2e-5 (Praat's scale: dBFS + about 94 dB), frames at
  or below -200 dB dropped. When Praat gives no frame above -200 dB (digital silence) or fails, the script
  falls back to librosa's RMS in dBFS (10 ms frames, hop 10 ms, no centring, floor 1e-10, so silence is -200);
  we reproduce that fallback exactly and name it (`dbfs`), since the librosa that NeMo installs is what the
  published numbers used (the significance test masks its -200 floor).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval.errors import RefusalError
from duplexeval.jsontypes import JsonObject

PITCH_TIME_STEP_S = 0.01
PITCH_FLOOR_HZ = 50.0
PITCH_CEILING_HZ = 600.0
INTENSITY_TIME_STEP_S = 0.01
PRAAT_SILENCE_DB = -200.0
RMS_FLOOR = 1e-10
PRAAT_DB = "praat-db"  # Praat's intensity scale: dB re 2e-5 (samples taken as Pa), mean removed
DBFS = "dbfs"  # 20 log10 RMS of 10 ms frames, re full scale 1.0
EXTRA = "fdb-v15"
PACKAGE = "praat-parselmouth"


def _parselmouth() -> Any:
    try:
        import parselmouth
    except ImportError:
        raise RefusalError(
            f"FDB v1.5 pitch and intensity need Praat: pip install 'duplexeval[{EXTRA}]' (installs {PACKAGE})"
        ) from None
    return parselmouth


def praat_signature() -> JsonObject:
    """Which Praat computed the prosody numbers."""
    pm = _parselmouth()
    return {"name": "praat", "package": PACKAGE, "version": importlib.metadata.version(PACKAGE),
            "praat": str(pm.PRAAT_VERSION), "pitch": {"time_step_s": PITCH_TIME_STEP_S, "floor_hz": PITCH_FLOOR_HZ,
            "ceiling_hz": PITCH_CEILING_HZ}, "intensity": {"time_step_s": INTENSITY_TIME_STEP_S, "scale": PRAAT_DB,
            "fallback": f"{DBFS} (librosa RMS, 10 ms frames) when Praat has no frame above {PRAAT_SILENCE_DB:g} dB"}}


@dataclass(frozen=True)
class Stats:
    """Mean and std of one prosody track, or why there is none; `scale` names the definition of the numbers."""

    mean: float | None
    std: float | None
    scale: str | None
    reason: str | None = None


def _mean_std(vals: np.ndarray) -> tuple[float, float]:
    if vals.size == 1:
        return float(vals[0]), 0.0
    return float(np.mean(vals)), float(np.std(vals, ddof=1))


def pitch_stats(x: np.ndarray, sr: int) -> Stats:
    """Mean and std of F0 (Hz) over voiced frames of the float32 segment `x`."""
    pm = _parselmouth()
    try:
        snd = pm.Sound(x, sampling_frequency=sr)
        f0 = snd.to_pitch(time_step=PITCH_TIME_STEP_S, pitch_floor=PITCH_FLOOR_HZ,
                          pitch_ceiling=PITCH_CEILING_HZ).selected_array["frequency"].astype(np.float32)
    except pm.PraatError as exc:
        return Stats(None, None, None, f"Praat could not analyse the segment ({str(exc).splitlines()[0][:120]})")
    voiced = f0[~np.isnan(f0) & (f0 > 0) & (f0 <= PITCH_CEILING_HZ)]
    if voiced.size == 0:
        return Stats(0.0, 0.0, "hz", "no voiced frame (the official sentinel 0, 0)")
    m, s = _mean_std(voiced)
    return Stats(m, s, "hz")


def rms_dbfs(x: np.ndarray, sr: int) -> np.ndarray:
    """librosa.feature.rms(frame = hop = 10 ms, center=False) floored at 1e-10, in dB, float32 as librosa gives it."""
    y = np.asarray(x, dtype=np.float32)
    hop = max(1, int(round(sr * INTENSITY_TIME_STEP_S)))
    if y.shape[0] < hop:
        return np.empty(0, dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(y, hop)[::hop].T  # (frame, n_frames), librosa's layout
    power = np.mean(np.abs(frames) ** 2, axis=-2, keepdims=True)
    rms = np.maximum(np.sqrt(power).squeeze(0), RMS_FLOOR)
    return np.asarray(20.0 * np.log10(rms), dtype=np.float32)


def intensity_stats(x: np.ndarray, sr: int) -> Stats:
    """Mean and std of intensity (dB) of the float32 segment `x`, Praat's scale or, on silence, dBFS."""
    pm = _parselmouth()
    vals: np.ndarray | None = None
    try:
        raw = pm.Sound(x, sampling_frequency=sr).to_intensity(time_step=INTENSITY_TIME_STEP_S).values.T.flatten()
        kept = raw[raw > PRAAT_SILENCE_DB]
        if kept.size:
            vals = kept.astype(np.float32)
    except pm.PraatError:
        vals = None
    if vals is not None:
        m, s = _mean_std(vals)
        return Stats(m, s, PRAAT_DB)
    db = rms_dbfs(x, sr)
    if db.size == 0:
        return Stats(None, None, None, "segment shorter than one 10 ms frame")
    m, s = _mean_std(db)
    return Stats(m, s, DBFS, "Praat found no frame above -200 dB: librosa-RMS dBFS, as the official fallback")
