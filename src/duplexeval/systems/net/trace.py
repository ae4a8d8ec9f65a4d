"""The wire trace of one network session, and the pure functions that turn it into a verdict and a playout.

Contract (shared by every protocol adapter):

- A session keeps `WireTrace.records` in memory and the export writes them as
  `<subset>/<id>/trace.jsonl` (a header line, then one record per line) plus the received audio as
  raw PCM16 in `<subset>/<id>/trace.pcm` (records point into it with `audio: [offset, nbytes, rate]`;
  base64 is never kept in JSON). A sample with further sessions (FDB v1.5 plays `clean_input.wav` too) writes
  each further session's pair with its prefix: `clean_trace.jsonl` + `clean_trace.pcm` (the header's `pcm`).
- Every record has `dir` (`send` | `recv` | `meta`), `t` (seconds on the input timeline: 0 is the
  first input packet's slot; connect attempts are negative) and for messages `type` and `bytes`
  (wire size). Audio sends add `seq`, `slot_s` and `t_done`. A received message the adapter turned
  into output adds `audio` and/or `control` (`clear_queue`), and, for a stream played on its media clock
  (webrtc), `play_t` (when the client plays that audio: never before its receipt); an error event adds `error: true`; a
  message that broke the protocol adds `violation`; one the protocol says to skip (moshi: an unknown
  kind, metadata, a text frame) adds `discarded` (why), counted per type in the verdict's `discarded`. Meta events:
  `connect_attempt`, `opened`,
  `owe` / `paid` (a reply the client is owed, for `timeout`), `closed`, `send_timeout`,
  `session_bound`, `input_end`; `replica` (first: which replica of `url` the session ran on, the
  attempt, `queued_s` waiting for a slot) and `replica_retry` (an earlier attempt of the sample on a
  replica that failed: its reasons; see replicas.py). Neither bears on eligibility. Telephony adds
  `no_reply` (nothing from the bot within `reply_within_s`: a `timeout`); pipecat-ws and webrtc
  `handshake_timeout` (no `bot-ready`); webrtc `jitter_buffer` (the receive buffer's settings and holds).
  docs/network.md lists the fields each protocol adds to its received records.
- `verdict(records, T, stall_s)` and `received_items(records, pcm)` are pure: the live export and
  `duplexeval fdb replay` call the same two functions (through `network_outcome`), so a replay is byte-identical by
  construction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

import numpy as np

from duplexeval.artifacts import header
from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_bytes, atomic_write_text, dumps_line, json_lines, read_text
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.base import CLEAR_QUEUE
from duplexeval.systems.runner import MAX_SEND_LATENESS_S, ReceivedItem

TRACE_JSONL = "trace.jsonl"
TRACE_PCM = "trace.pcm"
TRACE_KIND = "duplexeval.net.trace"
TRACE_SCHEMA = 1

# Eligibility reasons of a network session (docs/network.md lists them).
CONNECT_FAILED = "connect_failed"
SERVER_ERROR = "server_error"
DISCONNECTED = "disconnected"
PROTOCOL_VIOLATION = "protocol_violation"
TIMEOUT = "timeout"
INPUT_PACING_LATE = "input_pacing_late"
SESSION_REASONS = (CONNECT_FAILED, SERVER_ERROR, DISCONNECTED, PROTOCOL_VIOLATION, TIMEOUT)
SYSTEM_ERROR = "system_error"  # the adapter (or an in-process system) itself broke, not the network
NET_REASONS = (*SESSION_REASONS, INPUT_PACING_LATE)


def _r6(x: float) -> float:
    return round(float(x), 6)


Direction = Literal["send", "recv", "meta"]
DIRECTIONS: tuple[Direction, ...] = ("send", "recv", "meta")
V = TypeVar("V")


class _Field(Generic[V]):
    """A contract field of a trace record (`audio`, `control`, `t_done`, ...): read and set by name, stored with the
    protocol's own fields so the line keeps the order the session set them in."""

    def __init__(self) -> None:
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, rec: None, owner: type) -> _Field[V]: ...
    @overload
    def __get__(self, rec: TraceRecord, owner: type) -> V | None: ...
    def __get__(self, rec: TraceRecord | None, owner: type) -> _Field[V] | V | None:
        if rec is None:
            return self
        value: V | None = rec.fields.get(self.key)
        return value

    def __set__(self, rec: TraceRecord, value: V | None) -> None:
        rec.fields[self.key] = value


