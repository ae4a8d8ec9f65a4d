"""Span sets from every source, the causal grid, detectors (silence, silero, smart-turn, plugins), resume, jobs."""

from __future__ import annotations

import io
import json
import sys
import textwrap

import numpy as np
import pytest

from duplexeval.eot.predict_stage import (
    PredictSettings,
    TurnTask,
    predict,
    predict_turn_task,
)
from duplexeval.eot.predictions import read_predictions
from duplexeval.eot.sources import load_span_set, read_eotbench
from duplexeval.eot.spans import (
    SpanSet,
    grid_points,
    make_turn,
    time_grid,
    visible_messages,
)
from duplexeval.errors import InputError, RefusalError
from duplexeval.executors import ExecutorSpec
from duplexeval.units import SAMPLE_RATE, TimedWord
from tests.helpers.eot import one_turn_set, tone


def test_time_grid_and_silence_dur():
    assert time_grid(1.0, 1.25, 0.1) == [1.0, 1.1, 1.2, 1.25]
    assert time_grid(1.0, 1.3, 0.1) == [1.0, 1.1, 1.2, 1.3]
    assert time_grid(2.0, 2.0, 0.1) == [2.0]
    turn = make_turn("a", np.zeros(SAMPLE_RATE * 3, np.float32),
                     [(0.5, 0.75, "hold"), (1.0, 1.05, "hold"), (2.0, 2.2, "eot")], skipped=(sk := {}))
    assert sk == {"hold_shorter_than_0.1s": 1}
    pts = grid_points(turn)
    assert [(p.span_index, p.silence_dur) for p in pts] == [(0, 0.0), (0, 0.1), (0, 0.2), (0, 0.25), (2, 0.0), (2, 0.1),
                                                            (2, 0.2)]


def test_words_visible_only_after_the_transcript_lag():
    turn = make_turn("a", np.zeros(SAMPLE_RATE * 3, np.float32), [(1.0, 2.0, "eot")],
                     words=(TimedWord("hello", 0.1, 0.5), TimedWord("there", 0.6, 1.0)),
                     messages=({"role": "assistant", "content": "hi"},))  # fmt: skip
    assert visible_messages(turn, 1.0, 0.5) == [{"role": "assistant", "content": "hi"},
                                                {"role": "user", "content": "hello"}]
    assert visible_messages(turn, 1.5, 0.5)[-1] == {"role": "user", "content": "hello there"}
    assert visible_messages(turn, 0.9, 0.5) == [{"role": "assistant", "content": "hi"}]


def test_make_turn_refusals():
    z = np.zeros(SAMPLE_RATE, np.float32)
    with pytest.raises(InputError, match="not the turn's last silence"):
        make_turn("a", z, [(0.1, 0.3, "eot"), (0.5, 0.8, "hold")])
    with pytest.raises(InputError, match="after the audio"):
        make_turn("a", z, [(0.1, 1.5, "eot")])
    with pytest.raises(InputError, match="NaN"):
        make_turn("a", np.full(10, np.nan, np.float32), [(0.0, 0.0, "eot")])
    with pytest.raises(InputError, match="before the previous one ends"):
        make_turn("a", z, [(0.1, 0.5, "hold"), (0.4, 0.8, "eot")])


def eotbench_rows(sr: int = 8000) -> list[dict]:
    audio = (
        np.concatenate(
            [tone(0.5, sr), np.zeros(int(0.4 * sr), np.float32), tone(0.5, sr), np.zeros(int(1.2 * sr), np.float32)]))
    return [{"id": "u1", "language": "EN", "audio": {"array": audio.tolist(), "sampling_rate": sr},
             "silence_spans": [{"start": 0.5, "end": 0.9}, {"start": 1.4, "end": 2.6}],
             "words": [{"word": "hi", "start": 0.0, "end": 0.5}],
             "messages": [{"role": "assistant", "content": "yes?"}]},
            {"id": "u2", "language": "en", "audio": {"array": audio.tolist(), "sampling_rate": sr},
             "silence_spans": [{"start": 0.5, "end": 0.55}, {"start": 1.4, "end": 2.6}]}]  # fmt: skip


