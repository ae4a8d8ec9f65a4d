"""One sample of `fdb export`: prepare its input, run the session, play the output out and write the sample's files
with `trace.json` last. `fdb replay` rebuilds a network sample through the same `systems.net.trace.network_outcome` and
`write_sample`, so a replay reproduces the export byte for byte.

Per sample: the input is fed as 80 ms frames on the virtual clock, the received output is played out FIFO from
receipt time (gaps silent, cropped at T, exactly round(T * 16000) samples), the annotation is copied byte for
byte, and `trace.json` records what was received, dropped and cropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from duplexeval.audio import (
    audio_info,
    fit_length,
    n_samples_for,
    read_audio_16k,
    to_pcm16,
    write_wav_pcm16,
)
from duplexeval.fdb.protocols import SampleKey, SampleLike
from duplexeval.fdb.sample_trace import EXPORT_TRACE_KIND, TRACE_FILE, Trace, TraceHead, write_trace
from duplexeval.fdb.tasks import ASR, Session, task_of
from duplexeval.fdb.tree import OUTPUT_JSON, OUTPUT_WAV, SampleEntry
from duplexeval.fdb.tree_writer import SystemRecord, copy_annotation, copy_inputs, source_path
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import call, json_value, returned
from duplexeval.systems.base import SampleInfo, System
from duplexeval.systems.net.trace import INPUT_PACING_LATE, SYSTEM_ERROR, WireTrace, load_trace, network_outcome
from duplexeval.systems.playout import PlayoutStats, placements_json, playout
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


def system_json(system: System, label: str | None = None) -> SystemRecord:
    """The system as the run record and manifest name it: name, parameters (plain JSON), version (a string)."""
    who = label or system_label(system)
    name = returned("system", who, "name", getattr(system, "name", None), str, "a string")
    params = returned("system", who, "params", call("system", who, "params", system.params), dict,
                      "a dict of its parameters")
    version = returned("system", who, "version", call("system", who, "version", system.version), str,
                       "a version string")
    return SystemRecord(name, json_value("system", who, "params", params), version)


@dataclass
class PreparedSession:
    """A further session of one sample (its task's `SampleLayout.sessions()` after the first): its input at exactly
    its own length (16 kHz int16) and that input's hash."""

    session: Session
    T: float
    n: int
    pcm: npt.NDArray[np.int16]
    input_len: int
    input_sha256: str


@dataclass
class PreparedSample:
    """One sample ready to run: its folder, input PCM (16 kHz int16, exactly T), what the journal keeps, and its
    further sessions (none for a one-output task)."""

    sample: SampleLike
    sdir: Path
    T: float
    n: int
    pcm: npt.NDArray[np.int16]
    input_len: int
    more: tuple[PreparedSession, ...] = ()


def _prepare_session(sample: SampleLike, session: Session) -> PreparedSession:
    path = source_path(sample, session.source)
    frames, sr = audio_info(path)
    T = frames / sr
    n = n_samples_for(T)
    audio = np.asarray(read_audio_16k(path), dtype=np.float32)
    return PreparedSession(session, T, n, to_pcm16(fit_length(audio, n)), int(audio.shape[0]), sha256_file(path))


def prepare(sample: SampleLike, out: Path) -> PreparedSample:
    """The sample's folder (its old journal entry and transcripts removed first) and its inputs at exactly T."""
    sdir = out / sample.subset / sample.id
    sdir.mkdir(parents=True, exist_ok=True)
    layout = task_of(sample.subset).layout
    stale = dict.fromkeys((TRACE_FILE, OUTPUT_JSON, *layout.names(ASR)))
    for name in stale:  # the journal entry goes first, so a crash below leaves it to redo;
        if (sdir / name).exists():  # a transcript of an old output no longer describes the new one
            (sdir / name).unlink()
    T = float(sample.T)
    n = n_samples_for(T)
    audio = np.asarray(sample.read_input_16k(), dtype=np.float32)
    more = tuple(_prepare_session(sample, s) for s in layout.sessions()[1:])
    return PreparedSample(sample, sdir, T, n, to_pcm16(fit_length(audio, n)), int(audio.shape[0]), more)


async def _run(system: System, pcm: npt.NDArray[np.int16], info: SampleInfo, call_timeout_s: float) -> SessionTrace:
    run_sample = getattr(system, "run_sample", None)
    if run_sample is not None:
        trace: SessionTrace = await run_sample(pcm, info, call_timeout_s)
        return trace
    return await run_session_async(system, pcm, info, call_timeout_s=call_timeout_s)


async def run_prepared(system: System, prep: PreparedSample,
                       call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SessionTrace:
    """Run the session of one prepared sample, each call into the system bounded by `call_timeout_s` (a network
    system's `run_sample` may run it on another replica)."""
    return await _run(system, prep.pcm, SampleInfo(prep.sample.subset, prep.sample.id, prep.T, prep.n), call_timeout_s)


async def run_sessions(system: System, prep: PreparedSample,
                       call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> list[SessionTrace]:
    """Every session of one prepared sample, one after another (each a session of its own), the first first."""
    traces = [await run_prepared(system, prep, call_timeout_s)]
    for m in prep.more:
        traces.append(
            await _run(system, m.pcm, SampleInfo(prep.sample.subset, prep.sample.id, m.T, m.n), call_timeout_s))
    return traces


def _network_summary(network: JsonObject) -> JsonObject:
    out = {k: network[k] for k in ("reasons", "post_window_errors", "max_send_lateness_s")}
    for key in ("discarded", "replica"):  # (only in traces that have them, so older trees replay unchanged)
        if key in network:
            out[key] = network[key]
    return out


@dataclass(frozen=True)
class SessionSummary:
    """A further session in the sample's manifest entry (`export.sessions[output]`): its source and length, clock,
    playout counts, error and reasons, and the network summary of a network system's session."""

    source: str
    T: float
    clock: str
    playout: PlayoutStats
    error: str | None
    reasons: list[str]
    network: JsonObject | None = None  # systems.net.trace.network_outcome's summary

    def to_json(self) -> JsonObject:
        out: JsonObject = {"source": self.source, "T": self.T, "clock": self.clock, **self.playout.to_json(),
                           "error": self.error, "reasons": sorted(set(self.reasons))}
        if self.network is not None:
            out["network"] = _network_summary(self.network)
        return out


@dataclass(frozen=True)
class SessionDetails:
    """A further session in trace.json (`sessions[output]`): its input (length, hashes, how it was sent), the items
    received and where each was played, the playout counts, the error and the network summary."""

    source: str
    T: float
    n_samples: int
    input_sha256: str
    input_samples_16k: int
    input: JsonObject  # systems.runner's input record (and the wire's send lateness), as written
    items: list[JsonObject]  # systems.playout.placements_json
    playout: PlayoutStats
    error: str | None
    error_at_s: float | None
    network: JsonObject | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"source": self.source, "T": self.T, "n_samples": self.n_samples,
                           "input_sha256": self.input_sha256, "input_samples_16k": self.input_samples_16k,
                           "input": self.input, "items": self.items, "playout": self.playout.to_json(),
                           "error": self.error, "error_at_s": self.error_at_s}
        if self.network is not None:
            out["network"] = self.network
        return out


@dataclass(frozen=True)
class SessionWritten:
    """A further session after `further_session`: the files it wrote, its manifest summary and trace details."""

    files: dict[str, str]
    summary: SessionSummary
    details: SessionDetails


@dataclass(frozen=True)
class ExportSummary:
    """The `export` block of a sample's manifest entry: clock, playout counts, error, the network summary and each
    further session's summary."""

    clock: str
    playout: PlayoutStats
    error: str | None
    network: JsonObject | None
    sessions: Mapping[str, SessionSummary]

    def to_json(self) -> JsonObject:
        out: JsonObject = {"clock": self.clock, **self.playout.to_json(), "error": self.error}
        if self.network is not None:
            out["network"] = _network_summary(self.network)
        if self.sessions:
            out["sessions"] = {name: s.to_json() for name, s in self.sessions.items()}
        return out


@dataclass(frozen=True)
class ExportDetails:
    """An export trace.json's details between its head and result: the input record, the playout policy, the items
    received and placed, the playout counts, the error, the wire's network record and each further session's."""

    input: JsonObject
    items: list[JsonObject]
    playout: PlayoutStats
    error: str | None
    error_at_s: float | None
    network: JsonObject | None
    sessions: Mapping[str, SessionDetails]
    playout_policy: str = PLAYOUT_POLICY

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "input": self.input,
            "playout_policy": self.playout_policy,
            "items": self.items,
            "playout": self.playout.to_json(),
            "error": self.error,
            "error_at_s": self.error_at_s,
        }
        if self.network is not None:
            out["network"] = self.network
        if self.sessions:
            out["sessions"] = {name: d.to_json() for name, d in self.sessions.items()}
        return out


def write_sample(head: TraceHead, sdir: Path, sample: SampleKey, items: list[ReceivedItem], reasons: list[str],
                 files: dict[str, str], error: str | None, error_at_s: float | None, input_json: JsonObject,
                 clock: str, network: JsonObject | None, write_wav: bool,
                 more: Mapping[str, SessionWritten] | None = None) -> SampleEntry:
    """Play out `items`, write output.wav (unless `write_wav` is False) and the journal trace.json last; `more` holds
    each further session as written (its output already on disk)."""
    T, n = head.T, head.n_samples
    pl = playout(items, n, T)
    wav = sdir / OUTPUT_WAV
    if write_wav:
        files = {OUTPUT_WAV: write_wav_pcm16(wav, pl.audio, SAMPLE_RATE), **files}
    elif wav.exists():
        wav.unlink()
    more = more or {}
    summary = ExportSummary(clock, pl.stats, error, network, {name: m.summary for name, m in more.items()})
    entry = SampleEntry(sample.subset, sample.id, T, not reasons, sorted(set(reasons)), files,
                        {"export": summary.to_json()})
    details = ExportDetails(input_json, placements_json(items, pl), pl.stats, error, error_at_s, network,
                            {name: m.details for name, m in more.items()})
    write_trace(sdir, Trace(EXPORT_TRACE_KIND, head, entry, details.to_json()))
    return entry


def _session_outcome(trace: SessionTrace, sdir: Path, T: float,
                     prefix: str) -> tuple[
                         list[ReceivedItem], list[str], JsonObject, JsonObject | None, bool, dict[str, str]]:
    """(items, reasons, input record, network summary, write_wav, wire files) of one session: in-process from the
    received items, network from the wire trace as written (so `fdb replay` reproduces it exactly)."""
    wire: WireTrace | None = trace.wire
    input_json = trace.input_json()
    if wire is None:
        reasons = []
        if trace.error is not None:
            reasons.append(SYSTEM_ERROR)
        if trace.max_send_lateness_s > MAX_SEND_LATENESS_S:
            reasons.append(INPUT_PACING_LATE)
        return trace.items, reasons, input_json, None, trace.error is None, {}
    files = wire.write(sdir, T, prefix)
    written = load_trace(sdir, prefix)
    out = network_outcome(written.records, written.pcm, T, float(wire.settings.stall_s), trace.error)
    input_json["max_send_lateness_s"] = out.summary.max_send_lateness_s
    return out.items, out.reasons, input_json, out.summary.to_json(), out.write_wav, files


def further_session(sdir: Path, session: Session, T: float, n: int, input_sha256: str, input_len: int,
                    items: list[ReceivedItem], reasons: list[str], input_json: JsonObject,
                    network: JsonObject | None, write_wav: bool, files: dict[str, str], clock: str,
                    error: str | None, error_at_s: float | None) -> SessionWritten:
    """Play out a further session's items into `sdir/<output>` (unless `write_wav` is False); returns its files,
    manifest summary and trace details. Export and replay share it, so a replay reproduces the export byte for
    byte."""
    pl = playout(items, n, T)
    wav = sdir / session.output
    if write_wav:
        files = {session.output: write_wav_pcm16(wav, pl.audio, SAMPLE_RATE), **files}
    elif wav.exists():
        wav.unlink()
    summary = SessionSummary(session.source, T, clock, pl.stats, error, list(reasons), network)
    details = SessionDetails(session.source, T, n, input_sha256, input_len, input_json, placements_json(items, pl),
                             pl.stats, error, error_at_s, network)
    return SessionWritten(files, summary, details)


def _finish_further(m: PreparedSession, trace: SessionTrace, sdir: Path) -> tuple[SessionWritten, list[str]]:
    """Write a further session's output (and wire trace); returns it as written and its reasons."""
    items, reasons, input_json, network, write_wav, files = _session_outcome(trace, sdir, m.T, m.session.prefix)
    written = further_session(sdir, m.session, m.T, m.n, m.input_sha256, m.input_len, items, reasons, input_json,
                              network, write_wav, files, trace.clock, trace.error, trace.error_at_s)
    return written, reasons


def finish_prepared(prep: PreparedSample, trace: SessionTrace | Sequence[SessionTrace], run_sha: str,
                    input_sha: str) -> SampleEntry:
    """Write a sample's files from its session traces (the first session's, then each further one's): in-process
    from the received items, network from the wire. The sample is eligible only when every session is."""
    traces = [trace] if isinstance(trace, SessionTrace) else list(trace)
    if len(traces) != 1 + len(prep.more):
        raise ValueError(f"sample {prep.sample.subset}/{prep.sample.id}: {len(traces)} session traces for "
                         f"{1 + len(prep.more)} sessions")
    sample, sdir = prep.sample, prep.sdir
    files, reasons, ann_sha = copy_annotation(sample, sdir)
    copied, missing = copy_inputs(sample, sdir)
    files.update(copied)
    reasons += missing
    more: dict[str, SessionWritten] = {}
    for m, t in zip(prep.more, traces[1:]):
        written, m_reasons = _finish_further(m, t, sdir)
        files.update(written.files)
        reasons += m_reasons
        more[m.session.output] = written
    head = TraceHead(run_sha, sample.subset, sample.id, prep.T, prep.n, input_sha, ann_sha, prep.input_len)
    first = traces[0]
    items, first_reasons, input_json, network, write_wav, wire_files = _session_outcome(first, sdir, prep.T, "")
    files.update(wire_files)
    return write_sample(head, sdir, sample, items, reasons + first_reasons, files, first.error, first.error_at_s,
                        input_json, first.clock, network, write_wav, more or None)


def export_one(system: System, sample: SampleLike, out: Path, run_sha: str, input_sha: str,
               call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> SampleEntry:
    """Prepare, run and write one sample (its own event loop)."""
    prep = prepare(sample, out)
    traces = asyncio.run(run_sessions(system, prep, call_timeout_s))
    return finish_prepared(prep, traces, run_sha, input_sha)
