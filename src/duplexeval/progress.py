"""Terminal output shared by every stage: the one progress bar, the closing timing line, a table console.

One place so that every command looks the same: a bar on stderr that ends showing the elapsed time
(not "0:00:00 remaining"), a last line `STAGE: done in 1.2 s; 30.0 s of audio, 25.0x real time`, and
tables printed at the terminal's width, or a wide fixed width when piped (so a log never wraps them).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

PIPED_WIDTH = 200  # columns for tables written to a file or a pipe


def table_console(file: TextIO | None = None, stderr: bool = False) -> Any:
    """A rich Console for tables: the terminal's width on a TTY; piped, tables get PIPED_WIDTH columns and
    plain text lines are not wrapped at all (a log keeps one line per line)."""
    console = Console(file=file, stderr=stderr)
    if console.is_terminal:
        return console
    return Console(file=file, stderr=stderr, width=PIPED_WIDTH, soft_wrap=True)  # text lines: never wrapped


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True, done: int = 0) -> Iterator[Callable[..., None]]:
    """A rich bar on stderr (a no-op when disabled); yields `advance(description="", n=1)`.

    While running it shows the time remaining; once every item is done it shows the elapsed time.
    """
    if not enabled:
        yield lambda *_a, **_k: None
        return

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeRemainingColumn(elapsed_when_finished=True),
        console=Console(stderr=True), transient=False,
    ) as prog:  # fmt: skip
        task = prog.add_task(label, total=total, completed=done)

        def advance(description: str = "", n: int = 1) -> None:
            prog.update(task, advance=n, description=f"{label} {description}".strip())

        try:
            yield advance
        except BaseException:
            prog.live.transient = True  # a failed stage leaves only its one error line, no half bar
            raise


def status_lines(stage: str | None, enabled: bool = True) -> Callable[[str], None]:
    """A printer of progress lines on stderr, `STAGE: message` (just the message when `stage` is None); a no-op
    when disabled. For stages whose steps are few and long (a subset, a system), where a bar says less."""

    def say(message: str) -> None:
        if enabled:
            print(message if stage is None else f"{stage}: {message}", file=sys.stderr, flush=True)

    return say


def timing_line(stage: str, seconds: float, audio_s: float | None = None) -> str:
    """`STAGE: done in X s; A s of audio, R x real time` (real-time factor = audio seconds / wall seconds)."""
    line = f"{stage}: done in {seconds:.1f} s"
    if audio_s is not None and audio_s > 0:
        rtf = audio_s / max(seconds, 1e-9)
        line += f"; {audio_s:.1f} s of audio, {rtf:.1f}x real time"
    return line


class StageClock:
    """Wall time of one stage from construction; `line(audio_s)` is the closing timing line."""

    def __init__(self, stage: str) -> None:
        self.stage, self.t0 = stage, time.perf_counter()

    def line(self, audio_s: float | None = None) -> str:
        return timing_line(self.stage, time.perf_counter() - self.t0, audio_s)

    def say(self, audio_s: float | None = None, file: TextIO | None = None) -> None:
        """Print the closing line on stderr (it never mixes with a report or JSON on stdout)."""
        print(self.line(audio_s), file=file or sys.stderr, flush=True)


def wav_seconds(paths: Iterable[str | Path]) -> float:
    """Total duration of the given wav files (header reads only)."""
    from duplexeval.audio import audio_info  # lazy: the shared layer loads no sound-file library at import

    return float(sum(frames / rate for frames, rate in map(audio_info, paths)))


def text_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None,
               width: int = PIPED_WIDTH) -> str:
    """A plain-text table with aligned columns (rich, no colour, no frame), for reports returned as strings.

    `right` holds the column indexes to right-align (numbers); the rest are left-aligned.
    """
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, h in enumerate(headers):
        t.add_column(h, justify="right" if right and i in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    buf = io.StringIO()
    Console(file=buf, width=width, no_color=True, highlight=False, emoji=False, markup=False).print(t)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())
