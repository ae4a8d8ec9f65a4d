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
from typing import Any

import numpy as np

from duplexeval.artifacts import header
from duplexeval.errors import InputError
from duplexeval.jsonio import atomic_write_bytes, atomic_write_text, dumps_line, json_lines, read_text
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


class WireTrace:
    """Records of one session on a monotonic clock; times become input-timeline seconds once input starts."""

    def __init__(self, protocol: str, settings: dict[str, Any]) -> None:
        self.protocol = protocol
        self.settings = dict(settings)
        self.records: list[dict[str, Any]] = []
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
            for key in ("t", "t_done"):
                if key in rec:
                    rec[key] = rec[key] - shift

    # -- recording
    def meta(self, event: str, t: float | None = None, **fields: Any) -> dict[str, Any]:
        rec = {"dir": "meta", "t": self.now() if t is None else t, "event": event, **fields}
        self.records.append(rec)
        return rec

    def recv(self, t: float, kind: str, nbytes: int, **fields: Any) -> dict[str, Any]:
        rec = {"dir": "recv", "t": t, "type": kind, "bytes": int(nbytes), **fields}
        self.records.append(rec)
        return rec

    def send(self, t: float, kind: str, nbytes: int, **fields: Any) -> dict[str, Any]:
        rec = {"dir": "send", "t": t, "type": kind, "bytes": int(nbytes), **fields}
        self.records.append(rec)
        return rec

    def add_audio(self, rec: dict[str, Any], pcm16: bytes, rate: int) -> None:
        """Attach received output audio to `rec`: PCM16 goes to the sidecar, the record keeps where."""
        rec["audio"] = [len(self._pcm), len(pcm16), int(rate)]
        self._pcm.extend(pcm16)

    # -- files
    def header(self, T: float, pcm_name: str = TRACE_PCM) -> dict[str, Any]:
        return {**header(TRACE_KIND, TRACE_SCHEMA), "protocol": self.protocol, "T": _r6(T),
                "settings": self.settings, "pcm": pcm_name}

    def lines(self, T: float, pcm_name: str = TRACE_PCM) -> str:
        out = [dumps_line(self.header(T, pcm_name))]
        for rec in self.records:
            row = dict(rec)
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


@dataclass
class LoadedTrace:
    """A trace read back from disk: the header, the records (as written) and the sidecar bytes."""

    head: dict[str, Any]
    records: list[dict[str, Any]]
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
    return LoadedTrace(rows[0], rows[1:], pcm)


MAX_TRACE_S = 86_400.0  # a time in a trace beyond a day is a broken file
MAX_AUDIO_RATE = 768_000
TIME_KEYS = ("t", "t_done", "slot_s")


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ---------------------------------------------------------------- pure: records -> items, verdict


def received_items(records: list[dict[str, Any]], pcm: bytes) -> list[ReceivedItem]:
    """The output the client received, in receipt order: audio chunks and clear_queue events at receipt time."""
    items: list[ReceivedItem] = []
    for rec in records:
        if rec.get("dir") != "recv":
            continue
        t = float(rec["t"])
        if rec.get("control") == CLEAR_QUEUE:
            items.append(ReceivedItem(CLEAR_QUEUE, t, t, detail={"type": rec.get("type")}))
        aud = rec.get("audio")
        if aud is not None:
            off, nbytes, rate = int(aud[0]), int(aud[1]), int(aud[2])
            arr = np.frombuffer(pcm[off : off + nbytes], dtype="<i2").astype(np.int16)
            play = max(t, float(rec.get("play_t", t)))  # a media-clock stream (webrtc) plays a chunk at its play_t
            items.append(ReceivedItem("audio", t, play, rate, arr))
    return items


@dataclass
class Verdict:
    """The session-level eligibility reasons plus the numbers behind them."""

    reasons: list[str]
    post_window_errors: int = 0
    max_send_lateness_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"reasons": self.reasons, "post_window_errors": self.post_window_errors,
                "max_send_lateness_s": _r6(self.max_send_lateness_s), **self.detail}


def _stalled(records: list[dict[str, Any]], T: float, stall_s: float) -> float | None:
    """The start of the first gap > stall_s between received messages while a reply was owed, before T.

    Only the open connection counts: the scan stops at the first `closed` record.
    """
    if not records:
        return None
    closes = [float(r["t"]) for r in records if r["dir"] == "meta" and r.get("event") == "closed"]
    stop = min(closes) if closes else max(float(r["t"]) for r in records)
    owed: dict[str, float] = {}
    last_msg = -math.inf
    for rec in sorted(records, key=lambda r: float(r["t"])):
        t = float(rec["t"])
        if t > stop:
            break
        if owed:
            since = max(last_msg, min(owed.values()))
            if t - since > stall_s and since <= T:
                return since
        if rec["dir"] == "recv":
            last_msg = t
        elif rec["dir"] == "meta" and rec.get("event") == "owe":
            owed.setdefault(str(rec.get("what")), t)
        elif rec["dir"] == "meta" and rec.get("event") == "paid":
            owed.pop(str(rec.get("what")), None)
    if owed:
        since = max(last_msg, min(owed.values()))
        if stop - since > stall_s and since <= T:
            return since
    return None


