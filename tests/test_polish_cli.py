"""Issue 10 "polish a user notices": progress bars, timing lines, -q everywhere, import hints, --declare per subset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fdb_fixtures import FixtureSample, pause_ann, turn_ann, write_tree
from systems_fixtures import Dataset, small_dataset
from test_import import make_outputs

from duplexeval.errors import InputError


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return small_dataset(tmp_path_factory.mktemp("dataset"))


def _two_subset_tree(root: Path) -> Path:
    return write_tree(root, [
        FixtureSample("candor_turn_taking", "1", 3.0, annotation=turn_ann(1.0), words=[("fine", 1.5, 1.8)]),
        FixtureSample("synthetic_pause_handling", "1", 4.0, annotation=pause_ann((1.0, 2.0)), words=[("ok", 2.5, 2.9)]),
    ], asr=False)


def test_progress_bar_ends_with_elapsed_time_not_zero_remaining() -> None:
    from rich.progress import TimeRemainingColumn

    import duplexeval.progress as P

    seen: list[object] = []
    orig = TimeRemainingColumn.__init__

    def spy(self, *a, **k):
        seen.append(k.get("elapsed_when_finished"))
        orig(self, *a, **k)

    TimeRemainingColumn.__init__ = spy  # type: ignore[method-assign]
    try:
        with P.progress_bar(2, "x", True) as advance:
            advance()
            advance("done")
    finally:
        TimeRemainingColumn.__init__ = orig  # type: ignore[method-assign]
    assert seen == [True]


def test_one_progress_helper() -> None:
    """export, asr and eot predict share duplexeval.progress.progress_bar (no private copies)."""
    import inspect

    import duplexeval.eot.predict_stage as pred
    import duplexeval.fdb.asr_stage as asr
    import duplexeval.fdb.export_stage as exp
    from duplexeval.progress import progress_bar

    assert exp.progress_bar is progress_bar and asr.progress_bar is progress_bar
    assert "progress_bar(" in inspect.getsource(pred._Progress) and "rich.progress" not in inspect.getsource(pred)
    bar = pred._Progress(2, True)
    bar.start()
    bar.advance(5)
    bar.advance(5)
    bar.stop()
    assert bar.done == 2


def test_timing_line() -> None:
    from duplexeval.progress import timing_line

    assert timing_line("asr", 2.0, 30.0) == "asr: done in 2.0 s; 30.0 s of audio, 15.0x real time"
    assert timing_line("asr", 2.0, 0.0) == "asr: done in 2.0 s"


def test_asr_quiet_and_timing_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _two_subset_tree(tmp_path / "t")
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x"], capsys)
    assert rc == 0, err
    assert "asr: done in " in err and "7.0 s of audio" in err and "x real time" in err
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x", "-q", "--force"], capsys)
    quiet_err = "asr: exit 0: 2 eligible samples' transcriptions, none failed\n"  # -q keeps only the status line
    assert rc == 0 and err == quiet_err and "2 ok" in out
    rc, out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "--declare", "x", "--quiet", "--force"], capsys)
    assert rc == 0 and err == quiet_err


def test_declare_per_subset_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _two_subset_tree(tmp_path / "t")
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q",
                             "--declare", "candor_turn_taking=parakeet-tdt-0.6b-v2", "--declare", "whisperx"], capsys)
    assert rc == 0, err
    backend = json.loads((tree / "asr.json").read_text())["backend"]
    assert backend["per_subset"] == {"candor_turn_taking": "parakeet-tdt-0.6b-v2", "synthetic_pause_handling": "whisperx"}
    assert backend["name"] == "candor_turn_taking=parakeet-tdt-0.6b-v2; synthetic_pause_handling=whisperx"
    # one name for every subset keeps the plain signature
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q", "--force", "--declare", "whisperx"], capsys)
    backend = json.loads((tree / "asr.json").read_text())["backend"]
    assert rc == 0 and backend["name"] == "whisperx" and "per_subset" not in backend


def test_declare_per_subset_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.fdb.asr_declare import parse_declare

    tree = _two_subset_tree(tmp_path / "t")
    rc, _out, err = run_cli(["fdb", "asr", str(tree), "--backend", "import", "-q",
                             "--declare", "candor_turn_taking=parakeet"], capsys)
    assert rc == 2 and "no ASR named for subset synthetic_pause_handling" in err and err.count("\n") == 1
    assert not (tree / "asr.json").exists()
    with pytest.raises(InputError, match="unknown subset 'candor'"):
        parse_declare(["candor=x"])
    with pytest.raises(InputError, match="two names"):
        parse_declare(["a", "b"])


def test_import_explains_ineligible_samples(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.import_stage as imp

    monkeypatch.setattr(imp, "resolve_dataset", lambda d: ds)
    outputs = make_outputs(ds, tmp_path / "outputs")
    rc, out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "t")], capsys)
    assert rc == 1  # synthetic_user_interruption has no eligible sample: the default --min-eligible rule
    assert err.splitlines()[-1].startswith("import: exit 1: synthetic_user_interruption: 0/1 eligible, below --min-eligible")
    assert "ineligible, missing_output: 1 (synthetic_user_interruption/1)" in out
    assert f"next: put the model's output.wav at {outputs}/<subset>/<id>/output.wav" in out
    assert "ineligible, length_mismatch: 1 (candor_turn_taking/2)" in out
    assert "next: output.wav must last T seconds" in out
    assert "import: done in " in err and "s of audio" in err


def test_import_ignore_output_json(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import duplexeval.fdb.import_stage as imp

    monkeypatch.setattr(imp, "resolve_dataset", lambda d: ds)
    outputs = make_outputs(ds, tmp_path / "outputs")
    assert (outputs / "candor_turn_taking" / "1" / "output.json").is_file()
    rc, _out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "t"),
                             "-q", "--ignore-output-json", "--min-eligible", "0"], capsys)
    assert rc == 0, err
    assert not (tmp_path / "t" / "candor_turn_taking" / "1" / "output.json").exists()
    manifest = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert manifest["system"]["params"]["ignore_output_json"] is True
    rc, _out, err = run_cli(["fdb", "import", "--dataset", "x", "--outputs", str(outputs), "--out", str(tmp_path / "u"), "-q",
                             "--min-eligible", "0"], capsys)
    assert rc == 0 and (tmp_path / "u" / "candor_turn_taking" / "1" / "output.json").is_file()


LONG = [("yes", 1.5, 1.8), ("I", 1.9, 2.0), ("can", 2.1, 2.4), ("help", 2.5, 3.2), ("you", 3.3, 3.6)]


def test_evaluate_progress_lines_round_floats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    tree = write_tree(tmp_path / "t", [
        FixtureSample("candor_turn_taking", "1", 6.0, annotation=turn_ann(1.0), words=LONG),
        FixtureSample("candor_turn_taking", "2", 6.0, annotation=turn_ann(1.0), words=LONG),
        FixtureSample("candor_turn_taking", "3", 6.0, annotation=turn_ann(1.0), words=[]),
    ])
    rc, _out, err = run_cli(["fdb", "evaluate", str(tree)], capsys)
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "evaluated 3" in x)
    assert "Average take turn 0.6667" in line, line
    assert not re.search(r"\d\.\d{5,}", line), line  # no 0.6666666666666666
    assert "evaluate: done in " in err.splitlines()[-2]
    assert err.splitlines()[-1].startswith("evaluate: exit 0: 3/3 evaluated in 1 subset")


def _commands():
    import typer

    from duplexeval.cli import _make_app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), cmd

    return list(walk(typer.main.get_command(_make_app()), []))


def test_every_stage_with_progress_takes_dash_q() -> None:
    """`-q/--quiet` means "no progress" on every command that shows progress (fdb asr and eot predict included)."""
    with_progress = []
    for path, cmd in _commands():
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        if opts & {"--progress", "--no-progress", "--quiet"}:
            with_progress.append(path)
            assert {"-q", "--quiet"} <= opts, path
    assert {"fdb asr", "fdb export", "fdb import", "fdb evaluate", "fdb synth", "eot predict", "demo"} <= set(with_progress)


def test_demo_commands_take_out_option() -> None:
    paths = dict(_commands())
    for name in ("demo", "controller demo"):
        assert any("--out" in p.opts for p in paths[name].params), name


def test_progress_bar_stays_on_success_and_vanishes_on_failure(capsys: pytest.CaptureFixture[str]) -> None:
    from duplexeval.progress import progress_bar

    with progress_bar(2, "stage", True) as advance:
        advance()
        advance()
    err = capsys.readouterr().err
    assert "stage" in err and "2/2" in err and "-:--:--" not in err
    with pytest.raises(ValueError), progress_bar(3, "stage", True) as advance:
        advance()
        raise ValueError("bad sample")
    assert capsys.readouterr().err.strip() == ""  # the stage's one error line is all the user sees