class TraceRecord:
    """One line of a wire trace: its direction, time, type (a message) or event (a meta record), wire size, and the
    further fields in the order they were set. The contract's fields (module docstring) are typed attributes; what a
    protocol adds (docs/network.md) is `fields`, JSON as it is written."""

    __slots__ = ("dir", "t", "kind", "nbytes", "fields")

    # contract fields (stored in `fields`, see _Field)
    seq = _Field[int]()
    slot_s = _Field[float]()
    t_done = _Field[float]()
    failed = _Field[str]()
    audio = _Field[list[int]]()
    control = _Field[str]()
    play_t = _Field[float]()
    error = _Field[bool]()
    message = _Field[str]()
    violation = _Field[str]()
    discarded = _Field[str]()

    def __init__(self, dir: Direction, t: float, kind: str | None, nbytes: int | None = None,
                 fields: JsonObject | None = None) -> None:
        self.dir: Direction = dir
        self.t = t
        self.kind = kind  # `type` of a message, `event` of a meta record
        self.nbytes = nbytes
        self.fields: JsonObject = {} if fields is None else fields

    @property
    def event(self) -> str | None:
        """A meta record's event (None for a message)."""
        return self.kind if self.dir == "meta" else None

    @property
    def type(self) -> str | None:
        """A message's type (a meta record's `type` field: the message a `send_timeout` was about)."""
        if self.dir == "meta":
            kind = self.fields.get("type")
            return kind if isinstance(kind, str) else None
        return self.kind

    def get(self, key: str, default: Any = None) -> Any:
        """A further field as written (`default` when absent)."""
        return self.fields.get(key, default)

    def to_json(self) -> JsonObject:
        out: JsonObject = {"dir": self.dir, "t": self.t}
        if self.dir == "meta":
            if self.kind is not None:
                out["event"] = self.kind
        else:
            if self.kind is not None:
                out["type"] = self.kind
            if self.nbytes is not None:
                out["bytes"] = self.nbytes
        out.update(self.fields)
        return out

    @classmethod
    def from_json(cls, obj: JsonObject) -> TraceRecord:
        """A record as read (`load_trace` has checked `dir` and `t`)."""
        d: Direction = obj["dir"]
        name = "event" if d == "meta" else "type"
        kind = obj.get(name)
        nbytes = obj.get("bytes") if d != "meta" else None
        rest = {k: v for k, v in obj.items() if k not in ("dir", "t", name) and (d == "meta" or k != "bytes")}
        return cls(d, obj["t"], kind if isinstance(kind, str) else None,
                   nbytes if isinstance(nbytes, int) and not isinstance(nbytes, bool) else None, rest)


@dataclass(frozen=True)
class TraceSettings:
    """The session's bounds, as the trace header's `settings` records them (replay reads `stall_s` back)."""

    protocol: str
    stall_s: float
    drain_s: float
    session_extra_s: float
    max_size: int

    def to_json(self) -> JsonObject:
        return {"protocol": self.protocol, "stall_s": self.stall_s, "drain_s": self.drain_s,
                "session_extra_s": self.session_extra_s, "max_size": self.max_size}


