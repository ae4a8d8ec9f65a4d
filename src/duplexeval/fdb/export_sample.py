"""One sample of `fdb export`: prepare its input, run the session, play the output out and write the sample's files
with `trace.json` last. `fdb replay` rebuilds a network sample through the same `systems.net.trace.network_outcome` and
`write_sample`, so a replay reproduces the export byte for byte.

Per sample: the input is fed as 80 ms frames on the virtual clock, the received output is played out FIFO from
receipt time (gaps silent, cropped at T, exactly round(T * 16000) samples), the annotation is copied byte for
byte, and `trace.json` records what was received, dropped and cropped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from duplexeval.audio import fit_length, n_samples_for, to_pcm16, write_wav_pcm16
from duplexeval.fdb.protocols import SampleKey, SampleLike
from duplexeval.fdb.sample_trace import EXPORT_TRACE_KIND, TRACE_FILE, Trace, TraceHead, write_trace
from duplexeval.fdb.tree import OUTPUT_JSON, OUTPUT_WAV, SampleEntry
from duplexeval.fdb.tree_writer import copy_annotation
from duplexeval.plugins import call, json_value, returned
from duplexeval.systems.base import SampleInfo, System
from duplexeval.systems.net.trace import INPUT_PACING_LATE, SYSTEM_ERROR, WireTrace, load_trace, network_outcome
from duplexeval.systems.playout import placements_json, playout
from duplexeval.systems.registry import make_system, parse_system_spec
from duplexeval.systems.runner import (
    DEFAULT_CALL_TIMEOUT_S,
    MAX_SEND_LATENESS_S,
    ReceivedItem,
    SessionTrace,
    run_session_async,
)
from duplexeval.units import SAMPLE_RATE

PLAYOUT_POLICY = "fifo-from-receipt-crop-at-T-v1"


def resolve_system(system: System | str) -> System:
    """A System object as is, or build one from its `NAME[:k=v,...]` spec."""
    return make_system(system) if isinstance(system, str) else system


def system_label(system: System | str) -> str:
    """How errors name a system: its spec without parameters (`my.mod:Agent`), or an object's name."""
    if isinstance(system, str):
        return parse_system_spec(system)[0]
    name = getattr(system, "name", None)
    return name if isinstance(name, str) else type(system).__name__


def system_json(system: System, label: str | None = None) -> dict[str, Any]:
    """The system as the run record and manifest name it: name, parameters (plain JSON), version (a string)."""
    who = label or system_label(system)
    name = returned("system", who, "name", getattr(system, "name", None), str, "a string")
    params = returned("system", who, "params", call("system", who, "params", system.params), dict,
                      "a dict of its parameters")
    version = returned("system", who, "version", call("system", who, "version", system.version), str,
                       "a version string")
    return {"name": name, "params": json_value("system", who, "params", params), "version": version}


@dataclass
class PreparedSample:
    """One sample ready to run: its folder, input PCM (16 kHz int16, exactly T) and what the journal keeps."""

    sample: SampleLike
    sdir: Path
    T: float
    n: int
    pcm: npt.NDArray[np.int16]
    input_len: int


def prepare(sample: SampleLike, out: Path) -> PreparedSample:
    """The sample's folder (its old journal entry and transcript removed first) and its input at exactly T."""
    sdir = out / sample.subset / sample.id
    sdir.mkdir(parents=True, exist_ok=True)
    for stale in (TRACE_FILE, OUTPUT_JSON):  # the journal entry goes first, so a crash below leaves it to redo;
        if (sdir / stale).exists():  # a transcript of the old output.wav no longer describes the new one
            (sdir / stale).unlink()
    T = float(sample.T)
    n = n_samples_for(T)
    audio = np.asarray(sample.read_input_16k(), dtype=np.float32)
    return PreparedSample(sample, sdir, T, n, to_pcm16(fit_length(audio, n)), int(audio.shape[0]))


