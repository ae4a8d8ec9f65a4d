"""Spec 000's VAD sensitivity analysis of the interruption metrics (`duplexeval fdb score --sensitivity`).

The headline numbers keep spec 000's rule (threshold 0.5, minimum silence 100 ms, no padding). This module
re-segments every eligible interruption output under thresholds 0.3-0.7 and minimum silences 50-500 ms
(the spec's own ranges) and reports, per setting, not_exercised, speaking_at_end, response_rate_2s, the
median stop_latency_s and restart_rate; and, per sample, whether S lies within 200 ms of an edge of a
headline segment (where the outcome can flip with the settings). One whole-file Silero scan per output
gives the probabilities every setting segments (the segmentation, not the model, depends on the settings).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from rich.console import Console
from rich.table import Table

from duplexeval import artifacts, vad_batched
from duplexeval.fdb.asr_compare import asr_component
from duplexeval.fdb.tasks.interruption import unified as intr
from duplexeval.fdb.tasks.interruption.annotation import NAME
from duplexeval.fdb.tasks.interruption.unified import InterruptionInput, interruption_block
from duplexeval.fdb.unified import DEFINITIONS, vad_signature
from duplexeval.fdb.unified.aggregate import Counts, base_counts
from duplexeval.fdb.unified.load import LoadedTree
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas.fdb_names import SUBSETS
from duplexeval.signature import Component, Signature
from duplexeval.stats import NOT_REACHED, Latency, Share
from duplexeval.vad import SCORER_SETTINGS, VadSettings, timestamps_from_probs
from duplexeval.vad_batched import CHECK_EVERY, WINDOW, settled

KIND = "duplexeval.fdb.unified-sensitivity"
SCHEMA_VERSION = 1
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
MIN_SILENCES_MS = (50, 100, 200, 300, 500)
EDGE_MS = 200
EDGE_TICKS = EDGE_MS * 1000 * intr.TICKS_PER_US


@dataclass(frozen=True)
class SettingRow:
    """The interruption metrics of one subset under one VAD setting (counts from the unified aggregation)."""

    subset: str
    threshold: float
    min_silence_ms: int
    headline: bool
    eligible: int
    exercised: int
    not_exercised: int
    speaking_at_end: int
    response_rate_2s: float | None
    response_2s_count: int
    stop_latency_median_s: float | None  # None: empty, or not reached (the median sample never stopped)
    stop_latency_median_reached: bool | None
    restart_rate: float | None
    restart_count: int

    def to_json(self) -> JsonObject:
        return {
            "subset": self.subset,
            "threshold": self.threshold,
            "min_silence_ms": self.min_silence_ms,
            "headline": self.headline,
            "eligible": self.eligible,
            "exercised": self.exercised,
            "not_exercised": self.not_exercised,
            "speaking_at_end": self.speaking_at_end,
            "response_rate_2s": self.response_rate_2s,
            "response_2s_count": self.response_2s_count,
            "stop_latency_median_s": self.stop_latency_median_s,
            "stop_latency_median_reached": self.stop_latency_median_reached,
            "restart_rate": self.restart_rate,
            "restart_count": self.restart_count,
        }


@dataclass(frozen=True)
class EdgeRow:
    """One eligible interruption sample: how close S is to an edge of a headline segment, and its outcomes."""

    subset: str
    sample_id: str
    S_s: float
    nearest_edge_s: float | None  # None: no segment edge inside the output (file boundaries are not edges)
    distance_ms: float | None
    near_edge: bool
    headline_outcome: str
    outcomes: dict[str, int]  # outcome -> number of settings giving it

    def to_json(self) -> JsonObject:
        return {
            "subset": self.subset,
            "sample_id": self.sample_id,
            "S": self.S_s,
            "nearest_edge_s": self.nearest_edge_s,
            "distance_ms": self.distance_ms,
            "s_near_segment_edge": self.near_edge,
            "headline_outcome": self.headline_outcome,
            "outcomes_over_settings": self.outcomes,
        }


def settings_grid() -> list[VadSettings]:
    """The VadSettings of the sweep (scorer settings with the threshold and minimum silence varied)."""
    return [replace(SCORER_SETTINGS, threshold=t, min_silence_ms=m) for t in THRESHOLDS for m in MIN_SILENCES_MS]


def nearest_edge(inp: InterruptionInput, segments: Sequence[tuple[int, int]]) -> tuple[int | None, int | None]:
    """(edge in ticks, |edge - S| in ticks) of the segment start or end nearest S; a start at 0 or an end at
    the file end is a file boundary, not a speech edge, and is not counted. (None, None) without an edge."""
    S = inp.S_us * intr.TICKS_PER_US
    edges = [s for s, _ in segments if s > 0] + [e for _, e in segments if e < inp.n_samples]
    if not edges:
        return None, None
    best = min(edges, key=lambda x: (abs(x * intr.TICKS_PER_SAMPLE - S), x))
    return best * intr.TICKS_PER_SAMPLE, abs(best * intr.TICKS_PER_SAMPLE - S)


def segments_up_to_r(probs: np.ndarray, inp: InterruptionInput, settings: VadSettings) -> list[tuple[int, int]]:
    """The whole-file segments that start at or before R, from the shortest prefix of the probabilities that
    fixes them (the scorer's early stop, `vad_batched.settled`: exact for no padding and no maximum speech length,
    which every setting of the sweep has); the only segments an interruption row uses."""
    limit = intr.r_limit_sample(inp.R_us)
    k = int((limit + 16000 * settings.min_speech_ms / 1000) // WINDOW) + 1
    while k < len(probs):
        fixed = settled(probs[:k], limit, settings)
        if fixed is not None:
            return fixed
        k += CHECK_EVERY
    return [(int(s), int(e)) for s, e in timestamps_from_probs(probs, inp.n_samples, settings) if s <= limit]


def _setting_row(subset: str, settings: VadSettings, headline: bool, rows: list[intr.InterruptionRow],
                 counts: Counts) -> SettingRow:
    block = interruption_block(rows, counts)
    c, m = block.counts, block.metrics
    rr, stop, rs = m["response_rate_2s"], m["stop_latency_s"], m["restart_rate"]
    assert isinstance(rr, Share) and isinstance(stop, Latency) and isinstance(rs, Share)  # the task's metric kinds
    median = stop.quantile(0.5)
    return SettingRow(
        subset=subset,
        threshold=settings.threshold,
        min_silence_ms=int(settings.min_silence_ms),
        headline=headline,
        eligible=c.eligible,
        exercised=c.count("exercised"),
        not_exercised=c.count(intr.NOT_EXERCISED),
        speaking_at_end=c.count(intr.SPEAKING_AT_END),
        response_rate_2s=rr.value,
        response_2s_count=rr.count,
        stop_latency_median_s=None if median.value is None else median.value / stop.scale,
        stop_latency_median_reached=median.reached if stop.n else None,
        restart_rate=rs.value,
        restart_count=rs.count,
    )


def sweep(
    subset: str,
    inputs: Sequence[tuple[str, InterruptionInput]],
    probs: Sequence[np.ndarray],
    counts: Counts,
) -> tuple[list[SettingRow], list[EdgeRow]]:
    """Pure: the per-setting table and the per-sample edge rows of one interruption subset.

    `inputs` are (sample id, input) of its eligible samples and `probs` their whole-file probabilities.
    """
    table: list[SettingRow] = []
    outcomes: list[dict[str, int]] = [{} for _ in inputs]
    headline_rows: list[intr.InterruptionRow] = []
    headline_segs: list[list[tuple[int, int]]] = []
    for st in settings_grid():
        is_head = st == SCORER_SETTINGS
        rows = []
        for k, ((_, inp), p) in enumerate(zip(inputs, probs)):
            if is_head:  # whole-file segments: the edge flag looks at every segment edge near S
                segs = timestamps_from_probs(p, inp.n_samples, st)
                headline_segs.append(segs)
            else:
                segs = segments_up_to_r(p, inp, st)
            row = intr.score_interruption(inp, segs)
            rows.append(row)
            outcomes[k][row.outcome] = outcomes[k].get(row.outcome, 0) + 1
        if is_head:
            headline_rows = rows
        table.append(_setting_row(subset, st, is_head, rows, counts))
    edges = []
    for k, (sid, inp) in enumerate(inputs):
        edge, dist = nearest_edge(inp, headline_segs[k])
        edges.append(
            EdgeRow(
                subset=subset,
                sample_id=sid,
                S_s=inp.S_us / 1e6,
                nearest_edge_s=None if edge is None else edge / intr.TICKS_PER_S,
                distance_ms=None if dist is None else dist / (1000 * intr.TICKS_PER_US),
                near_edge=dist is not None and dist <= EDGE_TICKS,
                headline_outcome=headline_rows[k].outcome,
                outcomes={o: outcomes[k][o] for o in intr.INTERRUPTION_OUTCOMES if o in outcomes[k]},
            )
        )
    return table, edges


@dataclass(frozen=True)
class Sensitivity:
    """The sensitivity analysis of a tree: the table, the per-sample rows and what made them (the VAD's signature
    JSON and the analysis's `Signature`); `to_json()` is unified-sensitivity.json."""

    table: list[SettingRow]
    edges: list[EdgeRow]
    vad: JsonObject
    signature: Signature

    @property
    def near_edge(self) -> int:
        """Samples whose S lies within EDGE_MS of a headline segment edge."""
        return sum(1 for r in self.edges if r.near_edge)

    def to_json(self) -> JsonObject:
        sig = self.signature
        return {
            **artifacts.header(KIND, SCHEMA_VERSION, signature=sig, inputs=sig.inputs),
            "vad": self.vad,
            "grid": {"thresholds": list(THRESHOLDS), "min_silence_ms": list(MIN_SILENCES_MS), "edge_ms": EDGE_MS,
                     "fixed": "min speech 250 ms, no padding, neg_threshold = threshold - 0.15, whole-file scans"},
            "headline": "threshold 0.5, min silence 100 ms (spec 000); unified.json keeps it",
            "settings": [r.to_json() for r in self.table],
            "samples": [r.to_json() for r in self.edges],
            "near_edge": self.near_edge,
        }

    def render(self, console: Console | None = None) -> None:
        render(self, console)


def analyse(loaded: LoadedTree, jobs: int | None = None) -> Sensitivity:
    """Whole-file Silero probabilities of every eligible interruption output, then `sweep` per subset."""
    table: list[SettingRow] = []
    edges: list[EdgeRow] = []
    for subset in SUBSETS:
        if SUBSETS[subset].task != NAME:
            continue
        members = [ls for ls in loaded.samples if ls.entry.subset == subset]
        if not members:
            continue
        inputs = [(ls.entry.id, ls.input) for ls in members if isinstance(ls.input, InterruptionInput)]
        probs = vad_batched.probs_files([i.audio for _, i in inputs], jobs) if inputs else []
        counts = base_counts([ls.entry for ls in members], loaded.manifest.declared.get(subset))
        t, e = sweep(subset, inputs, probs, counts)
        table += t
        edges += e
    vad = vad_signature()
    vad.pop("scan", None)
    return Sensitivity(table, edges, vad, signature(loaded, vad))


def signature(loaded: LoadedTree, vad: JsonObject) -> Signature:
    """Definitions, the ASR that made the transcripts, the VAD model and the swept grid, and the input hashes."""
    grid = {"t": f"{THRESHOLDS[0]}-{THRESHOLDS[-1]}", "s": f"{MIN_SILENCES_MS[0]}-{MIN_SILENCES_MS[-1]}", "p": 0,
            "edge": EDGE_MS}
    comps = (
        asr_component(loaded.asr.backend, "asr"),
        Component("vad", "silero-" + str(vad.get("equivalent_to", "silero-vad ?")).split()[1],
                  str(vad.get("model_sha256") or ""), grid),
    )
    return Signature(f"{DEFINITIONS}-sensitivity-1", comps,
                     {"manifest.json": loaded.manifest_sha256, "asr.json": loaded.asr_sha256})


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def render(sens: Sensitivity, console: Console | None = None) -> None:
    """The sensitivity table (headline row starred) and the samples whose S is within 200 ms of an edge."""
    console = console or Console(width=None if sys.stdout.isatty() else 160)  # piped: wide, not wrapped
    subsets = list(dict.fromkeys(r.subset for r in sens.table))
    if not subsets:
        console.print("VAD sensitivity: no eligible interruption sample, nothing to sweep.")
        return
    for subset in subsets:
        rows = [r for r in sens.table if r.subset == subset]
        console.print()
        console.print(f"[bold]VAD sensitivity[/bold], {subset} (spec 000; * = the headline setting, unified.json)")
        t = Table(show_edge=False, pad_edge=False)
        for col in ("threshold", "min silence ms", "not_exercised", "speaking_at_end", "response_rate_2s",
                    "median stop_latency_s", "restart_rate"):
            t.add_column(col, no_wrap=True, justify="right")
        for r in rows:
            stop = "—" if r.exercised == 0 else (NOT_REACHED if r.stop_latency_median_s is None
                                                 else _fmt(r.stop_latency_median_s))
            t.add_row(
                f"{r.threshold:.1f}{'*' if r.headline else ''}",
                str(r.min_silence_ms),
                f"{r.not_exercised}/{r.eligible}",
                f"{r.speaking_at_end}/{r.exercised}",
                _fmt(r.response_rate_2s),
                stop,
                _fmt(r.restart_rate),
            )
        console.print(t)
        near = [e for e in sens.edges if e.subset == subset and e.near_edge]
        total = sum(1 for e in sens.edges if e.subset == subset)
        console.print(f"S within {EDGE_MS} ms of a headline segment edge: {len(near)} of {total} eligible sample(s)")
        for e in near:
            spread = ", ".join(f"{o} {n}" for o, n in e.outcomes.items())
            console.print(f"  {e.sample_id}: S {e.S_s:.3f} s, edge at {e.nearest_edge_s:.3f} s "
                          f"({e.distance_ms:.1f} ms); headline {e.headline_outcome}; over {len(settings_grid())} "
                          f"settings: {spread}")
    console.print(
        f"Shares: not_exercised over eligible, the rest over exercised. {NOT_REACHED} = the median sample "
        "never stopped."
    )
    console.print(sens.signature.compact(), markup=False, highlight=False)
