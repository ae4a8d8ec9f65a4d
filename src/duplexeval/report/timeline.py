"""One sample's timeline: output waveform envelope, VAD segments, ASR words, annotation marks and outcome.

`load_view` reads the sample's files through its `OpenedSample` (output.wav, output.json, the annotation, each
hash-checked) and takes its unified row; the HTML report's explorer draws that in the browser, `draw` puts it on
matplotlib axes for
`fdb show`'s PNG (with the dataset's input waveform above when the dataset is given).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.fdb.sample import OpenedSample
from duplexeval.fdb.tasks import Band, Mark, get_task
from duplexeval.fdb.transcript import parse_output_json
from duplexeval.fdb.tree import ASR_FILE, OUTPUT_JSON, AsrSample, SampleEntry
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report import svg

ENVELOPE_BINS = 180


@dataclass
class SampleView:
    """Everything drawn for one sample (times in seconds on [0, T])."""

    key: str
    task: str
    T: float
    eligible: bool
    reasons: list[str]
    row: SampleRow[Any] | None
    envelope: np.ndarray | None = None  # (bins, 2): min and max per bin
    words: list[tuple[str, float, float | None]] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)  # the task's time marks (E, S, R ...)
    spans: list[Band] = field(default_factory=list)  # the task's shaded spans (pauses, the interruption ...)
    vad: list[tuple[float, float]] = field(default_factory=list)
    input_envelope: np.ndarray | None = None
    vad_lane: bool = False  # the task's timelines always show the VAD lane

    @property
    def outcome(self) -> str:
        if not self.eligible:
            return "ineligible (" + ", ".join(self.reasons) + ")"
        if self.row is None or self.row.row is None:
            return f"counted only ({self.task})"
        return get_task(self.task).render.outcome(self.row.row)


def envelope(audio: np.ndarray, bins: int = ENVELOPE_BINS) -> np.ndarray:
    """Per-bin (min, max) of a waveform, for drawing it small."""
    a = np.asarray(audio, dtype=np.float32).reshape(-1)
    if a.size == 0:
        return np.zeros((bins, 2), dtype=np.float32)
    edges = np.linspace(0, a.size, bins + 1).astype(np.int64)
    out = np.zeros((bins, 2), dtype=np.float32)
    for i in range(bins):
        seg = a[edges[i] : max(edges[i + 1], edges[i] + 1)]
        out[i] = (seg.min(), seg.max())
    return out


def open_sample(tree: Path, entry: SampleEntry, transcript_sha256: str | None = None) -> OpenedSample:
    """The sample as the report reads it: `transcript_sha256` is output.json's hash in asr.json (None: not
    transcribed; an output.json there is still drawn, unchecked)."""
    asr = None if transcript_sha256 is None else AsrSample("ok", transcript_sha256, None)
    return OpenedSample(tree, entry, asr, get_task(entry.task).annotation)


def load_view(sample: OpenedSample, row: SampleRow[Any] | None) -> SampleView:
    """Read one sample's files for drawing. A file the manifest lists (output.wav, the annotation) or asr.json vouches
    for (output.json) must be there with its hash (one line naming it, else); files an ineligible capture never
    wrote are simply not drawn."""
    entry = sample.entry
    view = SampleView(entry.key, entry.task, entry.T, entry.eligible, list(entry.reasons), row,
                      vad_lane=get_task(entry.task).render.vad_lane)
    if sample.has_output:
        view.envelope = envelope(sample.output_audio[0])
    if sample.asr is not None or sample.transcript_path.is_file():
        obj = sample.transcript_raw if sample.asr is not None else sample.read_json(OUTPUT_JSON, recorded_in=ASR_FILE)
        words = parse_output_json(obj, str(sample.transcript_path))
        view.words = [(w.text.strip(), float(w.start), None if w.end is None else float(w.end)) for w in words]
    if sample.annotation is not None:
        view.marks, view.spans = get_task(entry.task).render.marks(sample.annotation)
    if row is not None and row.row is not None:
        view.vad = get_task(entry.task).render.vad_segments(row.row)
    return view


LEGEND = ("grey: output waveform envelope; green: VAD segments; blue: ASR words; yellow: annotated pauses; "
          "pink: the user's interruption [S, R]; E, S, R: annotation marks; x axis: seconds of input time")


def draw(ax: Any, view: SampleView, show_words: int = 12, caption: bool = False) -> None:
    """The timeline on one axes: y in [-1, 1] is the waveform; lanes above for VAD, below for words."""
    ax.set_xlim(0, view.T)
    ax.set_ylim(-2.3, 1.9)
    ax.set_axis_off()  # a drawn time scale below: matplotlib's axis machinery costs half of each picture
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 30, 60) if view.T / s <= 8)
    ticks = np.arange(0, view.T + 1e-9, step)
    ax.hlines([-2.3], 0, view.T, color="#333", lw=0.8)
    ax.vlines(ticks, -2.3, -2.42, color="#333", lw=0.8, clip_on=False)
    for t in ticks:
        ax.text(t, -2.5, f"{t:g}", fontsize=8, ha="center", va="top", clip_on=False)
    for band in view.spans:
        ax.axvspan(band.start, band.end, color=band.color, alpha=0.6, lw=0)
    if view.envelope is not None:
        env = view.envelope
        peak = float(np.abs(env).max()) or 1.0
        x = np.linspace(0, view.T, env.shape[0])
        ax.fill_between(x, env[:, 0] / peak * 0.9, env[:, 1] / peak * 0.9, color="#7a869a", lw=0)
        ax.axhline(0, color="#7a869a", lw=0.5)
    else:
        ax.text(view.T / 2, 0, "no output.wav", ha="center", va="center", color="#999")
    if view.vad:
        ax.broken_barh([(a, b - a) for a, b in view.vad], (1.15, 0.45), color="#2f9e44")
    if view.vad or view.vad_lane:
        ax.text(0, 1.65, "VAD", fontsize=6, color="#2f9e44")
    if view.words:
        bars = [(s, max((e if e is not None else s) - s, view.T / 600)) for _, s, e in view.words]
        ax.broken_barh(bars, (-1.55, 0.4), facecolor="#1f6fb4", edgecolor="white", lw=0.4)
        last = -1e9
        shown = 0
        for text, s, _ in view.words:  # label a word only where the previous label has room (text is the cost)
            if s - last >= view.T / 25 and shown < show_words:
                ax.text(s, -1.75, text, fontsize=5.5, va="top", ha="left", color="#1f3b57", clip_on=True)
                last, shown = s, shown + 1
    for mark in view.marks:
        ax.axvline(mark.t, color=mark.color, lw=1.2)
        ax.text(mark.t, 1.75, mark.label, color=mark.color, fontsize=7, ha="center", fontweight="bold")
    if caption:
        ax.text(view.T, -3.1, LEGEND, fontsize=6.5, ha="right", va="top", color="#555", clip_on=False)


def show_png(view: SampleView, out: Path, input_audio: np.ndarray | None = None) -> Path:
    """`fdb show`: the timeline as a PNG, with the input waveform above when given."""
    rows = 2 if input_audio is not None else 1
    fig = svg.figure(11, 1.4 + 1.7 * rows)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    if input_audio is not None:
        env = envelope(input_audio)
        x = np.linspace(0, view.T, env.shape[0])
        peak = float(np.abs(env).max()) or 1.0
        ax0 = axes[0]
        ax0.fill_between(x, env[:, 0] / peak, env[:, 1] / peak, color="#b0773c", lw=0)
        ax0.set_yticks([])
        ax0.set_title("input (user) waveform", fontsize=8, loc="left")
        for mark in view.marks:
            ax0.axvline(mark.t, color=mark.color, lw=1.2)
    draw(axes[-1], view, caption=True)
    axes[-1].set_title(f"{view.key}: {view.outcome}", fontsize=9, loc="left")
    fig.tight_layout()
    svg.to_png(fig, out)
    return out
