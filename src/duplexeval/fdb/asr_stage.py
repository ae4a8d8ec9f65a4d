"""The ASR stage: `output.wav` -> `output.json` (official shape) for each eligible sample, then `asr.json`.

The stage: pick the eligible samples, skip those its resume journal (`fdb.run_journal`, kept in
TREE/.asr-progress/ until asr.json is written) says are finished, run the rest on the executor's pool (each
worker loads the backend once; the per-sample work is `fdb.asr_sample`), and write asr.json last, in sample
order. A killed run resumes where it stopped; a run with another backend or manifest is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from duplexeval.artifacts import header
from duplexeval.asr.base import Backend
from duplexeval.asr.registry import DEFAULT_BACKEND, IMPORT, backend_spec, check_backend_name
from duplexeval.errors import InputError, RefusalError
from duplexeval.executors import WORKER_THREADS, ExecutorSpec, ItemResult, StatefulWork, make_executor
from duplexeval.fdb.asr_declare import declared_per_subset, import_signature, parse_declare
from duplexeval.fdb.asr_sample import BackendArg, SampleTask, build_backend, load_backend, lost_record, process_sample
from duplexeval.fdb.run_journal import ResumeJournal
from duplexeval.fdb.signatures import asr_signature
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import (
    ASR_FILE,
    ASR_KIND,
    ASR_SCHEMA_VERSION,
    OUTPUT_JSON,
    OUTPUT_WAV,
    TRANSCRIPTS_KEY,
    AsrRecord,
    AsrSample,
    SampleEntry,
    load_asr,
    load_manifest,
    write_asr,
)
from duplexeval.fdb.verified import file_matches
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import call, json_value, returned
from duplexeval.progress import progress_bar
from duplexeval.reruns import check_replace
from duplexeval.schemas import validate
from duplexeval.schemas.fdb import AsrSampleRecord

JOURNAL_DIR = ".asr-progress"  # the stage's resume journal: the run record and one entry per finished sample
JOURNAL_RUN_RECORD = "run.json"
JOURNAL_KIND = "duplexeval.fdb.asr-progress"


@dataclass
class StageResult:
    """What a run did: counts, the failed samples with reasons, and the asr.json hash."""

    n_eligible: int
    n_ok: int
    n_error: int
    n_resumed: int
    errors: list[tuple[str, str]] = field(default_factory=list)
    asr_sha256: str = ""
    backend: JsonObject = field(default_factory=dict)  # the backend's signature, as asr.json holds it

    @property
    def failed(self) -> bool:
        return self.n_error > 0

    def summary(self) -> str:
        """One line for the command line."""
        return (f"asr: {self.n_ok} ok, {self.n_error} failed of {self.n_eligible} eligible samples "
                f"({self.n_resumed} resumed) with {self.backend.get('name')}")


def asr(tree: str | os.PathLike[str], backend: str | Backend = DEFAULT_BACKEND,
        model: str | os.PathLike[str] | None = None, jobs: int | None = None, force: bool = False,
        progress: bool = True, declare: str | list[str] | None = None, device: str = "cpu",
        executor: ExecutorSpec | None = None) -> StageResult:
    """Transcribe every eligible sample of the tree, write output.json files and asr.json.

    `backend` is a registered name, `module.path:Name` (see asr.registry) or a Backend object (tests). Failed samples
    are recorded with
    their reason and do not stop the run; check `StageResult.failed`. `executor` (default: local, `jobs`
    processes) says where the samples run; each worker loads the backend once, the driver writes in order.
    """
    tree = Path(tree)
    manifest, manifest_sha = load_manifest(tree)
    ncpu = os.cpu_count() or 1
    jobs = ncpu if jobs is None else int(jobs)
    if jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {jobs}")
    xspec = replace(executor, jobs=jobs) if executor is not None else ExecutorSpec("local", jobs=jobs)
    on_ray = xspec.kind != "local"

    generate = True
    obj: Backend | None  # the backend this process uses (None: import)
    spec: BackendArg  # what a worker builds its own from
    if isinstance(backend, str):
        if backend == IMPORT:
            if not declare:
                raise InputError("--backend import needs --declare NAME (the ASR that made the files, e.g. "
                                 "parakeet-tdt-0.6b-v2)")
            if model is not None:
                raise InputError("--backend import: model= is not used (the files are adopted as they are)")
            generate, obj, spec = False, None, None
            in_tree = list(dict.fromkeys(x.subset for x in manifest.samples if x.eligible))
            signature = import_signature(declared_per_subset(parse_declare(declare), in_tree))
        else:
            check_backend_name(backend)
            if declare:
                raise InputError("--declare is only for --backend import")
            # the model's threads do not depend on the executor (executors.WORKER_THREADS): same words everywhere
            spec = backend_spec(backend, model, device, WORKER_THREADS)
            obj = build_backend(spec)
            signature = backend_signature(obj, backend)
    else:
        obj = spec = backend
        signature = backend_signature(obj, getattr(obj, "name", type(obj).__name__))

    # asr.json there already: this run's (same manifest, backend and settings) is finished or resumed (its failed
    # samples retried); another run's is refused (docs/cli.md section 4)
    earlier: dict[str, AsrSample] = {}
    expected = {"kind": ASR_KIND, "signature": asr_signature(signature, manifest_sha).to_json(),
                "inputs": {"manifest.json": manifest_sha}}
    if check_replace(tree / ASR_FILE, expected, force, elsewhere=None):
        old, old_sha = load_asr(tree)
        if all(x.status == "ok" for x in old.samples.values()):
            n = len(old.samples)
            return StageResult(n, n, 0, n, [], old_sha, signature)
        earlier = {k: x for k, x in old.samples.items() if x.status == "ok"}

    eligible = [s for s in manifest.samples if s.eligible]
    where = tree.resolve() if on_ray else tree  # Ray workers may run in another folder (or on another machine)
    tasks = [
        SampleTask(
            key=s.key, subset=s.subset, id=s.id, T=s.T, dir=str(s.dir(where)), wav_sha256=s.files[OUTPUT_WAV],
            annotation=s.annotation, annotation_sha256=s.files.get(s.annotation) if s.annotation else None,
            generate=generate, more=_more_transcripts(s),
        )
        for s in eligible
    ]

    # Resume bookkeeping: the run record pins manifest and backend; per-sample entries hold results.
    journal = ResumeJournal(tree / JOURNAL_DIR / JOURNAL_RUN_RECORD,
                            {"kind": JOURNAL_KIND, "manifest_sha256": manifest_sha, "backend": signature},
                            tree / JOURNAL_DIR)
    if force:
        journal.clear()
    recorded = journal.recorded_run()
    if recorded is not None:
        if not journal.is_this_run(recorded):
            raise RefusalError(
                f"{tree / JOURNAL_DIR}: an interrupted ASR run with a different backend, model, settings or "
                "manifest is in this tree; rerun it with the same options to resume, or use --force to start over"
            )
    else:
        if generate:
            found = [(t.key, n) for t in tasks if t.key not in earlier for n in t.transcript_names()
                     if (Path(t.dir) / n).exists()]
            foreign = list(dict.fromkeys(k for k, _ in found))
            if foreign and not force:
                raise RefusalError(
                    f"{tree}: {len(foreign)} samples already have a transcript made elsewhere (first: {foreign[0]}, "
                    f"{found[0][1]}); "
                    "adopt them with --backend import --declare NAME, or overwrite with --force"
                )
        journal.start()

    records: dict[str, AsrSample] = {}
    todo: list[SampleTask] = []
    for t in tasks:
        rec = _resumed(journal, t) or _earlier(earlier.get(t.key), t)
        if rec is not None:
            records[t.key] = rec
        else:
            todo.append(t)
    n_resumed = len(records)

    def finish(t: SampleTask, rec: AsrSample) -> None:
        records[t.key] = rec
        digest = rec.output_json
        vouched = ({OUTPUT_JSON: digest, **rec.extra.get(TRANSCRIPTS_KEY, {})}
                   if rec.status == "ok" and isinstance(digest, str) else {})
        journal.write_entry(t.key, t.wav_sha256, vouched, rec.to_json())

    # In this process the backend built above is reused; workers build their own from the spec.
    in_process = not on_ray and (jobs == 1 or len(todo) <= 1)
    work = StatefulWork(load_backend, obj if in_process else spec, process_sample, uses_gpu=device == "cuda")
    with progress_bar(len(tasks), f"asr ({signature.get('name', '?')})", progress, done=n_resumed) as advance:
        if todo:
            ex = make_executor(replace(xspec, jobs=1 if in_process else min(jobs, len(todo))))
            try:
                for out in ex.map_stateful(work, todo):
                    t = todo[out.index]
                    if isinstance(out, ItemResult):
                        finish(t, out.value)
                    elif out.worker_lost and not on_ray:
                        raise RefusalError("an ASR worker process died (out of memory?); finished samples are kept, "
                                           "rerun the same command to resume, perhaps with fewer --jobs")
                    else:
                        finish(t, lost_record(t, out.reason))
                    advance()
            finally:
                ex.close()

    samples = {t.key: records[t.key] for t in tasks}
    errors = [(k, s.error or "") for k, s in samples.items() if s.status == "error"]
    n_ok = sum(1 for s in samples.values() if s.status == "ok")
    record = AsrRecord(
        manifest_sha256=manifest_sha,
        backend=signature,
        samples=samples,
        extra={**header(ASR_KIND, ASR_SCHEMA_VERSION, asr_signature(signature, manifest_sha),
                        {"manifest.json": manifest_sha}),
               "summary": {"eligible": len(tasks), "ok": n_ok, "error": len(errors)}},
    )
    asr_sha = write_asr(tree, record)
    journal.clear()
    return StageResult(len(tasks), n_ok, len(errors), n_resumed, errors, asr_sha, signature)


def backend_signature(backend: Backend, name: str) -> JsonObject:
    """The backend's `signature()` (a dict of plain JSON: a plugin's is checked) plus the worker threads."""
    sig = returned("ASR backend", name, "signature", call("ASR backend", name, "signature", backend.signature), dict,
                   "a dict")
    return {**json_value("ASR backend", name, "signature", sig), "worker_threads": WORKER_THREADS}


def _resumed(journal: ResumeJournal, t: SampleTask) -> AsrSample | None:
    """The finished record of a sample from an interrupted run, if the journal trusts it and it succeeded."""
    entry = journal.read_entry(t.key)
    if not journal.trusts(entry, t.key, t.wav_sha256, Path(t.dir)):
        return None
    assert entry is not None
    rec = entry.record
    try:
        # a journal of the wrong shape is redone, never trusted
        validate(rec, AsrSampleRecord, journal.entry_path(t.key))
    except InputError:
        return None
    if not isinstance(rec, dict) or rec.get("status") != "ok" or rec.get("audio_sha256") != t.wav_sha256:
        return None  # failed samples are retried on resume
    if entry.files.get(OUTPUT_JSON) != rec.get("output.json"):
        return None
    sample = _asr_sample(rec)
    return sample if _more_match(sample, t, entry.files.get) else None


def _more_match(rec: AsrSample, t: SampleTask, vouched: Callable[[str], bool | str | None]) -> bool:
    """Every further transcript of the task is in the record, each with the hash `vouched` gives for it (the journal
    entry's) or matching its file (`vouched` returns True)."""
    more = rec.extra.get(TRANSCRIPTS_KEY) or {}
    if not isinstance(more, dict) or set(more) != {j for _, _, j in t.more}:
        return False
    return all(isinstance(sha, str) and (vouched(j) is True or vouched(j) == sha) for j, sha in more.items())


def _earlier(rec: AsrSample | None, t: SampleTask) -> AsrSample | None:
    """A sample the finished asr.json of this same run transcribed, while its audio and transcript are unchanged."""
    if rec is None or rec.extra.get("audio_sha256") != t.wav_sha256:
        return None
    digest = rec.output_json
    if not (isinstance(digest, str) and file_matches(Path(t.dir) / OUTPUT_JSON, digest)):
        return None
    more = rec.extra.get(TRANSCRIPTS_KEY) or {}
    return rec if _more_match(rec, t, lambda j: isinstance(more, dict) and isinstance(more.get(j), str)
                              and file_matches(Path(t.dir) / j, more[j])) else None


def _more_transcripts(e: SampleEntry) -> tuple[tuple[str, str, str], ...]:
    """(audio, its manifest hash, transcript) of each transcript the sample's task makes besides output.json."""
    return tuple((a, e.files.get(a, ""), j) for a, j in task_of(e.subset).layout.transcripts() if j != OUTPUT_JSON)


def _asr_sample(rec: JsonObject) -> AsrSample:
    """A journal entry's record (JSON, validated) as the sample's asr.json record."""
    extra = {k: v for k, v in rec.items() if k not in ("status", "output.json", "error")}
    return AsrSample(rec["status"], rec["output.json"], rec["error"], extra)
