"""`duplexeval fdb replay TREE`: rebuild every network sample's output.wav and verdict from its wire trace.

For each sample with `trace.jsonl` + `trace.pcm`, the received items and the eligibility reasons are
recomputed by the same functions the export used (`systems.net.trace.network_outcome`, the FIFO playout),
into a scratch folder, then compared byte for byte with the tree's `output.wav` and `trace.json`.
Without `--check` changed files replace the old ones (a playout-rule change needs no new capture)
and `manifest.json` is rewritten from the new entries; with `--check` nothing is written and any
difference is an error. Samples without a wire trace (in-process exports) are left as they are; a sample the
manifest lists with a trace.jsonl that is missing or not a file is an error (the check cannot pass without it).
A sample with further sessions (FDB v1.5: `clean_output.wav` from `clean_trace.jsonl`) has each rebuilt the same way.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.export_sample import SessionWritten, further_session, write_sample
from duplexeval.fdb.sample_trace import TRACE_FILE, read_trace
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import (
    MANIFEST_FILE,
    OUTPUT_WAV,
    SampleEntry,
    load_manifest,
    write_manifest,
)
from duplexeval.fdb.tree_writer import counts_of
from duplexeval.jsonio import atomic_write_bytes, dumps
from duplexeval.systems.net.trace import NET_REASONS, SYSTEM_ERROR, TRACE_JSONL, TRACE_PCM, load_trace, network_outcome


@dataclass
class ReplayTally:
    """What a replay found: per sample key, `same` or the names of the files that changed."""

    tree: Path
    replayed: int = 0
    skipped: int = 0
    changed: dict[str, list[str]] = field(default_factory=dict)
    manifest_changed: bool = False


def _replay_sample(sdir: Path, scratch: Path) -> tuple[SampleEntry, dict[str, bytes]]:
    """Rebuild one sample in `scratch`; returns its entry and the rebuilt files' bytes."""
    trace = read_trace(sdir)
    doc = trace.details
    if "network" not in doc or not isinstance(doc.get("input"), dict) or trace.head.input_samples_16k is None:
        raise InputError(f"{sdir / TRACE_FILE}: not the journal of a network export")
    old = trace.result
    outputs = [OUTPUT_WAV]
    more: dict[str, SessionWritten] = {}
    more_reasons: list[str] = []
    files = {k: v for k, v in old.files.items() if k != OUTPUT_WAV}
    sessions = {s.output: s for s in task_of(old.subset).layout.sessions()[1:]}
    wire_names = (TRACE_JSONL, TRACE_PCM)
    if doc.get("sessions"):  # the files in the export's order: the others, each further session's, the first's wire
        made = {OUTPUT_WAV, *wire_names,
                *(n for s in sessions.values() for n in (s.output, *(s.prefix + w for w in wire_names)))}
        files = {k: v for k, v in old.files.items() if k not in made}
    for name, d in (doc.get("sessions") or {}).items():  # each further session from its own wire trace
        sess = sessions.get(name)
        if sess is None or not isinstance(d, dict) or not isinstance(d.get("input"), dict):
            raise InputError(f"{sdir / TRACE_FILE}: session {name!r} is not one of the task's, or not a "
                             "network session's")
        wire_m = load_trace(sdir, sess.prefix)
        stall_m = float((wire_m.head.get("settings") or {}).get("stall_s", 10.0))
        T_m, n_m = float(d["T"]), int(d["n_samples"])
        out_m = network_outcome(wire_m.records, wire_m.pcm, T_m, stall_m, d.get("error"))
        items_m, reasons_m, network_m, write_m = out_m.items, out_m.reasons, out_m.summary.to_json(), out_m.write_wav
        input_m = dict(d["input"], max_send_lateness_s=out_m.summary.max_send_lateness_s)
        old_m = ((old.extra or {}).get("export") or {}).get("sessions", {}).get(name, {})
        wire_m_files = {sess.prefix + w: old.files[sess.prefix + w] for w in wire_names if sess.prefix + w in old.files}
        written = further_session(scratch, sess, T_m, n_m, str(d["input_sha256"]), int(d["input_samples_16k"]),
                                  items_m, reasons_m, input_m, network_m, write_m, wire_m_files,
                                  str(old_m.get("clock", "wall")), d.get("error"), d.get("error_at_s"))
        files.update(written.files)
        more[name] = written
        more_reasons += reasons_m
        outputs.append(name)
    if more:
        files.update({w: old.files[w] for w in wire_names if w in old.files})
    wire = load_trace(sdir)
    stall_s = float((wire.head.get("settings") or {}).get("stall_s", 10.0))
    outcome = network_outcome(wire.records, wire.pcm, float(trace.head.T), stall_s, doc.get("error"))
    items, net_reasons, write_wav = outcome.items, outcome.reasons, outcome.write_wav
    network = outcome.summary.to_json()
    base = [r for r in old.reasons if r not in NET_REASONS and r != SYSTEM_ERROR]
    input_json = dict(doc["input"], max_send_lateness_s=outcome.summary.max_send_lateness_s)
    clock = str(((old.extra or {}).get("export") or {}).get("clock", "wall"))
    entry = write_sample(trace.head, scratch, old, items, base + more_reasons + net_reasons, files, doc.get("error"),
                         doc.get("error_at_s"), input_json, clock, network, write_wav, more or None)
    out = {TRACE_FILE: (scratch / TRACE_FILE).read_bytes()}
    for name in outputs:
        if (scratch / name).is_file():
            out[name] = (scratch / name).read_bytes()
    return entry, out


