"""One opened sample of a tree: its files read once, each checked against the hash its record names.

An `OpenedSample` is what every stage after ASR works on: the manifest entry, the sample's asr.json record, its
annotation (raw JSON and the task's typed record), its transcript (words and text), its output audio and any other
file the manifest vouches for (`read`, `read_json`). Each file is read on first use and kept; a missing, changed or
malformed one is one line `PATH: sample SUBSET/ID: problem`. Audio that a later step reads (the VAD) is handed on as
a `SampleAudio` instead: read when that step gets to it, checked against the hash recorded when the sample was
opened, and not kept, so a whole tree's opened samples hold no audio.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplexeval.errors import InputError
from duplexeval.fdb.transcript import Word, parse_output_json
from duplexeval.fdb.verified import parse_json, read_verified
from duplexeval.schemas import validate
from duplexeval.schemas.fdb_names import ASR_FILE, MANIFEST_FILE, OUTPUT_JSON, OUTPUT_WAV
from duplexeval.units import to_us

if TYPE_CHECKING:  # types only: fdb.tree imports the task registry, which imports this module
    import numpy as np

    from duplexeval.fdb.tree import AsrSample, SampleEntry


@dataclass(frozen=True)
class SampleAudio:
    """One audio file of an opened sample, not read yet. `read_16k` (called by a VAD worker when it gets to the
    sample) reads the file, checks it against the hash recorded when the sample was opened (a file changed since is
    one line) and decodes it through `duplexeval.audio`; nothing is kept. A path and a hash: cheap to hold for every
    sample of a tree and to send to a worker process."""

    path: Path
    sha256: str | None  # None: the record has no hash for it (then only its presence is checked)
    sample: str  # SUBSET/ID, for messages
    recorded_in: str = MANIFEST_FILE

    def read_bytes(self) -> bytes:
        """The file's bytes, checked against `sha256`."""
        return read_verified(self.path, self.sha256, self.sample, self.recorded_in)

    def read_16k(self) -> np.ndarray:
        """The samples as stored (int16 for PCM16, else float32; mono 16 kHz or an InputError naming the file)."""
        from duplexeval.audio import read_audio_16k_stored  # lazy, as `OpenedSample.output_audio`

        return read_audio_16k_stored(self.path, self.read_bytes())

    def resolved(self) -> SampleAudio:
        """The same source with an absolute path (for a worker that may run in another folder)."""
        return replace(self, path=self.path.resolve())


class OpenedSample:
    """One selected sample of a tree; `asr` is its asr.json record (None before ASR, or for a stage that does not
    read the transcript), `annotation_model` its task's typed annotation model (None: the task has none)."""

    def __init__(self, root: Path, entry: SampleEntry, asr: AsrSample | None, annotation_model: type | None) -> None:
        self.root, self.entry, self.asr, self.annotation_model = Path(root), entry, asr, annotation_model

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def dir(self) -> Path:
        return self.root / self.entry.subset / self.entry.id

    @property
    def T(self) -> float:
        return self.entry.T

    @property
    def T_us(self) -> int:
        return to_us(self.entry.T)

    @property
    def annotation_path(self) -> Path | None:
        name = self.entry.annotation
        return None if name is None else self.dir / name

    @property
    def transcript_path(self) -> Path:
        return self.dir / OUTPUT_JSON

    def where(self, path: Path | None = None) -> str:
        """`PATH: sample SUBSET/ID` (the annotation's path by default), the prefix of every message about it."""
        return f"{path if path is not None else self.annotation_path}: sample {self.key}"

    def read(self, name: str, sha256: str | None = None, recorded_in: str = MANIFEST_FILE) -> bytes:
        """A file of the sample folder, read once here and checked against `sha256` (default: manifest.json's)."""
        expected = self.entry.files.get(name) if sha256 is None else sha256
        return read_verified(self.dir / name, expected, self.key, recorded_in)

    def read_json(self, name: str, sha256: str | None = None, recorded_in: str = MANIFEST_FILE) -> Any:
        """`read`, then the bytes as UTF-8 JSON."""
        return parse_json(self.read(name, sha256, recorded_in), self.where(self.dir / name))

    def recorded(self, name: str) -> bytes:
        """A file of the sample checked against the hash the stage that made it recorded: a transcript against
        asr.json's (`output.json` and a task's further transcripts, `AsrSample.transcripts`), any other file
        against manifest.json's. A file neither records is refused (one line)."""
        if self.asr is not None and name == OUTPUT_JSON and self.asr.output_json is not None:
            return self.read(name, self.asr.output_json, ASR_FILE)
        more = self.asr.transcripts if self.asr is not None else {}
        if name in more:
            return self.read(name, more[name], ASR_FILE)
        if name in self.entry.files:
            return self.read(name)
        raise InputError(f"{self.where(self.dir / name)}: {name} is not recorded in {MANIFEST_FILE} or {ASR_FILE}; "
                         "rerun export and asr")

    def transcript(self, name: str) -> list[Word]:
        """The words of any transcript asr.json records for the sample (`output.json` or a further one)."""
        return parse_output_json(parse_json(self.recorded(name), self.where(self.dir / name)),
                                 self.where(self.dir / name))

    @cached_property
    def annotation_raw(self) -> Any:
        """The annotation JSON as read (hash-checked against manifest.json); None for a task without one."""
        name = self.entry.annotation
        return None if name is None else self.read_json(name)

    @cached_property
    def annotation(self) -> Any:
        """The typed annotation (the task's model), validated; None for a task without one."""
        if self.annotation_model is None or self.entry.annotation is None:
            return None
        return validate(self.annotation_raw, self.annotation_model, self.where())

    @cached_property
    def transcript_raw(self) -> Any:
        """output.json as read, checked against the hash asr.json records for it."""
        if self.asr is None or self.asr.output_json is None:
            raise InputError(f"{self.where(self.transcript_path)}: no transcript recorded in {ASR_FILE}; rerun asr")
        return self.read_json(OUTPUT_JSON, self.asr.output_json, ASR_FILE)

    @cached_property
    def words(self) -> list[Word]:
        """output.json's words as written (seconds; an end may be None)."""
        return parse_output_json(self.transcript_raw, self.where(self.transcript_path))

    @property
    def has_output(self) -> bool:
        """The sample has an output.wav (an ineligible capture may have none)."""
        return OUTPUT_WAV in self.entry.files

    @cached_property
    def output_audio(self) -> tuple[np.ndarray, int]:
        """output.wav as mono float32 at its own rate, read once and checked against manifest.json's hash."""
        from duplexeval.audio import read_audio  # lazy: importing the task registry loads no sound-file library

        return read_audio(self.dir / OUTPUT_WAV, self.read(OUTPUT_WAV))

    def audio_source(self, name: str = OUTPUT_WAV) -> SampleAudio:
        """An audio file of the sample for a step that reads it later (`SampleAudio`), checked then against the
        hash manifest.json records for it."""
        return SampleAudio(self.dir / name, self.entry.files.get(name), self.key)

    @property
    def text(self) -> str:
        """output.json's `text` (the official rules read it; it must be a string)."""
        text = self.transcript_raw.get("text") if isinstance(self.transcript_raw, dict) else None
        if not isinstance(text, str):
            raise InputError(f"{self.where(self.transcript_path)}: 'text' must be a string")
        return text


__all__ = ["OpenedSample", "SampleAudio"]
