"""The virtual clock and the baselines' known answers (spec 004)."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplexeval.dialogue.baselines import HalfDuplex, make_manager
from duplexeval.dialogue.cases import (
    Chunk,
    Interruption,
    MiUCase,
    MiUExpected,
    UiMCase,
    UiMExpected,
)
from duplexeval.dialogue.judges import ExpectedJudge
from duplexeval.dialogue.protocol import S_LISTEN, S_SPEAK, CaseView, Event, Wait
from duplexeval.dialogue.rows import decision_lines, miu_row, uim_row
from duplexeval.dialogue.simulator import Clock, simulate
from duplexeval.dialogue.synth_stage import generate
from duplexeval.errors import InputError


def ch(text, s, e):
    return Chunk(text=text, start_s=s, end_s=e)


def miu_case(chunks=None, boundaries=None, cut=0, cues=("east",)):
    chunks = chunks or [ch("the sun rises", 0.0, 0.5), ch("in the west", 0.5, 1.0), ch("so when", 1.0, 1.5)]
    return MiUCase(family="MiU", id="m", chunks=chunks, boundaries=boundaries or [1, 2],
                   expected=MiUExpected(cut_in_from=cut, reply_cues=list(cues)))


def uim_case(reason="denial", behaviour="yield", cues=("ten",)):
    machine = [ch("your flight", 0.0, 0.64), ch("leaves at", 0.64, 1.28), ch("nine today", 1.28, 1.92)]
    inter = Interruption(reason=reason, chunks=[ch("no at", 0.64, 1.28), ch("ten", 1.28, 1.6)])
    return UiMCase(family="UiM", id="u", machine=machine, interruption=inter,
                   expected=UiMExpected(behaviour=behaviour, reply_cues=list(cues)))


class Scripted:
    """A manager that answers events by a script keyed on (kind, chunk index) and records what it saw."""

    def __init__(self, script):
        self.script = script
        self.seen: list[Event] = []

    def reset(self, view: CaseView) -> None:
        self.seen = []

    def on_event(self, ev):
        self.seen.append(ev)
        return self.script.get((ev.kind, ev.index), [])


def test_chunks_arrive_on_asr_ticks_and_end_of_speech_flushes():
    m = Scripted({})
    simulate(miu_case(), m, Clock(asr_chunk_ms=640))
    got = [(e.kind, e.index, e.t_us, e.clause_end) for e in m.seen]
    # ends 0.5 -> tick 0.64; 1.0 -> tick 1.28; 1.5 -> tick 1.92 but end of speech at 1.5 flushes it
    assert got == [("user_chunk", 0, 640_000, False), ("user_chunk", 1, 1_280_000, True),
                   ("user_chunk", 2, 1_500_000, True), ("user_end", -1, 1_500_000, False)]
    m2 = Scripted({})
    simulate(miu_case(), m2, Clock(asr_chunk_ms=0, endpoint_ms=200))
    assert [e.t_us for e in m2.seen] == [500_000, 1_000_000, 1_500_000, 1_700_000]


def test_token_timing_first_token_overhead_then_per_token():
    m = Scripted({("user_end", -1): [S_SPEAK, "a", "b", "c"]})
    rep = simulate(miu_case(), m, Clock(first_token_ms=300, per_token_ms=60))
    assert rep.takes == [1_500_000]
    assert rep.said == [(1_800_000, "a"), (1_860_000, "b"), (1_920_000, "c")]
    assert m.seen[-1].kind == "playback_done" and m.seen[-1].t_us == 1_980_000
    row = miu_row(miu_case(), rep)
    assert row.outcome == "end" and row.fted_s == pytest.approx(0.3) and row.reply == "a b c"


def test_outcome_priority_mid_over_end_over_miss():
    # cut in at chunk 1, yield, take again at the end: the earliest take decides -> mid
    m = (
        Scripted(
            {("user_chunk", 1): [S_SPEAK, "hey"], ("user_chunk", 2): [S_LISTEN], ("user_end", -1): [S_SPEAK, "so"]}))
    rep = simulate(miu_case(), m, Clock())
    assert rep.takes == [1_280_000, 1_500_000] and rep.yields == [1_500_000]
    row = miu_row(miu_case(), rep)
    assert row.outcome == "mid" and row.heard_chunks == 2 and row.fted_s is None
    assert row.reply == ""  # "hey" would start at 1.58 s, after the yield at 1.5 s: never heard
    assert rep.said == [(1_800_000, "so")]
    assert (miu_row(miu_case(), simulate(miu_case(), Scripted({("user_end", -1): [S_SPEAK, "x"]}), Clock())).outcome
            == "end")
    assert miu_row(miu_case(), simulate(miu_case(), Scripted({}), Clock())).outcome == "miss"


def test_text_while_listening_takes_the_turn_implicitly():
    rep = simulate(miu_case(), Scripted({("user_chunk", 0): ["hello"]}), Clock())
    assert rep.takes == [640_000]
    lines = decision_lines(rep)
    assert {"case": "m", "t_s": 0.64, "what": "action", "text": S_SPEAK, "implicit": True} in lines


def test_horizon_cuts_the_case():
    rep = simulate(miu_case(), HalfDuplex(delay_ms=2000), Clock(horizon_ms=1000))
    assert rep.takes == [] and miu_row(miu_case(), rep).outcome == "miss"
    # taken inside the horizon, first token after it: end, but no FTED (never heard)
    rep = simulate(miu_case(), HalfDuplex(delay_ms=900), Clock(horizon_ms=1000, first_token_ms=300))
    row = miu_row(miu_case(), rep)
    assert row.outcome == "end" and row.first_token_s is None and row.fted_s is None


def test_uim_yield_stops_the_machine_and_drops_unstarted_tokens():
    case = uim_case()
    m = Scripted({("user_chunk", 0): [S_LISTEN], ("user_end", -1): [S_SPEAK, "ok", "ten"]})
    rep = simulate(case, m, Clock())
    assert rep.yields == [1_280_000] and rep.machine_stop_us == 1_280_000
    machine = [s for s in rep.steps if s[1] == "machine"]
    assert [s[2] for s in machine] == ["your flight", "leaves at"]  # "nine today" starts at 1.28: never heard
    row = uim_row(case, rep, Clock())
    assert row.outcome == "yielded" and row.reply == "ok ten" and row.yield_s == 1.28
    assert ExpectedJudge().judge(row).score == 1


def test_uim_new_text_replaces_the_scripted_remainder_and_keeps_speaking():
    case = uim_case("affirmation", "acknowledge", ("great",))
    rep = simulate(case, Scripted({("user_chunk", 0): ["Great"]}), Clock())
    assert rep.yields == [] and rep.machine_stop_us == 1_280_000 and rep.said == [(1_580_000, "Great")]
    row = uim_row(case, rep, Clock())
    assert row.outcome == "continued" and ExpectedJudge().judge(row).score == 1


def test_wait_action_and_bad_actions():
    m = Scripted({("user_end", -1): [Wait(250)]})
    simulate(miu_case(), m, Clock())
    assert (m.seen[-1].kind, m.seen[-1].t_us) == ("timer", 1_750_000)
    with pytest.raises(RuntimeError, match="an action must be"):
        simulate(miu_case(), Scripted({("user_end", -1): [42]}), Clock())
    with pytest.raises(RuntimeError, match="Wait"):
        simulate(miu_case(), Scripted({("user_end", -1): [Wait(-1)]}), Clock())
    with pytest.raises(InputError, match="clock setting per_token_ms"):
        Clock(per_token_ms=-5)


# ---------------------------------------------------------------------------------------------
# Baselines: known answers on the built-in set


@pytest.fixture(scope="module")
def builtin():
    return generate(0, 120, 20)


@pytest.mark.parametrize(("delay_ms", "first_ms"), [(500, 300), (800, 120), (0, 0)])
def test_half_duplex_known_answers(builtin, delay_ms, first_ms):
    clock = Clock(first_token_ms=first_ms)
    m = make_manager("half-duplex", {"delay_ms": str(delay_ms)})
    for case in builtin:
        rep = simulate(case, m, clock)
        if isinstance(case, MiUCase):
            row = miu_row(case, rep)
            assert row.outcome == "end"
            assert row.fted_s == pytest.approx((delay_ms + first_ms) / 1000, abs=1e-9)
        else:
            row = uim_row(case, rep, clock)
            assert row.outcome == "yielded"  # always yields when interrupted
            assert rep.yields[0] == min(s[0] for s in rep.steps if s[1] == "user_chunk")  # at the first chunk


def test_eager_always_cuts_in_mid_utterance(builtin):
    m = make_manager("eager")
    for case in builtin:
        rep = simulate(case, m, Clock())
        if isinstance(case, MiUCase):
            row = miu_row(case, rep)
            assert row.outcome == "mid"
            assert row.heard_chunks == case.boundaries[0] + 1  # at the first clause boundary


def test_eager_single_clause_case_is_end():
    case = miu_case(chunks=[ch("hello there", 0.0, 0.64)], boundaries=[0], cut=None, cues=())
    assert miu_row(case, simulate(case, make_manager("eager"), Clock())).outcome == "end"


def test_keyword_cuts_in_on_an_error_cue_only():
    k = make_manager("keyword")
    cue = miu_case(chunks=[ch("cats always", 0, 0.64), ch("fly south", 0.64, 1.28), ch("right", 1.28, 1.92)],
                   boundaries=[1, 2])
    plain = miu_case(chunks=[ch("cats often", 0, 0.64), ch("fly south", 0.64, 1.28), ch("right", 1.28, 1.92)],
                     boundaries=[1, 2])
    assert miu_row(cue, simulate(cue, k, Clock())).outcome == "mid"
    assert miu_row(plain, simulate(plain, k, Clock())).outcome == "end"
    # UiM: yields on a denial cue, continues on noise
    assert uim_row(uim_case(), simulate(uim_case(), k, Clock()), Clock()).outcome == "yielded"
    noise = uim_case("noise", "continue", ())
    noise = (
        noise.model_copy(
            update={"interruption": Interruption(reason="noise", chunks=[ch("the dog barks", 0.64, 1.28)])}))
    row = uim_row(noise, simulate(noise, k, Clock()), Clock())
    assert row.outcome == "continued" and ExpectedJudge().judge(row).score == 1


def test_unknown_system_and_bad_params():
    with pytest.raises(InputError, match="unknown dialogue system 'nope'; available: eager, half-duplex, keyword"):
        make_manager("nope")
    with pytest.raises(InputError, match=r"no parameter .speed. \(known: delay_ms\)"):
        make_manager("half-duplex", {"speed": "1"})
    with pytest.raises(InputError, match="not a valid int"):
        make_manager("half-duplex", {"delay_ms": "soon"})


class EchoPlugin:
    """A user's own manager, loaded by `module:Class`."""

    def reset(self, view):
        self.n = 0

    def on_event(self, ev):
        if ev.kind == "user_end":
            return [S_SPEAK, "fine"]
        return []


