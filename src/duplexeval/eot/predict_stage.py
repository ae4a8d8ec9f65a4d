"""Causal prediction (`duplexeval eot predict`): every grid time inside every silence span, the detector sees only the
turn's audio before that time and the words that ended by ``t - transcript_lag``.

Turns are independent work items mapped through ``duplexeval.executors`` (a process pool now, Ray later) by the
top-level ``predict_turn_task``; finished turns go to a journal next to the output, so an interrupted run resumes
where it stopped and gives the same bytes.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.artifacts import header
from duplexeval.eot.detectors import KIND, DetectorInfo, DetectorItem, DetectorPoint, build_detector, detector_info
from duplexeval.eot.predictions import PREDICTIONS_KIND, Predictions, read_predictions, write_predictions
from duplexeval.eot.spans import (
    GRID_STEP_S,
    TRANSCRIPT_LAG_S,
    SpanSet,
    SpanTurn,
    end_sample,
    grid_points,
    visible_messages,
)
from duplexeval.errors import InputError, RefusalError, clip
from duplexeval.executors import ExecutorSpec, ItemFailure, make_executor
from duplexeval.jsonio import append_text, check_output_file, dumps_line, sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import returned
from duplexeval.progress import progress_bar
from duplexeval.reruns import check_replace
from duplexeval.signature import Component, Signature
from duplexeval.units import SAMPLE_RATE

PREDICT_DEFINITIONS = "eot-predict-1"
JOURNAL_KIND = "duplexeval.eot.predict-journal"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class PredictSettings:
    """The causal grid: a score every ``step_s`` from each span's start; words visible ``transcript_lag_s`` late."""

    step_s: float = GRID_STEP_S
    transcript_lag_s: float = TRANSCRIPT_LAG_S
    batch_size: int = 16
    only_at: tuple[float, ...] = ()  # score only at these silences (s), e.g. (0.2,) for a score-point model

    def __post_init__(self) -> None:
        if any(not (math.isfinite(a) and a >= 0) for a in self.only_at):
            raise InputError(f"--only-at: silences must be finite and >= 0, got {list(self.only_at)}")
        if not (math.isfinite(self.step_s) and 0.01 <= self.step_s <= 10):
            raise InputError(f"--step must be between 0.01 and 10 s, got {self.step_s}")
        if not (math.isfinite(self.transcript_lag_s) and 0 <= self.transcript_lag_s <= 60):
            raise InputError(f"--transcript-lag must be between 0 and 60 s, got {self.transcript_lag_s}")
        if self.batch_size < 1:
            raise InputError(f"--batch-size must be at least 1, got {self.batch_size}")

    def to_json(self) -> JsonObject:
        out: JsonObject = {"inference_interval": self.step_s, "transcript_lag": self.transcript_lag_s}
        if self.only_at:
            out["only_at"] = list(self.only_at)
        return out


@dataclass(frozen=True)
class TurnTask:
    """One work item: a turn and how to score it (picklable; the detector is built once per worker process)."""

    detector: str
    options_json: str
    turn: SpanTurn
    settings: PredictSettings


_DETECTORS: dict[tuple[str, str], Any] = {}


def _detector(name: str, options_json: str) -> Any:
    key = (name, options_json)
    if key not in _DETECTORS:
        _DETECTORS[key] = build_detector(name, json.loads(options_json))
    return _DETECTORS[key]


Row = tuple[int, str, float, float, float | None]  # span_index, label, timestamp, silence_dur, p_eot
SCORES = (list, tuple, np.ndarray)  # what predict_batch / predict_turn may return


