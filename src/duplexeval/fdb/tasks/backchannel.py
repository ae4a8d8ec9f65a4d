"""Backchannel (ICC): counted, not scored by the unified rules; the official frequency and JSD are the reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duplexeval import vad as vadmod
from duplexeval.errors import InputError
from duplexeval.fdb.official import backchannel as bc
from duplexeval.fdb.official.run import read_output_raw, read_sample_file
from duplexeval.fdb.tasks import OfficialContext, OfficialOutcome, Task
from duplexeval.fdb.tree import BACKCHANNEL, OUTPUT_WAV
from duplexeval.fdb.unified.aggregate import backchannel_block


def aggregate(rows: Sequence[Any], counts: dict[str, Any]) -> dict[str, Any]:
    return backchannel_block(counts)


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
    loaded = [read_output_raw(e.dir(tree) / OUTPUT_WAV, e.key, read_sample_file(e, tree, OUTPUT_WAV, e.files.get(OUTPUT_WAV), "manifest.json"))
              for e, _ in digit]
    ctx.say(f"{subset}: VAD on {len(digit)} output(s), batched")
    all_segments = bc.vad_segments_s([audio for audio, _ in loaded])
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