def test_eotbench_jsonl_and_parquet_rows_resampled(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import soundfile as sf

    rows = eotbench_rows()
    j = tmp_path / "spans.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ss = read_eotbench(j)
    assert [t.id for t in ss.turns] == ["u1", "u2"] and ss.turns[0].language == "en"
    assert ss.turns[0].audio.size == round(2.6 * SAMPLE_RATE)  # 8 kHz resampled to 16 kHz
    assert [s.label for s in ss.turns[0].spans] == ["hold", "eot"]
    assert ss.skipped == {"hold_shorter_than_0.1s": 1}
    # parquet with encoded bytes, as eot-bench's HF datasets store them
    buf = io.BytesIO()
    sf.write(buf, np.asarray(rows[0]["audio"]["array"], np.float32), 8000, format="WAV", subtype="FLOAT")
    prow = {k: v for k, v in rows[0].items() if k != "audio"}
    prow["audio"] = {"bytes": buf.getvalue(), "path": None}
    p = tmp_path / "spans.parquet"
    pq.write_table(pa.Table.from_pylist([prow]), p)
    sp = read_eotbench(p)
    assert np.allclose(sp.turns[0].audio, ss.turns[0].audio, atol=1e-6)
    assert load_span_set(p).source == "eot-bench" and load_span_set(j).source == "eot-bench"


@pytest.mark.parametrize(
    "mutate,msg",
    [
        (lambda r: r.pop("silence_spans"), "missing field 'silence_spans'"),
        (lambda r: r.update(language=""), "language must be"),
        (lambda r: r.update(audio={"array": [0.0, float("nan")], "sampling_rate": 8000}), "NaN"),
        (lambda r: r.update(audio={"array": [0.0], "sampling_rate": 0}), "sampling_rate"),
        (lambda r: r.update(silence_spans=[{"start": 0.5}]), "start and end"),
    ],
)
def test_eotbench_row_refusals(tmp_path, mutate, msg):
    r = eotbench_rows()[0]
    mutate(r)
    j = tmp_path / "s.jsonl"
    j.write_text(json.dumps(r) + "\n")
    with pytest.raises(InputError, match=msg):
        read_eotbench(j)


def test_silence_detector_is_a_delay_timer():
    ss = one_turn_set()
    rows = predict_turn_task(TurnTask("silence", "{}", ss.turns[0], PredictSettings()))
    assert all(p == pytest.approx(min(1.0, sd)) for _, _, _, sd, p in rows)
    rows = predict_turn_task(TurnTask("silence", json.dumps({"delay_s": 0.3}), ss.turns[0], PredictSettings()))
    assert [p for *_, sd, p in rows if sd < 0.3] == [0.0] * 6  # two spans, 0.0 0.1 0.2 each
    assert all(p == 1.0 for *_, sd, p in rows if sd >= 0.3)


def test_silero_is_causal_audio_after_t_changes_nothing():
    ss = one_turn_set()
    base = predict_turn_task(TurnTask("silero", "{}", ss.turns[0], PredictSettings()))
    # speech right after t = 2.4 + 0.3: the scores up to that time must not move
    a = ss.turns[0].audio.copy()
    cut = round(2.7 * SAMPLE_RATE)
    a[cut:] = tone((a.size - cut) / SAMPLE_RATE)
    moved = (
        predict_turn_task(
            TurnTask("silero", "{}", make_turn("t1", a, [(1.0, 1.6, "hold"), (2.4, 4.4, "eot")]), PredictSettings())))
    for r0, r1 in zip(base, moved):
        if r0[2] <= 2.7:
            assert r0 == r1
    assert any(r0[4] != r1[4] for r0, r1 in zip(base, moved) if r0[2] > 2.8)  # and speech later is heard
    # silence after a tone: p_eot rises above 0.5 within the first half second of the eot span
    assert max(p for si, _, _, sd, p in base if si == 1 and sd <= 0.5) > 0.5


PLUGIN = textwrap.dedent(
    """
    import os

    class Echo:
        '''A plugin in eot-bench's adapter shape: p = length of audio seen, in seconds / 10.'''

        def __init__(self, fail_on=None, marker=None):
            self.fail_on, self.marker = fail_on, marker

        def predict_batch(self, items):
            out = []
            for it in items:
                n = len(it["audio"]["array"]) / it["audio"]["sampling_rate"]
                if self.fail_on is not None and abs(n - self.fail_on) < 1e-6 and not os.path.exists(self.marker):
                    raise RuntimeError("boom")
                out.append(round(n / 10, 6))
            return out
    """
)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    d = tmp_path / "plug"
    d.mkdir()
    (d / "eot_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(d))
    yield "eot_test_plugin:Echo"
    sys.modules.pop("eot_test_plugin", None)


def test_plugin_sees_only_audio_up_to_t_and_resume_gives_the_same_bytes(tmp_path, plugin):
    ss = one_turn_set()
    ref = tmp_path / "ref.parquet"
    predict(ss, plugin, {}, ref, progress=False)
    p = read_predictions(ref)
    assert np.allclose(p.p_eot, np.floor(p.timestamp * SAMPLE_RATE + 1e-6) / SAMPLE_RATE / 10, atol=1e-6)
    assert list(p.label[:7]) == ["hold"] * 7
    # fail on the second turn (it sees 2.6 s of audio at one point): the first turn is kept in the journal
    marker = tmp_path / "ok"
    out = tmp_path / "run.parquet"
    opts = {"fail_on": 2.6, "marker": str(marker)}
    with pytest.raises(InputError, match="turn 't1'.*boom.*rerun to resume"):
        predict(ss, plugin, opts, out, progress=False)
    assert not out.exists() and (tmp_path / "run.parquet.journal.jsonl").is_file()
    marker.write_text("")
    r = predict(ss, plugin, opts, out, progress=False)
    assert r.resumed_turns == 0  # t1 is the first turn, it failed; nothing finished before it
    assert out.with_suffix(".jsonl").read_bytes() == ref.with_suffix(".jsonl").read_bytes()
    again = predict(ss, plugin, opts, out, progress=False)  # the same run, finished: nothing to redo
    assert again.up_to_date and again.resumed_turns == again.n_turns and len(again.predictions) == len(r.predictions)
    with pytest.raises(RefusalError, match=r"exists and was made with other settings \(det: .*pass --force "
                                           r"to replace it"):
        predict(ss, plugin, {**opts, "fail_on": 9.9}, out, progress=False)
    assert predict(ss, plugin, {**opts, "fail_on": 9.9}, out, progress=False, force=True).up_to_date is False


def test_resume_skips_finished_turns_and_refuses_another_runs_journal(tmp_path, plugin):
    ss = one_turn_set()
    out = tmp_path / "run.parquet"
    marker = tmp_path / "ok"
    # t2 fails (same audio as t1, so fail on a length only t2... use a set where the second turn is longer)
    audio2 = np.concatenate([ss.turns[1].audio, np.zeros(SAMPLE_RATE, np.float32)])
    ss2 = SpanSet("tiny", "test", [ss.turns[0], make_turn("t2", audio2, [(1.0, 1.6, "hold"), (2.4, 5.4, "eot")])])
    with pytest.raises(InputError, match="turn 't2'"):
        predict(ss2, plugin, {"fail_on": 5.4, "marker": str(marker)}, out, progress=False)
    marker.write_text("")
    r = predict(ss2, plugin, {"fail_on": 5.4, "marker": str(marker)}, out, progress=False)
    assert r.resumed_turns == 1
    clean = tmp_path / "clean.parquet"
    predict(ss2, plugin, {"fail_on": 5.4, "marker": str(marker)}, clean, progress=False)
    assert out.with_suffix(".jsonl").read_bytes() == clean.with_suffix(".jsonl").read_bytes()
    # a journal from other settings is refused
    j = tmp_path / "x.parquet.journal.jsonl"
    j.write_text('{"kind": "duplexeval.eot.predict-journal", "run": "other"}\n')
    with pytest.raises(RefusalError, match="not this predict run's journal"):
        predict(ss2, plugin, {}, tmp_path / "x.parquet", progress=False)


def test_the_journal_holds_no_known_secret_and_resume_still_gives_the_same_bytes(tmp_path, plugin):
    import base64

    from duplexeval import redaction

    key = "sk-journal-" + "7f3a9c" * 4
    redaction.register(key)
    ss = one_turn_set()
    audio2 = np.concatenate([ss.turns[1].audio, np.zeros(SAMPLE_RATE, np.float32)])
    first = make_turn(f"t1-{key}", ss.turns[0].audio, [(1.0, 1.6, "hold"), (2.4, 4.4, "eot")])  # an id from the data
    ss2 = SpanSet("tiny", "test", [first, make_turn("t2", audio2, [(1.0, 1.6, "hold"), (2.4, 5.4, "eot")])])
    out, marker = tmp_path / "run.parquet", tmp_path / "ok"
    opts = {"fail_on": 5.4, "marker": str(marker)}
    with pytest.raises(InputError, match="turn 't2'"):
        predict(ss2, plugin, opts, out, progress=False)
    journal = (tmp_path / "run.parquet.journal.jsonl").read_bytes()
    assert journal.count(b"\n") == 2  # its head and the finished first turn
    for form in (key, json.dumps(key)[1:-1], base64.b64encode(key.encode()).decode()):
        assert form.encode() not in journal
    marker.write_text("")
    r = predict(ss2, plugin, opts, out, progress=False)
    assert r.resumed_turns == 0  # the scrubbed id matches no turn: that turn is redone, never mixed up
    clean = tmp_path / "clean.parquet"
    predict(ss2, plugin, opts, clean, progress=False)
    assert out.with_suffix(".jsonl").read_bytes() == clean.with_suffix(".jsonl").read_bytes()
    assert key.encode() not in out.with_suffix(".jsonl").read_bytes()


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00garbage\x80\n", b"\x00" * 64, b"not json\n", b"[1, 2]\n"])
def test_a_garbage_journal_is_refused_in_one_line(tmp_path, garbage):
    j = tmp_path / "x.parquet.journal.jsonl"
    j.write_bytes(garbage)
    with pytest.raises(RefusalError, match=r"x.parquet.journal.jsonl: not this predict run's journal .*pass --force$"):
        predict(one_turn_set(), "silence", {}, tmp_path / "x.parquet", progress=False)
    predict(one_turn_set(), "silence", {}, tmp_path / "x.parquet", progress=False, force=True)
    assert (tmp_path / "x.parquet").is_file() and not j.exists()


def test_jobs_2_gives_the_same_bytes(tmp_path):
    ss = one_turn_set()
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    predict(ss, "silero", {}, a, progress=False)
    predict(ss, "silero", {}, b, executor=ExecutorSpec(jobs=2), progress=False)
    assert a.read_bytes() == b.read_bytes()
    meta = read_predictions(a).meta
    assert meta["kind"] == "duplexeval.eot.predictions" and meta["signature"]["compact"].startswith("eot-predict-1|")


def test_unknown_detector_and_bad_options():
    ss = one_turn_set()
    with pytest.raises(InputError, match="unknown EOT detector 'nope'; available: silence, silero, smart-turn"):
        predict(ss, "nope", {}, "/tmp/never.parquet", progress=False)
    with pytest.raises(InputError, match=r"^EOT detector 'silence': __init__ raised TypeError: .*unexpected keyword "
                                         r"argument 'bogus'"):
        predict(ss, "silence", {"bogus": 1}, "/tmp/never.parquet", progress=False)


def test_only_at_keeps_every_row_but_scores_one(tmp_path):
    ss = one_turn_set()
    out = tmp_path / "p.parquet"
    predict(ss, "silence", {}, out, settings=PredictSettings(only_at=(0.2,)), progress=False)
    p = read_predictions(out)
    scored = ~np.isnan(p.p_eot)
    assert np.allclose(p.silence_dur[scored], 0.2) and scored.sum() == 4
    assert p.silence_dur.max() == pytest.approx(2.0)  # span durations still come from the rows


def test_synth_script_and_fdb_sources(tmp_path):
    from duplexeval.fdb.synth import load_script, synthesize_dataset

    script = tmp_path / "s.yaml"
    script.write_text(textwrap.dedent("""
        name: t
        samples:
          - {subset: synthetic_pause_handling, id: 1, tail: 1.0, parts: ["so we were thinking", {pause: 0.6}, "about it"]}
          - {subset: candor_turn_taking, id: 1, text: "what time is it", tail: 2.0}
          - {subset: synthetic_user_interruption, id: 1, context: "tell me a story", interrupt: "stop", gap: 1.0, tail: 1.0}
    """))  # noqa: E501 - the YAML script, one sample a line
    ss = load_span_set(script)
    assert ss.source == "synth" and ss.skipped == {"task_user_interruption": 1}
    ph = ss.turns[1] if ss.turns[1].id.startswith("synthetic_pause") else ss.turns[0]
    assert [s.label for s in ph.spans] == ["hold", "eot"]
    assert ph.spans[0].duration_s == pytest.approx(0.6, abs=1e-4)  # word ends fall on the sample grid
    assert ph.spans[1].duration_s == pytest.approx(1.0, abs=2e-4)
    tt = next(t for t in ss.turns if t.id.startswith("candor_turn"))
    assert [s.label for s in tt.spans] == ["eot"] and tt.spans[0].duration_s == pytest.approx(2.0, abs=2e-4)
    # the same samples as an FDB-shaped folder through the dataset loader
    root = tmp_path / "ds"
    synthesize_dataset(load_script(script), root)
    fd = load_span_set(root)
    assert fd.source == "fdb"
    assert {t.id for t in fd.turns} == {"candor_turn_taking/1"}
    assert fd.skipped.get("subset_synthetic_pause_handling") == 1 and fd.skipped.get(
        "subset_synthetic_user_interruption") == 1


def test_conversation_manifest_source(tmp_path):
    import soundfile as sf

    u = (
        np.concatenate(
            [tone(1.0), np.zeros(int(0.5 * SAMPLE_RATE), np.float32), tone(1.0),
             np.zeros(3 * SAMPLE_RATE, np.float32)]))
    a = np.zeros_like(u)
    a[int(3.0 * SAMPLE_RATE) : int(4.0 * SAMPLE_RATE)] = tone(1.0)
    sf.write(tmp_path / "c.wav", np.stack([u, a], axis=1), SAMPLE_RATE)
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"id": "c1", "audio": "c.wav", "user": {"segments": [[0, 1.0], [1.5, 2.5]]},
                             "agent": {"segments": [[3.0, 4.0]]}}) + "\n")  # fmt: skip
    ss = load_span_set(m)
    assert ss.source == "conversations" and len(ss.turns) == 1
    t = ss.turns[0]
    assert [(s.label, round(s.start_s, 3), round(s.end_s, 3)) for s in t.spans] == [
        ("hold", 1.0, 1.5), ("eot", 2.5, 5.5)]
    assert t.group == "c1"