def predict_turn_task(task: TurnTask) -> list[Row]:
    """Scores of one turn at every grid time (top-level so any executor can run it)."""
    det = _detector(task.detector, task.options_json)
    turn, st = task.turn, task.settings
    pts = grid_points(turn, st.step_s)
    if not pts:
        return []
    # with only_at, every grid time still gets a row (span durations come from the rows, as in eot-bench), but
    # only the listed silences are scored; the others are null ("no score at this time")
    ask = [k for k, p in enumerate(pts) if not st.only_at or any(abs(p.silence_dur - a) <= 1e-6 for a in st.only_at)]
    meta: list[DetectorPoint] = [
        {"language": turn.language, "timestamp": pts[k].timestamp, "silence_dur": pts[k].silence_dur,
         "span_index": pts[k].span_index, "messages": visible_messages(turn, pts[k].timestamp, st.transcript_lag_s)}
        for k in ask]  # fmt: skip
    got: list[Any] = []
    name = task.detector
    if not meta:
        pass
    elif hasattr(det, "predict_turn"):
        upto = turn.audio[: end_sample(meta[-1]["timestamp"])]
        got = list(returned(KIND, name, "predict_turn", det.predict_turn(upto, SAMPLE_RATE, meta), SCORES,
                            "a list of scores"))
    else:
        for g in range(0, len(meta), st.batch_size):
            items: list[DetectorItem] = [
                {"language": m["language"], "timestamp": m["timestamp"], "silence_dur": m["silence_dur"],
                 "span_index": m["span_index"], "messages": m["messages"],
                 "audio": {"array": turn.audio[: end_sample(m["timestamp"])].copy(), "sampling_rate": SAMPLE_RATE}}
                for m in meta[g : g + st.batch_size]]  # fmt: skip
            got.extend(returned(KIND, name, "predict_batch", det.predict_batch(items), SCORES, "a list of scores"))
    if len(got) != len(meta):
        raise InputError(f"detector {task.detector!r} returned {len(got)} scores for {len(meta)} times in "
                         f"turn {turn.id!r}")
    scores: list[Any] = [None] * len(pts)
    for k, v in zip(ask, got):
        scores[k] = v
    rows: list[Row] = []
    for p, s in zip(pts, scores):
        if s is not None:
            if (isinstance(s, bool) or not isinstance(s, (int, float, np.floating, np.integer))
                or not 0.0 <= float(s) <= 1.0):
                raise InputError(f"detector {task.detector!r} returned {clip(repr(s), 60)} for turn {turn.id!r} at "
                                 f"{p.timestamp} s (need a probability in [0, 1] or None)")
            s = float(s)
        rows.append((p.span_index, p.label, p.timestamp, p.silence_dur, s))
    return rows


@dataclass
class PredictRun:
    """What a finished run produced: the predictions, its signature, and timing."""

    predictions: Predictions
    signature: Signature
    n_turns: int
    n_predictions: int
    elapsed_s: float
    resumed_turns: int = 0
    files: list[Path] = field(default_factory=list)
    up_to_date: bool = False  # the predictions file was this run's already: nothing was computed

    @property
    def n_scored(self) -> int:
        """Rows with a score (``--only-at`` leaves the other grid times null)."""
        return int((~np.isnan(self.predictions.p_eot)).sum())


def predict_signature(spans: SpanSet, detector: str, info: DetectorInfo, settings: PredictSettings,
                      options: Mapping[str, Any] | None = None) -> Signature:
    """Span-set hash, detector (version, model hash, settings; the options it was built with, stored in full) and the
    grid."""
    return Signature(
        PREDICT_DEFINITIONS,
        (
            Component("spans", spans.source, spans.sha256(), {}),
            Component("det", f"{detector}:{info.value}".rstrip(":"), info.hash, dict(info.settings),
                      {"options": dict(options)} if options else {}),
            Component("grid", "", None, {"step": settings.step_s, "lag": settings.transcript_lag_s,
                                         **({"at": ",".join(f"{a:g}" for a in settings.only_at)} if settings.only_at
                                            else {})}),
        ),
        {"spans": spans.sha256()},
    )


def _journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".journal.jsonl")


def _read_journal(path: Path, run_id: str) -> dict[str, list[Row]]:
    """Turns already done by this same run; a journal of another run is refused, a torn last line ignored."""
    if not path.is_file():
        return {}
    # undecodable bytes (a torn multi-byte character, or a file that is no journal) read as U+FFFD: a bad head is
    # refused below, a bad later line is a torn one
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    if not lines:
        return {}
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != JOURNAL_KIND or head.get("run") != run_id:
        raise RefusalError(f"{path}: not this predict run's journal (another run's, with other spans, detector or "
                           "settings, or not a journal at all); delete it or pass --force")
    done: dict[str, list[Row]] = {}
    for line in lines[1:]:
        try:
            obj = json.loads(line)
            done[str(obj["id"])] = [(int(r[0]), str(r[1]), float(r[2]), float(r[3]),
                                     None if r[4] is None else float(r[4])) for r in obj["rows"]]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            break  # a line torn by a kill: that turn is redone
    return done