class WireTrace:
    """Records of one session on a monotonic clock; times become input-timeline seconds once input starts."""

    def __init__(self, protocol: str, settings: TraceSettings) -> None:
        self.protocol = protocol
        self.settings = settings
        self.records: list[TraceRecord] = []
        self._pcm = bytearray()
        self.origin: float | None = None  # monotonic time of input slot 0
        self._created = time.monotonic()

    # -- clock
    def now(self) -> float:
        """Seconds on the input timeline (before input starts: negative offsets from the first connect)."""
        mono = time.monotonic()
        return mono - (self.origin if self.origin is not None else self._created)

    def mono_to_t(self, mono: float) -> float:
        return mono - (self.origin if self.origin is not None else self._created)

    def start_input(self, at_mono: float | None = None) -> None:
        """Input slot 0 is now (or at monotonic `at_mono`): shift every earlier record onto the input timeline."""
        self.origin = time.monotonic() if at_mono is None else float(at_mono)
        shift = self.origin - self._created
        for rec in self.records:
            rec.t = rec.t - shift
            if "t_done" in rec.fields:
                rec.fields["t_done"] = rec.fields["t_done"] - shift

    # -- recording
    def meta(self, event: str, t: float | None = None, **fields: Any) -> TraceRecord:
        rec = TraceRecord("meta", self.now() if t is None else t, event, None, fields)
        self.records.append(rec)
        return rec

    def recv(self, t: float, kind: str, nbytes: int, **fields: Any) -> TraceRecord:
        rec = TraceRecord("recv", t, kind, int(nbytes), fields)
        self.records.append(rec)
        return rec

    def send(self, t: float, kind: str, nbytes: int, **fields: Any) -> TraceRecord:
        rec = TraceRecord("send", t, kind, int(nbytes), fields)
        self.records.append(rec)
        return rec

    def add_audio(self, rec: TraceRecord, pcm16: bytes, rate: int) -> None:
        """Attach received output audio to `rec`: PCM16 goes to the sidecar, the record keeps where."""
        rec.audio = [len(self._pcm), len(pcm16), int(rate)]
        self._pcm.extend(pcm16)

    # -- files
    def header(self, T: float, pcm_name: str = TRACE_PCM) -> JsonObject:
        return {**header(TRACE_KIND, TRACE_SCHEMA), "protocol": self.protocol, "T": _r6(T),
                "settings": self.settings.to_json(), "pcm": pcm_name}

    def lines(self, T: float, pcm_name: str = TRACE_PCM) -> str:
        out = [dumps_line(self.header(T, pcm_name))]
        for rec in self.records:
            row = rec.to_json()
            for key in ("t", "t_done"):
                if key in row:
                    row[key] = _r6(row[key])
            out.append(dumps_line(row))
        return "".join(out)

    def pcm(self) -> bytes:
        return bytes(self._pcm)

    def write(self, folder: Path, T: float, prefix: str = "") -> dict[str, str]:
        """Write trace.jsonl and trace.pcm atomically (private files: they hold what the server sent, which may
        carry credentials the run does not know; known secrets are redacted); returns {name: sha256}. A sample's
        further session (`fdb.tasks.Session`) names its files with its `prefix` (`clean_trace.jsonl`)."""
        pcm_name, text_name = prefix + TRACE_PCM, prefix + TRACE_JSONL
        pcm_sha = atomic_write_bytes(folder / pcm_name, self.pcm(), private=True)
        text_sha = atomic_write_text(folder / text_name, self.lines(T, pcm_name), private=True)
        return {text_name: text_sha, pcm_name: pcm_sha}


@dataclass(frozen=True)
class LoadedTrace:
    """A trace read back from disk: the header (JSON as read), the records and the sidecar bytes."""

    head: JsonObject
    records: list[TraceRecord]
    pcm: bytes


