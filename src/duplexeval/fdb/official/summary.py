"""`summary.json`: the official-rule numbers, with the hashes of the inputs they were made from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval.artifacts import header
from duplexeval.errors import RefusalError
from duplexeval.fdb.official.metric import Metric
from duplexeval.fdb.signatures import summary_signature, tree_inputs
from duplexeval.fdb.tasks.base import JsonRecord, SummaryRow
from duplexeval.fdb.tree import SUMMARY_FILE, load_manifest
from duplexeval.jsonio import read_json, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.reruns import read_header
from duplexeval.signature import Component

SUMMARY_KIND = "duplexeval.fdb.summary"
SUMMARY_SCHEMA_VERSION = 2  # 2: the artifact header (duplexeval, signature, inputs) after kind and schema_version
RULES_NAME = "fdb-v1.0-official"
REPRODUCES = "DanielLin94144/Full-Duplex-Bench evaluation/ at f582595 (2025-06-11), the code behind the v1.0 table"


@dataclass(frozen=True)
class NotJudged:
    """The judge block of a subset whose rule can ask a judge when none was asked (`--judge none`)."""

    label: str = "not judged"
    mode: str = "none"

    def to_json(self) -> JsonObject:
        return {"label": self.label, "mode": self.mode}


NOT_JUDGED = NotJudged()


@dataclass
class SubsetCounts:
    """Every selected sample of a subset counted: the shared counts, then the rule's own (`OfficialOutcome.counts`)."""

    declared: int
    selected: int
    eligible: int
    ineligible: int
    ineligible_reasons: dict[str, int]
    asr_error: int = 0
    evaluated: int = 0
    rule: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {
            "declared": self.declared,
            "selected": self.selected,
            "eligible": self.eligible,
            "ineligible": self.ineligible,
            "ineligible_reasons": dict(self.ineligible_reasons),
            "asr_error": self.asr_error,
            "evaluated": self.evaluated,
            **self.rule,
        }


@dataclass
class SubsetSummary:
    """One subset's block: counts of every selected sample, the printed metrics, per-sample rows."""

    task: str
    counts: SubsetCounts
    metrics: Mapping[str, Metric]
    samples: list[SummaryRow]
    judge: JsonRecord | None = None
    extra: JsonRecord | None = None

    def to_json(self) -> JsonObject:
        samples = [s.to_json() for s in self.samples]
        out: JsonObject = {
            "task": self.task,
            "n_evaluated": sum(1 for s in samples if s.get("evaluated")),
            "counts": self.counts.to_json(),
            "metrics": {k: m.to_json() for k, m in self.metrics.items()},
        }
        if self.judge is not None:
            out["judge"] = self.judge.to_json()
        if self.extra is not None:
            out.update(self.extra.to_json())
        out["samples"] = samples
        return out


def rules_block(take_turn: Mapping[str, int]) -> JsonObject:
    """What rule set the numbers reproduce and the shared take-turn rule's constants; each task's rule adds its own
    entries after these (`OfficialRules.rules_block`)."""
    return {
        "name": RULES_NAME,
        "reproduces": REPRODUCES,
        "take_turn": dict(take_turn),
        "times": "float arithmetic on the output.json times as written (no microsecond rounding)",
    }


def build_summary(manifest_sha256: str, asr_sha256: str, rules: JsonObject, subsets: Mapping[str, SubsetSummary],
                  asr_backend: JsonObject | None = None, components: tuple[Component, ...] = ()) -> JsonObject:
    """The summary.json object (key order fixed, so the bytes are deterministic), led by the artifact header;
    `components` are the evaluated tasks' own signature components (`OfficialRules.signature_components`)."""
    judges = [s.judge.to_json() for s in subsets.values() if s.judge is not None]
    sig = summary_signature(str(rules.get("name", RULES_NAME)), asr_backend, judges, manifest_sha256, asr_sha256,
                            rules.get("backchannel_rules"), components)
    return {
        **header(SUMMARY_KIND, SUMMARY_SCHEMA_VERSION, sig, tree_inputs(manifest_sha256, asr_sha256)),
        "manifest_sha256": manifest_sha256,
        "asr_sha256": asr_sha256,
        "rules": rules,
        "subsets": {name: s.to_json() for name, s in subsets.items()},
    }


def write_summary(tree: str | Path, summary: JsonObject) -> str:
    """Write TREE/summary.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / SUMMARY_FILE, summary)


def check_own_settings(tree: Path, judge: str, model: str, backchannel_rules: str, subsets: list[str] | None,
                       options: Mapping[str, object] | None = None) -> None:
    """Before any work (or judge spending): refuse to replace a TREE/summary.json made with other settings of this
    stage (docs/cli.md section 4). One made from earlier files of the same tree is replaced: those files are gone.
    A judge block naming its `model_option` was asked with that task option's model, not --judge's."""
    path = tree / SUMMARY_FILE
    old = read_header(path)
    if not old:
        if old is not None:
            raise RefusalError(f"{path}: exists and is not a summary.json duplexeval wrote; pass --force to replace it")
        return
    full = read_json(path)
    blocks = [sub.get("judge") or {} for sub in (full.get("subsets") or {}).values()]
    judged = next((b for b in blocks if b.get("mode") not in (None, "none")), None)
    if judged is not None and judged.get("model_option") in (options or {}):
        model = str((options or {})[judged["model_option"]])
    was = "none" if judged is None else f"{judged.get('mode')} (model {judged.get('model')})"
    now = "none" if judge == "none" else f"{judge} (model {model})"
    chosen = sorted(subsets) if subsets else sorted({e.subset for e in load_manifest(tree)[0].samples})
    diffs = [
        ("judge", was, now) if (judged is None) != (judge == "none") or (judged and judged.get("model") != model)
        else None,
        ("backchannel rules", (full.get("rules") or {}).get("backchannel_rules"), backchannel_rules),
        ("subsets", ", ".join(sorted(full.get("subsets") or {})), ", ".join(chosen)),
    ]
    for d in diffs:
        if d is not None and d[1] != d[2]:
            raise RefusalError(f"{path}: exists and was made with other settings ({d[0]}: {d[1]} there, {d[2]} now); "
                               "pass --force to replace it")
