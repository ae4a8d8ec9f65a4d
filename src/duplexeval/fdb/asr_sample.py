"""The ASR stage's per-sample work, run in its workers: one sample's `output.wav` -> `output.json` and its asr.json
record (or, for `--backend import`, the check of an `output.json` made elsewhere).

Official semantics: a task may start the transcript later (`AsrRules.start_s`: the interruption task cuts the
audio at the end of the user's interrupt); the start is added back to every word time. Word times are validated,
never clipped; a bad one fails that sample only. The files are hash-checked against manifest.json as they are
read (`fdb.verified`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias, overload

from duplexeval.asr.base import Backend, Word, check_words, round_words
from duplexeval.asr.registry import make_backend
from duplexeval.audio import read_audio, resample
from duplexeval.errors import DuplexEvalError, InputError, clip
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.transcript import parse_output_json, transcript_bytes
from duplexeval.fdb.tree import MANIFEST_FILE, OUTPUT_JSON, OUTPUT_WAV, TRANSCRIPTS_KEY, AsrSample
from duplexeval.fdb.verified import VerifyError, parse_json, read_verified, read_verified_json
from duplexeval.jsonio import atomic_write_bytes, sha256_bytes
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.units import SAMPLE_RATE

# How a worker gets its backend: `asr.registry.backend_spec`'s picklable (name, model, device, threads) recipe,
# a backend object itself (tests, in-process runs), or None for `--backend import`.
BackendSpec: TypeAlias = tuple[str, str | None, str, int | None]
BackendArg: TypeAlias = BackendSpec | Backend | None


@dataclass(frozen=True)
class SampleTask:
    """Everything a worker needs for one sample (paths inside the tree, validated ids)."""

    key: str
    subset: str
    id: str
    T: float
    dir: str
    wav_sha256: str
    annotation: str | None
    annotation_sha256: str | None
    generate: bool  # False: import the existing output.json
    # The task's further transcripts (`SampleLayout.transcripts()` besides output.json): (audio file, its hash in
    # manifest.json, transcript file); each is made like output.json, from the whole audio, none overwriting another.
    more: tuple[tuple[str, str, str], ...] = ()

    def transcript_names(self) -> tuple[str, ...]:
        return (OUTPUT_JSON, *(j for _, _, j in self.more))


def _read_cut(task: SampleTask) -> float:
    """Where the sample's task starts the transcript (`AsrRules.start_s`, from the hash-checked annotation when the
    task reads it), else 0.0; InputError when malformed."""
    rules = task_of(task.subset)
    if not rules.asr.reads_annotation or rules.annotation is None:
        return 0.0
    path = Path(task.dir) / str(task.annotation)
    record: Any = validate(read_verified_json(path, task.annotation_sha256, None, MANIFEST_FILE), rules.annotation,
                           path)
    return rules.asr.start_s(record, task.T, path)


def process_sample(backend: Backend | None, task: SampleTask) -> AsrSample:
    """Transcribe (or import) one sample; returns its asr.json record. Only sample-level failures are caught."""
    status = "error"
    digest: str | None = None
    error: str | None = None
    audio_sha: str | None = None
    cut_s: float | None = None
    found: JsonObject = {}  # what the record says of the transcript after its audio hash and cut, as written
    out_path = Path(task.dir) / OUTPUT_JSON
    try:
        wav = Path(task.dir) / OUTPUT_WAV
        try:
            audio = read_verified(wav, task.wav_sha256, None, MANIFEST_FILE)
        except VerifyError as exc:
            audio_sha = exc.digest  # the hash of what was found, when something was
            raise
        audio_sha = task.wav_sha256
        cut = cut_s = _read_cut(task)
        if task.generate:
            if backend is None:  # the stage builds a backend for every run that generates transcripts
                raise RuntimeError("no ASR backend to transcribe with")
            words = _transcribe(backend, wav, audio, task.T, cut)
            problem = check_words(words, task.T)
            if problem:
                raise InputError(f"backend {backend.name!r} returned a bad time: {problem}")
            written = atomic_write_bytes(out_path, transcript_bytes(words))
            stats = getattr(backend, "last_stats", {}) or {}
            status, digest, found["n_words"] = "ok", written, len(words)
            if "unaligned" in stats:
                found["unaligned_words"] = int(stats["unaligned"])
            if task.more:
                found[TRANSCRIPTS_KEY] = {j: _transcribe_more(backend, Path(task.dir), a, sha, j)
                                          for a, sha, j in task.more}
        else:
            if not out_path.is_file():
                raise InputError(f"{out_path}: no output.json to import")
            data = read_verified(out_path, None)
            words = parse_output_json(parse_json(data, str(out_path)), out_path)
            problem = check_words(words, task.T, allow_null_end=True)
            if problem:
                raise InputError(f"{out_path}: {problem}")
            status, digest = "ok", sha256_bytes(data)
            found.update({"n_words": len(words), "null_ends": sum(1 for w in words if w.end is None),
                          "words_before_cut": sum(1 for w in words if w.start < cut)})
            if task.more:
                found[TRANSCRIPTS_KEY] = {j: _import_more(Path(task.dir), a, sha, j) for a, sha, j in task.more}
    except DuplexEvalError as exc:
        error = f"sample {task.key}: {exc}"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a backend crash (or sys.exit) fails this sample, the run goes on
        error = f"sample {task.key}: backend failed: {clip(f'{type(exc).__name__}: {exc}', 300)}"
    if status == "error" and task.generate:
        _remove_transcripts(task)  # never leave a transcript that asr.json does not vouch for
    return AsrSample(status, digest, error, {"audio_sha256": audio_sha, "cut_s": cut_s, **found})


def _remove_transcripts(task: SampleTask) -> None:
    for name in task.transcript_names():
        if (Path(task.dir) / name).is_file():
            (Path(task.dir) / name).unlink()


def _audio_T(wav: Path, data: bytes) -> float:
    audio, sr = read_audio(wav, data)
    return float(audio.shape[0]) / sr


def _transcribe_more(backend: Backend, d: Path, audio_name: str, sha: str, json_name: str) -> str:
    """One further transcript of the whole `audio_name` (hash-checked), written to `json_name`; returns its hash."""
    wav = d / audio_name
    data = read_verified(wav, sha, None, MANIFEST_FILE)
    T = _audio_T(wav, data)
    words = _transcribe(backend, wav, data, T, 0.0)
    problem = check_words(words, T)
    if problem:
        raise InputError(f"{d / json_name}: backend {backend.name!r} returned a bad time: {problem}")
    return atomic_write_bytes(d / json_name, transcript_bytes(words))


def _import_more(d: Path, audio_name: str, sha: str, json_name: str) -> str:
    """A further transcript made elsewhere, checked against its audio's length; returns its hash."""
    path = d / json_name
    if not path.is_file():
        raise InputError(f"{path}: no {json_name} to import")
    data = read_verified(path, None)
    words = parse_output_json(parse_json(data, str(path)), path)
    problem = check_words(words, _audio_T(d / audio_name, read_verified(d / audio_name, sha, None, MANIFEST_FILE)),
                          allow_null_end=True)
    if problem:
        raise InputError(f"{path}: {problem}")
    return sha256_bytes(data)