def load_trace(folder: Path, prefix: str = "") -> LoadedTrace:
    """Read `trace.jsonl` + `trace.pcm` (a further session's: `prefix` + those); one-line InputError naming the file
    on any problem."""
    path = folder / (prefix + TRACE_JSONL)
    rows = [obj for _, obj in json_lines(read_text(path), path)]
    if not rows or not isinstance(rows[0], dict) or rows[0].get("kind") != TRACE_KIND:
        raise InputError(f"{path}: not a {TRACE_KIND} file")
    pcm_name = rows[0].get("pcm", TRACE_PCM)
    if not isinstance(pcm_name, str) or pcm_name in ("", ".", "..") or Path(pcm_name).name != pcm_name \
            or "\\" in pcm_name:
        # the header names its sidecar; only a plain file name beside the trace is read (a path could reach anywhere)
        raise InputError(f"{path}: line 1: audio sidecar name {str(pcm_name)[:80]!r} is not a plain file name "
                         "beside the trace")
    pcm_path = folder / pcm_name
    if not pcm_path.is_file():
        raise InputError(f"{pcm_path}: missing (the trace's audio sidecar)")
    pcm = pcm_path.read_bytes()
    if not _finite(rows[0].get("T")) or not 0 < rows[0]["T"] <= MAX_TRACE_S:
        raise InputError(f"{path}: line 1: T must be a number of seconds in (0, {MAX_TRACE_S:g}], got "
                         f"{rows[0].get('T')!r}")
    for i, rec in enumerate(rows[1:], 2):
        if not isinstance(rec, dict) or rec.get("dir") not in ("send", "recv", "meta") or not _finite(rec.get("t")):
            raise InputError(f"{path}: line {i}: not a trace record (needs dir send|recv|meta and a finite time t)")
        for key in TIME_KEYS:
            if key in rec and not (_finite(rec[key]) and abs(rec[key]) <= MAX_TRACE_S):
                raise InputError(f"{path}: line {i}: {key} must be a finite number of seconds, got {rec[key]!r}")
        if abs(rec["t"]) > MAX_TRACE_S:
            raise InputError(f"{path}: line {i}: t must be a finite number of seconds, got {rec['t']!r}")
        aud = rec.get("audio")
        if aud is None:
            continue
        if not (isinstance(aud, list) and len(aud) == 3
                and all(isinstance(v, int) and not isinstance(v, bool) for v in aud)):
            raise InputError(f"{path}: line {i}: audio reference {str(aud)[:80]} is not [offset, bytes, rate] integers")
        off, nbytes, rate = aud
        if off < 0 or nbytes < 0 or nbytes % 2 or off + nbytes > len(pcm):
            raise InputError(f"{path}: line {i}: audio reference {aud!r} is outside {pcm_path.name}")
        if not 1 <= rate <= MAX_AUDIO_RATE:
            raise InputError(f"{path}: line {i}: audio rate {rate} Hz is not in 1..{MAX_AUDIO_RATE}")
    return LoadedTrace(rows[0], [TraceRecord.from_json(rec) for rec in rows[1:]], pcm)


MAX_TRACE_S = 86_400.0  # a time in a trace beyond a day is a broken file
MAX_AUDIO_RATE = 768_000
TIME_KEYS = ("t", "t_done", "slot_s")


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ---------------------------------------------------------------- pure: records -> items, verdict


def received_items(records: list[TraceRecord], pcm: bytes) -> list[ReceivedItem]:
    """The output the client received, in receipt order: audio chunks and clear_queue events at receipt time."""
    items: list[ReceivedItem] = []
    for rec in records:
        if rec.dir != "recv":
            continue
        t = float(rec.t)
        if rec.control == CLEAR_QUEUE:
            items.append(ReceivedItem(CLEAR_QUEUE, t, t, detail={"type": rec.type}))
        aud = rec.audio
        if aud is not None:
            off, nbytes, rate = int(aud[0]), int(aud[1]), int(aud[2])
            arr = np.frombuffer(pcm[off : off + nbytes], dtype="<i2").astype(np.int16)
            play_t = rec.play_t
            play = max(t, float(t if play_t is None else play_t))  # a media-clock stream (webrtc) plays at its play_t
            items.append(ReceivedItem("audio", t, play, rate, arr))
    return items


@dataclass(frozen=True)
class Problem:
    """The first error or violation within the window: when, the message type (None for a meta record), what."""

    t: float
    type: str | None
    what: Any  # the record's text as written

    def to_json(self) -> JsonObject:
        return {"t": self.t, "type": self.type, "what": self.what}


@dataclass(frozen=True)
class ReplicaSeen:
    """Which replica the session ran on, as its `replica` record says (replicas.py)."""

    replica: Any
    url: Any
    attempt: Any
    queued_s: Any

    def to_json(self) -> JsonObject:
        return {"replica": self.replica, "url": self.url, "attempt": self.attempt, "queued_s": self.queued_s}


@dataclass(frozen=True)
class Verdict:
    """The session-level eligibility reasons plus the numbers behind them. The optional parts are written in the
    order the records first showed them (`order`), so the summary's bytes follow the trace."""

    reasons: list[str]
    post_window_errors: int = 0
    max_send_lateness_s: float = 0.0
    discarded: dict[str, int] = field(default_factory=dict)  # per type, messages skipped as the protocol says
    first_problem: Problem | None = None
    replica: ReplicaSeen | None = None
    replica_retries: int = 0
    stalled_from_s: float | None = None
    order: tuple[str, ...] = ()  # which of the optional parts above are present, in their first record's order

    def detail_json(self) -> JsonObject:
        parts: JsonObject = {"discarded": self.discarded, "first_problem": self.first_problem,
                             "replica": self.replica, "replica_retries": self.replica_retries,
                             "stalled_from_s": self.stalled_from_s}
        return {k: v.to_json() if isinstance(v, (Problem, ReplicaSeen)) else v for k in self.order
                if (v := parts[k]) is not None}

    def to_json(self) -> JsonObject:
        return {"reasons": self.reasons, "post_window_errors": self.post_window_errors,
                "max_send_lateness_s": _r6(self.max_send_lateness_s), **self.detail_json()}


