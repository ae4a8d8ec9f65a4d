"""The virtual-clock replay of one case (spec 004): user text arrives in ASR chunks, the manager sees
only what has arrived, and its tokens take time, so FTED is a measured time on the clock.

Timing rules (integer microseconds):
- a user chunk ending at ``e`` is delivered at the first ASR tick at or after ``e`` (ticks every
  ``asr_chunk_ms`` from 0; 0 = at ``e``), and never after the end-of-speech event, which flushes
  whatever has not arrived and comes ``endpoint_ms`` after the true end of speech;
- a text token said while the output is idle starts ``first_token_ms`` after the action; while
  the output is busy it starts when the previous token ends; each token lasts ``per_token_ms``;
- ``[S.LISTEN]`` stops the machine at once: tokens not yet started (one due at that very instant
  included) and the rest of a UiM case's scripted utterance are dropped; new text during the
  scripted utterance replaces its remainder;
- ``playback_done`` comes once, when the output that is playing last ends (a reply that ends where
  a scripted utterance it cut would have ended is one end, not two);
- the case runs until ``horizon_ms`` after the end of user speech (UiM: of the later of the user's
  interruption and the machine's utterance); events and tokens after that do not happen.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from duplexeval.dialogue.cases import Chunk, MiUCase, UiMCase
from duplexeval.dialogue.protocol import (
    C_LISTEN,
    C_SPEAK,
    PLAYBACK_DONE,
    S_LISTEN,
    S_SPEAK,
    TIMER,
    USER_CHUNK,
    USER_END,
    CaseView,
    DialogueManager,
    Event,
    Wait,
)
from duplexeval.errors import InputError
from duplexeval.units import to_us

MAX_ACTIONS_PER_CASE = 20000  # a runaway manager fails its case instead of hanging the run
_ORDER = {USER_CHUNK: 0, USER_END: 1, PLAYBACK_DONE: 2, TIMER: 3}


@dataclass(frozen=True)
class Clock:
    """Clock settings; every one changes a number, so all of them go into the signature."""

    asr_chunk_ms: int = 640  # the paper's ASR cadence
    first_token_ms: int = 300  # LLM + TTS overhead before the first token of a response is heard
    per_token_ms: int = 60  # each spoken token's duration
    endpoint_ms: int = 0  # end-of-speech detection delay (VAD latency: out of the paper's scope)
    horizon_ms: int = 10000  # how long after the end of user speech the case keeps running

    def __post_init__(self) -> None:
        for name in ("asr_chunk_ms", "first_token_ms", "per_token_ms", "endpoint_ms", "horizon_ms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"clock setting {name} must be a non-negative integer (ms), got {v!r}")

    def settings(self) -> dict[str, int]:
        return {
            "asr_chunk_ms": self.asr_chunk_ms,
            "first_token_ms": self.first_token_ms,
            "per_token_ms": self.per_token_ms,
            "endpoint_ms": self.endpoint_ms,
            "horizon_ms": self.horizon_ms,
        }


# A step of the decision log: (t_us, what, text, index). `what` is an event kind, "action" (a
# control token), "say" (a text token, at the time it starts being heard), "machine" (a scripted
# UiM chunk heard) or "stop" (the machine fell silent mid-utterance).
Step = tuple[int, str, str, int]


@dataclass
class Replay:
    """What happened in one case, on the clock (microseconds)."""

    case_id: str
    family: str
    steps: list[Step] = field(default_factory=list)
    takes: list[int] = field(default_factory=list)  # times of LISTEN -> SPEAK
    yields: list[int] = field(default_factory=list)  # times of SPEAK -> LISTEN
    said: list[tuple[int, str]] = field(default_factory=list)  # (start, token) actually heard
    speech_end_us: int = 0  # MiU: end of user speech; UiM: end of the interruption
    interruption_us: int = 0  # UiM: the interruption's start
    machine_stop_us: int | None = None  # UiM: when the scripted utterance was cut (None: played out)
    horizon_us: int = 0


def _tick(e_us: int, step_us: int) -> int:
    return e_us if step_us <= 0 else -(-e_us // step_us) * step_us


def _deliveries(chunks: Sequence[Chunk], boundaries: set[int], clock: Clock, end_event_us: int) -> list[Event]:
    step = clock.asr_chunk_ms * 1000
    out = []
    for i, c in enumerate(chunks):
        t = min(_tick(to_us(c.end_s), step), end_event_us)
        out.append(Event(USER_CHUNK, t, c.text, i, i in boundaries))
    return out


class _Run:
    """One case's mutable state while the event queue drains."""

    def __init__(self, replay: Replay, clock: Clock, speaking: bool, cursor_us: int) -> None:
        self.r = replay
        self.first_us = clock.first_token_ms * 1000
        self.tok_us = clock.per_token_ms * 1000
        self.speaking = speaking
        self.cursor = cursor_us  # the output is busy until here
        self.queue: list[tuple[int, int, int, Event]] = []
        self.seq = 0
        self.scripted_end: int | None = None  # UiM: the scripted utterance's end while it still plays
        self.actions = 0
        self.done_seq = 0  # the one playback_done still due: the latest pushed (earlier ones are superseded)

    def push(self, ev: Event) -> None:
        self.seq += 1
        if ev.kind == PLAYBACK_DONE:
            self.done_seq = self.seq
        heapq.heappush(self.queue, (ev.t_us, _ORDER[ev.kind], self.seq, ev))

    def _stop(self, t: int) -> None:
        """The machine falls silent at t: drop tokens not yet started and the scripted remainder."""
        r = self.r
        while r.said and r.said[-1][0] >= t:  # a token due at t has not started: silenced with the rest
            r.said.pop()
        if self.scripted_end is not None and t < self.scripted_end:
            r.machine_stop_us = t
            r.steps.append((t, "stop", "", -1))
        self.scripted_end = None
        self.cursor = min(self.cursor, t)

    def apply(self, t: int, actions: Sequence[object]) -> None:
        """Carry out a manager's actions at time t (state changes, token timing, timers)."""
        r = self.r
        burst = False
        for a in actions:
            self.actions += 1
            if self.actions > MAX_ACTIONS_PER_CASE:
                raise RuntimeError(f"more than {MAX_ACTIONS_PER_CASE} actions in one case")
            if isinstance(a, Wait):
                if isinstance(a.ms, bool) or not isinstance(a.ms, int) or a.ms < 0:
                    raise RuntimeError(f"Wait(ms) needs a non-negative integer, got {a.ms!r}")
                self.push(Event(TIMER, t + a.ms * 1000))
                r.steps.append((t, "wait", str(a.ms), -1))
                continue
            if not isinstance(a, str) or not a.strip():
                raise RuntimeError(f"an action must be a control token, a text token or Wait(ms), got {a!r}")
            if a == S_SPEAK:
                r.steps.append((t, "action", a, -1))
                if not self.speaking:
                    self.speaking = True
                    r.takes.append(t)
            elif a == S_LISTEN:
                r.steps.append((t, "action", a, -1))
                if self.speaking:
                    self.speaking = False
                    r.yields.append(t)
                    self._stop(t)
            elif a in (C_SPEAK, C_LISTEN):
                r.steps.append((t, "action", a, -1))
            else:
                if not self.speaking:  # a text token while listening takes the turn
                    r.steps.append((t, "action", S_SPEAK, 1))
                    self.speaking = True
                    r.takes.append(t)
                if self.scripted_end is not None and t < self.scripted_end:
                    self._stop(t)  # new words replace the rest of the scripted utterance
                start = t + self.first_us if self.cursor <= t else self.cursor
                self.cursor = start + self.tok_us
                if start <= r.horizon_us:
                    r.said.append((start, a))
                burst = True
        if burst:
            self.push(Event(PLAYBACK_DONE, self.cursor))

    def drain(self, manager: DialogueManager) -> None:
        """Deliver events in time order until the queue is empty or past the horizon."""
        r = self.r
        while self.queue:
            t, _, seq, ev = heapq.heappop(self.queue)
            if t > r.horizon_us:
                break
            if ev.kind == PLAYBACK_DONE:
                if seq != self.done_seq or t != self.cursor or not self.speaking:
                    continue  # superseded by later output (or the same end pushed again), or cut by a yield
                if self.scripted_end is not None and t == self.scripted_end:
                    self.scripted_end = None
            if ev.kind == USER_CHUNK:
                r.steps.append((t, USER_CHUNK, ev.text, ev.index))
            else:
                r.steps.append((t, ev.kind, "", -1))
            self.apply(t, manager.on_event(ev))