from duplexeval.eot.detectors import smart_turn_available  # noqa: E402 - next to the tests that use it

smart_reason = smart_turn_available()


@pytest.mark.skipif(smart_reason is not None, reason=f"smart-turn not installed here: {smart_reason}")
def test_smart_turn_runs_the_shipped_model_on_the_whole_turn():
    from duplexeval.eot.detectors import (
        SMART_TURN_SHA256,
        SmartTurnDetector,
        smart_turn_files,
    )
    from duplexeval.jsonio import sha256_file

    model, _ = smart_turn_files()
    assert sha256_file(model) == SMART_TURN_SHA256
    det = SmartTurnDetector(batch_size=4)
    a = tone(2.0)
    items = [{"audio": {"array": a[: n * 1600], "sampling_rate": SAMPLE_RATE}} for n in (5, 10, 20)]
    p = det.predict_batch(items)
    assert len(p) == 3 and all(0.0 <= x <= 1.0 for x in p)
    # 8 kHz input is resampled, never fed as is: the score equals the 16 kHz one closely
    from duplexeval.audio import resample

    p8 = det.predict_batch([{"audio": {"array": resample(a, SAMPLE_RATE, 8000), "sampling_rate": 8000}}])
    p16 = det.predict_batch([{"audio": {"array": a, "sampling_rate": SAMPLE_RATE}}])
    assert abs(p8[0] - p16[0]) < 0.1
    # the window is the last 8 s, left-padded: 9 s of audio scores as its last 8 s
    long = np.concatenate([tone(1.0), np.zeros(8 * SAMPLE_RATE, np.float32)])
    assert det.predict_batch([{"audio": {"array": long, "sampling_rate": SAMPLE_RATE}}]) == det.predict_batch(
        [{"audio": {"array": long[SAMPLE_RATE:], "sampling_rate": SAMPLE_RATE}}]
    )


