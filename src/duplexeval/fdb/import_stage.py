"""`duplexeval fdb import`: adopt `output.wav` files made elsewhere into an FDB tree.

Official inference scripts write `output.wav` (16 or 24 kHz) next to each input; we look for it at the
sample's own path under `--outputs`, then at `<outputs>/<subset>/<id>/output.wav`. Each is
resampled to 16 kHz; a length within one 80 ms frame of T is fixed (cropped or zero-padded) and
recorded, anything further off makes the sample ineligible (`length_mismatch`). A missing output is
ineligible (`missing_output`), never dropped. An `output.json` next to the wav is copied byte for
byte so the ASR stage's `import` backend can use it. A task with further sessions (FDB v1.5: `clean_output.wav`)
has each further output adopted from beside output.wav the same way (fitted to its own input's length), its
other transcripts (`input.json`, `clean_input.json`, `clean_output.json`) copied when there, and its inputs copied
from the dataset, as export does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from duplexeval import __version__
from duplexeval.audio import (
    audio_format,
    audio_info,
    fit_length,
    n_samples_for,
    read_audio_channels,
    resample,
    to_pcm16,
    write_wav_pcm16,
)
from duplexeval.errors import InputError
from duplexeval.fdb.protocols import SampleKey, SampleLike, dataset_root
from duplexeval.fdb.sample_trace import IMPORT_TRACE_KIND, TRACE_FILE, Trace, TraceHead, write_trace
from duplexeval.fdb.selection import (
    DatasetArg,
    check_out_outside,
    dataset_identity,
    resolve_dataset,
    select_samples,
)
from duplexeval.fdb.tasks import ASR, EXPORT, task_of
from duplexeval.fdb.tree import OUTPUT_JSON, OUTPUT_WAV, SampleEntry
from duplexeval.fdb.tree_writer import (
    REASON_BAD_OUTPUT,
    REASON_LENGTH,
    REASON_MISSING_OUTPUT,
    SystemRecord,
    TreeRun,
    TreeWritten,
    build_samples,
    copy_annotation,
    copy_inputs,
    finish_run,
    source_path,
)
from duplexeval.jsonio import atomic_write_bytes, make_output_dir, sha256_bytes, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.units import SAMPLE_RATE

LENGTH_TOLERANCE_SAMPLES = 1280  # one 80 ms frame at 16 kHz


def find_output(sample: SampleLike, ds_root: Path, outputs: Path) -> Path:
    """Where a sample's output.wav should be: the dataset's own nesting under `outputs`, else `<subset>/<id>/`."""
    sample_dir = getattr(sample, "dir", None)  # optional (fdb.protocols.SampleLike)
    if sample_dir is not None:
        try:
            rel = Path(sample_dir).resolve().relative_to(ds_root.resolve())
            nested = outputs / rel / OUTPUT_WAV
            if nested.is_file():
                return nested
        except (ValueError, OSError, AttributeError, TypeError):  # not below the dataset's root, or not a path
            pass
    return outputs / sample.subset / sample.id / OUTPUT_WAV


def parse_channel(text: str | None) -> int | str | None:
    """`--channel`: None (mono files only), a 0-based channel number, or 'mean'."""
    if text is None or text == "mean":
        return text
    if not text.isdigit():
        raise InputError(f"--channel: expected a 0-based channel number or 'mean', got {text!r}")
    return int(text)


def to_mono(audio: np.ndarray, channel: int | str | None, where: str) -> np.ndarray:
    """One channel of (frames, channels) audio; refuses non-finite samples and a multi-channel file without
    --channel."""
    bad = int(np.count_nonzero(~np.isfinite(audio)))
    if bad:
        raise InputError(f"{where}: {bad} samples are NaN or infinite; fix the file (import does not guess audio)")
    n_ch = int(audio.shape[1])
    if n_ch == 1:
        return np.ascontiguousarray(audio[:, 0])
    if channel is None:
        raise InputError(f"{where}: {n_ch} channels; pass --channel N (0-based) or --channel mean to say which "
                         "is the model's (the other may be the user's)")
    if channel == "mean":
        return np.ascontiguousarray(audio.mean(axis=1, dtype=np.float32))
    if int(channel) >= n_ch:
        raise InputError(f"{where}: --channel {channel} but the file has only {n_ch} channels")
    return np.ascontiguousarray(audio[:, int(channel)])


def _refuse_multichannel(samples: Sequence[SampleKey], sources: list[Path]) -> None:
    """Without --channel, refuse the run up front if any source has more than one channel (headers only)."""
    for sample, src in zip(samples, sources):
        try:
            n_ch = audio_format(src)[2] if src.is_file() else 1
        except InputError:
            continue  # unreadable: the sample becomes ineligible (unreadable_output) below
        if n_ch > 1:
            to_mono(np.zeros((0, n_ch), np.float32), None, f"{src}: sample {sample.subset}/{sample.id}")


@dataclass
class Adopted:
    """One output adopted from elsewhere: the files written, the ineligibility reasons, and what the manifest entry
    records of its source (hash, rate, length, the length fixed, why it could not be read, which channel)."""

    files: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    source_sha256: str | None = None
    source_sample_rate: int | None = None
    source_samples: int | None = None
    length_fix_samples: int | None = None
    error: str | None = None  # the source could not be read
    channels: int | None = None  # a multi-channel source, and the channel taken
    channel: int | str | None = None

    def source_json(self) -> JsonObject:
        """The source's keys after the hash: rate, length and the length fixed."""
        return {"source_sample_rate": self.source_sample_rate, "source_samples": self.source_samples,
                "length_fix_samples": self.length_fix_samples}

    def notes_json(self) -> JsonObject:
        """The keys only some sources have: the read error, or the channels and the one taken."""
        out: JsonObject = {}
        if self.error is not None:
            out["error"] = self.error
        if self.channels is not None:
            out.update({"channels": self.channels, "channel": self.channel})
        return out

    def to_json(self) -> JsonObject:
        return {"source_sha256": self.source_sha256, **self.source_json(), **self.notes_json()}


