"""`duplexeval serve pipecat`: every bad option value is one line naming the option as it is typed, exit 2,
before anything is built or bound."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli

pytest.importorskip("pipecat")


@pytest.mark.parametrize(("args", "line"), [
    (["--stop-secs", "20"], "--stop-secs must be between 0 and 10 seconds, got 20.0"),
    (["--stop-secs", "nan"], "--stop-secs must be between 0 and 10 seconds, got nan"),
    (["--stop-secs", "-0.1"], "--stop-secs must be between 0 and 10 seconds, got -0.1"),
    (["--speech-timeout", "11"], "--speech-timeout must be between 0 and 10 seconds, got 11.0"),
    (["--allow-interruptions", "maybe"], "--allow-interruptions 'maybe': expected true or false"),
    (["--turn", "llm"], "--turn must be one of vad, smart-turn, got 'llm'"),
    (["--transport", "sip"], "--transport must be one of telephony, pipecat-ws, webrtc, got 'sip'"),
    (["--think-ms", "70000"], "--think-ms must be between 0 and 60000, got 70000"),
    (["--sample-rate", "22050"], "--sample-rate must be 8000 or 16000 (Silero's rates), got 22050"),
    (["--reply", "  "], "--reply must not be empty"),
])
def test_a_bad_option_is_one_line_naming_it(args: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["serve", "pipecat", *args], capsys)
    assert code == 2 and out == ""
    assert err == f"duplexeval: error: {line}\n"