def _stalled(records: list[TraceRecord], T: float, stall_s: float) -> float | None:
    """The start of the first gap > stall_s between received messages while a reply was owed, before T.

    Only the open connection counts: the scan stops at the first `closed` record.
    """
    if not records:
        return None
    closes = [float(r.t) for r in records if r.event == "closed"]
    stop = min(closes) if closes else max(float(r.t) for r in records)
    owed: dict[str, float] = {}
    last_msg = -math.inf
    for rec in sorted(records, key=lambda r: float(r.t)):
        t = float(rec.t)
        if t > stop:
            break
        if owed:
            since = max(last_msg, min(owed.values()))
            if t - since > stall_s and since <= T:
                return since
        if rec.dir == "recv":
            last_msg = t
        elif rec.event == "owe":
            owed.setdefault(str(rec.get("what")), t)
        elif rec.event == "paid":
            owed.pop(str(rec.get("what")), None)
    if owed:
        since = max(last_msg, min(owed.values()))
        if stop - since > stall_s and since <= T:
            return since
    return None


def verdict(records: list[TraceRecord], T: float, stall_s: float) -> Verdict:
    """Eligibility of one network session from its records alone (live export and replay both call this)."""
    reasons: set[str] = set()
    order: list[str] = []
    discarded: dict[str, int] = {}
    first_problem: Problem | None = None
    replica: ReplicaSeen | None = None
    retries = 0

    def seen(part: str) -> None:
        if part not in order:
            order.append(part)

    def problem(p: Problem) -> None:
        nonlocal first_problem
        seen("first_problem")
        if first_problem is None:
            first_problem = p

    if not any(r.event == "opened" for r in records):
        reasons.add(CONNECT_FAILED)
    post = 0
    lateness = 0.0
    for rec in records:
        t = float(rec.t)
        d = rec.dir
        if d == "recv" and rec.discarded:  # skipped as the protocol says (moshi: unknown kinds, metadata)
            seen("discarded")
            discarded[str(rec.type)] = discarded.get(str(rec.type), 0) + 1
        if d == "recv" and (rec.error or rec.violation):
            if t > T:
                post += 1
            else:
                reasons.add(SERVER_ERROR if rec.error else PROTOCOL_VIOLATION)
                problem(Problem(_r6(t), rec.type, rec.violation or rec.message))
        elif d == "send" and "slot_s" in rec.fields:
            lateness = max(lateness, t - float(rec.fields["slot_s"]))
        elif d == "meta":
            ev = rec.event
            if ev == "replica":  # which replica the session ran on (replicas.py); no bearing on eligibility
                seen("replica")
                replica = ReplicaSeen(rec.get("replica"), rec.get("url"), rec.get("attempt"), rec.get("queued_s"))
            elif ev == "replica_retry":
                seen("replica_retries")
                retries += 1
            elif ev == "violation":
                if t > T:
                    post += 1
                else:
                    reasons.add(PROTOCOL_VIOLATION)
                    problem(Problem(_r6(t), None, rec.get("what")))
            elif ev == "closed" and rec.get("by") != "client" and t <= T:
                reasons.add(DISCONNECTED)
            elif (ev in ("send_timeout", "no_reply") and t <= T) or ev in ("session_bound", "handshake_timeout"):
                # handshake_timeout: moshi, no handshake within handshake_timeout_s; no_reply: telephony reply_within_s
                reasons.add(TIMEOUT)
            elif ev == "accounting" and rec.get("checked"):  # native-duplex: append/unit/drain accounting
                if rec.get("drained") is None:
                    reasons.add(TIMEOUT)  # no `drained` within drain_s
                elif rec.get("problems"):
                    reasons.add(PROTOCOL_VIOLATION)
                    problem(Problem(_r6(t), "accounting", rec.fields["problems"][0]))
    stall = _stalled(records, T, stall_s)
    stalled_from = None
    if stall is not None:
        reasons.add(TIMEOUT)
        seen("stalled_from_s")
        stalled_from = _r6(stall)
    if lateness > MAX_SEND_LATENESS_S:
        reasons.add(INPUT_PACING_LATE)
    return Verdict(sorted(reasons), post, lateness, discarded, first_problem, replica, retries, stalled_from,
                   tuple(order))