def test_module_class_plugin():
    m = make_manager(f"{__name__}:EchoPlugin")
    rep = simulate(miu_case(), m, Clock())
    assert rep.takes == [1_500_000]


def test_decision_text_equals_dumps_line_of_each_decision(builtin):
    from duplexeval.dialogue.rows import decision_text
    from duplexeval.jsonio import dumps_line

    odd = miu_case(chunks=[ch('say "caf\u00e9" \\ now', 0.0, 0.5), ch("ok", 0.5, 1.0)], boundaries=[0, 1])
    for name in ("half-duplex", "eager", "keyword"):
        m = make_manager(name)
        for case in [*builtin[:60], *builtin[-40:], odd]:
            rep = simulate(case, m, Clock())
            assert decision_text(rep) == "".join(dumps_line(d) for d in decision_lines(rep))
    rep = simulate(miu_case(), Scripted({("user_chunk", 0): ["hello"]}), Clock())
    assert decision_text(rep) == "".join(dumps_line(d) for d in decision_lines(rep))


# ---------------------------------------------------------------------------------------------
# Properties over random clocks and cases

clocks = st.builds(Clock, asr_chunk_ms=st.sampled_from([0, 80, 320, 640, 1000]), first_token_ms=st.integers(0, 2000),
                   per_token_ms=st.integers(0, 200), endpoint_ms=st.integers(0, 800), horizon_ms=st.integers(0, 8000))


