"""What the families' Python APIs return: a JSON artifact read back as a typed record, its numbers as `stats` values.

Every artifact writes its numbers in the one JSON shape of their `stats` kind; `metric` reads one back (a share
that round-trips ``Share(count, n).to_json()`` is a `Share`, every other number with an interval it computed
itself -- a grouped-bootstrap share, a pooled ratio, a latency's median, a paired difference -- an `Estimate`
whose ``fields`` keep the rest), and `metrics_of` names every number of a document by the dotted path the CLI's
``--fail-under`` / ``--fail-over`` gates use (`exits.metric_values`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from duplexeval.errors import InputError

if TYPE_CHECKING:  # stats and signature load numpy: imported where a value is built, so the API packages stay cheap
    from typing import TypeAlias

    from duplexeval.signature import Signature
    from duplexeval.stats import Estimate, Share

    Metric: TypeAlias = Share | Estimate | float | None


def __getattr__(name: str) -> Any:
    """``Metric`` (one number of a result: a `stats` value, or a plain number where it has no interval), built on
    first use so that importing this module does not load numpy."""
    if name == "Metric":
        from duplexeval.stats import Estimate, Share

        return Share | Estimate | float | None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

HEADER_KEYS = ("kind", "schema_version", "duplexeval", "signature", "inputs", "definitions")


def _interval(v: Any) -> tuple[float, float] | None:
    """A JSON interval [lo, hi] as a pair (a null endpoint, not reached, as +inf)."""
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        return None
    lo, hi = (float("inf") if x is None else float(x) for x in v)
    return (lo, hi)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _estimate(value: Any, js: Mapping[str, Any], interval_key: str, used: tuple[str, ...]) -> Estimate:
    from duplexeval.stats import Estimate

    rest = {k: v for k, v in js.items() if k not in used}
    return Estimate(float(value) if _number(value) else None, _interval(js.get(interval_key)), MappingProxyType(rest))


def metric(js: Any) -> Metric:
    """One JSON number of an artifact as its `stats` value (see the module docstring); None for no number."""
    from duplexeval.stats import Share

    if _number(js):
        return float(js)
    if not isinstance(js, Mapping):
        return None
    if "value" in js and _number(js.get("count")) and _number(js.get("n")):
        count, n = int(js["count"]), int(js["n"])
        candidates: list[tuple[int | None, int | None]] = [(None, None)]
        bounds = js.get("selected_bounds")
        if isinstance(bounds, list) and len(bounds) == 2 and all(_number(b) for b in bounds):
            # the units that could not be judged are the selected ones that were not (count, n) -> selected - n
            lo, hi = float(bounds[0]), float(bounds[1])
            sizes = {round(count / lo)} if lo > 0 else set()
            sizes |= {round((n - count) / (1 - hi))} if hi < 1 else set()
            candidates = [(s - n, s) for s in sorted(sizes) if s >= n]
        for unknown, selected in candidates:
            try:
                share = Share(count, n, unknown, selected)
            except ValueError:
                continue
            own = share.to_json()
            if own == {k: js.get(k) for k in own} and js.get("interval_method", "wilson") == "wilson":
                return share
    if "value" in js:
        return _estimate(js["value"], js, "interval", ("value", "interval"))
    for diff in ("diff", "diff_b_minus_a"):
        if diff in js:
            return _estimate(js[diff], js, "interval", (diff, "interval"))
    if "median" in js:
        return _estimate(js["median"], js, "median_interval", ("median", "median_interval"))
    return None


def _is_number_shape(js: Mapping[str, Any]) -> bool:
    """The shapes `exits.metric_values` stops at (a value, a paired difference, a latency)."""
    if "value" in js and (js["value"] is None or _number(js["value"])):
        return True
    if any(k in js and (js[k] is None or _number(js[k])) for k in ("diff", "diff_b_minus_a")):
        return True
    return "median" in js and (js["median"] is None or _number(js["median"]))


def metrics_of(doc: Any, prefix: str = "") -> dict[str, Metric]:
    """Every number of a result document by the dotted name a CLI gate gives it, as `stats` values."""
    out: dict[str, Metric] = {}
    if isinstance(doc, Mapping):
        if prefix and _is_number_shape(doc):
            out[prefix] = metric(doc)
            return out
        for key, sub in doc.items():
            if not prefix and key in HEADER_KEYS:
                continue
            out.update(metrics_of(sub, f"{prefix}.{key}" if prefix else str(key)))
    elif _number(doc) and prefix:
        out[prefix] = float(doc)
    return out


def frozen(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a JSON document (the record does not change under its reader)."""
    return MappingProxyType(dict(doc))


@dataclass(frozen=True)
class Artifact:
    """A JSON artifact read back: its header, its numbers as `stats` values by gate name, and the whole document."""

    path: Path
    kind: str
    schema_version: int
    signature: Signature | None
    inputs: Mapping[str, str]
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    document: Mapping[str, Any] = field(default_factory=dict)


def signature_of(doc: Mapping[str, Any], path: str | Path) -> Signature | None:
    """The document's signature (None when it has none); a malformed one is one line naming the file."""
    from duplexeval.signature import Signature

    js = doc.get("signature")
    if js is None:
        return None
    try:
        return Signature.from_json(js)
    except (KeyError, TypeError, AttributeError, ValueError):
        raise InputError(f"{path}: malformed signature in the header") from None


def artifact(doc: Mapping[str, Any], path: str | Path, metrics_from: Any = None) -> Artifact:
    """The typed record of a document already checked by `artifacts.check_kind` (`metrics_from`: the part of it whose
    numbers are its metrics, by default the whole document)."""
    inputs = doc.get("inputs") or {}
    return Artifact(
        Path(path),
        str(doc["kind"]),
        int(doc.get("schema_version") or 0),
        signature_of(doc, path),
        MappingProxyType({str(k): str(v) for k, v in inputs.items()} if isinstance(inputs, Mapping) else {}),
        MappingProxyType(metrics_of(doc if metrics_from is None else metrics_from)),
        frozen(doc),
    )


def read_artifact(path: str | Path, kind: str, max_schema: int | None = None) -> Artifact:
    """Read a JSON artifact of `kind` (schema version at most `max_schema`); the CLI's one-line errors otherwise."""
    from duplexeval.artifacts import check_kind
    from duplexeval.jsonio import read_json

    doc = check_kind(read_json(path), kind, path, max_schema)
    return artifact(doc, path)
