"""`duplexeval fdb import`: adopt `output.wav` files made elsewhere into an FDB v1.0 tree.

Official inference scripts write `output.wav` (16 or 24 kHz) next to each input; we look for it at the
sample's own path under `--outputs`, then at `<outputs>/<subset>/<id>/output.wav`. Each is
resampled to 16 kHz; a length within one 80 ms frame of T is fixed (cropped or zero-padded) and
recorded, anything further off makes the sample ineligible (`length_mismatch`). A missing output is
ineligible (`missing_output`), never dropped. An `output.json` next to the wav is copied byte for
byte so the ASR stage's `import` backend can use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from duplexeval.fdb.export import (
    REASON_BAD_OUTPUT,
    REASON_LENGTH,
    REASON_MISSING_OUTPUT,
    TRACE_FILE,
    ExportResult,
    build_samples,
    copy_annotation,
    dataset_identity,
    entry_json,
    finish_run,
    float_to_int16,
    resolve_dataset,
    select_samples,
)
from duplexeval.fdb.tree import OUTPUT_JSON, OUTPUT_WAV, SampleEntry
from duplexeval.jsonio import atomic_write_bytes, sha256_bytes, sha256_file, write_json

LENGTH_TOLERANCE_SAMPLES = 1280  # one 80 ms frame at 16 kHz


def find_output(sample: Any, ds_root: Path, outputs: Path) -> Path:
    """Where a sample's output.wav should be: the dataset's own nesting under `outputs`, else `<subset>/<id>/`."""
    try:
        rel = Path(sample.dir).resolve().relative_to(ds_root.resolve())
        nested = outputs / rel / OUTPUT_WAV
        if nested.is_file():
            return nested
    except (ValueError, OSError, AttributeError, TypeError):
        pass
    return outputs / sample.subset / sample.id / OUTPUT_WAV


def _import_one(sample: Any, src: Path, out: Path, run_sha: str, src_sha: str, key: str) -> SampleEntry:
    from duplexeval.audio import SAMPLE_RATE, fit_length, n_samples_for, read_audio, resample, write_wav_pcm16
    from duplexeval.errors import InputError

    sdir = out / sample.subset / sample.id
    sdir.mkdir(parents=True, exist_ok=True)
    for stale in (TRACE_FILE, OUTPUT_WAV, OUTPUT_JSON):
        if (sdir / stale).exists():
            (sdir / stale).unlink()
    T = float(sample.T)
    n = n_samples_for(T)
    files, reasons, ann_sha = copy_annotation(sample, sdir)
    info: dict[str, Any] = {"source_sha256": None, "source_sample_rate": None, "source_samples": None,
                            "length_fix_samples": None, "output_json": False}
    if not src.is_file():
        reasons.append(REASON_MISSING_OUTPUT)
    else:
        info["source_sha256"] = src_sha
        try:
            audio, sr = read_audio(src)
        except InputError as exc:
            reasons.append(REASON_BAD_OUTPUT)
            info["error"] = f"cannot read {OUTPUT_WAV}: {str(exc).rsplit(':', 1)[-1].strip()}"
            audio, sr = None, 0
        if audio is not None:
            a16 = resample(audio, sr, SAMPLE_RATE)
            info["source_sample_rate"] = sr
            info["source_samples"] = int(audio.shape[0])
            diff = int(a16.shape[0]) - n
            info["length_fix_samples"] = -diff
            if abs(diff) > LENGTH_TOLERANCE_SAMPLES:
                reasons.append(REASON_LENGTH)
            else:
                files = {OUTPUT_WAV: write_wav_pcm16(sdir / OUTPUT_WAV, float_to_int16(fit_length(a16, n)), SAMPLE_RATE), **files}
                oj = src.parent / OUTPUT_JSON
                if oj.is_file():
                    data = oj.read_bytes()
                    atomic_write_bytes(sdir / OUTPUT_JSON, data)
                    info["output_json"] = True
                    info["output_json_sha256"] = sha256_bytes(data)
    entry = SampleEntry(sample.subset, sample.id, T, not reasons, sorted(set(reasons)), files, {"import": info})
    write_json(sdir / TRACE_FILE, {
        "kind": "duplexeval.fdb.import",
        "schema_version": 1,
        "run_sha256": run_sha,
        "subset": sample.subset,
        "id": sample.id,
        "T": T,
        "n_samples": n,
        "input_sha256": key,
        "annotation_sha256": ann_sha,
        "result": entry_json(entry),
    })
    return entry


def import_outputs(
    dataset: Any,
    outputs: str | Path,
    out: str | Path,
    subsets: Iterable[str] | None = None,
    limit: int | None = None,
    name: str = "imported",
    force: bool = False,
    progress: bool = True,
) -> ExportResult:
    """Build the tree `out` from the dataset's annotations and the `output.wav` files under `outputs`."""
    from duplexeval.errors import InputError

    ds = resolve_dataset(dataset)
    outputs = Path(outputs)
    if not outputs.is_dir():
        raise InputError(f"{outputs}: --outputs must be a folder holding <subset>/<id>/output.wav")
    chosen = select_samples(ds, subsets, limit)
    out = Path(out)
    if out.resolve() == outputs.resolve():
        raise InputError(f"{out}: --out must differ from --outputs (the sources are never modified)")
    ds_root = Path(getattr(ds, "root", "."))
    sources = [find_output(sample, ds_root, outputs) for sample in chosen]
    if not any(src.is_file() for src in sources):
        raise InputError(
            f"{outputs}: no output.wav for any of the {len(chosen)} selected samples "
            f"(expected {outputs}/<subset>/<id>/output.wav, e.g. {sources[0]})"
        )
    out.mkdir(parents=True, exist_ok=True)
    sysj = {"name": "import", "params": {"outputs": outputs.name, "label": name}, "version": _version()}
    run = {"tool": "import", "system": sysj, "dataset": dataset_identity(ds)}

    def key_of(i: int) -> tuple[str, str]:
        src = sources[i]
        src_sha = sha256_file(src) if src.is_file() else "missing"
        oj = src.parent / OUTPUT_JSON
        return src_sha + (f"+{sha256_file(oj)}" if oj.is_file() else ""), src_sha

    def make(i: int, run_sha: str, key: str, src_sha: str) -> SampleEntry:
        return _import_one(chosen[i], sources[i], out, run_sha, src_sha, key)

    entries, ran, reused = build_samples(out, run, force, progress, chosen, key_of, make, "import")
    info = {"tool": "duplexeval fdb import", "length_tolerance_samples": LENGTH_TOLERANCE_SAMPLES}
    return finish_run(out, ds, entries, sysj, "import", info, limit, ran, reused)


def _version() -> str:
    from duplexeval import __version__

    return f"duplexeval {__version__}"