@settings(max_examples=60, deadline=None)
@given(clock=clocks, delay=st.integers(0, 5000), idx=st.integers(0, 139))
def test_half_duplex_fted_is_delay_plus_overheads_on_any_clock(clock, delay, idx):
    case = generate(0, 120, 5)[idx]
    rep = simulate(case, HalfDuplex(delay_ms=delay), clock)
    chunks = [s for s in rep.steps if s[1] == "user_chunk"]
    eos = rep.speech_end_us + clock.endpoint_ms * 1000
    assert all(t <= eos for t, *_ in chunks)  # nothing after the end-of-speech flush
    if isinstance(case, MiUCase):
        ends = [round(c.end_s * 1e6) for c in case.chunks]
        assert all(t >= e for (t, *_), e in zip(chunks, ends))  # nothing before it was said
        row = miu_row(case, rep)
        take = eos + delay * 1000
        if take > rep.horizon_us:
            assert row.outcome == "miss"
        else:
            assert row.outcome == "end" and row.take_s == pytest.approx(take / 1e6)
            first = take + clock.first_token_ms * 1000
            expected = None if first > rep.horizon_us else (first - rep.speech_end_us) / 1e6
            assert row.fted_s == (None if expected is None else pytest.approx(expected))
    # heard tokens never overlap and are in time order
    starts = [t for t, _ in rep.said]
    assert all(b - a >= clock.per_token_ms * 1000 for a, b in pairwise(starts))


