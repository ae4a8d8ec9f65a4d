"""`systems check`, `eot check`, and `module:Class` specs found in the current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from duplexeval.errors import InputError
from duplexeval.fdb.system_check import CheckResult, outside_speech
from duplexeval.registry import import_object
from tests.helpers.cli import run_cli

TONE = '''
from dataclasses import dataclass
import numpy as np
from duplexeval.audio import to_pcm16
from duplexeval.systems.base import OutputChunk


@dataclass
class Tone:
    """Answers every sample with a 2 s tone at 3.6 s."""
    name: str = "tone"
    def params(self): return {}
    def version(self): return "1"
    async def open_session(self, info): return Session()


class Session:
    def __init__(self):
        tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(32000) / 16000)
        self.out = [OutputChunk(to_pcm16(tone.astype(np.float32)).astype("<i2").tobytes(), 16000, 3.6)]
    async def push_input(self, frame, t_s): pass
    async def poll_output(self, t_s):
        ready = [x for x in self.out if x.emitted_at_s <= t_s]
        self.out = [x for x in self.out if x.emitted_at_s > t_s]
        return ready
    async def close(self): pass


class Ungated:
    """An ASR that is not gated by a VAD: every 80 ms of sound is an "mm" (what the tone got in the wild)."""
    name = "ungated"
    def signature(self): return {"name": "ungated", "version": "1"}
    def transcribe(self, audio16k, offset_s=0.0):
        from duplexeval.asr.base import Word
        n = 1280
        return [Word("mm", offset_s + k * 0.08, offset_s + k * 0.08 + 0.06) for k in range(audio16k.size // n)
                if float(np.sqrt(np.mean(audio16k[k * n:(k + 1) * n] ** 2))) > 1e-3]


class Constant:
    """An EOT detector that does not listen."""
    def predict_batch(self, items): return [0.5 for _ in items]
'''


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the user's module `mine.py`, as the current folder (not on sys.path)."""
    (tmp_path / "mine.py").write_text(TONE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    return tmp_path


def test_a_module_in_the_current_folder_is_found(here: Path) -> None:
    assert import_object("mine:Tone", "system").__name__ == "Tone"  # type: ignore[attr-defined]
    with pytest.raises(InputError, match=r"cannot import module 'nothere' .*looked on the import path and in "
                                         r"the current folder .*: run from the folder that holds nothere.py"):
        import_object("nothere:X", "system")


def test_words_outside_speech_are_counted() -> None:
    # b; c is half in (0.1 s long)
    assert outside_speech([("a", 1.0, 1.2), ("b", 3.0, 3.1), ("c", 1.95, None)], [(0.9, 2.0)]) == 1
    r = CheckResult("s", "x/1", 10.0, 3.0, True, [], onset_s=3.6, sound_s=2.0, words=[("mm", 3.6, 3.7)],
                    outside_words=1)
    assert [w.split(":")[0] for w in r.warnings()] == ["the output has sound but the VAD finds no speech in it",
                                                       "the ASR heard 1 of 1 words in audio the VAD calls non-speech "
                                                       "(a tone, noise or music?)"]


def test_systems_check_warns_about_a_tone_and_the_words_an_ungated_asr_hears(
    here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["systems", "check", "mine:Tone", "--backend", "mine:Ungated"], capsys)
    assert code == 1, err
    assert "sound: onset 3.60 s (+0.56 s after the user's turn end), 2.00 s above -60 dBFS" in out
    assert "speech (Silero VAD): 0 segment(s)" in out and "ASR (ungated): 25 word(s)" in out
    assert "warning: the ASR heard 25 of 25 words in audio the VAD calls non-speech" in out
    assert err.splitlines()[-1].startswith("systems check: exit 1: the output has sound but the VAD finds no speech in "
                                           "it; the ASR heard")


def test_eot_check_reports_and_warns(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["eot", "check", "silence"], capsys)
    assert code == 0 and "note: at equal silence the end of turn scores no higher than the pauses" in out, err
    code, out, err = run_cli(["eot", "check", "mine:Constant"], capsys)
    assert code == 1 and "every score is 0.500: the detector does not react to the audio" in out
