"""The shared progress layer (duplexeval.progress): the bar, the timing line, the table console, and `-q` / `--out`
on every command that shows progress or writes a demo."""

from __future__ import annotations

from pathlib import Path

import pytest


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
    assert ({"fdb asr", "fdb export", "fdb import", "fdb evaluate", "fdb synth", "eot predict", "demo"}
            <= set(with_progress))


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


def test_table_console_is_wide_when_piped(tmp_path: Path) -> None:
    from duplexeval.progress import PIPED_WIDTH, table_console

    with open(tmp_path / "log.txt", "w") as f:
        assert table_console(file=f).width == PIPED_WIDTH