@settings(max_examples=40, deadline=None)
@given(clock=clocks, name=st.sampled_from(["half-duplex", "eager", "keyword"]), seed=st.integers(0, 10_000))
def test_replay_is_deterministic_and_outcomes_partition(clock, name, seed):
    cases = generate(seed, 6, 1)
    a = [decision_lines(simulate(c, make_manager(name), clock)) for c in cases]
    b = [decision_lines(simulate(c, make_manager(name), clock)) for c in cases]
    assert a == b
    outcomes = [miu_row(c, simulate(c, make_manager(name), clock)).outcome for c in cases if isinstance(c, MiUCase)]
    assert all(o in ("mid", "end", "miss") for o in outcomes) and len(outcomes) == 6


class Broken:
    def __init__(self, level: str = "1") -> None:
        raise ValueError("no model file")


def test_plugin_that_fails_to_build_is_one_line():
    with pytest.raises(InputError,
                       match=rf"^dialogue system '{re.escape(__name__)}:Broken': __init__ raised ValueError: "
                             r"no model file$"):
        make_manager(f"{__name__}:Broken", {"level": "2"})


# -- four rules at the edges ---------------------------------------------------------------------------


def test_playback_done_comes_once_when_a_reply_ends_where_the_cut_scripted_utterance_would_have():
    """The scripted utterance (to 1.92 s) is cut at 1.28 s by new words; the one-token reply (1.58 + 0.34 s) ends at
    1.92 s, the scripted end: the manager hears one playback_done there, not two."""
    m = Scripted({("user_chunk", 0): ["well"]})
    rep = simulate(uim_case(), m, Clock(asr_chunk_ms=0, first_token_ms=300, per_token_ms=340))
    assert rep.machine_stop_us == 1_280_000 and rep.said == [(1_580_000, "well")]
    done = [e.t_us for e in m.seen if e.kind == "playback_done"]
    assert done == [1_920_000]


