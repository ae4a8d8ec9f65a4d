"""Run the `duplexeval` command line in-process: (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from duplexeval.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err
