"""Small FDB-shaped datasets built from espeak-ng speech, for the systems/export/import/demo tests.

The dataset object follows the `duplexeval.fdb.dataset` contract (name, root, declared, samples(),
and samples with subset/id/dir/input_path/annotation_path/T/sr/read_input_16k), so the tests do not
depend on the synth module; annotation times come from espeak's exact word events.
"""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from duplexeval.audio import read_audio_16k
from duplexeval.fdb.tree import SUBSETS
from duplexeval.tts import synthesize

SR = 16000


@dataclass
class Sample:
    subset: str
    id: str
    dir: Path
    input_path: Path
    annotation_path: Path | None
    T: float
    sr: int

    def read_input_16k(self) -> np.ndarray:
        return read_audio_16k(self.input_path)


@dataclass
class Dataset:
    name: str
    root: Path
    rows: list[Sample] = field(default_factory=list)

    @property
    def declared(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.rows:
            out[s.subset] = out.get(s.subset, 0) + 1
        return out

    def samples(self, subset: str | None = None) -> list[Sample]:
        return [s for s in self.rows if subset is None or s.subset == subset]


def _z(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


def add_sample(ds: Dataset, subset: str, sid: str, audio: np.ndarray, annotation: object | None,
               sr: int = SR) -> Sample:
    d = ds.root / subset / sid
    d.mkdir(parents=True, exist_ok=True)
    if sr != SR:
        import soxr

        audio = soxr.resample(audio, SR, sr)
    sf.write(str(d / "input.wav"), audio, sr, subtype="PCM_16")
    ann = None
    name = SUBSETS[subset].annotation
    if annotation is not None and name is not None:
        ann = d / name
        ann.write_text(json.dumps(annotation, indent=1))
    s = Sample(subset, sid, d, d / "input.wav", ann, len(audio) / sr, sr)
    ds.rows.append(s)
    return s


def turn_taking(ds: Dataset, sid: str, text: str, voice: str = "en-us", rate: int = 160, tail_s: float = 6.0) -> float:
    """User turn (0.4 s lead-in), then `tail_s` of silence; returns E (end of the last word)."""
    sp = synthesize(text, voice=voice, rate=rate)
    lead = 0.4
    E = lead + sp.words[-1].end_s
    audio = np.concatenate([_z(lead), sp.audio, _z(tail_s)])
    add_sample(ds, "candor_turn_taking", sid, audio,
               [{"text": "[TURN-TAKING]", "timestamp": [round(E, 6), round(E + 0.5, 6)]}])
    return E


def interruption(ds: Dataset, sid: str, context: str, interrupt: str, voice: str = "en-us") -> tuple[float, float]:
    """Official layout: context + 7 s silence + interruption + 15 s silence; returns (S, R)."""
    c = synthesize(context, voice=voice)
    i = synthesize(interrupt, voice=voice)
    c_len = len(c.audio) / SR
    S = c_len + 7.0 + i.words[0].start_s
    R = c_len + 7.0 + i.words[-1].end_s
    audio = np.concatenate([c.audio, _z(7.0), i.audio, _z(15.0)])
    ann = [{"context": context, "interrupt": interrupt, "timestamp": [round(S, 6), round(R, 6)]}]
    add_sample(ds, "synthetic_user_interruption", sid, audio, ann)
    return S, R


def pause(ds: Dataset, sid: str, first: str, second: str, gap_s: float = 1.5,
          subset: str = "synthetic_pause_handling") -> tuple[float, float]:
    """Speech, a `gap_s` pause, more speech, 1 s tail; returns the pause (a, b)."""
    a_sp = synthesize(first)
    b_sp = synthesize(second)
    a = 0.3 + a_sp.words[-1].end_s
    b = 0.3 + len(a_sp.audio) / SR + gap_s + b_sp.words[0].start_s
    audio = np.concatenate([_z(0.3), a_sp.audio, _z(gap_s), b_sp.audio, _z(1.0)])
    add_sample(ds, subset, sid, audio, [{"text": "[PAUSE]", "timestamp": [round(a, 6), round(b, 6)]}])
    return a, b


def backchannel(ds: Dataset, sid: str, text: str) -> None:
    sp = synthesize(text)
    add_sample(ds, "icc_backchannel", sid, np.concatenate([sp.audio, _z(0.5)]), None)


def small_dataset(root: Path) -> Dataset:
    """One sample per subset (plus one extra turn-taking) - enough for export/import plumbing tests."""
    ds = Dataset("systems-test", root)
    pause(ds, "1", "I went to the shop", "and bought some bread", gap_s=1.5)
    turn_taking(ds, "1", "Can you tell me what time it is in London right now?", tail_s=4.0)
    turn_taking(ds, "2", "What is the capital city of France?", voice="en-gb", tail_s=4.0)
    interruption(ds, "1", "Please tell me a long story about a dragon.", "Wait, make it about a cat instead.")
    backchannel(ds, "1", "So yesterday I went to the market and I saw my old friend there.")
    (root / "icc_gt_distribution.json").write_text(json.dumps({"1": [0.5, 0.5]}))
    return ds


def one_sample_dataset(root: Path, T: float = 1.2) -> Path:
    """A dataset folder of one turn-taking sample: T seconds of silence."""
    d = root / "candor_turn_taking" / "1"
    d.mkdir(parents=True)
    with wave.open(str(d / "input.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.zeros(int(T * 16000), dtype="<i2").tobytes())
    (d / "turn_taking.json").write_text(json.dumps([{"text": "[TURN-TAKING]", "timestamp": [0.5, 1.0]}]))
    (root / "dataset.json").write_text(json.dumps({"name": "echo", "declared": {"candor_turn_taking": 1},
                                                   "samples": [{"subset": "candor_turn_taking", "id": "1", "T": T}]}))
    return root