def replay(tree: str | Path, check: bool = False) -> ReplayTally:
    """Rebuild (or with `check`, verify) every network sample of `tree` from its trace."""
    tree = Path(tree)
    manifest, _ = load_manifest(tree)
    result = ReplayTally(tree)
    entries: list[SampleEntry] = []
    with tempfile.TemporaryDirectory(prefix="duplexeval-replay-") as tmp:
        for i, e in enumerate(manifest.samples):
            sdir = e.dir(tree)
            wire_path = sdir / TRACE_JSONL
            if TRACE_JSONL not in e.files and not wire_path.exists() and not wire_path.is_symlink():
                entries.append(e)  # an in-process sample: nothing to replay
                result.skipped += 1
                continue
            if not wire_path.is_file():  # the manifest vouches for a wire trace, or something stands in its place
                what = "missing" if not wire_path.exists() else "not a readable file"
                raise InputError(f"{wire_path}: {what} (sample {e.key} of a network export; replay rebuilds from it)")
            if not (sdir / TRACE_PCM).is_file():
                raise InputError(f"{sdir / TRACE_PCM}: missing (sample {e.key} has a trace.jsonl without its audio)")
            scratch = Path(tmp) / str(i)
            scratch.mkdir()
            entry, rebuilt = _replay_sample(sdir, scratch)
            result.replayed += 1
            diff = [name for name, data in rebuilt.items()
                    if not (sdir / name).is_file() or (sdir / name).read_bytes() != data]
            outputs = [OUTPUT_WAV, *(s.output for s in task_of(e.subset).layout.sessions()[1:])]
            gone = [name for name in outputs if (sdir / name).is_file() and name not in rebuilt]
            diff += [f"{name} (now not written)" for name in gone]
            if diff:
                result.changed[e.key] = diff
                if not check:
                    for name, data in rebuilt.items():
                        atomic_write_bytes(sdir / name, data)
                    for name in gone:
                        (sdir / name).unlink()
            entries.append(entry)
            shutil.rmtree(scratch)
    if result.replayed == 0:
        raise InputError(f"{tree}: no sample has a wire trace ({TRACE_JSONL}); replay needs a network export")
    extra = dict(manifest.extra)
    if isinstance(extra.get("export"), dict):
        extra["export"] = {**extra["export"], "counts": counts_of(entries)}
    manifest.samples = entries
    manifest.extra = extra
    new_bytes = dumps(manifest.to_json()).encode("utf-8")
    result.manifest_changed = (tree / MANIFEST_FILE).read_bytes() != new_bytes
    if check and (result.changed or result.manifest_changed):
        what = ", ".join(f"{k}: {', '.join(v)}" for k, v in list(result.changed.items())[:5]) or MANIFEST_FILE
        raise RefusalError(f"{tree}: replay differs from the tree ({what})")
    if not check and result.manifest_changed:
        write_manifest(tree, manifest)
    return result

