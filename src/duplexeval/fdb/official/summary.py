"""`summary.json`: the official-rule numbers, with the hashes of the inputs they were made from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.artifacts import header
from duplexeval.fdb.official.metric import Metric
from duplexeval.fdb.signatures import summary_signature, tree_inputs
from duplexeval.fdb.tree import SUMMARY_FILE
from duplexeval.jsonio import write_json
from duplexeval.signature import Component

SUMMARY_KIND = "duplexeval.fdb.summary"
SUMMARY_SCHEMA_VERSION = 2  # 2: the artifact header (duplexeval, signature, inputs) after kind and schema_version
RULES_NAME = "fdb-v1.0-official"
REPRODUCES = "DanielLin94144/Full-Duplex-Bench evaluation/ at f582595 (2025-06-11), the code behind the v1.0 table"
NOT_JUDGED = {"label": "not judged", "mode": "none"}


@dataclass
class SubsetSummary:
    """One subset's block: counts of every selected sample, the printed metrics, per-sample values."""

    task: str
    counts: dict[str, Any]
    metrics: dict[str, Metric]
    samples: list[dict[str, Any]]
    judge: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_evaluated(self) -> int:
        return sum(1 for s in self.samples if s.get("evaluated"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task": self.task,
            "n_evaluated": self.n_evaluated,
            "counts": self.counts,
            "metrics": {k: m.to_json() for k, m in self.metrics.items()},
        }
        if self.judge is not None:
            out["judge"] = self.judge
        out.update(self.extra)
        out["samples"] = self.samples
        return out


def rules_block(take_turn: dict[str, Any]) -> dict[str, Any]:
    """What rule set the numbers reproduce and the shared take-turn rule's constants; each task's rule adds its own
    entries after these (`OfficialRules.rules_block`)."""
    return {
        "name": RULES_NAME,
        "reproduces": REPRODUCES,
        "take_turn": dict(take_turn),
        "times": "float arithmetic on the output.json times as written (no microsecond rounding)",
    }


def build_summary(manifest_sha256: str, asr_sha256: str, rules: dict[str, Any], subsets: dict[str, SubsetSummary],
                  asr_backend: dict[str, Any] | None = None, components: tuple[Component, ...] = ()) -> dict[str, Any]:
    """The summary.json object (key order fixed, so the bytes are deterministic), led by the artifact header;
    `components` are the evaluated tasks' own signature components (`OfficialRules.signature_components`)."""
    judges = [s.judge for s in subsets.values() if s.judge is not None]
    sig = summary_signature(str(rules.get("name", RULES_NAME)), asr_backend, judges, manifest_sha256, asr_sha256, rules.get("backchannel_rules"),
                            components)
    return {
        **header(SUMMARY_KIND, SUMMARY_SCHEMA_VERSION, sig, tree_inputs(manifest_sha256, asr_sha256)),
        "manifest_sha256": manifest_sha256,
        "asr_sha256": asr_sha256,
        "rules": rules,
        "subsets": {name: s.to_json() for name, s in subsets.items()},
    }


def write_summary(tree: str | Path, summary: dict[str, Any]) -> str:
    """Write TREE/summary.json atomically; returns its SHA-256."""
    return write_json(Path(tree) / SUMMARY_FILE, summary)