def _transcribe(backend: Backend, wav: Path, data: bytes, T: float, cut: float) -> list[Word]:
    audio, sr = read_audio(wav, data)
    audio = resample(audio, sr, SAMPLE_RATE)
    # output.wav holds round(T*16000) samples; drop a last sample that would end past T.
    audio = audio[: int(math.floor(T * SAMPLE_RATE + 1e-6))]
    audio = audio[cut_sample(cut):]
    return round_words(list(backend.transcribe(audio, offset_s=cut)))


def cut_sample(cut: float) -> int:
    """First sample kept when cutting at R: the first sample at or after R, so times shifted by R stay in [R, T].

    The official `wav[int(R*sr):]` starts up to one sample *before* R and then adds R, which can push a word
    that runs to the end of the file past T (by < 62.5 us); starting at or after R cannot.
    """
    exact = cut * SAMPLE_RATE
    nearest = round(exact)
    return int(nearest) if abs(exact - nearest) < 1e-6 else math.ceil(exact)


@overload
def build_backend(spec: None) -> None: ...
@overload
def build_backend(spec: BackendSpec | Backend) -> Backend: ...
def build_backend(spec: BackendArg) -> Backend | None:
    """None for import, a backend built from a `backend_spec` tuple, or the picklable backend object itself."""
    if spec is None:  # import
        return None
    if isinstance(spec, tuple) and len(spec) == 4 and isinstance(spec[0], str):
        return make_backend(spec[0], spec[1], spec[2], spec[3])
    return spec


def load_backend(spec: BackendArg) -> Backend | None:
    """A worker's backend, built and loaded once (StatefulWork.init)."""
    backend = build_backend(spec)
    if backend is not None and hasattr(backend, "load"):
        backend.load()
    return backend


def lost_record(task: SampleTask, reason: str) -> AsrSample:
    """A sample whose worker died past the retries: recorded with the reason, never a transcript it did not vouch
    for."""
    if task.generate:
        _remove_transcripts(task)
    return AsrSample("error", None, f"sample {task.key}: {reason}", {"audio_sha256": None, "cut_s": None})