@dataclass
class ImportInfo:
    """The `import` block of a sample's manifest entry: its output.wav's source (hash of what keyed the sample),
    whether an output.json was adopted (and its hash), each further output's record, the further transcripts."""

    output: Adopted
    source_sha256: str | None
    output_json_sha256: str | None = None
    sessions: dict[str, tuple[float, Adopted]] = field(default_factory=dict)  # output name -> (T, adopted)
    transcripts: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        out: JsonObject = {"source_sha256": self.source_sha256, **self.output.source_json(),
                           "output_json": self.output_json_sha256 is not None, **self.output.notes_json()}
        if self.output_json_sha256 is not None:
            out["output_json_sha256"] = self.output_json_sha256
        if self.sessions:
            out["sessions"] = {name: {"T": T, **a.to_json(), "reasons": sorted(set(a.reasons))}
                               for name, (T, a) in self.sessions.items()}
        if self.transcripts:
            out["transcripts"] = dict(self.transcripts)
        return out


def _adopt(src: Path, sdir: Path, name: str, n: int, channel: int | str | None, where: str) -> Adopted:
    """One output made elsewhere, resampled to 16 kHz and fitted to n samples (within one frame), as `sdir/name`."""
    if not src.is_file():
        return Adopted(reasons=[REASON_MISSING_OUTPUT])
    got = Adopted(source_sha256=sha256_file(src))
    try:
        channels, sr = read_audio_channels(src)
    except InputError as exc:
        got.error = f"cannot read {name}: {str(exc).rsplit(':', 1)[-1].strip()}"
        got.reasons.append(REASON_BAD_OUTPUT)
        return got
    audio = to_mono(channels, channel, where)
    if channels.shape[1] > 1:
        got.channels, got.channel = int(channels.shape[1]), channel
    a16 = resample(audio, sr, SAMPLE_RATE)
    got.source_sample_rate = sr
    got.source_samples = int(audio.shape[0])
    diff = int(a16.shape[0]) - n
    got.length_fix_samples = -diff
    if abs(diff) > LENGTH_TOLERANCE_SAMPLES:
        got.reasons.append(REASON_LENGTH)
    else:
        got.files[name] = write_wav_pcm16(sdir / name, to_pcm16(fit_length(a16, n)), SAMPLE_RATE)
    return got


def _further_transcripts(subset: str) -> list[str]:
    """The transcripts the subset's task makes besides output.json (copied when found next to the outputs)."""
    return [j for _, j in task_of(subset).layout.transcripts() if j != OUTPUT_JSON]


def _import_one(sample: SampleLike, src: Path, out: Path, run_sha: str, src_sha: str, key: str,
                channel: int | str | None = None, ignore_output_json: bool = False) -> SampleEntry:
    sdir = out / sample.subset / sample.id
    sdir.mkdir(parents=True, exist_ok=True)
    layout = task_of(sample.subset).layout
    for stale in dict.fromkeys((TRACE_FILE, OUTPUT_WAV, OUTPUT_JSON, *layout.names(EXPORT), *layout.names(ASR))):
        if (sdir / stale).exists():
            (sdir / stale).unlink()
    T = float(sample.T)
    n = n_samples_for(T)
    files, reasons, ann_sha = copy_annotation(sample, sdir)
    copied, missing = copy_inputs(sample, sdir)
    files.update(copied)
    reasons += missing
    where = f"{src}: sample {sample.subset}/{sample.id}"
    adopted = _adopt(src, sdir, OUTPUT_WAV, n, channel, where)
    reasons += adopted.reasons
    info = ImportInfo(adopted, src_sha if src.is_file() else None)
    if adopted.files:
        files = {**adopted.files, **files}
        oj = src.parent / OUTPUT_JSON
        if oj.is_file() and not ignore_output_json:
            data = oj.read_bytes()
            atomic_write_bytes(sdir / OUTPUT_JSON, data)
            info.output_json_sha256 = sha256_bytes(data)
    for sess in layout.sessions()[1:]:  # the task's further outputs, beside output.wav
        n_m = n_samples_for(_length(source_path(sample, sess.source)))
        more = _adopt(src.parent / sess.output, sdir, sess.output, n_m, channel,
                      f"{src.parent / sess.output}: sample {sample.subset}/{sample.id}")
        files.update(more.files)
        reasons += more.reasons
        info.sessions[sess.output] = (n_m / SAMPLE_RATE, more)
    if info.sessions and not ignore_output_json:
        info.transcripts = {j: atomic_write_bytes(sdir / j, (src.parent / j).read_bytes())
                            for j in _further_transcripts(sample.subset) if (src.parent / j).is_file()}
    entry = SampleEntry(sample.subset, sample.id, T, not reasons, sorted(set(reasons)), files,
                        {"import": info.to_json()})
    write_trace(sdir, Trace(IMPORT_TRACE_KIND, TraceHead(run_sha, sample.subset, sample.id, T, n, key, ann_sha), entry))
    return entry


