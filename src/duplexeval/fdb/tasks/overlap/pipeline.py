"""The v1.5 stages on one tree, as Python functions: export (two sessions per sample), asr (four transcripts),
evaluate (official rules) and score (our rules).

The tree is the official per-sample layout plus our records: `<subset>/<id>/` holds the two inputs as the system
heard them (16 kHz mono PCM16), `output.wav`, `clean_output.wav`, a byte copy of `metadata.json`, and later the
four transcripts and the judge's `content_tag.json`; `manifest.json`, `asr.json`, `summary.json` and
`unified.json` (each with the artifact header) sit at the top. Every stage checks the hashes the previous one
recorded and refuses a tree another run made. The `fdb` commands will drive these through the task interface.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from duplexeval.artifacts import check_kind, header
from duplexeval.asr.registry import make_backend
from duplexeval.audio import fit_length, n_samples_for, read_audio_16k, to_pcm16, write_wav_pcm16
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.signatures import asr_component
from duplexeval.fdb.tasks.overlap import official, silero
from duplexeval.fdb.tasks.overlap import score as unified_score
from duplexeval.fdb.tasks.overlap.behavior import TRANSCRIPTS, load_prompt
from duplexeval.fdb.tasks.overlap.judge import BehaviorJudge, JudgeSettings
from duplexeval.fdb.tasks.overlap.layout import CLEAN_INPUT_FILE, INPUT_FILE, METADATA_FILE, OverlapSample, load_samples
from duplexeval.fdb.tasks.overlap.prosody import praat_signature
from duplexeval.fdb.tasks.overlap.scenarios import SUBSET_ORDER
from duplexeval.fdb.tasks.overlap.unified import STOP_SILENCE_MS
from duplexeval.fdb.transcript import transcript_bytes
from duplexeval.jsonio import atomic_write_bytes, read_json, sha256_bytes, write_json
from duplexeval.signature import Component, Signature
from duplexeval.systems.base import SampleInfo, System
from duplexeval.systems.playout import playout
from duplexeval.systems.registry import make_system
from duplexeval.systems.runner import MAX_SEND_LATENESS_S, run_session_async
from duplexeval.vad import SCORER_SETTINGS, load_vad, vad_signature

MANIFEST = "manifest.json"
ASR = "asr.json"
SUMMARY = "summary.json"
UNIFIED = "unified.json"
TREE_KIND = "duplexeval.fdb.v15.tree"
ASR_KIND = "duplexeval.fdb.v15.asr"
SUMMARY_KIND = "duplexeval.fdb.v15.summary"
UNIFIED_KIND = "duplexeval.fdb.v15.unified"
SESSIONS = ((INPUT_FILE, official.OUTPUT_WAV), (CLEAN_INPUT_FILE, official.CLEAN_OUTPUT_WAV))
AUDIO_OF = {json_name: wav for wav, json_name in ((INPUT_FILE, "input.json"), (CLEAN_INPUT_FILE, "clean_input.json"),
                                                   (official.OUTPUT_WAV, official.OUTPUT_JSON),
                                                   (official.CLEAN_OUTPUT_WAV, official.CLEAN_OUTPUT_JSON))}
REASON_SYSTEM_ERROR = "system_error"
REASON_PACING = "pacing"

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _load(path: Path, kind: str, stage: str) -> dict[str, Any]:
    if not path.is_file():
        raise RefusalError(f"{path}: missing; run {stage} first")
    return check_kind(read_json(path), kind, path)


def _file_sha(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def _check(path: Path, sha: str, key: str, stage: str) -> None:
    if not path.is_file() or _file_sha(path) != sha:
        raise RefusalError(f"{path}: sample {key}: differs from what {stage} recorded; rerun {stage}")


# ------------------------------------------------------------------------------------------------------ export


async def _session(system: System, audio: np.ndarray, info: SampleInfo) -> tuple[np.ndarray, list[str], str | None]:
    pcm = to_pcm16(fit_length(np.asarray(audio, dtype=np.float32), info.n_samples))
    run_sample = getattr(system, "run_sample", None)
    trace = await (run_sample(pcm, info) if run_sample is not None else run_session_async(system, pcm, info))
    reasons = []
    if trace.error is not None:
        reasons.append(REASON_SYSTEM_ERROR)
    if trace.max_send_lateness_s > MAX_SEND_LATENESS_S:
        reasons.append(REASON_PACING)
    return playout(trace.items, info.n_samples, info.T).audio, reasons, trace.error


def export(dataset: str | os.PathLike[str] | Sequence[OverlapSample], system: System | str, out: str | os.PathLike[str],
           say: Say = _quiet) -> dict[str, Any]:
    """Play `input.wav` and `clean_input.wav` of every sample to the system (two sessions), write the tree."""
    sys_obj = make_system(system) if isinstance(system, str) else system
    samples = load_samples(dataset) if isinstance(dataset, (str, os.PathLike)) else list(dataset)
    root = Path(out)
    if (root / MANIFEST).exists() or (root.is_dir() and any(root.iterdir())):
        raise RefusalError(f"{root}: not empty; give a new folder for the tree")
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for i, s in enumerate(samples, 1):
        say(f"export {s.key} ({i}/{len(samples)})")
        d = root / s.subset / s.id
        d.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        reasons: list[str] = []
        Ts = {INPUT_FILE: s.T, CLEAN_INPUT_FILE: s.T_clean}
        for inp_name, out_name in SESSIONS:
            audio = s.read_input_16k() if inp_name == INPUT_FILE else s.read_clean_input_16k()
            T = Ts[inp_name]
            n = n_samples_for(T)
            files[inp_name] = write_wav_pcm16(d / inp_name, fit_length(np.asarray(audio, np.float32), n))
            out_audio, why, _err = asyncio.run(_session(sys_obj, audio, SampleInfo(s.subset, s.id, T, n)))
            reasons += [f"{out_name}: {r}" for r in why]
            files[out_name] = write_wav_pcm16(d / out_name, out_audio.astype(np.float32) / 32768.0)
        raw = s.metadata_path.read_bytes()
        atomic_write_bytes(d / METADATA_FILE, raw)
        files[METADATA_FILE] = sha256_bytes(raw)
        entries.append({"subset": s.subset, "id": s.id, "T": s.T, "T_clean": s.T_clean, "eligible": not reasons,
                        "reasons": reasons, "files": files})
    sig = Signature("fdb-v1.5-tree", (Component("system", sys_obj.name, None, {}, {"params": sys_obj.params(),
                                                                                     "version": sys_obj.version()}),))
    manifest = {**header(TREE_KIND, 1, sig, {}), "samples": entries}
    write_json(root / MANIFEST, manifest)
    return manifest


# --------------------------------------------------------------------------------------------------------- asr


def asr(tree: str | os.PathLike[str], backend: str = "whisper-align", say: Say = _quiet) -> dict[str, Any]:
    """Transcribe the four audio files of every eligible sample (none overwriting another), write asr.json."""
    root = Path(tree)
    man = _load(root / MANIFEST, TREE_KIND, "export")
    be = make_backend(backend)
    cache: dict[str, bytes] = {}  # the same audio (e.g. inputs shared by every system) is transcribed once
    records = []
    for i, e in enumerate(man["samples"], 1):
        if not e["eligible"]:
            continue
        key = f"{e['subset']}/{e['id']}"
        say(f"asr {key} ({i}/{len(man['samples'])})")
        d = root / e["subset"] / e["id"]
        files = {}
        for _, json_name in TRANSCRIPTS:
            wav = AUDIO_OF[json_name]
            _check(d / wav, e["files"][wav], key, "export")
            sha = e["files"][wav]
            if sha not in cache:
                cache[sha] = transcript_bytes(be.transcribe(read_audio_16k(d / wav)))
            atomic_write_bytes(d / json_name, cache[sha])
            files[json_name] = sha256_bytes(cache[sha])
        records.append({"subset": e["subset"], "id": e["id"], "files": files})
    sig = Signature("fdb-v1.5-asr", (asr_component(be.signature()),))
    out = {**header(ASR_KIND, 1, sig, {MANIFEST: _file_sha(root / MANIFEST)}), "backend": be.signature(), "samples": records}
    write_json(root / ASR, out)
    return out


def _ready(root: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    """manifest.json, asr.json (made from this manifest) and the transcribed sample ids per subset, all hash-checked."""
    man = _load(root / MANIFEST, TREE_KIND, "export")
    rec = _load(root / ASR, ASR_KIND, "asr")
    if rec["inputs"].get(MANIFEST) != _file_sha(root / MANIFEST):
        raise RefusalError(f"{root / ASR}: made from another manifest.json; rerun asr")
    by_key = {f"{e['subset']}/{e['id']}": e for e in man["samples"]}
    ids: dict[str, list[str]] = {}
    for r in rec["samples"]:
        key = f"{r['subset']}/{r['id']}"
        d = root / r["subset"] / r["id"]
        for name, sha in {**by_key[key]["files"], **r["files"]}.items():
            _check(d / name, sha, key, "asr" if name.endswith(".json") and name != METADATA_FILE else "export")
        ids.setdefault(r["subset"], []).append(r["id"])
    return man, rec, ids


def _counts(man: dict[str, Any], subset: str, done: Sequence[str]) -> dict[str, int]:
    sel = [e for e in man["samples"] if e["subset"] == subset]
    return {"selected": len(sel), "ineligible": sum(not e["eligible"] for e in sel),
            "not_transcribed": sum(e["eligible"] for e in sel) - len(done)}


# ---------------------------------------------------------------------------------------------------- evaluate


def evaluate(tree: str | os.PathLike[str], silero_model: str = silero.DEFAULT, silero_path: str | None = None,
             prompt: str | os.PathLike[str] | None = None, judge: JudgeSettings | None = None,
             say: Say = _quiet) -> dict[str, Any]:
    """The official v1.5 rules on every subset (the judge only when `judge` and the prompt are given): summary.json."""
    root = Path(tree)
    man, rec, ids = _ready(root)
    choice = silero.choose(silero_model, silero_path)
    bj = None
    if judge is not None:
        if prompt is None:
            raise InputError("the behaviour judge needs the official prompt: give a checkout of the official repository "
                             "or the prompt file (its text is CC BY-NC and not shipped with duplexeval)")
        bj = BehaviorJudge.create(judge, load_prompt(prompt), root)
    subsets: dict[str, Any] = {}
    for subset in SUBSET_ORDER:
        if subset not in ids:
            continue
        say(f"evaluate {subset} ({len(ids[subset])} samples)")
        res = official.evaluate_subset(subset, root / subset, choice, bj, ids[subset])
        js = official.result_json(res)
        js["counts"] = _counts(man, subset, ids[subset])
        if bj is None:
            js["judge"] = "not judged"
        for r in res.samples:  # the per-sample artifact of get_timing.py, in its shape
            if r.intervals is not None:
                write_json(root / subset / r.id / "latency_intervals.json", r.intervals)
        subsets[subset] = js
    comps = [Component("silero", choice.name, choice.sha256, {}, choice.signature(SCORER_SETTINGS)),
             asr_component(rec["backend"])]
    comps.append(Component("praat", praat_signature()["praat"], None, {}, praat_signature()))
    comps.append(Component("judge", "none") if bj is None else Component("judge", bj.label.split(" ")[0], bj.prompt.sha256,
                                                                           {}, bj.signature()))
    sig = Signature("fdb-v1.5-official", tuple(comps))
    out = {**header(SUMMARY_KIND, 1, sig, {MANIFEST: _file_sha(root / MANIFEST), ASR: _file_sha(root / ASR)}),
           "subsets": subsets}
    write_json(root / SUMMARY, json.loads(json.dumps(out)))
    return out


# ------------------------------------------------------------------------------------------------------- score


def score(tree: str | os.PathLike[str], stop_silence_ms: int = STOP_SILENCE_MS, say: Say = _quiet) -> dict[str, Any]:
    """Our rules on every subset: unified.json (per-sample rows inside, one block per subset)."""
    root = Path(tree)
    man, rec, ids = _ready(root)
    vad = load_vad()
    subsets: dict[str, Any] = {}
    for subset in SUBSET_ORDER:
        sel = [e for e in man["samples"] if e["subset"] == subset]
        if not sel:
            continue
        say(f"score {subset}")
        rows, block = unified_score.score_subset(subset, root / subset, vad, ids.get(subset, []), stop_silence_ms)
        block["counts"].update({"selected": len(sel), **{k: v for k, v in _counts(man, subset, ids.get(subset, [])).items()
                                                         if k != "selected"}})
        block["rows"] = [r.to_json() for r in rows]
        subsets[subset] = block
    sig = Signature("fdb-v1.5-unified", (Component("vad", "silero-6.2", vad_signature(SCORER_SETTINGS)["model_sha256"], {},
                                                   vad_signature(SCORER_SETTINGS)), asr_component(rec["backend"]),
                                         Component("stop_silence_ms", str(stop_silence_ms)))).with_bootstrap()
    inputs = {MANIFEST: _file_sha(root / MANIFEST), ASR: _file_sha(root / ASR)}
    if (root / SUMMARY).is_file():
        inputs[SUMMARY] = _file_sha(root / SUMMARY)  # the judge's tags come from the evaluate step
    out = {**header(UNIFIED_KIND, 1, sig, inputs), "subsets": subsets}
    write_json(root / UNIFIED, json.loads(json.dumps(out)))
    return out
