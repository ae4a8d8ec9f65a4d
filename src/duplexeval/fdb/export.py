"""`duplexeval fdb export`: drive a system over a dataset and write an FDB v1.0 tree.

Per sample: the input is fed as 80 ms frames on the virtual clock, the received output is played
out FIFO from receipt time (gaps silent, cropped at T, exactly round(T * 16000) samples), the
annotation is copied byte for byte, and a `trace.json` records what was received, dropped and
cropped. `trace.json` is written last and is the journal: a rerun reuses every sample whose trace
matches this run and whose files still have their recorded hashes, so an interrupted export
resumes. `manifest.json` is rebuilt from the traces at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.tree import (
    MANIFEST_FILE,
    OUTPUT_JSON,
    OUTPUT_WAV,
    SUBSET_ORDER,
    SUBSETS,
    Manifest,
    SampleEntry,
    validate_sample_id,
    validate_subset,
    write_manifest,
)
from duplexeval.jsonio import (
    atomic_write_bytes,
    dumps,
    make_output_dir,
    read_json,
    sha256_bytes,
    sha256_file,
    write_json,
)
from duplexeval.progress import progress_bar

TRACE_FILE = "trace.json"
RUN_FILE = ".duplexeval-export.json"  # what made this tree (system + dataset); checked before writing
TRACE_KIND = "duplexeval.systems.trace"
PLAYOUT_POLICY = "fifo-from-receipt-crop-at-T-v1"
ICC_FILE = "icc_gt_distribution.json"

# Reasons a sample is ineligible (docs/systems.md lists them).
REASON_SYSTEM_ERROR = "system_error"
REASON_PACING = "input_pacing_late"
REASON_MISSING_ANNOTATION = "missing_annotation"
REASON_ANNOTATION_HASH = "annotation_hash_mismatch"
REASON_MISSING_OUTPUT = "missing_output"
REASON_LENGTH = "length_mismatch"
REASON_BAD_OUTPUT = "unreadable_output"


@dataclass
class ExportResult:
    """What a run wrote: the tree, the manifest hash, per-subset counts and how much was reused."""

    tree: Path
    manifest_sha256: str
    counts: dict[str, dict[str, int]]
    ran: int
    reused: int


# ---------------------------------------------------------------- shared with import_outputs


def float_to_int16(audio: Any) -> Any:
    """Float audio to int16 at soundfile's scale, so a PCM16 file read as float round-trips exactly."""
    from duplexeval.audio import to_pcm16

    return to_pcm16(audio)


def resolve_dataset(dataset: Any) -> Any:
    """A Dataset object as is, or load one from a path / "demo"."""
    if hasattr(dataset, "samples") and hasattr(dataset, "declared"):
        return dataset
    from duplexeval.fdb.dataset import load_dataset

    return load_dataset(dataset)