def _view(case: MiUCase | UiMCase) -> CaseView:
    ctx = tuple((t.role, t.text) for t in case.context)
    if isinstance(case, UiMCase):
        return CaseView("UiM", case.id, ctx, " ".join(c.text for c in case.machine))
    return CaseView("MiU", case.id, ctx)


def simulate(case: MiUCase | UiMCase, manager: DialogueManager, clock: Clock) -> Replay:
    """Replay `case` against `manager` on the virtual clock."""
    manager.reset(_view(case))
    if isinstance(case, MiUCase):
        end_us = to_us(case.end_s)
        eos = end_us + clock.endpoint_ms * 1000
        replay = Replay(case.id, "MiU", speech_end_us=end_us, horizon_us=end_us + clock.horizon_ms * 1000)
        run = _Run(replay, clock, speaking=False, cursor_us=0)
        for ev in _deliveries(case.chunks, set(case.boundaries), clock, eos):
            run.push(ev)
        run.push(Event(USER_END, eos))
    else:
        inter = case.interruption
        end_us = to_us(inter.end_s)
        eos = end_us + clock.endpoint_ms * 1000
        m_end = to_us(case.machine[-1].end_s)
        replay = Replay(
            case.id, "UiM", speech_end_us=end_us, interruption_us=to_us(inter.start_s),
            horizon_us=max(end_us, m_end) + clock.horizon_ms * 1000,
        )
        run = _Run(replay, clock, speaking=True, cursor_us=m_end)
        run.scripted_end = m_end
        for ev in _deliveries(inter.chunks, set(range(len(inter.chunks))), clock, eos):
            run.push(ev)
        run.push(Event(USER_END, eos))
        run.push(Event(PLAYBACK_DONE, m_end))
    run.drain(manager)
    heard: list[Step] = []
    if isinstance(case, UiMCase):
        stop = replay.machine_stop_us if replay.machine_stop_us is not None else math.inf
        heard = [(to_us(c.start_s), "machine", c.text, i) for i, c in enumerate(case.machine)
                 if to_us(c.start_s) < stop]
    said: list[Step] = [(t, "say", tok, -1) for t, tok in replay.said]
    replay.steps = sorted(heard + replay.steps + said, key=_time)  # stable: same-time order kept
    return replay


def _time(step: Step) -> int:
    return step[0]
