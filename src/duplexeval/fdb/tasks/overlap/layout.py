"""The official FDB v1.5 dataset layout: `v1_5/<subset>/<id>/{input.wav, clean_input.wav, metadata.json}`.

Loading checks what every later stage relies on, with one-line errors naming the file and the sample, as the
v1.0 loader does: safe sample ids, both inputs present, readable and non-empty, and `metadata.json` with its
overlap window inside `input.wav`. The root may be the `v1_5` folder itself or the folder holding it, and each
subset may be nested once more (`<subset>/<subset>/<id>`), as the published archives are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.audio import audio_info, read_audio_16k
from duplexeval.errors import InputError
from duplexeval.fdb.tasks.overlap.annotation import (
    CLEAN_INPUT_FILE,
    INPUT_FILE,
    METADATA_FILE,
    V15_DIR,
    Metadata,
    check_window,
)
from duplexeval.fdb.tasks.overlap.scenarios import SCENARIOS, SUBSET_ORDER
from duplexeval.fdb.tree import validate_sample_id
from duplexeval.jsonio import read_json, sha256_bytes
from duplexeval.schemas import validate

__all__ = ["CLEAN_INPUT_FILE", "INPUT_FILE", "METADATA_FILE", "V15_DIR", "Metadata", "OverlapSample", "check_metadata",
           "load_samples"]


@dataclass(frozen=True)
class OverlapSample:
    """One v1.5 input sample: both inputs (own rates and lengths) and its checked metadata."""

    subset: str
    id: str
    dir: Path
    input_path: Path
    clean_input_path: Path
    metadata_path: Path
    T: float
    T_clean: float
    sr: int
    sr_clean: int
    metadata: Metadata
    metadata_sha256: str

    @property
    def key(self) -> str:
        return f"{self.subset}/{self.id}"

    def read_input_16k(self) -> Any:
        """input.wav as mono float32 at 16 kHz."""
        return read_audio_16k(self.input_path)

    def read_clean_input_16k(self) -> Any:
        """clean_input.wav as mono float32 at 16 kHz."""
        return read_audio_16k(self.clean_input_path)


def id_key(sid: str) -> tuple[int, int, str]:
    """Natural order of sample ids: digit ids by value first, then the others by name."""
    return (0, int(sid), "") if sid.isdigit() else (1, 0, sid)


def check_metadata(obj: Any, T: float, where: str) -> Metadata:
    """The typed metadata after its checks against the input length T (seconds); InputError naming `where`."""
    return check_window(validate(obj, Metadata, where), T, where)


def _input(d: Path, name: str, where: str) -> tuple[Path, int, int]:
    path = d / name
    if not path.is_file():
        raise InputError(f"{path}: {where}: missing {name}")
    frames, sr = audio_info(path)
    if frames <= 0 or sr <= 0:
        raise InputError(f"{path}: {where}: {name} is empty")
    return path, int(frames), int(sr)


def load_sample(subset: str, d: Path, where_root: str) -> OverlapSample:
    """One sample folder, fully checked."""
    sid = validate_sample_id(d.name, f"{where_root}: {subset}")
    where = f"sample {subset}/{sid}"
    inp, n, sr = _input(d, INPUT_FILE, where)
    clean, n_clean, sr_clean = _input(d, CLEAN_INPUT_FILE, where)
    md_path = d / METADATA_FILE
    if not md_path.is_file():
        raise InputError(f"{md_path}: {where}: missing {METADATA_FILE}")
    raw = md_path.read_bytes()
    T = n / sr
    md = check_metadata(read_json(md_path), T, f"{md_path}: {where}")
    return OverlapSample(subset, sid, d, inp, clean, md_path, T, n_clean / sr_clean, sr, sr_clean, md, sha256_bytes(raw))


def subset_dirs(root: Path) -> dict[str, Path]:
    """The v1.5 subset folders under `root` (or `root/v1_5`), at either nesting depth.

    A folder whose name differs from a subset's only in case or '-' is refused rather than skipped.
    """
    base = root / V15_DIR if (root / V15_DIR).is_dir() else root
    names = {p.name for p in base.iterdir() if p.is_dir()}
    found: dict[str, Path] = {}
    for subset in SUBSET_ORDER:
        near = sorted(n for n in names if n != subset and n.lower().replace("-", "_") == subset)
        if near:
            raise InputError(f"{base / near[0]}: folder name differs from the subset {subset!r} only in case or "
                             f"'-'; rename it to {subset} (subset folder names are exact)")
        d = base / subset
        if d.is_dir():
            found[subset] = d / subset if (d / subset).is_dir() else d
    return found


def load_samples(root: str | os.PathLike[str]) -> list[OverlapSample]:
    """Every sample of a v1.5 folder, subsets in canonical order and ids in natural order; nothing skipped."""
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"{base}: dataset folder not found")
    dirs = subset_dirs(base)
    if not dirs:
        raise InputError(f"{base}: no FDB v1.5 subset folders found (expected some of {', '.join(SUBSET_ORDER)})")
    out: list[OverlapSample] = []
    for subset, sdir in dirs.items():
        kids = sorted((p for p in sdir.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: id_key(p.name))
        out.extend(load_sample(subset, k, str(base)) for k in kids)
    return out


def declared_sizes() -> dict[str, int]:
    """The published size of each subset."""
    return {s: SCENARIOS[s].declared for s in SUBSET_ORDER}