def select_samples(ds: Any, subsets: Iterable[str] | None, limit: int | None) -> list[Any]:
    """The dataset's samples in canonical subset order; `limit` is the first N of each subset."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    wanted = None if subsets is None else [validate_subset(s, "--subset") for s in subsets]
    chosen: list[Any] = []
    for subset in SUBSET_ORDER:
        if wanted is not None and subset not in wanted:
            continue
        rows = list(ds.samples(subset))
        for s in rows:
            validate_sample_id(s.id, f"{getattr(ds, 'root', ds)}: {subset}")
        chosen.extend(rows[:limit] if limit is not None else rows)
    if wanted is not None:
        empty = [s for s in wanted if not any(c.subset == s for c in chosen)]
        if empty:
            raise InputError(f"--subset: dataset {ds.name!r} has no samples in {', '.join(empty)}")
    if not chosen:
        raise InputError(f"dataset {ds.name!r}: no samples selected")
    return chosen


def check_out_outside(out: Path, ds: Any) -> Path:
    """Refuse an --out inside the dataset folder (its sample folders would mix with the dataset's)."""
    root = getattr(ds, "root", None)
    if root is not None and out.resolve().is_relative_to(Path(root).resolve()):
        raise InputError(f"{out}: --out is inside the dataset folder {root}; write the tree somewhere else")
    return out


def dataset_identity(ds: Any) -> dict[str, Any]:
    """The dataset's name plus the hash of its dataset.json when it has one (no absolute paths)."""
    ident: dict[str, Any] = {"name": ds.name}
    root = Path(getattr(ds, "root", "."))
    dj = root / "dataset.json"
    ident["dataset_json_sha256"] = sha256_file(dj) if dj.is_file() else None
    return ident


def copy_annotation(sample: Any, dest_dir: Path) -> tuple[dict[str, str], list[str], str | None]:
    """Copy the annotation byte for byte; returns (files, reasons, source sha256)."""
    info = SUBSETS[sample.subset]
    if info.annotation is None:
        return {}, [], None
    src = getattr(sample, "annotation_path", None)
    if src is None or not Path(src).is_file():
        return {}, [REASON_MISSING_ANNOTATION], None
    data = Path(src).read_bytes()
    src_sha = sha256_bytes(data)
    expected = getattr(sample, "annotation_sha256", None)
    dest = dest_dir / info.annotation
    atomic_write_bytes(dest, data)
    got = sha256_file(dest)
    reasons = []
    if got != src_sha or (expected is not None and expected != src_sha):
        reasons.append(REASON_ANNOTATION_HASH)
    return {info.annotation: got}, reasons, src_sha


def copy_icc(ds: Any, out: Path) -> dict[str, Any]:
    """Copy the dataset's icc_gt_distribution.json into the tree; returns the manifest key, if any."""
    src = Path(getattr(ds, "root", ".")) / ICC_FILE
    if not src.is_file():
        return {}
    data = src.read_bytes()
    atomic_write_bytes(out / ICC_FILE, data)
    return {"icc_gt_distribution": sha256_bytes(data)}


def counts_of(entries: list[SampleEntry]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for e in entries:
        c = counts.setdefault(e.subset, {"selected": 0, "eligible": 0})
        c["selected"] += 1
        c["eligible"] += int(e.eligible)
    return counts


def declared_of(ds: Any, entries: list[SampleEntry]) -> dict[str, int]:
    declared = dict(getattr(ds, "declared", {}) or {})
    for sub in {e.subset for e in entries}:
        declared.setdefault(sub, SUBSETS[sub].declared)
    return {k: int(declared[k]) for k in SUBSET_ORDER if k in declared}


def check_run_file(out: Path, run: dict[str, Any], force: bool, what: str) -> None:
    """Refuse to write into a tree made by a different system or dataset, unless forced."""
    path = out / RUN_FILE
    if path.is_file():
        old = read_json(path)
        if old != run and not force:
            diff = [k for k in ("tool", "system", "dataset") if old.get(k) != run.get(k)]
            raise RefusalError(
                f"{out}: this tree was made by a different {' and '.join(diff) or 'run'}; "
                f"use another --out or pass --force to overwrite it"
            )
    elif (out / MANIFEST_FILE).is_file() and not force:
        raise RefusalError(f"{out}: has a manifest.json not written by `duplexeval fdb {what}`; use another --out or --force")
    write_json(path, run)


def entry_from_json(obj: dict[str, Any]) -> SampleEntry:
    return SampleEntry(obj["subset"], obj["id"], float(obj["T"]), bool(obj["eligible"]), list(obj["reasons"]),
                       dict(obj["files"]), dict(obj.get("extra", {})))


def entry_json(e: SampleEntry) -> dict[str, Any]:
    return {"subset": e.subset, "id": e.id, "T": e.T, "eligible": e.eligible, "reasons": e.reasons,
            "files": e.files, "extra": e.extra}


def reuse_entry(sample_dir: Path, run_sha: str, input_sha: str, key: str | None = None) -> SampleEntry | None:
    """The sample's entry from its trace.json when it belongs to this run and sample (`key`) and its files are intact."""
    path = sample_dir / TRACE_FILE
    if not path.is_file():
        return None
    try:
        trace = read_json(path)
        if not isinstance(trace, dict) or not isinstance(trace.get("result"), dict):
            return None  # a journal of the wrong shape is redone, never trusted
        if trace.get("run_sha256") != run_sha or trace.get("input_sha256") != input_sha:
            return None
        entry = entry_from_json(trace["result"])
        if key is not None and (f"{trace.get('subset')}/{trace.get('id')}" != key or entry.key != key):
            return None  # a journal copied from another sample's folder names that sample, not this one
        for name, digest in entry.files.items():
            f = sample_dir / name
            if not f.is_file() or sha256_file(f) != digest:
                return None
        return entry
    except (InputError, KeyError, TypeError, ValueError):
        return None


def build_samples(
    out: Path,
    run: dict[str, Any],
    force: bool,
    progress: bool,
    samples: list[Any],
    key_of: Callable[[int], tuple[str, Any]],
    make: Callable[[int, str, str, Any], SampleEntry],
    label: str,
) -> tuple[list[SampleEntry], int, int]:
    """The per-sample loop export and import share: (entries, made, reused).

    Refuses a tree from another run (`check_run_file`); then for sample i, `key_of(i)` gives the key
    that identifies its input plus whatever `make` needs; a sample this run already finished from the
    same key is reused, else `make(i, run_sha, key, payload)` writes it.
    """
    check_run_file(out, run, force, run["tool"])
    run_sha = sha256_bytes(dumps(run).encode("utf-8"))
    entries: list[SampleEntry] = []
    ran = reused = 0
    with progress_bar(len(samples), label, progress) as advance:
        for i, sample in enumerate(samples):
            key, payload = key_of(i)
            entry = None if force else reuse_entry(out / sample.subset / sample.id, run_sha, key, f"{sample.subset}/{sample.id}")
            if entry is None:
                entry = make(i, run_sha, key, payload)
                ran += 1
            else:
                reused += 1
            entries.append(entry)
            advance(f"{sample.subset}/{sample.id}")
    return entries, ran, reused


def finish_run(out: Path, ds: Any, entries: list[SampleEntry], system: dict[str, Any], section: str,
               info: dict[str, Any], limit: int | None, ran: int, reused: int) -> ExportResult:
    """Write the manifest with `system` and a `section` of `info` plus the selection and counts."""
    counts = counts_of(entries)
    selection = {"subsets": sorted({e.subset for e in entries}, key=SUBSET_ORDER.index), "limit": limit}
    extra = {"system": system, section: {**info, "selection": selection, "counts": counts}}
    return ExportResult(out, finish_tree(out, ds, entries, extra), counts, ran, reused)


def finish_tree(out: Path, ds: Any, entries: list[SampleEntry], extra: dict[str, Any]) -> str:
    """Write manifest.json (plus the icc distribution) from the per-sample entries; returns its hash."""
    extra = dict(extra)
    extra.update(copy_icc(ds, out))
    manifest = Manifest(ds.name, declared_of(ds, entries), entries, extra)
    return write_manifest(out, manifest)


# ---------------------------------------------------------------- export


def _resolve_system(system: Any) -> Any:
    if isinstance(system, str):
        from duplexeval.systems.registry import make_system

        return make_system(system)
    return system


def system_json(system: Any) -> dict[str, Any]:
    return {"name": system.name, "params": system.params(), "version": system.version()}


@dataclass
class PreparedSample:
    """One sample ready to run: its folder, input PCM (16 kHz int16, exactly T) and what the journal keeps."""

    sample: Any
    sdir: Path
    T: float
    n: int
    pcm: Any
    input_len: int


def _prepare(sample: Any, out: Path) -> PreparedSample:
    import numpy as np

    from duplexeval.audio import fit_length, n_samples_for

    sdir = out / sample.subset / sample.id
    sdir.mkdir(parents=True, exist_ok=True)
    for stale in (TRACE_FILE, OUTPUT_JSON):  # the journal entry goes first, so a crash below leaves it to redo;
        if (sdir / stale).exists():  # a transcript of the old output.wav no longer describes the new one
            (sdir / stale).unlink()
    T = float(sample.T)
    n = n_samples_for(T)
    audio = np.asarray(sample.read_input_16k(), dtype=np.float32)
    return PreparedSample(sample, sdir, T, n, float_to_int16(fit_length(audio, n)), int(audio.shape[0]))


async def _run_prepared(system: Any, prep: PreparedSample) -> Any:
    from duplexeval.systems.base import SampleInfo
    from duplexeval.systems.runner import run_session_async

    return await run_session_async(system, prep.pcm, SampleInfo(prep.sample.subset, prep.sample.id, prep.T, prep.n))


def write_sample(prep_meta: dict[str, Any], sdir: Path, sample: Any, items: list[Any], reasons: list[str],
                 files: dict[str, str], error: str | None, error_at_s: float | None, input_json: dict[str, Any],
                 clock: str, network: dict[str, Any] | None, write_wav: bool) -> SampleEntry:
    """Play out `items`, write output.wav (unless `write_wav` is False) and the journal trace.json last."""
    from duplexeval.audio import SAMPLE_RATE, write_wav_pcm16
    from duplexeval.systems.playout import placements_json, playout

    T, n = prep_meta["T"], prep_meta["n_samples"]
    pl = playout(items, n, T)
    wav = sdir / OUTPUT_WAV
    if write_wav:
        files = {OUTPUT_WAV: write_wav_pcm16(wav, pl.audio, SAMPLE_RATE), **files}
    elif wav.exists():
        wav.unlink()
    summary: dict[str, Any] = {"clock": clock, **pl.stats, "error": error}
    if network is not None:
        summary["network"] = {k: network[k] for k in ("reasons", "post_window_errors", "max_send_lateness_s")}
    entry = SampleEntry(sample.subset, sample.id, T, not reasons, sorted(set(reasons)), files, {"export": summary})
    doc = {
        "kind": TRACE_KIND,
        "schema_version": 1,
        **prep_meta,
        "input": input_json,
        "playout_policy": PLAYOUT_POLICY,
        "items": placements_json(items, pl),
        "playout": pl.stats,
        "error": error,
        "error_at_s": error_at_s,
    }
    if network is not None:
        doc["network"] = network
    doc["result"] = entry_json(entry)
    write_json(sdir / TRACE_FILE, doc)
    return entry


def network_outcome(records: list[dict[str, Any]], pcm: bytes, T: float, stall_s: float,
                    error: str | None) -> tuple[list[Any], list[str], dict[str, Any], bool]:
    """(items, session reasons, network summary, write_wav) from a wire trace: the one rule export and replay share."""
    from duplexeval.systems.net.trace import (
        SESSION_REASONS,
        received_items,
        send_stats,
        verdict,
    )

    v = verdict(records, T, stall_s)
    reasons = list(v.reasons)
    if error is not None and not any(r in SESSION_REASONS for r in reasons):
        reasons.append(REASON_SYSTEM_ERROR)  # the adapter itself broke, not the network
    failed = any(r in SESSION_REASONS or r == REASON_SYSTEM_ERROR for r in reasons)
    summary = {**v.to_json(), "reasons": sorted(reasons), "send": send_stats(records)}
    return received_items(records, pcm), reasons, summary, not failed


def _finish_prepared(prep: PreparedSample, trace: Any, run_sha: str, input_sha: str) -> SampleEntry:
    from duplexeval.systems.runner import MAX_SEND_LATENESS_S

    sample, sdir = prep.sample, prep.sdir
    files, reasons, ann_sha = copy_annotation(sample, sdir)
    meta = {"run_sha256": run_sha, "subset": sample.subset, "id": sample.id, "T": prep.T, "n_samples": prep.n,
            "input_sha256": input_sha, "input_samples_16k": prep.input_len, "annotation_sha256": ann_sha}
    wire = getattr(trace, "wire", None)
    input_json = trace.input_json()
    if wire is None:
        if trace.error is not None:
            reasons.append(REASON_SYSTEM_ERROR)
        if trace.max_send_lateness_s > MAX_SEND_LATENESS_S:
            reasons.append(REASON_PACING)
        return write_sample(meta, sdir, sample, trace.items, reasons, files, trace.error, trace.error_at_s,
                            input_json, trace.clock, None, trace.error is None)
    from duplexeval.systems.net.trace import load_trace

    files.update(wire.write(sdir, prep.T))
    written = load_trace(sdir)  # decide from the files as written, so `fdb replay` reproduces it exactly
    stall_s = float(wire.settings.get("stall_s", 10.0))
    items, net_reasons, network, write_wav = network_outcome(written.records, written.pcm, prep.T, stall_s, trace.error)
    input_json["max_send_lateness_s"] = network["max_send_lateness_s"]
    return write_sample(meta, sdir, sample, items, reasons + net_reasons, files, trace.error, trace.error_at_s,
                        input_json, trace.clock, network, write_wav)


def _export_one(system: Any, sample: Any, out: Path, run_sha: str, input_sha: str) -> SampleEntry:
    import asyncio

    prep = _prepare(sample, out)
    trace = asyncio.run(_run_prepared(system, prep))
    return _finish_prepared(prep, trace, run_sha, input_sha)


@dataclass
class RunProgress:
    """Live counters of a concurrent export (shown in the progress line)."""

    done: int = 0
    running: int = 0
    failed: int = 0
    worst_lateness_s: float = 0.0

    def line(self) -> str:
        return (f"done {self.done} running {self.running} failed {self.failed} "
                f"worst send lateness {self.worst_lateness_s * 1000:.1f} ms")


async def _run_concurrently(system: Any, samples: list[Any], todo: list[int], out: Path, run_sha: str,
                            keys: dict[int, str], concurrency: int, advance: Callable[[str], None],
                            state: RunProgress) -> dict[int, SampleEntry]:
    """Run the `todo` samples, at most `concurrency` sessions at once on this event loop."""
    import asyncio

    sem = asyncio.Semaphore(concurrency)
    made: dict[int, SampleEntry] = {}

    async def one(i: int) -> None:
        async with sem:
            prep = await asyncio.to_thread(_prepare, samples[i], out)
            state.running += 1
            try:
                trace = await _run_prepared(system, prep)
            finally:
                state.running -= 1
            state.worst_lateness_s = max(state.worst_lateness_s, float(trace.max_send_lateness_s))
            entry = await asyncio.to_thread(_finish_prepared, prep, trace, run_sha, keys[i])
            made[i] = entry
            state.done += 1
            state.failed += int(not entry.eligible)
            advance(state.line())

    await asyncio.gather(*(one(i) for i in todo))
    return made


def export(
    system: Any,
    dataset: Any,
    out: str | Path,
    subsets: Iterable[str] | None = None,
    limit: int | None = None,
    force: bool = False,
    progress: bool = True,
    concurrency: int = 1,
    executor: Any = None,
) -> ExportResult:
    """Drive `system` (a System or a `NAME[:k=v,...]` spec) over `dataset` and write the tree `out`.

    `concurrency` > 1 runs that many sessions at once on one event loop (network systems spend most of
    their time waiting on the wall clock); the tree is the same as a sequential run's except for
    receipt-time jitter. `executor` (an ExecutorSpec of kind ray) runs the sessions on Ray workers first
    (`export_remote`).
    """
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}")
    system_arg = system
    system = _resolve_system(system)
    ds = resolve_dataset(dataset)
    chosen = select_samples(ds, subsets, limit)
    out = make_output_dir(check_out_outside(Path(out), ds), "--out")
    sysj = system_json(system)
    run = {"tool": "export", "system": sysj, "dataset": dataset_identity(ds)}
    wall = bool(getattr(system, "wall_clock", False))
    keys: dict[int, str] = {}

    def key_of(i: int) -> tuple[str, None]:
        if i not in keys:
            keys[i] = sha256_file(chosen[i].input_path)
        return keys[i], None

    made: dict[int, SampleEntry] = {}
    if concurrency > 1 and (executor is None or executor.kind == "local"):
        import asyncio

        check_run_file(out, run, force, "export")
        run_sha = sha256_bytes(dumps(run).encode("utf-8"))
        todo = [i for i in range(len(chosen))
                if reuse_entry(out / chosen[i].subset / chosen[i].id, run_sha, key_of(i)[0],
                               f"{chosen[i].subset}/{chosen[i].id}") is None or force]
        state = RunProgress()
        with progress_bar(len(todo), f"export {system.name}", progress and bool(todo)) as advance:
            made = asyncio.run(_run_concurrently(system, chosen, todo, out, run_sha, keys, concurrency, advance, state))

    def make(i: int, run_sha: str, input_sha: str, _payload: None) -> SampleEntry:
        if i in made:
            return made[i]
        return _export_one(system, chosen[i], out, run_sha, input_sha)

    remote = 0
    if executor is not None and executor.kind != "local":
        from duplexeval.fdb.export_remote import prepass

        remote = prepass(system_arg, chosen, out, run, force, progress, executor, f"export {system.name}")
        force = False  # the pre-pass redid what --force asks for; the loop below finds it all in the journal
    elif made:
        remote = len(made)  # the concurrent pre-pass ran them; the loop below finds them in the journal
        force = False
    entries, ran, reused = build_samples(out, run, force, progress and not remote and concurrency == 1, chosen,
                                         key_of, make, f"export {system.name}")
    ran, reused = ran + remote, reused - remote
    info = {"tool": "duplexeval fdb export", "clock": "wall" if wall else "virtual", "frame_samples": 1280,
            "playout": PLAYOUT_POLICY}
    return finish_run(out, ds, entries, sysj, "export", info, limit, ran, reused)
