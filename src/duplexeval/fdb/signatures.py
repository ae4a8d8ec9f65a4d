"""The signatures of the FDB v1.0 artifacts (asr.json, summary.json, unified.json, compare.json).

Each is a `duplexeval.signature.Signature`: the definitions version, the ASR backend (model hash and a
hash of its options), the VAD (package, model hash, settings), the judge, the bootstrap, and the
hashes of the input files. The full backend and VAD records ride along as `detail`; the compact line
keeps only what tells two runs apart at a glance.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from duplexeval.jsonio import dumps
from duplexeval.signature import Component, Signature

ASR_DEFINITIONS = "fdb-v1.0-asr-1"
COMPARE_DEFINITIONS = "fdb-v1.0-compare-1"

# VAD settings printed in the compact line: key letter -> settings field.
_VAD_SHORT = (("t", "threshold"), ("s", "min_speech_ms"), ("m", "min_silence_ms"), ("p", "speech_pad_ms"))


def _digest(obj: Any) -> str:
    return hashlib.sha256(dumps(obj).encode("utf-8")).hexdigest()


def _model_label(model: Any) -> str:
    """'whisper tiny.en (CTranslate2)' -> 'tiny.en'; a bare string is kept; anything else gives ''."""
    if isinstance(model, str):
        return model
    if not isinstance(model, Mapping) or not isinstance(model.get("name"), str):
        return ""
    words = re.sub(r"\s*\(.*?\)", "", model["name"]).split()
    return words[-1] if words else ""


def asr_component(backend: Mapping[str, Any]) -> Component:
    """The ASR backend: name and model label, the model file hash, and a hash of every other option."""
    name = str(backend.get("name", "?"))
    if backend.get("source") == "import":
        return Component("asr", f"import:{name}", None, {}, dict(backend))
    model = backend.get("model")
    label = _model_label(model)
    model_hash = model.get("sha256") if isinstance(model, Mapping) else None
    settings: dict[str, str | int] = {"opts": _digest(backend.get("options"))[:8]} if backend.get("options") else {}
    if "worker_threads" in backend:  # the model's and BLAS/OpenMP threads in every worker (executors.WORKER_THREADS)
        settings["thr"] = backend["worker_threads"]
    return Component("asr", f"{name}:{label}" if label else name, model_hash, settings, dict(backend))


def vad_component(vad: Mapping[str, Any]) -> Component:
    """The VAD: Silero's version it reproduces (or package-version), the model hash and the four scorer settings."""
    eq = re.search(r"silero-vad (\d+(?:\.\d+)*)", str(vad.get("equivalent_to", "")))
    value = f"silero-{eq.group(1)}" if eq else f"{vad.get('package', '?')}-{vad.get('version', '?')}"
    raw = vad.get("settings")
    settings: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    short = {k: settings[f] for k, f in _VAD_SHORT if f in settings}
    return Component("vad", value, vad.get("model_sha256"), short, dict(vad))


def judge_component(judges: Sequence[Mapping[str, Any]]) -> Component:
    """The interruption judge: 'none' when nothing was judged, else its label (model) with the full block as detail."""
    real = [j for j in judges if j.get("mode") not in (None, "none")]
    if not real:
        return Component("judge", "none")
    label = re.sub(r"[^A-Za-z0-9._:-]+", "-", str(real[0].get("label", "?"))).strip("-")
    return Component("judge", label, None, {}, {"blocks": [dict(j) for j in real]})


def tree_inputs(manifest_sha256: str, asr_sha256: str | None = None) -> dict[str, str]:
    """The input hashes of a stage that read manifest.json (and asr.json)."""
    out = {"manifest.json": manifest_sha256}
    if asr_sha256 is not None:
        out["asr.json"] = asr_sha256
    return out


def asr_signature(backend: Mapping[str, Any], manifest_sha256: str) -> Signature:
    """asr.json: the backend, made from manifest.json."""
    return Signature(ASR_DEFINITIONS, (asr_component(backend),), tree_inputs(manifest_sha256))


def unified_signature(
    definitions: str, backend: Mapping[str, Any], vad: Mapping[str, Any], manifest_sha256: str, asr_sha256: str
) -> Signature:
    """unified.json: the unified definitions, ASR, VAD and bootstrap, made from manifest.json and asr.json."""
    comps = (asr_component(backend), vad_component(vad))
    return Signature(definitions, comps, tree_inputs(manifest_sha256, asr_sha256)).with_bootstrap()


def summary_signature(
    rules: str, backend: Mapping[str, Any] | None, judges: Sequence[Mapping[str, Any]], manifest_sha256: str,
    asr_sha256: str, backchannel_rules: str | None = None, more: Sequence[Component] = (),
) -> Signature:
    """summary.json: the official rule set (and which backchannel loop), ASR and judge (no bootstrap: none officially),
    then `more` (what an evaluated task's numbers also depend on)."""
    comps = ((asr_component(backend),) if backend is not None else ()) + (judge_component(judges),)
    if backchannel_rules is not None:  # the 2025-06 (v1.0) or 2026-02 (HEAD) loop changes backchannel numbers
        comps += (Component("backchannel", backchannel_rules),)
    comps += tuple(more)
    return Signature(rules, comps, tree_inputs(manifest_sha256, asr_sha256))


def compare_signature(base: Signature, inputs: Mapping[str, str]) -> Signature:
    """compare.json: the first tree's unified components (the others were checked to match) and the paired bootstrap."""
    comps = tuple(c for c in base.components if c.name != "boot")
    return Signature(f"{COMPARE_DEFINITIONS}+{base.definitions}", comps, dict(inputs)).with_bootstrap()