class _Progress:
    """The shared progress bar (duplexeval.progress) over turns, with predictions per second; a no-op when disabled."""

    def __init__(self, total: int, enabled: bool, done: int = 0) -> None:
        self.total, self.enabled, self.done, self.t0 = total, enabled, done, time.monotonic()
        self._stack: ExitStack | None = None
        self._advance: Any = None

    def start(self) -> None:
        if not self.enabled:
            return

        self._stack = ExitStack()
        self._advance = self._stack.enter_context(progress_bar(self.total, "predict", True, done=self.done))

    def advance(self, n_new: int) -> None:
        self.done += 1
        if self._advance is not None:
            el = max(time.monotonic() - self.t0, 1e-9)
            self._advance(f"{n_new / el:.1f} turns/s")

    def stop(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = self._advance = None


def _finished_run(out: Path, sig: Signature, spans: SpanSet) -> PredictRun | None:
    """The run already in `out` when it was made from the same spans, detector and settings (nothing to redo);
    a RefusalError naming the difference when it was not; None when `out` holds no readable predictions."""
    try:
        old = read_predictions(out)
    except InputError:
        old = None
    expected = {"kind": PREDICTIONS_KIND, "signature": sig.to_json(), "inputs": {"spans": spans.sha256()}}
    check_replace(out, expected, False, old=dict(old.meta or {}) if old is not None else {})
    assert old is not None  # check_replace refused anything else
    return PredictRun(old, sig, len(spans.turns), len(old), 0.0, len(spans.turns),
                      [out, out.with_suffix(".jsonl")], up_to_date=True)


def predict(
    spans: SpanSet,
    detector: str,
    options: Mapping[str, Any],
    out: str | Path,
    *,
    settings: PredictSettings | None = None,
    executor: ExecutorSpec | None = None,
    force: bool = False,
    progress: bool | None = None,
) -> PredictRun:
    """Score every turn, write ``out`` (.parquet) and its .jsonl copy; resume from the journal of an interrupted run."""
    settings = settings or PredictSettings()
    out = Path(out)
    if out.suffix.lower() != ".parquet":
        raise InputError(f"{out}: the predictions output must end in .parquet (a .jsonl copy is written next to it)")
    check_output_file(out, "predictions file")
    options_json = json.dumps(dict(options), sort_keys=True)
    det = build_detector(detector, json.loads(options_json))  # fail early, in this process, with one line
    executor = executor or ExecutorSpec()
    if executor.kind == "local" and executor.jobs == 1:
        # reused in this process; workers build their own (no model across fork)
        _DETECTORS[(detector, options_json)] = det
    info = detector_info(det, detector)
    sig = predict_signature(spans, detector, info, settings, json.loads(options_json))
    run_id = sha256_bytes(json.dumps(sig.to_json(), sort_keys=True).encode("utf-8"))
    journal = _journal_path(out)
    if out.exists() and not force:
        finished = _finished_run(out, sig, spans)
        if finished is not None:
            return finished
    if force and journal.exists():
        journal.unlink()
    done = _read_journal(journal, run_id)
    todo = [t for t in spans.turns if t.id not in done]
    resumed = len(spans.turns) - len(todo)
    t0 = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not journal.exists():
        append_text(journal, dumps_line({"kind": JOURNAL_KIND, "run": run_id}), durable=True)
    ex = make_executor(executor)
    tasks = [TurnTask(detector, options_json, t, settings) for t in todo]
    n_new = 0
    failure: ItemFailure | None = None
    show = sys.stderr.isatty() if progress is None else progress
    try:
        prog = _Progress(len(spans.turns), show, done=resumed)
        prog.start()
        try:
            for res in ex.map_ordered(predict_turn_task, tasks):
                if isinstance(res, ItemFailure):
                    failure = failure or res
                    continue
                turn = todo[res.index]
                done[turn.id] = res.value
                # scrubbed like every written line; a turn id that held a secret no longer matches, so it is redone
                append_text(journal, dumps_line({"id": turn.id, "rows": [list(r) for r in res.value]}), durable=True)
                n_new += 1
                prog.advance(n_new)
        finally:
            prog.stop()
    finally:
        ex.close()
    if failure is not None:
        bad = todo[failure.index].id
        raise InputError(f"{spans.name}: turn {bad!r}: {failure.reason} (finished turns are kept; rerun to resume)")
    preds = _assemble(spans, done)
    hdr = header(PREDICTIONS_KIND, SCHEMA_VERSION, sig, {"spans": spans.sha256()})
    hdr["span_set"] = {"name": spans.name, "source": spans.source, "skipped": dict(sorted(spans.skipped.items()))}
    hdr["settings"] = settings.to_json()
    files = list(write_predictions(out, preds, hdr))
    journal.unlink()
    return PredictRun(preds, sig, len(spans.turns), len(preds), time.monotonic() - t0, resumed, files)


def _assemble(spans: SpanSet, done: Mapping[str, list[Row]]) -> Predictions:
    ids: list[str] = []
    langs: list[str] = []
    si: list[int] = []
    ts: list[float] = []
    sd: list[float] = []
    p: list[float | None] = []
    lab: list[str] = []
    for t in spans.turns:
        for r in done[t.id]:
            ids.append(t.id)
            langs.append(t.language)
            si.append(r[0])
            lab.append(r[1])
            ts.append(r[2])
            sd.append(r[3])
            p.append(r[4])
    cols: dict[str, list[Any]] = {"id": ids, "language": langs, "span_index": si, "timestamp": ts, "silence_dur": sd,
                                  "p_eot": p, "label": lab}
    return Predictions.from_columns(cols, spans.name)
