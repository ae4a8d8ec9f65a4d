"""The official backchannel rule of the reference column: VAD on each output.wav, the segment loop, frequency and JSD
against icc_gt_distribution.json. The VAD (CPU work in threads) starts in `prepare`, before the other subsets are
evaluated (they mostly wait on the judge), and its result is taken here."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval import units
from duplexeval import vad as vadmod
from duplexeval.audio import audio_format, read_audio_channels
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.sample import OpenedSample, SampleAudio
from duplexeval.fdb.tasks.backchannel import rules as bc
from duplexeval.fdb.tasks.backchannel.groundtruth import ICC_GT, ICC_GT_FILE, IccGroundTruth
from duplexeval.fdb.tasks.base import JsonRecord, NotEvaluated, OfficialContext, OfficialOutcome, OfficialRules, Ready
from duplexeval.fdb.tree import SampleEntry
from duplexeval.fdb.verified import parse_json, read_verified
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate

ICC_GT_MISSING = (
    "icc_backchannel needs the official human backchannel distribution icc_gt_distribution.json. It comes from the "
    "official repository (DanielLin94144/Full-Duplex-Bench, folder evaluation/, or v1_v1.5/evaluation/ at HEAD) "
    "under CC BY-NC 4.0, so duplexeval does not ship it: pass it with --icc-gt PATH, or copy it to "
    "TREE/icc_gt_distribution.json (export copies it there when the dataset has one)"
)
BACKCHANNEL_LOOPS = {
    bc.RULES_2025_06: "v1.0 loop (f582595): a segment classed as a turn erases the backchannels found before it",
    bc.RULES_2026_02: "HEAD loop (2026-02-22, d7336bd): every segment up to 3 s is a backchannel, whatever its class",
}



@dataclass(frozen=True)
class IccGtSource:
    """Where the ground-truth distributions came from (`--icc-gt` or the tree), the file's name and SHA-256."""

    source: str
    file: str
    sha256: str

    def to_json(self) -> JsonObject:
        return {"source": self.source, "file": self.file, "sha256": self.sha256}


@dataclass(frozen=True)
class BackchannelInfo:
    """What the backchannel rule ran with (its `rules_info`): the VAD, its rounding and assumed rate, the ground
    truth's source; merged into summary.json's `rules.backchannel` after the rule's constants."""

    vad: JsonObject  # vad.vad_signature, as written
    icc_gt: IccGtSource
    vad_rounding: str = "round(seconds, 1) as get_speech_timestamps(return_seconds=True)"
    vad_sampling_rate_assumed: int = units.SAMPLE_RATE

    def to_json(self) -> JsonObject:
        return {"vad": self.vad, "vad_rounding": self.vad_rounding,
                "vad_sampling_rate_assumed": self.vad_sampling_rate_assumed, "icc_gt": self.icc_gt.to_json()}


GroundTruth = tuple[dict[str, list[float]], IccGtSource]
Loaded = list[tuple[int, int]]  # (samples, file rate) per output


def load_icc_gt(icc_gt: str | Path | None, tree: Path, recorded: object) -> GroundTruth:
    """The ground-truth distributions and where they came from: `icc_gt` (--icc-gt), else TREE/icc_gt_distribution.json
    (checked against the hash manifest.json `recorded`)."""
    if icc_gt is not None:
        path, source = Path(icc_gt), "--icc-gt"
        if not path.is_file():
            raise RefusalError(f"{path}: --icc-gt file not found. {ICC_GT_MISSING}")
    else:
        path, source = tree / ICC_GT_FILE, "tree"
        if not path.is_file():
            raise RefusalError(f"{path}: not found. {ICC_GT_MISSING}")
    expected = recorded if source == "tree" and isinstance(recorded, str) else None
    data = read_verified(path, expected, None, "manifest.json (icc_gt_distribution)")
    digest = sha256_bytes(data)
    gt = validate(parse_json(data, str(path)), IccGroundTruth, str(path)).distributions()
    return gt, IccGtSource(source, path.name, digest)


def read_output_raw(source: SampleAudio) -> tuple[np.ndarray, int]:
    """output.wav samples as float32 at the file's own rate, as the official torchaudio load gives them: read and
    hash-checked through the sample's audio source, decoded by the one audio reader, and mono as the official
    VAD call needs."""
    path, key = source.path, source.sample
    data, rate = read_audio_channels(path, source.read_bytes(), where=f"{path}: sample {key}")
    if data.shape[1] != 1:
        raise InputError(f"{path}: sample {key}: output.wav has {data.shape[1]} channels; the official VAD "
                         "call needs mono")
    if data.shape[0] == 0:
        raise InputError(f"{path}: sample {key}: output.wav has no samples (zero frames); re-export or re-import it")
    return np.ascontiguousarray(data[:, 0]), int(rate)


def _vad(sources: Sequence[SampleAudio]) -> tuple[Loaded, list[list[bc.Segment]]]:
    """The VAD of each output.wav, each read when a VAD thread gets to it and dropped after (only its length and
    rate are kept); a file that cannot be read is reported as if all were read first: the first in sample order."""
    loaded: Loaded = [(0, 0)] * len(sources)
    failed: dict[int, InputError] = {}

    def reader(k: int) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            try:
                audio, rate = read_output_raw(sources[k])
            except InputError as exc:  # raised below, once the other threads are done
                failed[k] = exc
                return np.zeros(0, dtype=np.float32)
            loaded[k] = (audio.size, rate)
            return audio

        return read

    try:
        segments = bc.vad_segments_s_read([reader(k) for k in range(len(sources))], [_frames(s) for s in sources])
    except ValueError:
        if failed:
            raise failed[min(failed)] from None
        raise
    if failed:
        raise failed[min(failed)]
    return loaded, segments


