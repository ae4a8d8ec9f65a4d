"""The ASR stage: `output.wav` -> `output.json` (official shape) for each eligible sample, then `asr.json`.

Official semantics: `synthetic_user_interruption` audio is cut at R = interrupt.json[0].timestamp[1]
and R is added back to every word time. Word times are validated, never clipped; a bad one fails
that sample only. Each finished sample leaves a record in TREE/.asr-progress/, so a killed run
resumes where it stopped; asr.json is written last.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duplexeval import __version__
from duplexeval.artifacts import header
from duplexeval.asr.base import check_words, round_words
from duplexeval.asr.registry import DEFAULT_BACKEND, IMPORT, backend_spec, check_backend_name, make_backend
from duplexeval.errors import DuplexEvalError, InputError, RefusalError
from duplexeval.executors import ExecutorSpec, ItemResult, StatefulWork, make_executor
from duplexeval.fdb.signatures import asr_signature
from duplexeval.fdb.transcript import parse_output_json, transcript_bytes
from duplexeval.fdb.tree import (
    ASR_FILE,
    ASR_KIND,
    ASR_SCHEMA_VERSION,
    OUTPUT_JSON,
    OUTPUT_WAV,
    SUBSETS,
    USER_INTERRUPTION,
    AsrRecord,
    AsrSample,
    load_manifest,
    write_asr,
)
from duplexeval.jsonio import atomic_write_bytes, dumps, read_json, sha256_bytes, sha256_file, write_json
from duplexeval.progress import progress_bar
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import AsrSampleRecord, InterruptAnnotation

PROGRESS_DIR = ".asr-progress"
RUN_FILE = "run.json"
SAMPLE_RATE = 16000


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


@dataclass
class StageResult:
    """What a run did: counts, the failed samples with reasons, and the asr.json hash."""

    n_eligible: int
    n_ok: int
    n_error: int
    n_resumed: int
    errors: list[tuple[str, str]] = field(default_factory=list)
    asr_sha256: str = ""
    backend: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.n_error > 0

    def summary(self) -> str:
        """One line for the command line."""
        return (f"asr: {self.n_ok} ok, {self.n_error} failed of {self.n_eligible} eligible samples "
                f"({self.n_resumed} resumed) with {self.backend.get('name')}")


# -- per-sample work (runs in workers) --------------------------------------------------------------


def _read_cut(task: SampleTask) -> float:
    """R for the interruption subset (end of the user's interrupt), else 0.0; InputError when malformed."""
    if SUBSETS[task.subset].task != USER_INTERRUPTION:
        return 0.0
    path = Path(task.dir) / str(task.annotation)
    if task.annotation_sha256 is not None and sha256_file(path) != task.annotation_sha256:
        raise InputError(f"{path}: SHA-256 differs from manifest.json (the tree changed after export)")
    R = validate(read_json(path), InterruptAnnotation, path).R
    if not 0 <= R < task.T:
        raise InputError(f"{path}: interrupt end R={R!r} is not a finite time inside [0, T={task.T})")
    return float(R)


def process_sample(backend: Any, task: SampleTask) -> dict[str, Any]:
    """Transcribe (or import) one sample; returns its asr.json record. Only sample-level failures are caught."""
    rec: dict[str, Any] = {"status": "error", "output.json": None, "error": None, "audio_sha256": None, "cut_s": None}
    out_path = Path(task.dir) / OUTPUT_JSON
    try:
        wav = Path(task.dir) / OUTPUT_WAV
        if not wav.is_file():
            raise InputError(f"{wav}: file not found")
        rec["audio_sha256"] = sha256_file(wav)
        if rec["audio_sha256"] != task.wav_sha256:
            raise InputError(f"{wav}: SHA-256 differs from manifest.json (the tree changed after export)")
        cut = _read_cut(task)
        rec["cut_s"] = cut
        if task.generate:
            words = _transcribe(backend, wav, task.T, cut)
            problem = check_words(words, task.T)
            if problem:
                raise InputError(f"backend {backend.name!r} returned a bad time: {problem}")
            digest = sha256_bytes(data := transcript_bytes(words))
            atomic_write_bytes(out_path, data)
            stats = getattr(backend, "last_stats", {}) or {}
            rec.update({"status": "ok", "output.json": digest, "n_words": len(words)})
            if "unaligned" in stats:
                rec["unaligned_words"] = int(stats["unaligned"])
        else:
            if not out_path.is_file():
                raise InputError(f"{out_path}: no output.json to import")
            digest = sha256_file(out_path)
            words = parse_output_json(read_json(out_path), out_path)
            problem = check_words(words, task.T, allow_null_end=True)
            if problem:
                raise InputError(f"{out_path}: {problem}")
            rec.update({"status": "ok", "output.json": digest, "n_words": len(words),
                        "null_ends": sum(1 for w in words if w.end is None),
                        "words_before_cut": sum(1 for w in words if w.start < cut)})
    except DuplexEvalError as exc:
        rec["error"] = f"sample {task.key}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a backend crash fails this sample, the run goes on
        rec["error"] = f"sample {task.key}: backend failed: {type(exc).__name__}: {exc}"
    if rec["status"] == "error" and task.generate and out_path.is_file():
        out_path.unlink()  # never leave a transcript that asr.json does not vouch for
    return rec


def _transcribe(backend: Any, wav: Path, T: float, cut: float) -> list[Any]:
    from duplexeval.audio import read_audio, resample

    audio, sr = read_audio(wav)
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


def _load_backend(spec: Any) -> Any:
    """A worker's backend, built and loaded once (StatefulWork.init): None for import, a spec tuple, or an object."""
    backend = _build(spec)
    if backend is not None and hasattr(backend, "load"):
        backend.load()
    return backend


def _worker_task(backend: Any, task: SampleTask) -> dict[str, Any]:
    return process_sample(backend, task)


def _lost_record(task: SampleTask, reason: str) -> dict[str, Any]:
    """A sample whose worker died past the retries: recorded with the reason, never a transcript it did not vouch for."""
    out = Path(task.dir) / OUTPUT_JSON
    if task.generate and out.is_file():
        out.unlink()
    return {"status": "error", "output.json": None, "error": f"sample {task.key}: {reason}",
            "audio_sha256": None, "cut_s": None}


def _build(spec: Any) -> Any:
    if spec is None:  # import
        return None
    if isinstance(spec, tuple) and len(spec) == 4 and isinstance(spec[0], str):
        return make_backend(spec[0], spec[1], spec[2], spec[3])
    return spec  # a picklable backend object


# -- the stage -----------------------------------------------------------------------------------
def parse_declare(declare: str | list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """`--declare NAME` (every subset) and/or `--declare SUBSET=NAME` (repeatable) -> {subset or "*": name}."""
    items = [declare] if isinstance(declare, str) else list(declare or [])
    out: dict[str, str] = {}
    for item in items:
        subset, sep, name = item.partition("=") if "=" in item else ("*", "", item)
        name, subset = name.strip(), subset.strip()
        if sep and subset not in SUBSETS:
            raise InputError(f"--declare {item!r}: unknown subset {subset!r}; subsets: {', '.join(SUBSETS)}")
        if not name:
            raise InputError(f"--declare {item!r}: give the ASR's name, e.g. parakeet-tdt-0.6b-v2")
        if subset in out and out[subset] != name:
            what = "every subset" if subset == "*" else subset
            raise InputError(f"--declare: two names for {what} ({out[subset]!r}, {name!r})")
        out[subset] = name
    return out


def declared_per_subset(declared: dict[str, str], subsets: list[str]) -> dict[str, str]:
    """The declared ASR of each subset in the tree; refuses a subset that no --declare covers."""
    per = {}
    for subset in subsets:
        name = declared.get(subset, declared.get("*"))
        if name is None:
            raise InputError(f"--declare: no ASR named for subset {subset}; add --declare {subset}=NAME "
                             "(or --declare NAME for every subset)")
        per[subset] = name
    return per


def _import_signature(per_subset: dict[str, str]) -> dict[str, Any]:
    names = sorted(set(per_subset.values()))
    sig: dict[str, Any] = {
        "name": names[0] if len(names) == 1 else "; ".join(f"{s}={n}" for s, n in per_subset.items()),
        "source": "import",
        "declared_by": "user (--declare)",
        "packages": {"duplexeval": __version__},
        "options": {"validation": "finite starts, null or finite ends, start <= end, inside [0, T]"},
    }
    if len(names) > 1:
        sig["per_subset"] = dict(per_subset)
    return sig


def _progress_path(tree: Path, key: str) -> Path:
    subset, sid = key.split("/")
    return tree / PROGRESS_DIR / f"{subset}__{sid}.json"


def run(tree: str | os.PathLike[str], backend: Any = DEFAULT_BACKEND, model: str | os.PathLike[str] | None = None,
        jobs: int | None = None, force: bool = False, progress: bool = True, declare: str | list[str] | None = None,
        device: str = "cpu", executor: ExecutorSpec | None = None) -> StageResult:
    """Transcribe every eligible sample of the tree, write output.json files and asr.json.

    `backend` is a registered name, `module.path:Name` (see asr.registry) or a Backend object (tests). Failed samples are recorded with
    their reason and do not stop the run; check `StageResult.failed`. `executor` (default: local, `jobs`
    processes) says where the samples run; each worker loads the backend once, the driver writes in order.
    """
    tree = Path(tree)
    manifest, manifest_sha = load_manifest(tree)
    if (tree / ASR_FILE).exists() and not force:
        raise RefusalError(f"{tree / ASR_FILE} exists; rerun with --force to transcribe again")
    ncpu = os.cpu_count() or 1
    jobs = ncpu if jobs is None else int(jobs)
    if jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {jobs}")
    xspec = replace(executor, jobs=jobs) if executor is not None else ExecutorSpec("local", jobs=jobs)
    on_ray = xspec.kind != "local"

    generate = True
    if isinstance(backend, str):
        if backend == IMPORT:
            if not declare:
                raise InputError("--backend import needs --declare NAME (the ASR that made the files, e.g. parakeet-tdt-0.6b-v2)")
            if model is not None:
                raise InputError("--model is not used with --backend import")
            generate, obj, spec = False, None, None
            in_tree = list(dict.fromkeys(x.subset for x in manifest.samples if x.eligible))
            signature = _import_signature(declared_per_subset(parse_declare(declare), in_tree))
        else:
            check_backend_name(backend)
            if declare:
                raise InputError("--declare is only for --backend import")
            threads = max(1, int(xspec.ray_num_cpus)) if on_ray else max(1, ncpu // jobs)
            spec = backend_spec(backend, model, device, threads)
            obj = _build(spec)
            signature = obj.signature()
    else:
        obj = spec = backend
        signature = obj.signature()

    eligible = [s for s in manifest.samples if s.eligible]
    where = tree.resolve() if on_ray else tree  # Ray workers may run in another folder (or on another machine)
    tasks = [
        SampleTask(
            key=s.key, subset=s.subset, id=s.id, T=s.T, dir=str(s.dir(where)), wav_sha256=s.files[OUTPUT_WAV],
            annotation=s.annotation, annotation_sha256=s.files.get(s.annotation) if s.annotation else None,
            generate=generate,
        )
        for s in eligible
    ]

    # Resume bookkeeping: the run record pins manifest and backend; per-sample records hold results.
    pdir = tree / PROGRESS_DIR
    run_rec = {"kind": "duplexeval.fdb.asr-progress", "manifest_sha256": manifest_sha, "backend": signature}
    run_path = pdir / RUN_FILE
    if force and pdir.exists():
        shutil.rmtree(pdir)
    if run_path.is_file():
        if dumps(read_json(run_path)) != dumps(run_rec):
            raise RefusalError(
                f"{pdir}: an interrupted ASR run with a different backend, model, settings or manifest is in this tree; "
                "rerun it with the same options to resume, or use --force to start over"
            )
    else:
        if generate:
            foreign = [t.key for t in tasks if (Path(t.dir) / OUTPUT_JSON).exists()]
            if foreign and not force:
                raise RefusalError(
                    f"{tree}: {len(foreign)} samples already have an output.json made elsewhere (first: {foreign[0]}); "
                    "adopt them with --backend import --declare NAME, or overwrite with --force"
                )
        write_json(run_path, run_rec)

    records: dict[str, dict[str, Any]] = {}
    todo: list[SampleTask] = []
    for t in tasks:
        rec = _resumable(tree, t)
        if rec is not None:
            records[t.key] = rec
        else:
            todo.append(t)
    n_resumed = len(records)

    def finish(key: str, rec: dict[str, Any]) -> None:
        records[key] = rec
        write_json(_progress_path(tree, key), rec)

    # In this process the backend built above is reused; workers build their own from the spec.
    in_process = not on_ray and (jobs == 1 or len(todo) <= 1)
    work = StatefulWork(_load_backend, obj if in_process else spec, _worker_task, uses_gpu=device == "cuda")
    with progress_bar(len(tasks), f"asr ({signature.get('name', '?')})", progress, done=n_resumed) as advance:
        if todo:
            ex = make_executor(replace(xspec, jobs=1 if in_process else min(jobs, len(todo))))
            try:
                for out in ex.map_stateful(work, todo):
                    t = todo[out.index]
                    if isinstance(out, ItemResult):
                        finish(t.key, out.value)
                    elif out.worker_lost and not on_ray:
                        raise RefusalError("an ASR worker process died (out of memory?); finished samples are kept, "
                                           "rerun the same command to resume, perhaps with fewer --jobs")
                    else:
                        finish(t.key, _lost_record(t, out.reason))
                    advance()
            finally:
                ex.close()

    samples = {t.key: _asr_sample(records[t.key]) for t in tasks}
    errors = [(k, s.error or "") for k, s in samples.items() if s.status == "error"]
    n_ok = sum(1 for s in samples.values() if s.status == "ok")
    record = AsrRecord(
        manifest_sha256=manifest_sha,
        backend=signature,
        samples=samples,
        extra={**header(ASR_KIND, ASR_SCHEMA_VERSION, asr_signature(signature, manifest_sha), {"manifest.json": manifest_sha}),
               "summary": {"eligible": len(tasks), "ok": n_ok, "error": len(errors)}},
    )
    asr_sha = write_asr(tree, record)
    shutil.rmtree(pdir, ignore_errors=True)
    return StageResult(len(tasks), n_ok, len(errors), n_resumed, errors, asr_sha, signature)


def _resumable(tree: Path, t: SampleTask) -> dict[str, Any] | None:
    """The finished record of a sample from an interrupted run, if its files still match it."""
    path = _progress_path(tree, t.key)
    if not path.is_file():
        return None
    try:
        rec = read_json(path)
        validate(rec, AsrSampleRecord, path)  # a journal of the wrong shape is redone, never trusted
    except InputError:
        return None
    if not isinstance(rec, dict) or rec.get("status") != "ok" or rec.get("audio_sha256") != t.wav_sha256:
        return None  # failed samples are retried on resume
    out = Path(t.dir) / OUTPUT_JSON
    if not out.is_file() or sha256_file(out) != rec.get("output.json"):
        return None
    return rec


def _asr_sample(rec: dict[str, Any]) -> AsrSample:
    extra = {k: v for k, v in rec.items() if k not in ("status", "output.json", "error")}
    return AsrSample(rec["status"], rec["output.json"], rec["error"], extra)


