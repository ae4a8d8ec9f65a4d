"""Dialogue case files (spec 004): our JSONL, the reproduction's tape shape, and every way a file can be bad."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from duplexeval.dialogue.cases import MiUCase, UiMCase, strip_trailing_punctuation
from duplexeval.dialogue.load import load_cases
from duplexeval.dialogue.synth_stage import caseset_text, generate
from duplexeval.errors import InputError
from tests.helpers import SRC as SRC_DIR

SRC = str(SRC_DIR)


def miu(**over):
    case = {
        "family": "MiU",
        "id": "m1",
        "context": [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}],
        "chunks": [
            {"text": "the sun rises", "start_s": 0.0, "end_s": 0.64},
            {"text": "in the west,", "start_s": 0.64, "end_s": 1.28},
            {"text": "right?", "start_s": 1.28, "end_s": 1.92},
        ],
        "boundaries": [1, 2],
        "expected": {"cut_in_from": 0, "reply_cues": ["east"]},
    }
    case.update(over)
    return case


def uim(**over):
    case = {
        "family": "UiM",
        "id": "u1",
        "machine": [{"text": "your flight leaves", "start_s": 0.0, "end_s": 0.64},
                    {"text": "at nine", "start_s": 0.64, "end_s": 1.28}],
        "interruption": {"reason": "denial", "chunks": [{"text": "no at ten", "start_s": 0.64, "end_s": 1.28}]},
        "expected": {"behaviour": "yield", "reply_cues": ["ten"]},
    }
    case.update(over)
    return case


def write_lines(path: Path, objs) -> Path:
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs), encoding="utf-8")
    return path


def test_valid_jsonl_loads_with_punctuation_stripped(tmp_path):
    cs = load_cases(write_lines(tmp_path / "c.jsonl", [miu(), uim()]))
    assert [c.family for c in cs.cases] == ["MiU", "UiM"]
    m = cs.cases[0]
    assert isinstance(m, MiUCase)
    assert [c.text for c in m.chunks] == ["the sun rises", "in the west", "right"]  # trailing punctuation gone
    assert m.end_s == 1.92
    assert cs.n_miu == 1 and cs.n_uim == 1 and cs.shape == "jsonl" and len(cs.sha256) == 64


def test_strip_trailing_punctuation():
    assert strip_trailing_punctuation("in the west.") == "in the west"
    assert strip_trailing_punctuation("what?!  ") == "what"
    assert strip_trailing_punctuation("it's 1,000") == "it's 1,000"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"family": "MiU", "id": "m1"', "line 2: invalid JSON"),
        (json.dumps(miu(chunks=[])), "line 2: case 'm1': 'chunks' list should have at least 1 item"),
        (json.dumps(miu(boundaries=[0, 1])), "the last chunk (2) must be the last boundary"),
        (json.dumps(miu(boundaries=[1, 1, 2])), "strictly increasing"),
        (json.dumps(miu(boundaries=[1, 5])), "boundaries must index chunks 0..2"),
        (json.dumps(miu(expected={"cut_in_from": 2, "reply_cues": []})),
         "expected.cut_in_from 2 is not a boundary index"),
        (json.dumps(miu(id="../etc")), "case '../etc': 'id' must be 1-128 letters, digits, '.', '_' or '-'"),
        (json.dumps(miu(family="XiY")), "'family' must be 'MiU' or 'UiM'"),
        (json.dumps(miu(extra=1)), "'extra' is not a known field"),
        (json.dumps(miu()).replace('"start_s": 0.64', '"start_s": "0.64"', 1),
         "'chunks[1].start_s' must be a finite number, got '0.64'"),
        (json.dumps(miu()).replace('"end_s": 0.64', '"end_s": Infinity', 1),
         "line 2: Infinity is not a number JSON allows"),
        (json.dumps(miu()).replace('"end_s": 1.92', '"end_s": 1e303', 1),
         "'chunks[2].end_s' is outside the accepted range [0, 86400]"),
        (json.dumps(miu(id="a..b")), "without '..'"),
        (json.dumps(miu(context=[{"role": "user", "text": "hi\u0000there"}])),
         "must not contain control characters, got 'hi\\x00there'"),
        (json.dumps(miu()).replace('"boundaries": [1, 2]', '"boundaries": [1, true]', 1), "'boundaries[1]'"),
        (json.dumps(miu()).replace('"end_s": 1.28', '"end_s": 0.5', 1), "ends (0.5) before it starts (0.64)"),
        (json.dumps(miu(chunks=[{"text": "a", "start_s": 0, "end_s": 1}, {"text": "b", "start_s": 0.5, "end_s": 1.5}],
                        boundaries=[1])),
         "utterance chunk 1 starts at 0.5 before chunk 0 ends at 1"),
        (json.dumps(miu(chunks=[{"text": "?!", "start_s": 0, "end_s": 1}], boundaries=[0])),
         "empty once trailing punctuation is stripped"),
        (json.dumps(uim(interruption={"reason": "anger", "chunks": [{"text": "x", "start_s": 0.1, "end_s": 0.2}]})),
         "interruption.reason"),
        (json.dumps(uim(interruption={"reason": "noise", "chunks": [{"text": "x", "start_s": 5.0, "end_s": 6.0}]})),
         "outside the machine's utterance"),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_bad_case_line_names_file_line_and_problem(tmp_path, line, problem):
    path = write_lines(tmp_path / "bad.jsonl", [uim(id="ok"), line])
    with pytest.raises(InputError) as err:
        load_cases(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: line 2"), msg
    assert problem in msg, msg
    assert "\n" not in msg


def test_duplicate_ids_and_empty_file(tmp_path):
    with pytest.raises(InputError, match=r"line 2: duplicate case id 'm1' \(first at .*line 1\)"):
        load_cases(write_lines(tmp_path / "d.jsonl", [miu(), miu()]))
    with pytest.raises(InputError, match="no cases"):
        load_cases(write_lines(tmp_path / "e.jsonl", []))
    with pytest.raises(InputError, match="file not found"):
        load_cases(tmp_path / "missing.jsonl")


def test_header_line_is_checked(tmp_path):
    text = caseset_text(0, 2, 1)
    first = json.loads(text.splitlines()[0])
    assert first["kind"] == "duplexeval.dialogue.caseset" and "not the paper's" in first["note"]
    assert len(load_cases(write_lines(tmp_path / "s.jsonl", text.splitlines())).cases) == 2 + 4
    wrong = {"kind": "duplexeval.dialogue.report", "schema_version": 1}
    with pytest.raises(InputError, match="is a 'duplexeval.dialogue.report' file"):
        load_cases(write_lines(tmp_path / "w.jsonl", [wrong, miu()]))


def test_cli_bad_case_file_exits_2_with_one_line(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", [miu(), json.dumps(miu(id="m2", boundaries=[0]))])
    proc = subprocess.run(
        [sys.executable, "-m", "duplexeval", "dialogue", "run", "--cases", str(path), "--system", "eager", "--out",
         str(tmp_path / "r")],
        capture_output=True, text=True, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, timeout=60, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"duplexeval: error: {path}: line 2: case 'm2':"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / "cases.jsonl").exists()


# ---------------------------------------------------------------------------------------------
# The reproduction's tape shape


def tape_items():
    miu_tape = {
        "id": "test_MiU_7",
        "tape": [
            "<interlocutor>Hi there.", "[S.SPEAK]", "Hello!", "How can I help?", "[S.LISTEN.NATURAL]", "<SIL>",
            "<interlocutor>I think the sun rises in the west,", "[C.LISTEN]", "<interlocutor>so when is sunrise?",
            "[S.SPEAK]",
        ],
        "eval_targets": [7, 9],
    }
    uim_tape = {
        "id": "test_UiM_denial_3",
        "tape": [
            "<interlocutor>Book me a flight to Boston.", "[S.SPEAK]", "Sure,", "[C.SPEAK]",
            "your flight to Boston leaves at nine", "<interlocutor>No, Austin,", "[C.SPEAK]",
            "<interlocutor>not Boston.", "[C.SPEAK]",
        ],
        "eval_targets": [6, 8],
    }
    return [miu_tape, uim_tape]


def test_tape_shape_is_read(tmp_path):
    path = tmp_path / "tapes.json"
    path.write_text(json.dumps(tape_items()), encoding="utf-8")
    cs = load_cases(path)
    assert cs.shape == "tape"
    m, u = cs.cases
    assert isinstance(m, MiUCase) and isinstance(u, UiMCase)
    assert [c.text for c in m.chunks] == ["I think the sun rises in the west", "so when is sunrise"]
    assert m.boundaries == [0, 1]
    assert [(t.role, t.text) for t in m.context] == [("user", "Hi there."), ("assistant", "Hello! How can I help?")]
    assert m.chunks[0].end_s == pytest.approx(8 * 0.32)  # 8 words at 0.32 s
    assert u.interruption.reason == "denial"
    assert [c.text for c in u.machine] == ["Sure", "your flight to Boston leaves at nine"]
    assert u.interruption.start_s == u.machine[-1].end_s
    assert [c.text for c in u.interruption.chunks] == ["No, Austin", "not Boston"]
    assert [(t.role, t.text) for t in u.context] == [("user", "Book me a flight to Boston.")]


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda it: it.update(eval_targets=[]), "'eval_targets' must be a non-empty list"),
        (lambda it: it.update(eval_targets=[9, 7]), "must be increasing indices"),
        (lambda it: it.update(eval_targets=[3]), "tape[2] before eval target 3 is not a user clause"),
        (lambda it: it.update(id="test_XX_1"), "cannot tell the family"),
        (lambda it: it.pop("tape"), "needs a string 'id' and a 'tape' list"),
    ],
)
def test_bad_tape_item(tmp_path, mutate, problem):
    items = tape_items()
    mutate(items[0])
    path = tmp_path / "t.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_cases(path)
    assert str(err.value).startswith(f"{path}: item 0") and problem in str(err.value), str(err.value)


def test_generator_is_deterministic_and_varied():
    assert caseset_text(3, 40, 8) == caseset_text(3, 40, 8)
    assert caseset_text(3, 40, 8) != caseset_text(4, 40, 8)
    cases = generate(0)
    mius = [c for c in cases if isinstance(c, MiUCase)]
    uims = [c for c in cases if isinstance(c, UiMCase)]
    assert len(mius) == 400 and len(uims) == 400
    kinds = {c.expected.kind for c in mius if c.expected}
    assert kinds == {"error", "informative", "complete"}
    assert all(len(c.boundaries) >= 2 for c in mius)  # every MiU case has a clause boundary before the end
    assert len({" ".join(ch.text for ch in c.chunks) for c in mius}) > 150
    for reason in ("noise", "denial", "affirmation", "shift"):
        texts = {c.interruption.text for c in uims if c.interruption.reason == reason}
        assert len(texts) >= 4, reason
    # chunk ends fall on the 640 ms ASR ticks
    assert all(abs(ch.end_s / 0.64 - round(ch.end_s / 0.64)) < 1e-6 for c in mius for ch in c.chunks)


def test_tape_items_as_jsonl_lines(tmp_path):
    path = write_lines(tmp_path / "tapes.jsonl", [*tape_items(), miu(id="ours")])
    cs = load_cases(path)
    assert [c.id for c in cs.cases] == ["test_MiU_7", "test_UiM_denial_3", "ours"]
    bad = tape_items()[0]
    bad["eval_targets"] = [3]
    with pytest.raises(InputError, match=r"line 1: case 'test_MiU_7': tape\[2\] before eval target 3"):
        load_cases(write_lines(tmp_path / "bad.jsonl", [bad]))


def test_synth_is_bounded_and_shows_progress(tmp_path, capsys):
    from duplexeval.cli import main

    out = tmp_path / "c.jsonl"
    with pytest.raises(SystemExit) as exc:
        main(["dialogue", "synth", "--out", str(out), "--n-miu", "1000000000"])
    assert exc.value.code == 2 and not out.exists()
    assert capsys.readouterr().err == (
        "duplexeval: error: --n-miu 1000000000 and --n-uim 100 make 1,000,000,400 cases (1,000,000,000 MiU + 4 x 100 "
        "UiM); at most 100,000 are made in one set\n")
    with pytest.raises(InputError, match="at most 100,000"):
        generate(0, 0, 25_001)
    with pytest.raises(SystemExit) as exc:
        main(["dialogue", "synth", "--out", str(out), "--n-miu", "3", "--n-uim", "1"])
    assert exc.value.code == 0
    err = capsys.readouterr().err
    assert "synth" in err and "7/7" in err  # the progress bar, on stderr
    with pytest.raises(SystemExit):
        main(["dialogue", "synth", "--out", str(out), "--n-miu", "3", "--n-uim", "1", "-q"])
    # -q: the status line only
    assert capsys.readouterr().err == f"dialogue synth: exit 0: 7 cases in {out} (no rule beyond bad input)\n"
    assert len(load_cases(out).cases) == 7