async def run_prepared(system: System, prep: PreparedSample, call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SessionTrace:
    """Run the session of one prepared sample, each call into the system bounded by `call_timeout_s` (a network
    system's `run_sample` may run it on another replica)."""
    info = SampleInfo(prep.sample.subset, prep.sample.id, prep.T, prep.n)
    run_sample = getattr(system, "run_sample", None)
    if run_sample is not None:
        trace: SessionTrace = await run_sample(prep.pcm, info, call_timeout_s)
        return trace
    return await run_session_async(system, prep.pcm, info, call_timeout_s=call_timeout_s)


def write_sample(head: TraceHead, sdir: Path, sample: SampleKey, items: list[ReceivedItem], reasons: list[str],
                 files: dict[str, str], error: str | None, error_at_s: float | None, input_json: dict[str, Any],
                 clock: str, network: dict[str, Any] | None, write_wav: bool) -> SampleEntry:
    """Play out `items`, write output.wav (unless `write_wav` is False) and the journal trace.json last."""
    T, n = head.T, head.n_samples
    pl = playout(items, n, T)
    wav = sdir / OUTPUT_WAV
    if write_wav:
        files = {OUTPUT_WAV: write_wav_pcm16(wav, pl.audio, SAMPLE_RATE), **files}
    elif wav.exists():
        wav.unlink()
    summary: dict[str, Any] = {"clock": clock, **pl.stats, "error": error}
    if network is not None:
        summary["network"] = {k: network[k] for k in ("reasons", "post_window_errors", "max_send_lateness_s")}
        for key in ("discarded", "replica"):  # (only in traces that have them, so older trees replay unchanged)
            if key in network:
                summary["network"][key] = network[key]
    entry = SampleEntry(sample.subset, sample.id, T, not reasons, sorted(set(reasons)), files, {"export": summary})
    details: dict[str, Any] = {
        "input": input_json,
        "playout_policy": PLAYOUT_POLICY,
        "items": placements_json(items, pl),
        "playout": pl.stats,
        "error": error,
        "error_at_s": error_at_s,
    }
    if network is not None:
        details["network"] = network
    write_trace(sdir, Trace(EXPORT_TRACE_KIND, head, entry, details))
    return entry


def finish_prepared(prep: PreparedSample, trace: SessionTrace, run_sha: str, input_sha: str) -> SampleEntry:
    """Write a sample's files from its session trace: in-process from the received items, network from the wire."""
    sample, sdir = prep.sample, prep.sdir
    files, reasons, ann_sha = copy_annotation(sample, sdir)
    head = TraceHead(run_sha, sample.subset, sample.id, prep.T, prep.n, input_sha, ann_sha, prep.input_len)
    wire: WireTrace | None = trace.wire
    input_json = trace.input_json()
    if wire is None:
        if trace.error is not None:
            reasons.append(SYSTEM_ERROR)
        if trace.max_send_lateness_s > MAX_SEND_LATENESS_S:
            reasons.append(INPUT_PACING_LATE)
        return write_sample(head, sdir, sample, trace.items, reasons, files, trace.error, trace.error_at_s,
                            input_json, trace.clock, None, trace.error is None)
    files.update(wire.write(sdir, prep.T))
    written = load_trace(sdir)  # decide from the files as written, so `fdb replay` reproduces it exactly
    stall_s = float(wire.settings.get("stall_s", 10.0))
    items, net_reasons, network, write_wav = network_outcome(written.records, written.pcm, prep.T, stall_s, trace.error)
    input_json["max_send_lateness_s"] = network["max_send_lateness_s"]
    return write_sample(head, sdir, sample, items, reasons + net_reasons, files, trace.error, trace.error_at_s,
                        input_json, trace.clock, network, write_wav)


def export_one(system: System, sample: SampleLike, out: Path, run_sha: str, input_sha: str,
               call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SampleEntry:
    """Prepare, run and write one sample (its own event loop)."""
    prep = prepare(sample, out)
    trace = asyncio.run(run_prepared(system, prep, call_timeout_s))
    return finish_prepared(prep, trace, run_sha, input_sha)