def how_it_ended(records: list[TraceRecord]) -> str | None:
    """A few words on how a session failed without an error or a violation: the server's close (during the
    handshake or not), the last failed connect attempt, the handshake wait that ran out, or a bot that sent
    nothing within `reply_within_s` (telephony)."""
    opened = any(r.event == "opened" for r in records)
    started = any(r.dir == "send" and "slot_s" in r.fields for r in records)  # input slot 0 was reached
    for rec in reversed(records):
        ev = rec.event
        if ev == "closed" and rec.get("by") == "server":
            when = "" if started else " during the handshake"
            return f"closed by the server{when} (code {rec.get('code')})"
        if ev == "handshake_timeout":
            return f"no handshake within {rec.get('waited_s')} s"
        if ev == "no_reply":
            return f"nothing from the bot within {rec.get('within_s')} s of the first input (reply_within_s)"
        if ev == "connect_attempt" and rec.get("result") != "ok" and not opened:
            return f"connect attempt {rec.get('attempt')}: {rec.get('result')}"
    return None


@dataclass(frozen=True)
class SendStats:
    """Per-packet send lateness (start - slot) and duration (completion - start), summarized (None: no packet)."""

    packets: int
    lateness_p50_s: float | None = None
    lateness_max_s: float | None = None
    send_duration_max_s: float | None = None

    def to_json(self) -> JsonObject:
        if not self.packets:
            return {"packets": 0}
        return {"packets": self.packets, "lateness_p50_s": self.lateness_p50_s,
                "lateness_max_s": self.lateness_max_s, "send_duration_max_s": self.send_duration_max_s}


def send_stats(records: list[TraceRecord]) -> SendStats:
    """Per-packet send lateness (start - slot) and duration (completion - start), summarized."""
    late = [float(r.t) - float(r.fields["slot_s"]) for r in records if r.dir == "send" and "slot_s" in r.fields]
    dur = [float(r.fields["t_done"]) - float(r.t) for r in records if r.dir == "send" and "t_done" in r.fields]
    if not late:
        return SendStats(0)
    arr = np.asarray(late)
    return SendStats(len(late), _r6(float(np.quantile(arr, 0.5))), _r6(float(arr.max())),
                     _r6(max(dur) if dur else 0.0))


@dataclass(frozen=True)
class NetworkSummary:
    """What the export keeps about a network session (`network` in its trace.json): the verdict with the session's
    reasons (a `system_error` added when the adapter broke) and the send statistics."""

    verdict: Verdict
    reasons: list[str]
    send: SendStats

    @property
    def max_send_lateness_s(self) -> float:
        return _r6(self.verdict.max_send_lateness_s)

    def to_json(self) -> JsonObject:
        return {**self.verdict.to_json(), "reasons": sorted(self.reasons), "send": self.send.to_json()}


@dataclass(frozen=True)
class NetworkOutcome:
    """What a wire trace gives the export and the replay: the received items, the session's reasons, its summary,
    and whether output.wav is written (not when the session failed)."""

    items: list[ReceivedItem]
    reasons: list[str]
    summary: NetworkSummary
    write_wav: bool


def network_outcome(records: list[TraceRecord], pcm: bytes, T: float, stall_s: float,
                    error: str | None) -> NetworkOutcome:
    """The items, reasons, summary and write_wav of a wire trace: the one rule export and replay share."""
    v = verdict(records, T, stall_s)
    reasons = list(v.reasons)
    if error is not None and not any(r in SESSION_REASONS for r in reasons):
        reasons.append(SYSTEM_ERROR)  # the adapter itself broke, not the network
    failed = any(r in SESSION_REASONS or r == SYSTEM_ERROR for r in reasons)
    return NetworkOutcome(received_items(records, pcm), reasons, NetworkSummary(v, reasons, send_stats(records)),
                          not failed)
