"""Backchannel (ICC): counted, not scored by the unified rules; the official frequency and JSD are the reference."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duplexeval import vad as vadmod
from duplexeval.errors import InputError
from duplexeval.fdb.official import backchannel as bc
from duplexeval.fdb.official.run import read_output_raw, read_sample_file
from duplexeval.fdb.tasks import OfficialContext, OfficialOutcome, Task
from duplexeval.fdb.tree import BACKCHANNEL, OUTPUT_WAV, AsrRecord, SampleEntry
from duplexeval.fdb.unified.aggregate import backchannel_block


def aggregate(rows: Sequence[Any], counts: dict[str, Any]) -> dict[str, Any]:
    return backchannel_block(counts)


Loaded = list[tuple[Any, int]]  # (float32 audio, file rate) per output


def _vad(tree: Path, entries: Sequence[SampleEntry]) -> tuple[Loaded, list[list[bc.Segment]]]:
    """Hash-check and read each output.wav (in order: the first bad file is the one reported), then the VAD."""
    loaded = [read_output_raw(e.dir(tree) / OUTPUT_WAV, e.key,
                              read_sample_file(e, tree, OUTPUT_WAV, e.files.get(OUTPUT_WAV), "manifest.json"))
              for e in entries]
    return loaded, bc.vad_segments_s([audio for audio, _ in loaded])


class VadAhead:
    """The backchannel VAD started before the other subsets are evaluated: it is CPU work in threads, and they
    mostly wait on the judge. `result` gives what `_vad` would (or raises its error) for the same samples."""

    def __init__(self, tree: Path, entries: Sequence[SampleEntry]) -> None:
        self.keys = [e.key for e in entries]
        self._out: tuple[Loaded, list[list[bc.Segment]]] | None = None
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._run, args=(tree, list(entries)), daemon=True)
        self._thread.start()

    def _run(self, tree: Path, entries: list[SampleEntry]) -> None:
        try:
            self._out = _vad(tree, entries)
        except Exception as exc:  # noqa: BLE001 - re-raised where the result is taken, as if computed there
            self._error = exc

    def result(self) -> tuple[Loaded, list[list[bc.Segment]]]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._out is not None
        return self._out


_AHEAD: dict[Path, VadAhead] = {}


def start_vad(tree: Path, entries: Sequence[SampleEntry], asr: AsrRecord) -> None:
    """Start the VAD of the outputs `official` will evaluate (eligible, transcribed, all-digit ids) in the
    background; `official` takes the result for the same tree and samples, else computes it itself. A start for
    the same tree replaces an earlier one (left by a run that failed before its backchannel subset)."""
    chosen = [e for e in entries if e.eligible and e.id.isdigit() and (r := asr.samples.get(e.key)) is not None
              and r.status == "ok" and r.output_json is not None]
    if chosen:
        _AHEAD[Path(tree)] = VadAhead(Path(tree), chosen)


def official(ctx: OfficialContext, ready: list) -> OfficialOutcome:
    """VAD (official settings, 16 kHz assumed as the official call does) on each output.wav, then the loop."""
    subset, tree = ctx.subset, ctx.tree
    digit = [(e, w) for e, w, _ in ready if e.id.isdigit()]
    for e, _, _ in ready:
        if not e.id.isdigit():
            ctx.rows.append({"id": e.id, "evaluated": False, "reason": "id is not all digits: the official script skips it"})
    extra = {"skipped_non_digit_id": len(ready) - len(digit)}
    if not digit:
        return OfficialOutcome([], bc.backchannel_metrics([]), counts=extra)
    assert ctx.icc_gt is not None  # loaded up front whenever the subset has eligible samples
    gt, gt_info = ctx.icc_gt
    info = {
        "vad": vadmod.vad_signature(vadmod.OFFICIAL_SETTINGS),
        "vad_rounding": "round(seconds, 1) as get_speech_timestamps(return_seconds=True)",
        "vad_sampling_rate_assumed": vadmod.SAMPLE_RATE,
        "icc_gt": gt_info,
    }
    ctx.say(f"{subset}: VAD on {len(digit)} output(s), batched")
    ahead = _AHEAD.pop(Path(tree), None)
    if ahead is not None and ahead.keys == [e.key for e, _ in digit]:
        loaded, all_segments = ahead.result()
    else:
        loaded, all_segments = _vad(tree, [e for e, _ in digit])
    done: list[bc.BackchannelSample] = []
    for (e, words), (audio, rate), segments in zip(digit, loaded, all_segments):
        try:
            done.append(bc.backchannel_sample(e.id, segments, words, len(audio), rate, gt.get(e.id), ctx.backchannel_rules))
        except KeyError:
            raise InputError(f"{gt_info['file']}: has no distribution for sample {e.key} (keys are folder ids)") from None
    return OfficialOutcome(done, bc.backchannel_metrics(done), counts=extra, rules_info=info)


TASK = Task(
    name=BACKCHANNEL,
    subsets=("icc_backchannel",),
    annotation=None,
    annotation_model=None,
    parse=None,
    score=None,
    aggregate=aggregate,
    metric_kinds={},
    official=official,
)