def test_a_token_due_the_instant_listen_arrives_is_dropped():
    """[S.LISTEN] silences the machine at once; a token due to start at that very instant has not started."""
    m = Scripted({("user_chunk", 0): [S_SPEAK, "ones", "more", Wait(300)], ("timer", -1): [S_LISTEN]})
    rep = simulate(miu_case(), m, Clock(asr_chunk_ms=0, first_token_ms=300, per_token_ms=60))
    assert rep.takes == [500_000] and rep.yields == [800_000]
    assert rep.said == []  # "ones" was due at 0.80 s, the yield's instant
    row = miu_row(miu_case(), rep)
    assert row.first_token_s is None and row.reply == ""


def test_a_zero_length_first_take_is_judged_on_what_it_said():
    """[S.SPEAK] and [S.LISTEN] at the same instant (1.0 s), then a later take that talks: the outcome, the take
    time and the reply the judge reads are the first take's (it said nothing)."""
    m = Scripted({("user_chunk", 1): [S_SPEAK, S_LISTEN], ("user_end", -1): [S_SPEAK, "sure", "see"]})
    rep = simulate(miu_case(), m, Clock(asr_chunk_ms=0, first_token_ms=300, per_token_ms=60))
    assert rep.takes == [1_000_000, 1_500_000] and rep.yields == [1_000_000]
    row = miu_row(miu_case(), rep)
    assert (row.outcome, row.take_s, row.reply) == ("mid", 1.0, "")
    assert row.transcript[-1] == ("assistant", "")


class _Failing:
    def reset(self, view: CaseView) -> None:
        pass

    def on_event(self, ev: Event) -> list:
        raise RuntimeError("no model")


class _HalfErrors:
    """A judge that cannot label every other case it judges (a judge_error), and labels the rest 1."""

    label = "half"

    def __init__(self) -> None:
        self.calls = 0

    def identity(self):
        from duplexeval.dialogue.judges import JudgeIdentity

        return JudgeIdentity("half")

    def judge(self, row):
        from duplexeval.dialogue.judges import Verdict, needs_judging

        if not needs_judging(row):
            return None
        self.calls += 1
        if self.calls % 2:
            return Verdict(error="judge_error: unparsable")
        return Verdict(timing=1, content=1) if row.family == "MiU" else Verdict(score=1)


def _cases_file(tmp_path, cases):
    from duplexeval.dialogue.load import case_to_json, load_cases

    p = tmp_path / "cases.jsonl"
    p.write_text("".join(__import__("json").dumps(case_to_json(c)) + "\n" for c in cases), encoding="utf-8")
    return load_cases(p)


def test_failed_cases_count_as_errors_of_their_kind(tmp_path, monkeypatch):
    from duplexeval.dialogue import run_stage, score_stage

    monkeypatch.setitem(__import__("sys").modules, "r3_failing_manager",
                        __import__("types").SimpleNamespace(M=_Failing))
    cases = _cases_file(tmp_path, generate(0, 4, 0))
    run_stage.run(cases, "r3_failing_manager:M", {}, Clock(), tmp_path / "run")
    rep = score_stage.score(tmp_path / "run", ExpectedJudge())
    by_kind = rep["MiU"]["outcomes_by_kind"]
    assert sum(d["error"] for d in by_kind.values()) == rep["MiU"]["counts"]["errors"] == 4
    assert set(by_kind) == {c.expected.kind for c in cases.cases}


def test_judged_means_labelled_everywhere(tmp_path):
    from duplexeval.dialogue import run_stage, score_stage

    cases = _cases_file(tmp_path, generate(3, 6, 2))
    run_stage.run(cases, "eager", {}, Clock(), tmp_path / "run")
    judge = _HalfErrors()
    rep = score_stage.score(tmp_path / "run", judge)
    labelled = rep["MiU"]["counts"]["mid_judged_timing"] + sum(c["judged"] for c in rep["UiM"]["counts"].values())
    assert rep["judge"]["judge_errors"] == (judge.calls + 1) // 2 > 0
    assert rep["judge"]["judged"] == labelled == judge.calls - rep["judge"]["judge_errors"]