def verdict(records: list[dict[str, Any]], T: float, stall_s: float) -> Verdict:
    """Eligibility of one network session from its records alone (live export and replay both call this)."""
    reasons: set[str] = set()
    detail: dict[str, Any] = {}
    if not any(r["dir"] == "meta" and r.get("event") == "opened" for r in records):
        reasons.add(CONNECT_FAILED)
    post = 0
    lateness = 0.0
    for rec in records:
        t = float(rec["t"])
        d = rec["dir"]
        if d == "recv" and rec.get("discarded"):  # skipped as the protocol says (moshi: unknown kinds, metadata)
            counts = detail.setdefault("discarded", {})
            counts[str(rec.get("type"))] = counts.get(str(rec.get("type")), 0) + 1
        if d == "recv" and (rec.get("error") or rec.get("violation")):
            if t > T:
                post += 1
            else:
                reasons.add(SERVER_ERROR if rec.get("error") else PROTOCOL_VIOLATION)
                detail.setdefault("first_problem", {"t": _r6(t), "type": rec.get("type"),
                                                    "what": rec.get("violation") or rec.get("message")})
        elif d == "send" and "slot_s" in rec:
            lateness = max(lateness, t - float(rec["slot_s"]))
        elif d == "meta":
            ev = rec.get("event")
            if ev == "replica":  # which replica the session ran on (replicas.py); no bearing on eligibility
                detail["replica"] = {k: rec.get(k) for k in ("replica", "url", "attempt", "queued_s")}
            elif ev == "replica_retry":
                detail["replica_retries"] = detail.get("replica_retries", 0) + 1
            elif ev == "violation":
                if t > T:
                    post += 1
                else:
                    reasons.add(PROTOCOL_VIOLATION)
                    detail.setdefault("first_problem", {"t": _r6(t), "type": None, "what": rec.get("what")})
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
                    detail.setdefault("first_problem", {"t": _r6(t), "type": "accounting", "what": rec["problems"][0]})
    stall = _stalled(records, T, stall_s)
    if stall is not None:
        reasons.add(TIMEOUT)
        detail["stalled_from_s"] = _r6(stall)
    if lateness > MAX_SEND_LATENESS_S:
        reasons.add(INPUT_PACING_LATE)
    return Verdict(sorted(reasons), post, lateness, detail)


def how_it_ended(records: list[dict[str, Any]]) -> str | None:
    """A few words on how a session failed without an error or a violation: the server's close (during the
    handshake or not), the last failed connect attempt, the handshake wait that ran out, or a bot that sent
    nothing within `reply_within_s` (telephony)."""
    opened = any(r.get("event") == "opened" for r in records)
    started = any(r.get("dir") == "send" and "slot_s" in r for r in records)  # input slot 0 was reached
    for rec in reversed(records):
        ev = rec.get("event")
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


def send_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-packet send lateness (start - slot) and duration (completion - start), summarized."""
    late = [float(r["t"]) - float(r["slot_s"]) for r in records if r["dir"] == "send" and "slot_s" in r]
    dur = [float(r["t_done"]) - float(r["t"]) for r in records if r["dir"] == "send" and "t_done" in r]
    if not late:
        return {"packets": 0}
    arr = np.asarray(late)
    return {"packets": len(late), "lateness_p50_s": _r6(float(np.quantile(arr, 0.5))),
            "lateness_max_s": _r6(float(arr.max())), "send_duration_max_s": _r6(max(dur) if dur else 0.0)}


def network_outcome(records: list[dict[str, Any]], pcm: bytes, T: float, stall_s: float,
                    error: str | None) -> tuple[list[ReceivedItem], list[str], dict[str, Any], bool]:
    """(items, session reasons, network summary, write_wav) from a wire trace: the one rule export and replay share."""
    v = verdict(records, T, stall_s)
    reasons = list(v.reasons)
    if error is not None and not any(r in SESSION_REASONS for r in reasons):
        reasons.append(SYSTEM_ERROR)  # the adapter itself broke, not the network
    failed = any(r in SESSION_REASONS or r == SYSTEM_ERROR for r in reasons)
    summary = {**v.to_json(), "reasons": sorted(reasons), "send": send_stats(records)}
    return received_items(records, pcm), reasons, summary, not failed
