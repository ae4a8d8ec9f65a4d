"""The offline evaluation policy (spec 002 operating point): thresholds, debounce, warmup, gate, fallback, cooldown.

Reports record it verbatim as ``evaluation_policy``; ``calibrate`` writes one and ``evaluate`` applies it unchanged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.jsonio import read_json, write_json
from duplexeval.jsontypes import JsonObject
from duplexeval.schemas import validate
from duplexeval.schemas.controller import PolicyFields

POLICY_KIND = "duplexeval.controller.policy"
MODES = ("head_only", "fallback_on")


@dataclass(frozen=True)
class EvaluationPolicy:
    """Replay settings; the defaults are spec 002's offline operating point.

    ``endpoint_mode`` is the primary mode of the report (``fallback_on``: the 1.2 s silence fallback may end a
    turn; ``head_only``: only the endpoint head). ``vad_gate_db`` None disables the gate: every frame counts as
    voiced, so the min-voiced rule is met by time alone and the silence fallback never fires.
    """

    endpoint_threshold: float = 0.91
    yield_threshold: float = 0.93
    backchannel_threshold: float = 0.80
    debounce_frames: int = 2
    warmup_frames: int = 6
    vad_gate_db: float | None = -50.0
    min_voiced_ms: int = 350
    fallback_silence_ms: int = 1200
    endpoint_mode: str = "fallback_on"
    backchannel_cooldown_frames: int = 15
    miss_deadline_ms: int = 1200
    notes: str = ""

    def __post_init__(self) -> None:
        validate(asdict(self), PolicyFields, "evaluation policy")  # schemas.controller: one set of rules

    def with_(self, **changes: Any) -> EvaluationPolicy:
        """A copy with some fields changed (validated)."""
        return replace(self, **changes)

    def to_json(self) -> JsonObject:
        """The ``evaluation_policy`` object (field order fixed)."""
        return {"kind": POLICY_KIND, "schema_version": 1, **asdict(self)}

    @classmethod
    def from_json(cls, obj: Any, where: str = "evaluation policy") -> EvaluationPolicy:
        """Parse a policy object; unknown keys are an error, missing keys take the defaults."""
        if not isinstance(obj, dict):
            raise InputError(f"{where}: must be a JSON object")
        if "evaluation_policy" in obj and isinstance(obj["evaluation_policy"], dict):
            obj = obj["evaluation_policy"]  # a report or calibration file: take its policy
        if obj.get("kind", POLICY_KIND) != POLICY_KIND:
            raise InputError(f"{where}: kind must be {POLICY_KIND!r}")
        body = {k: v for k, v in obj.items() if k not in ("kind", "schema_version")}
        rec = validate(body, PolicyFields, where)
        return cls(**{f.name: getattr(rec, f.name) for f in fields(cls) if f.name in body})


def load_policy(path: str | Path) -> EvaluationPolicy:
    """Read a policy JSON file (a bare policy, or any file with an ``evaluation_policy`` key)."""
    return EvaluationPolicy.from_json(read_json(path), str(path))


def save_policy(path: str | Path, policy: EvaluationPolicy, extra: JsonObject | None = None) -> str:
    """Write the policy (plus optional provenance under ``calibration``); returns the file's SHA-256."""
    obj: JsonObject = {"evaluation_policy": policy.to_json()}
    if extra:
        obj.update(extra)
    return write_json(path, obj)