def test_predictions_parquet_has_eotbench_columns_and_both_readers_agree(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "p.parquet"
    predict(one_turn_set(), "silence", {}, out, settings=PredictSettings(only_at=(0.2,)), progress=False)
    t = pq.read_table(out)
    assert t.column_names == ["id", "language", "span_index", "timestamp", "silence_dur", "p_eot", "label"]
    assert [str(f.type) for f in t.schema] == ["string", "string", "int64", "double", "double", "double", "string"]
    assert t.column("p_eot").null_count > 0  # only-at rows are nulls
    fast = read_predictions(out)  # vectorised path
    slow_path = tmp_path / "dict.parquet"  # a dictionary-encoded label (pandas categorical) takes the row checks
    pq.write_table(t.set_column(6, "label", pa.compute.dictionary_encode(t.column("label"))), slow_path)
    slow = read_predictions(slow_path)
    for c in ("span_index", "timestamp", "silence_dur"):
        assert np.array_equal(getattr(fast, c), getattr(slow, c))
    assert np.array_equal(np.isnan(fast.p_eot), np.isnan(slow.p_eot))
    assert list(fast.label) == list(slow.label) and list(fast.id) == list(slow.id)


def test_a_span_less_row_is_one_short_line_without_the_audio(tmp_path):
    audio = {"array": tone(2.0).tolist(), "sampling_rate": SAMPLE_RATE}
    p = tmp_path / "rows.jsonl"
    p.write_text(json.dumps({"id": "u1", "language": "en", "audio": audio}) + "\n")
    with pytest.raises(InputError) as exc:
        load_span_set(p)
    assert str(exc.value) == (f"{p}: line 1: missing field 'silence_spans' (eot-bench rows need id, language, audio, "
                              "silence_spans)")
    conv = tmp_path / "conv.jsonl"  # a conversation manifest whose audio is not a path
    conv.write_text(json.dumps({"id": "c1", "audio": audio, "duration_s": 2.0}) + "\n")
    with pytest.raises(InputError) as exc:
        load_span_set(conv, source="conversations")
    assert str(exc.value) == (f"{conv}: line 1: conversation c1: audio must be a path to an audio file (a "
                              "string), got dict")
