"""An FDB task written outside the package, as a user would: does the system answer once the user's question ends?

`tests/fdb/tasks/test_plugin.py` publishes `TASK` under the entry-point group `duplexeval.fdb_tasks` (a `.dist-info` on
the path of a child process) and runs every stage on it, with no change anywhere in duplexeval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from duplexeval import stats
from duplexeval.errors import InputError
from duplexeval.fdb.dataset import check_span
from duplexeval.fdb.official.metric import NO_SAMPLES, plain_mean
from duplexeval.fdb.synth.parse import SampleSpec
from duplexeval.fdb.synth.render import Timeline, Utterance, round_s
from duplexeval.fdb.tasks import (
    HIGHER,
    DatasetRules,
    Figure,
    Headline,
    Mark,
    MetricSpec,
    OfficialContext,
    OfficialOutcome,
    OfficialRules,
    OpenedSample,
    PairedSpec,
    Ready,
    RenderRules,
    SubsetInfo,
    SynthRecipe,
    Task,
    UnifiedRules,
    one_output_layout,
)
from duplexeval.fdb.tasks.base import Rendered, time_units
from duplexeval.fdb.unified.aggregate import Block, Counts, latency, share
from duplexeval.fdb.unified.load import fmt_s, in_window, sample_words
from duplexeval.fdb.unified.rows import SampleRow
from duplexeval.report import figures
from duplexeval.schemas.base import OpenRecord
from duplexeval.schemas.fdb import AnnotationList, Timestamp
from duplexeval.units import US_PER_S, Span, to_us

NAME = "answer_question"
SUBSET = SubsetInfo("toy_questions", NAME, "question.json", 2, "questions")


class QuestionItem(OpenRecord):
    timestamp: Timestamp


class QuestionAnnotation(AnnotationList):
    """question.json: `[0].timestamp = [start, end]` of the user's question."""

    root: list[QuestionItem]
    file: ClassVar[str] = "question.json"

    @property
    def end(self) -> float:
        return float(self.root[0].timestamp[1])


class QuestionChecks(DatasetRules):
    def check_annotation(self, record: Any, T: float, where: str) -> None:
        if len(record.items) != 1:
            raise InputError(f"{where}: expected exactly one question, found {len(record.items)}")
        a, b = record.root[0].timestamp
        check_span(a, b, 0, where, T)


@dataclass(frozen=True)
class QuestionInput:
    T_us: int
    end_us: int
    words: tuple[Span, ...]


@dataclass(frozen=True)
class AnswerRow:
    end_us: int
    first_word_us: int | None

    @property
    def latency_us(self) -> int | None:
        if self.first_word_us is None or self.first_word_us < self.end_us:
            return None
        return self.first_word_us - self.end_us

    @property
    def latency_s(self) -> float | None:
        lat = self.latency_us
        return None if lat is None else lat / 1e6

    def to_json(self) -> dict[str, Any]:
        return {"question_end_s": self.end_us / 1e6, "answered": self.latency_us is not None,
                "latency_s": self.latency_s}

    @classmethod
    def from_json(cls, js: dict[str, Any]) -> AnswerRow:
        end_us, lat = to_us(js["question_end_s"]), js["latency_s"]
        return cls(end_us, None if lat is None else end_us + to_us(lat))


class AnswerUnified(UnifiedRules[QuestionInput, AnswerRow]):
    metric_kinds = {"answered_rate": stats.Share, "answer_latency_s": stats.Latency}

    def parse(self, sample: OpenedSample) -> QuestionInput:
        end = sample.annotation.end
        end_us = to_us(end)
        if not in_window(end_us, sample.T_us):
            raise InputError(f"{sample.where()}: question end {end!r} is not inside [0, T={fmt_s(sample.T_us)}]")
        return QuestionInput(sample.T_us, end_us, sample_words(sample))

    def score(self, inp: QuestionInput, segments: Sequence[tuple[int, int]] | None) -> AnswerRow:
        after = [w.start_us for w in inp.words if w.start_us >= inp.end_us]
        return AnswerRow(inp.end_us, min(after, default=None))

    def row_from_json(self, js: dict[str, Any]) -> AnswerRow:
        return AnswerRow.from_json(js)

    def aggregate(self, rows: Sequence[AnswerRow], counts: Counts) -> Block:
        n, sel, unk = counts.eligible, counts.selected, counts.ineligible
        lat = [float("inf") if r.latency_us is None else r.latency_us for r in rows]
        return Block(NAME, counts, {
            "answered_rate": share(sum(1 for r in rows if r.latency_us is not None), n, unk, sel),
            "answer_latency_s": latency(lat, US_PER_S),
        })


@dataclass(frozen=True)
class AnsweredSample:
    id: str
    answered: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "evaluated": True, "answered": self.answered}


class AnswerOfficial(OfficialRules):
    """The reference rule of this toy task: any word starting at or after the question's end (times as written)."""

    def evaluate(self, ctx: OfficialContext, ready: Ready) -> OfficialOutcome:
        done = [AnsweredSample(s.entry.id, int(any(w.start >= s.annotation.end for w in s.words))) for s in ready]
        return OfficialOutcome(done, {"Answered": plain_mean([s.answered for s in done], NO_SAMPLES)})


class AnswerRender(RenderRules[AnswerRow]):
    bad = frozenset({"no_answer"})

    def outcome_key(self, row: AnswerRow) -> str:
        return "answered" if row.latency_s is not None else "no_answer"

    def why(self, row: AnswerRow) -> str:
        return f"answered after {row.latency_s:.2f} s" if row.latency_s is not None else "no answer after the question"

    def severity(self, row: AnswerRow) -> tuple[int, float]:
        return (2, -row.latency_s) if row.latency_s is not None else (0, 0.0)

    def outcome(self, row: AnswerRow) -> str:
        return "answered" if row.latency_s is not None else "no answer"

    def marks(self, record: Any) -> tuple[list[Mark], list[Any]]:
        return [Mark("Q", record.end, "#00838f")], []

    def figures(self, series: Sequence[tuple[str, Sequence[SampleRow[AnswerRow]]]],
                colors: Sequence[str]) -> list[Figure]:
        curve = [(label, [r.row.latency_s for r in rows if r.row is not None]) for label, rows in series]
        svg = figures.response_curve("questions answered", curve, colors=colors, xlabel="seconds after the question")
        return [Figure(svg, "share of the samples answered by t")]


class QuestionSynth(SynthRecipe):
    keys = {"text": None, "lead": 0.2, "tail": 6.0}

    def render(self, spec: SampleSpec, tl: Timeline, speak: Callable[[str], Utterance]) -> Rendered:
        placed = tl.speech(speak(spec.text("text")))
        return Rendered([{"text": spec.text("text"), "timestamp": [round_s(placed[0][1]), round_s(placed[-1][2])]}])


PAIRED = PairedSpec[AnswerRow]((
    MetricSpec("answered_rate", "share", lambda r: r.latency_us is not None),
    MetricSpec("answer_latency_s", "median", lambda r: time_units(r.latency_us), US_PER_S),
))

TASK = Task(
    name=NAME,
    subsets=(SUBSET,),
    annotation=QuestionAnnotation,
    layout=one_output_layout(QuestionAnnotation.file),
    dataset=QuestionChecks(),
    unified=AnswerUnified(),
    official=AnswerOfficial(),
    paired=PAIRED,
    render=AnswerRender(),
    synth=QuestionSynth(),
    headline=(Headline("answered_rate", "answered after the question", HIGHER),),
)
