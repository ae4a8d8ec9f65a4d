"""FIFO playout: received audio → exactly n samples of 16 kHz PCM16, as a client would have played it.

Each chunk starts at the later of its receipt time and the end of the audio queued before it; gaps
are silence; a `clear_queue` event stops playback at its receipt time and drops what was queued;
everything is cropped at T. What was dropped or cropped is recorded, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duplexeval.audio import from_pcm16, resample, to_pcm16
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import CLEAR_QUEUE
from duplexeval.systems.runner import ReceivedItem
from duplexeval.units import SAMPLE_RATE as INPUT_SAMPLE_RATE

SR = INPUT_SAMPLE_RATE


@dataclass
class Placement:
    """Where one received chunk landed on the output timeline (16 kHz sample indices, end exclusive)."""

    item: int
    start: int
    end: int
    audio: np.ndarray  # int16 at 16 kHz, already truncated by any clear


@dataclass(frozen=True)
class PlayoutStats:
    """What happened on the way to the output samples (the manifest's per-sample summary and trace.json's
    `playout`)."""

    audio_chunks: int
    control_events: int
    clear_queue_events: int
    received_audio_s: float
    played_s: float
    dropped_by_clear_s: float
    cropped_at_T_s: float
    received_after_T: int
    first_playout_s: float | None
    playing_at_T: bool
    silent: bool

    def to_json(self) -> JsonObject:
        return {"audio_chunks": self.audio_chunks, "control_events": self.control_events,
                "clear_queue_events": self.clear_queue_events, "received_audio_s": self.received_audio_s,
                "played_s": self.played_s, "dropped_by_clear_s": self.dropped_by_clear_s,
                "cropped_at_T_s": self.cropped_at_T_s, "received_after_T": self.received_after_T,
                "first_playout_s": self.first_playout_s, "playing_at_T": self.playing_at_T, "silent": self.silent}


@dataclass
class Playout:
    """The output samples and what happened on the way."""

    audio: np.ndarray  # int16, exactly n samples
    placements: list[Placement]
    stats: PlayoutStats


def _to_16k_int16(item: ReceivedItem) -> np.ndarray:
    assert item.pcm is not None
    if item.sample_rate == SR:
        return item.pcm.astype(np.int16)
    return to_pcm16(resample(from_pcm16(item.pcm), item.sample_rate, SR))


def playout(items: list[ReceivedItem], n_samples: int, T: float | None = None) -> Playout:
    """Play `items` (receipt order) FIFO from their receipt times; return exactly `n_samples` int16 samples."""
    T = n_samples / SR if T is None else T
    placements: list[Placement] = []
    queue_end = 0  # sample index where the queued audio ends
    dropped = 0
    clears = 0
    after_T = 0
    for idx, item in enumerate(items):
        at = int(round(item.received_at_s * SR))
        if item.received_at_s > T:
            after_T += 1
            continue
        if item.kind == "audio":
            pcm = _to_16k_int16(item)
            start = max(at, queue_end)
            placements.append(Placement(idx, start, start + pcm.shape[0], pcm))
            queue_end = start + pcm.shape[0]
        elif item.kind == CLEAR_QUEUE:
            clears += 1
            if queue_end > at:
                for p in placements:
                    if p.end > at:
                        cut = max(at, p.start)
                        dropped += p.end - cut
                        p.audio = p.audio[: cut - p.start]
                        p.end = cut
                queue_end = at
    out = np.zeros(n_samples, dtype=np.int16)
    cropped = 0
    for p in placements:
        if p.start >= n_samples:
            cropped += p.end - p.start
            continue
        stop = min(p.end, n_samples)
        out[p.start : stop] = p.audio[: stop - p.start]
        cropped += p.end - stop
    audio_items = [it for it in items if it.kind == "audio"]
    first = next((p.start for p in placements if p.end > p.start and p.start < n_samples), None)
    stats = PlayoutStats(
        audio_chunks=len(audio_items),
        control_events=len(items) - len(audio_items),
        clear_queue_events=clears,
        received_audio_s=round(sum(it.n_samples / it.sample_rate for it in audio_items), 6),
        played_s=round(sum(min(p.end, n_samples) - p.start for p in placements if p.start < n_samples) / SR, 6),
        dropped_by_clear_s=round(dropped / SR, 6),
        cropped_at_T_s=round(cropped / SR, 6),
        received_after_T=after_T,
        first_playout_s=None if first is None else round(first / SR, 6),
        playing_at_T=bool(queue_end > n_samples),
        silent=not bool(np.any(out)),
    )
    return Playout(out, placements, stats)


def placements_json(items: list[ReceivedItem], pl: Playout) -> list[JsonObject]:
    """Per received item: times, size, and where it played (for trace.json)."""
    where = {p.item: p for p in pl.placements}
    rows = []
    for idx, it in enumerate(items):
        row: JsonObject = {
            "kind": it.kind,
            "emitted_at_s": round(it.emitted_at_s, 6),
            "received_at_s": round(it.received_at_s, 6),
        }
        if it.kind == "audio":
            row["samples"] = it.n_samples
            row["sample_rate"] = it.sample_rate
            p = where.get(idx)
            row["play_start_s"] = None if p is None else round(p.start / SR, 6)
            row["play_end_s"] = None if p is None else round(p.end / SR, 6)
        if it.detail:
            row["detail"] = it.detail
        rows.append(row)
    return rows