def _length(path: Path) -> float:
    frames, sr = audio_info(path)
    return frames / sr


def import_outputs(
    dataset: DatasetArg,
    outputs: str | Path,
    out: str | Path,
    subsets: Iterable[str] | None = None,
    limit: int | None = None,
    name: str = "imported",
    force: bool = False,
    progress: bool = True,
    channel: int | str | None = None,
    ignore_output_json: bool = False,
) -> TreeWritten:
    """Build the tree `out` from the dataset's annotations and the `output.wav` files under `outputs`.

    `channel` says which channel of a multi-channel output.wav is the model's (a 0-based number or
    "mean"); without it such files are refused. The choice is recorded per sample and in the run.
    `ignore_output_json` leaves any output.json next to the wavs behind (the tree is then transcribed
    by `fdb asr` itself); recorded in the run.
    """
    if channel is not None and channel != "mean" and (isinstance(channel, bool) or not isinstance(channel, int)
                                                      or channel < 0):
        raise InputError(f"--channel: expected a 0-based channel number or 'mean', got {channel!r}")
    ds = resolve_dataset(dataset)
    outputs = Path(outputs)
    if not outputs.is_dir():
        raise InputError(f"{outputs}: --outputs must be a folder holding <subset>/<id>/output.wav")
    chosen = select_samples(ds, subsets, limit)
    out = Path(out)
    if out.resolve() == outputs.resolve():
        raise InputError(f"{out}: --out must differ from --outputs (the sources are never modified)")
    ds_root = dataset_root(ds) or Path(".")
    sources = [find_output(sample, ds_root, outputs) for sample in chosen]
    if not any(src.is_file() for src in sources):
        raise InputError(
            f"{outputs}: no output.wav for any of the {len(chosen)} selected samples "
            f"(expected {outputs}/<subset>/<id>/output.wav, e.g. {sources[0]})"
        )
    if channel is None:
        _refuse_multichannel(chosen, sources)  # before anything is written
    make_output_dir(check_out_outside(out, ds), "--out")
    params: JsonObject = {"outputs": outputs.name, "label": name}  # the import's parameters, as the run names them
    if channel is not None:
        params["channel"] = channel
    if ignore_output_json:
        params["ignore_output_json"] = True
    sysj = SystemRecord("import", params, f"duplexeval {__version__}")
    run = TreeRun("import", sysj, dataset_identity(ds))

    def key_of(i: int) -> tuple[str, str]:
        src = sources[i]
        layout = task_of(chosen[i].subset).layout
        beside = [s.output for s in layout.sessions()[1:]]  # every other file adopted from beside output.wav
        if not ignore_output_json:
            beside = [OUTPUT_JSON, *beside, *_further_transcripts(chosen[i].subset)]
        try:
            src_sha = sha256_file(src) if src.is_file() else "missing"
            more = "".join(f"+{sha256_file(src.parent / f)}" if (src.parent / f).is_file() else "" if f == OUTPUT_JSON
                           else f"+{f}:missing" for f in beside)
            return src_sha + more, src_sha
        except OSError as exc:
            raise InputError(f"{exc.filename or src}: sample {chosen[i].subset}/{chosen[i].id}: cannot read: "
                             f"{exc.strerror or exc}") from None

    def make(i: int, run_sha: str, key: str, src_sha: str) -> SampleEntry:
        return _import_one(chosen[i], sources[i], out, run_sha, src_sha, key, channel, ignore_output_json)

    entries, ran, reused = build_samples(out, run, force, progress, chosen, key_of, make, "import")
    info = {"tool": "duplexeval fdb import", "length_tolerance_samples": LENGTH_TOLERANCE_SAMPLES}
    return finish_run(out, ds, entries, sysj, "import", info, limit, ran, reused)