def _frames(source: SampleAudio) -> int:
    """The file's length from its header, only to order the VAD's work (the read itself is hash-checked)."""
    try:
        return audio_format(source.path)[0]
    except InputError:
        return 0  # its read reports it


class VadAhead:
    """The VAD of a subset's outputs in a background thread; `result` gives what `_vad` would (or raises its error)."""

    def __init__(self, sources: Sequence[SampleAudio]) -> None:
        self.keys = [s.sample for s in sources]
        self._out: tuple[Loaded, list[list[bc.Segment]]] | None = None
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._run, args=(list(sources),), daemon=True)
        self._thread.start()

    def _run(self, sources: list[SampleAudio]) -> None:
        try:
            self._out = _vad(sources)
        except Exception as exc:  # noqa: BLE001 - re-raised where the result is taken, as if computed there
            self._error = exc

    def result(self) -> tuple[Loaded, list[list[bc.Segment]]]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._out is not None
        return self._out


class Prepared:
    """What `prepare` made for a subset: the ground truth (None without eligible samples) and the VAD started."""

    def __init__(self, gt: GroundTruth | None, ahead: VadAhead | None) -> None:
        self.gt, self.ahead = gt, ahead


class BackchannelOfficial(OfficialRules):
    """VAD (official settings, 16 kHz assumed as the official call does) on each output.wav, then the loop."""

    options: Mapping[str, Any] = {"icc_gt": None, "backchannel_rules": bc.RULES_2025_06}

    def check_options(self, options: Mapping[str, Any]) -> None:
        rules = options.get("backchannel_rules", bc.RULES_2025_06)
        if rules not in bc.BACKCHANNEL_RULES:
            raise InputError(f"--backchannel-rules {rules!r}: expected one of {', '.join(bc.BACKCHANNEL_RULES)}")

    def prepare(self, ctx: OfficialContext, entries: Sequence[SampleEntry]) -> Prepared:
        """Load the ground truth before any work (or judge spending) is done; start the VAD of the outputs
        `evaluate` will take (eligible, transcribed, all-digit ids)."""
        if not any(e.eligible for e in entries):
            return Prepared(None, None)
        gt = load_icc_gt(ctx.options.get("icc_gt"), ctx.tree, ctx.manifest.extra.get(ICC_GT.manifest_key))
        chosen = [OpenedSample(ctx.tree, e, r, None).audio_source() for e in entries
                  if e.eligible and e.id.isdigit() and (r := ctx.asr.samples.get(e.key)) is not None
                  and r.status == "ok" and r.output_json is not None]
        return Prepared(gt, VadAhead(chosen) if chosen else None)

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        subset = ctx.subset
        digit = [(s.entry, s.words, s.audio_source()) for s in ready if s.entry.id.isdigit()]
        for e in (s.entry for s in ready):
            if not e.id.isdigit():
                ctx.rows.append(NotEvaluated(e.id, "id is not all digits: the official script skips it"))
        extra = {"skipped_non_digit_id": len(ready) - len(digit)}
        if not digit:
            return OfficialOutcome([], bc.backchannel_metrics([]), counts=extra)
        prepared: Prepared = ctx.prepared
        # loaded in `prepare` whenever there is an eligible sample
        assert prepared is not None and prepared.gt is not None
        gt, gt_info = prepared.gt
        info = BackchannelInfo(vadmod.vad_signature(vadmod.OFFICIAL_SETTINGS), gt_info)
        ctx.say(f"{subset}: VAD on {len(digit)} output(s), batched")
        ahead = prepared.ahead
        if ahead is not None and ahead.keys == [e.key for e, _, _ in digit]:
            loaded, all_segments = ahead.result()
        else:
            loaded, all_segments = _vad([source for _, _, source in digit])
        done: list[bc.BackchannelSample] = []
        rules = ctx.options.get("backchannel_rules", bc.RULES_2025_06)
        for (e, words, _), (n_samples, rate), segments in zip(digit, loaded, all_segments):
            try:
                done.append(bc.backchannel_sample(e.id, segments, words, n_samples, rate, gt.get(e.id), rules))
            except KeyError:
                raise InputError(
                    f"{gt_info.file}: has no distribution for sample {e.key} (keys are folder ids)") from None
        return OfficialOutcome(done, bc.backchannel_metrics(done), counts=extra, rules_info=info)

    def rules_block(self, options: Mapping[str, Any], info: JsonRecord | None) -> JsonObject:
        rules = options.get("backchannel_rules", bc.RULES_2025_06)
        block: JsonObject = {
            "window_s": bc.WINDOW_S,
            "epsilon": bc.EPSILON,
            "time_threshold_s": bc.TIME_THRESHOLD_S,
            "no_backchannel_jsd": bc.NO_BACKCHANNEL_JSD,
        }
        if isinstance(info, BackchannelInfo):
            block.update(info.to_json())
        return {"backchannel_rules": rules, "backchannel_loop": BACKCHANNEL_LOOPS[rules], "backchannel": block}

    def rules_note(self, rules: Mapping[str, Any]) -> str | None:
        return f"backchannel loop {rules['backchannel_rules']}" if "backchannel_rules" in rules else None
