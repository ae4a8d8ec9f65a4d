"""The resume journal every tree stage keeps, so a killed run resumes and a changed run is not mixed in.

A journal is a run record (a JSON object that pins what the run is: tool, system and dataset for export and
import; manifest and backend for asr; its canonical hash is `run_sha256`) plus one entry per finished sample.
An entry names the run, its own subset and id, and the hash of the sample's input, and lists the files it
vouches for; it is trusted only when all of them match this run and sample and every file still has its hash.
Anything else (missing, torn, of the wrong shape, another run's, copied from another sample's folder) is redone.

Export and import keep their entries in the samples' own `trace.json` (`fdb.sample_trace`); asr keeps them in
its journal folder, removed when asr.json is written.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.fdb.tree import sample_key
from duplexeval.fdb.verified import file_matches
from duplexeval.jsonio import dumps, read_json, sha256_bytes, write_json


@dataclass(frozen=True)
class JournalEntry:
    """What a finished sample's entry says about itself: the run, the sample, its input and the files it vouches for."""

    run_sha256: Any
    subset: Any
    id: Any
    input_sha256: Any
    files: Mapping[str, str] = field(default_factory=dict)
    record: Any = None


def run_hash(run: Mapping[str, Any]) -> str:
    """The canonical hash of a run record (what every entry names)."""
    return sha256_bytes(dumps(run).encode("utf-8"))


class ResumeJournal:
    """A stage's run record at `run_path` and, when `entries` is given, a folder holding one entry file per sample."""

    def __init__(self, run_path: Path, run: Mapping[str, Any], entries: Path | None = None) -> None:
        self.run_path, self.run, self.entries = run_path, dict(run), entries
        self.run_sha256 = run_hash(self.run)

    def recorded_run(self) -> Any:
        """The run record an earlier run left here, or None (InputError naming the file when it is not JSON)."""
        return read_json(self.run_path) if self.run_path.is_file() else None

    def is_this_run(self, recorded: Any) -> bool:
        """Whether a recorded run record is this run's (compared canonically, as the entries' hashes are)."""
        return isinstance(recorded, dict) and run_hash(recorded) == self.run_sha256

    def start(self) -> None:
        """Record this run (atomically), before the first sample is written."""
        write_json(self.run_path, self.run)

    def trusts(self, entry: JournalEntry | None, key: str, input_sha256: str, sample_dir: Path) -> bool:
        """Whether `entry` is this run's record of sample `key` made from this input, with its files unchanged."""
        return (entry is not None and entry.run_sha256 == self.run_sha256 and entry.input_sha256 == input_sha256
                and isinstance(entry.subset, str) and isinstance(entry.id, str)
                and sample_key(entry.subset, entry.id) == key
                and all(isinstance(name, str) and isinstance(digest, str) and file_matches(sample_dir / name, digest)
                        for name, digest in entry.files.items()))

    # -- entries kept in the journal's own folder (asr) --------------------------------------------------------------

    def entry_path(self, key: str) -> Path:
        """The entry file of sample `<subset>/<id>` (ids were validated on load, so the name is safe)."""
        if self.entries is None:
            raise ValueError("this journal keeps its entries in the samples' own files")
        subset, sid = key.split("/")
        return self.entries / f"{subset}__{sid}.json"

    def write_entry(self, key: str, input_sha256: str, files: Mapping[str, str], record: Any) -> None:
        """Record a finished sample (atomically)."""
        subset, sid = key.split("/")
        write_json(self.entry_path(key), {"run_sha256": self.run_sha256, "subset": subset, "id": sid,
                                          "input_sha256": input_sha256, "files": dict(files), "record": record})

    def read_entry(self, key: str) -> JournalEntry | None:
        """The entry of sample `key` as written, or None when there is none or it is not one."""
        path = self.entry_path(key)
        if not path.is_file():
            return None
        try:
            obj = read_json(path)
        except InputError:
            return None  # torn by a kill
        if not isinstance(obj, dict) or not isinstance(obj.get("files"), dict):
            return None
        files = {str(k): v for k, v in obj["files"].items() if isinstance(v, str)}
        if len(files) != len(obj["files"]):
            return None
        return JournalEntry(obj.get("run_sha256"), obj.get("subset"), obj.get("id"), obj.get("input_sha256"), files,
                            obj.get("record"))

    def clear(self) -> None:
        """Remove the journal folder (a forced rerun, or the stage's output is written)."""
        if self.entries is not None:
            shutil.rmtree(self.entries, ignore_errors=True)
