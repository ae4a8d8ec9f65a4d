"""Bridge the FDB v1.0 CANDOR subsets into controller clips, as spec 002 uses them.

- ``candor_turn_taking``: one turn probe per sample at ``turn_taking.json[0].timestamp[0]`` (the end of the user
  turn the official evaluator uses), replayed over the whole input.
- ``candor_pause_handling``: one pause probe per ``pause.json`` interval (several can share one clip).
- Reference time: unique source-clip time, i.e. each distinct input (by the SHA-256 of its audio file) counts its
  length T once, however many probes it carries.
The inputs have no agent channel, so there are no truth states, yields or backchannels; the endpoint head's
frame labels follow spec 000's reading of the windows (see docs/controller-labels.md, "FDB bridge").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from duplexeval.controller.format.data import (
    NO_LABEL,
    Clip,
    ClipFrames,
    ClipMeta,
    PauseProbe,
    TurnProbe,
)
from duplexeval.controller.runtime.runner import frame_level_db
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import DatasetSample, annotation_record, load_dataset
from duplexeval.jsonio import sha256_file
from duplexeval.units import FRAME_US, to_us

BRIDGED_SUBSETS = ("candor_turn_taking", "candor_pause_handling")


@dataclass
class BridgedClip:
    """A clip (meta, truth-free frames with level_db) and the user audio the controller runs over."""

    clip: Clip
    audio16k: np.ndarray


def _stamps_us(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) + 1) * FRAME_US


def _record(sample: DatasetSample) -> Any:
    """The sample's typed annotation (its task's model), validated by the dataset loader or here."""
    rec = getattr(sample, "record", None)
    if rec is None:
        rec = annotation_record(sample.annotation, sample.subset, f"{sample.annotation_path}: sample {sample.key}")
    return rec


def bridge_sample(sample: DatasetSample, audio16k: np.ndarray | None = None) -> BridgedClip:
    """One FDB sample as a clip; the audio is read (and resampled to 16 kHz) unless given."""
    if sample.subset not in BRIDGED_SUBSETS:
        raise InputError(f"sample {sample.key}: only {', '.join(BRIDGED_SUBSETS)} are bridged (spec 002)")
    audio = sample.read_input_16k() if audio16k is None else np.asarray(audio16k, dtype=np.float32)
    n = -(-audio.size // 1280)
    end_us = n * FRAME_US
    clip_end = n * FRAME_US / 1e6

    def clamp(t: float) -> float:  # annotations may overshoot T by the dataset's tolerance
        return t if to_us(t) <= end_us else clip_end

    stamps = _stamps_us(n)
    turn_probes: list[TurnProbe] = []
    pause_probes: list[PauseProbe] = []
    label = np.zeros(n, dtype=bool)
    # Lazy: the controller CLI imports this module for `--help`, and a task package brings the FDB stages with it.
    from duplexeval.fdb.tasks.turn_taking.annotation import TurnAnnotation

    record = _record(sample)
    if isinstance(record, TurnAnnotation):
        e = clamp(float(record.E))
        turn_probes.append(TurnProbe(e, 0.0, None))
        label = stamps >= to_us(e)
    else:
        for a0, b0 in record.spans():
            a, b = clamp(a0), clamp(b0)
            if to_us(b) <= to_us(a):
                raise InputError(f"{sample.annotation_path}: sample {sample.key}: zero-length pause [{a}, {b}]")
            pause_probes.append(PauseProbe(a, b, 0.0, None))
    src = "sha256:" + sha256_file(sample.input_path)
    meta = ClipMeta(
        id=f"{sample.subset}.{sample.id}",
        n_frames=n,
        group=f"{sample.subset}.{sample.id}",
        source=src,
        turn_probes=turn_probes,
        pause_probes=pause_probes,
        listen_s=0.0,
        floor_s=round(sample.n_samples / sample.sr, 6),
        extra={"fdb": {"subset": sample.subset, "id": sample.id, "T": sample.T,
                       "annotation_sha256": sample.annotation_sha256}},  # fmt: skip
    )
    frames = ClipFrames(
        n_frames=n,
        truth_state=np.full(n, NO_LABEL, dtype=np.int8),
        valid_state=np.zeros(n, dtype=bool),
        valid_endpoint=np.ones(n, dtype=bool),
        valid_yield=np.zeros(n, dtype=bool),
        valid_backchannel=np.zeros(n, dtype=bool),
        label_endpoint=label,
        label_yield=np.zeros(n, dtype=bool),
        label_backchannel=np.zeros(n, dtype=bool),
        level_db=frame_level_db(audio, n),
    )
    return BridgedClip(Clip(meta, frames), audio)


def bridge_dataset(path: str, subsets: tuple[str, ...] = BRIDGED_SUBSETS) -> Iterator[BridgedClip]:
    """Every sample of the bridged subsets of an FDB v1.0 folder (or a synth/demo set), in dataset order."""
    for s in subsets:
        if s not in BRIDGED_SUBSETS:
            raise InputError(f"subset {s!r} is not bridged (expected {', '.join(BRIDGED_SUBSETS)})")
    ds = load_dataset(path)
    found = False
    for subset in subsets:
        for sample in ds.samples(subset):
            found = True
            yield bridge_sample(sample)
    if not found:
        raise InputError(f"{path}: no samples in {', '.join(subsets)}")


def unique_source_hours(clips: list[Clip]) -> float:
    """Reference hours: each source counted once (spec 002's 'unique source-clip time')."""
    seen: dict[str, float] = {}
    for c in clips:
        seen.setdefault(c.meta.source_id, c.meta.floor_s)
    return sum(seen.values()) / 3600.0
