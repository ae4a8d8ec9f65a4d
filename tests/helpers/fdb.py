"""Write an FDB v1.0 tree by hand for tests: manifest.json, annotations, output.json, output.wav, asr.json.

Every hash is computed from the bytes written, so a fixture tree passes the stages' hash checks unless a
test edits a file afterwards on purpose. Reusable by any stage's tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval import audio as _audio
from duplexeval.fdb import tree as _tree
from duplexeval.jsonio import atomic_write_bytes, sha256_bytes, write_json

SR = 16000

WordSpec = tuple[str, float, float | None]


def pause_ann(*pauses: tuple[float, float]) -> list[dict[str, Any]]:
    """pause.json content: one `[PAUSE]` item per (start, end)."""
    return [{"text": "[PAUSE]", "timestamp": [a, b]} for a, b in pauses]


def turn_ann(E: float, end: float | None = None) -> list[dict[str, Any]]:
    """turn_taking.json content with the reference E = timestamp[0]."""
    return [{"text": "[TURN-TAKING]", "timestamp": [E, E + 0.4 if end is None else end]}]


def interrupt_ann(S: float, R: float, context: str = "tell me a story",
                  interrupt: str = "wait, stop") -> list[dict[str, Any]]:
    """interrupt.json content with the onset S and end R of the user's interruption."""
    return [{"context": context, "interrupt": interrupt, "timestamp": [S, R]}]


def silence(T: float) -> np.ndarray:
    """Exactly round(T*16000) zero samples."""
    return np.zeros(_audio.n_samples_for(T), dtype=np.float32)


def place(T: float, pieces: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """A T-second 16 kHz output with each (start_s, audio) piece placed at round(start_s*16000)."""
    out = silence(T)
    for start, piece in pieces:
        i = int(round(start * SR))
        n = min(len(piece), len(out) - i)
        out[i : i + n] += piece[:n]
    return out


@dataclass
class FixtureSample:
    """One sample folder. `words=None` writes no output.json (and no asr.json record); `audio=None` is silence.

    `wav=False` writes no output.wav (an ineligible capture); `annotation=None` uses no annotation file.
    """

    subset: str
    id: str
    T: float
    annotation: Any = None
    words: list[WordSpec] | None = field(default_factory=list)
    audio: np.ndarray | None = None
    eligible: bool = True
    reasons: list[str] = field(default_factory=list)
    wav: bool = True
    asr_status: str = "ok"


def transcript(words: list[WordSpec]) -> dict[str, Any]:
    """output.json content in the official shape."""
    return {"text": " ".join(w for w, _, _ in words), "chunks": [{"text": w, "timestamp": [s, e]} for w, s, e in words]}


def _write_bytes(path: Path, data: bytes) -> str:
    atomic_write_bytes(path, data)
    return sha256_bytes(data)


def write_tree(
    root: str | Path,
    samples: list[FixtureSample],
    *,
    declared: dict[str, int] | None = None,
    asr: bool = True,
    dataset: str = "hand",
) -> Path:
    """Write every sample folder, manifest.json and (unless asr=False) asr.json; returns the tree path."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    asr_samples: dict[str, Any] = {}
    for s in samples:
        d = root / s.subset / s.id
        d.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        ann_name = _tree.SUBSETS[s.subset].annotation
        if ann_name is not None and s.annotation is not None:
            files[ann_name] = _write_bytes(d / ann_name, json.dumps(s.annotation, indent=2).encode())
        if s.wav:
            wav = s.audio if s.audio is not None else silence(s.T)
            files[_tree.OUTPUT_WAV] = _audio.write_wav_pcm16(d / _tree.OUTPUT_WAV, wav)
        entries.append(
            {"subset": s.subset, "id": s.id, "T": s.T, "eligible": s.eligible, "reasons": list(s.reasons),
             "files": files}
        )
        key = f"{s.subset}/{s.id}"
        if s.words is not None:
            if s.asr_status == "ok":
                digest = _write_bytes(d / _tree.OUTPUT_JSON, json.dumps(transcript(s.words), indent=4).encode())
                rec = {"status": "ok", "output.json": digest, "error": None}
            else:
                rec = {"status": "error", "output.json": None, "error": "decoder failed"}
            if _tree.OUTPUT_WAV in files:
                rec["audio_sha256"] = files[_tree.OUTPUT_WAV]
            cut = s.annotation[0]["timestamp"][1] if s.subset == "synthetic_user_interruption" and s.annotation else 0.0
            rec["cut_s"] = cut
            asr_samples[key] = rec
    if declared is None:
        declared = {}
        for s in samples:
            declared[s.subset] = declared.get(s.subset, 0) + 1
    manifest = {
        "kind": _tree.MANIFEST_KIND,
        "schema_version": _tree.SCHEMA_VERSION,
        "dataset": {"name": dataset, "declared": declared},
        "system": {"name": "hand-made"},
        "samples": entries,
    }
    msha = write_json(root / _tree.MANIFEST_FILE, manifest)
    if asr:
        write_json(root / _tree.ASR_FILE,
                   {"manifest_sha256": msha, "backend": {"name": "hand"}, "samples": asr_samples})
    return root


def rewrite_json(path: Path, obj: Any) -> None:
    """Replace a file's content (to make its hash differ from the recorded one)."""
    Path(path).write_text(json.dumps(obj, indent=2))


def segments_from_seconds(pairs: list[tuple[float, float]]) -> list[tuple[int, int]]:
    """VAD-style sample-index segments from seconds (for injected segmenters)."""
    return [(int(round(a * SR)), int(round(b * SR))) for a, b in pairs]


class FixedSegmenter:
    """A stand-in VAD for tests: returns preset segments per sample folder name."""

    signature = {"package": "fixed-segments", "note": "test stand-in for Silero VAD"}

    def __init__(self, by_id: dict[str, list[tuple[int, int]]]) -> None:
        self.by_id = by_id
        self.calls: list[list[Path]] = []

    def __call__(self, paths: list[Path]) -> list[list[tuple[int, int]]]:
        self.calls.append(list(paths))
        return [self.by_id.get(Path(p).parent.name, []) for p in paths]
