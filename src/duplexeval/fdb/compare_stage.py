"""Paired comparison of scored trees (spec 000, "Denominators and intervals"): B - A on the same samples.

Rows of unified-samples.jsonl are paired by sample id over the samples eligible in both trees, or (for a task
with a gate, such as interruption's `exercised_rate`) passing the gate in both, the gate itself over eligible
in both; each task says what it pairs (`PairedSpec`). Every metric gets A,
B, the difference B - A with its paired-bootstrap 95% interval (`duplexeval.paired`), the number of
pairs, and for the shares McNemar's exact test. Pairing does not remove selection bias, so each subset
also carries both trees' coverage, `exercised_rate` and selected bounds, and the pairing counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from duplexeval import paired, stats
from duplexeval.artifacts import header
from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.results import ScoredTree, load_scored
from duplexeval.fdb.signatures import compare_signature
from duplexeval.fdb.tasks import MetricSpec, get_task, task_of
from duplexeval.fdb.tasks.base import RowT
from duplexeval.fdb.tree import SUBSETS
from duplexeval.jsontypes import JsonObject
from duplexeval.reruns import check_replace, read_header
from duplexeval.signature import Component, Signature

COMPARE_KIND = "duplexeval.fdb.compare"
COMPARE_SCHEMA_VERSION = 1
COMPARE_FILE = "compare.json"


def _scaled(d: paired.PairedDifference, per_second: int) -> paired.PairedDifference:
    if per_second == 1:
        return d

    def s(x: float | None) -> float | None:
        return None if x is None else x / per_second

    iv = None if d.interval is None else (d.interval[0] / per_second, d.interval[1] / per_second)
    return paired.PairedDifference(s(d.a), s(d.b), s(d.diff), iv, d.n_pairs, d.reason, d.skipped)


@dataclass(frozen=True)
class PairedMetric:
    """One compared metric: its kind (share, ratio, median), B - A with its paired interval, and for a share both
    counts and McNemar's test, for a median whether each side's median was reached; `to_json()` is compare.json's."""

    kind: str
    difference: paired.PairedDifference
    count_a: int | None = None
    count_b: int | None = None
    mcnemar: paired.McNemar | None = None
    a_reached: bool | None = None
    b_reached: bool | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"kind": self.kind, **self.difference.to_json()}
        if self.kind == "share":
            out["count_a"], out["count_b"] = self.count_a, self.count_b
            out["mcnemar"] = None if self.mcnemar is None else self.mcnemar.to_json()
        elif self.kind != "ratio":
            out["a_reached"], out["b_reached"] = self.a_reached, self.b_reached
        return out


def compare_metric(spec: MetricSpec[RowT], rows_a: Sequence[RowT], rows_b: Sequence[RowT]) -> PairedMetric:
    """One metric over aligned pairs of task rows: A, B, B - A with its interval, pairs, and McNemar for a share."""
    va = [spec.value(r) for r in rows_a]
    vb = [spec.value(r) for r in rows_b]
    if spec.kind == "share":
        d = paired.paired_mean_difference([float(x) for x in va], [float(x) for x in vb])
        mcnemar = paired.mcnemar_exact([bool(x) for x in va], [bool(x) for x in vb]) if va else None
        return PairedMetric(spec.kind, d, sum(map(bool, va)), sum(map(bool, vb)), mcnemar)
    if spec.kind == "ratio":
        d = paired.paired_ratio_difference([x[0] for x in va], [x[1] for x in va],
                                           [x[0] for x in vb], [x[1] for x in vb])
        return PairedMetric(spec.kind, d)
    d = _scaled(paired.paired_quantile_difference(va, vb, 0.5), spec.per_second)
    # a median on +inf is not reached
    return PairedMetric(spec.kind, d, a_reached=None if not va else d.a is not None,
                        b_reached=None if not vb else d.b is not None)


@dataclass(frozen=True)
class TreeContext:
    """What pairing cannot fix, per tree, as its unified.json block says: coverage, counts, the gate metric (e.g.
    `exercised_rate`) and every share's selected bounds (JSON values of the file, carried into compare.json)."""

    coverage: float | None
    counts: JsonObject | None
    gate: tuple[str, JsonObject] | None
    selected_bounds: JsonObject

    @classmethod
    def of(cls, block: JsonObject) -> TreeContext:
        """The context of one tree's subset block (as unified.json holds it)."""
        metrics = block.get("metrics") or {}
        task = get_task(block["task"])
        gate = task.paired.gate if task.paired is not None else None
        kinds = task.unified.metric_kinds if task.unified is not None else {}
        return cls(block.get("coverage"), block.get("counts"),
                   (gate.name, metrics[gate.name]) if gate is not None and gate.name in metrics else None,
                   {k: m["selected_bounds"] for k, m in metrics.items() if _is_share(kinds.get(k))})

    def to_json(self) -> JsonObject:
        out: JsonObject = {"coverage": self.coverage, "counts": self.counts}
        if self.gate is not None:
            out[self.gate[0]] = self.gate[1]
        out["selected_bounds"] = self.selected_bounds
        return out


@dataclass(frozen=True)
class Exercised:
    """For a task with a gate: the samples eligible in both, by which trees pass the gate."""

    both: int
    only_a: int
    only_b: int
    neither: int

    def to_json(self) -> JsonObject:
        return {"both": self.both, "only_a": self.only_a, "only_b": self.only_b, "neither": self.neither}


@dataclass(frozen=True)
class Pairing:
    """How one subset's samples paired: selected and eligible in each tree and in both, the gate's breakdown
    (`exercised`, None without a gate) and the pairs the metrics are over."""

    selected_a: int
    selected_b: int
    selected_both: int
    eligible_a: int
    eligible_b: int
    eligible_both: int
    paired: int
    exercised: Exercised | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "selected_a": self.selected_a, "selected_b": self.selected_b, "selected_both": self.selected_both,
            "eligible_a": self.eligible_a, "eligible_b": self.eligible_b, "eligible_both": self.eligible_both,
        }  # fmt: skip
        if self.exercised is not None:
            out["exercised"] = self.exercised.to_json()
        out["paired"] = self.paired
        return out


@dataclass(frozen=True)
class SubsetComparison:
    """One subset of a comparison: its task, the pairing, in words what the pairs are over, each tree's context (None:
    the tree has no block of the subset) and each metric's paired difference."""

    task: str
    pairing: Pairing
    pairs_over: str
    context_a: TreeContext | None
    context_b: TreeContext | None
    metrics: dict[str, PairedMetric]

    def to_json(self) -> JsonObject:
        return {
            "task": self.task,
            "pairing": self.pairing.to_json(),
            "pairs_over": self.pairs_over,
            "context": {"a": None if self.context_a is None else self.context_a.to_json(),
                        "b": None if self.context_b is None else self.context_b.to_json()},
            "metrics": {k: m.to_json() for k, m in self.metrics.items()},
        }


@dataclass(frozen=True)
class Comparison:
    """Tree `b` against tree `a` (indexes into the trees compared), per subset."""

    a: int
    b: int
    subsets: dict[str, SubsetComparison]

    def to_json(self) -> JsonObject:
        return {"a": self.a, "b": self.b, "subsets": {name: c.to_json() for name, c in self.subsets.items()}}


def _is_share(kind: type | None) -> bool:
    return kind is not None and issubclass(kind, stats.Share)


def _context(tree: ScoredTree, subset: str) -> TreeContext | None:
    block = tree.unified["subsets"].get(subset)
    return None if block is None else TreeContext.of(block)


def compare_subset(subset: str, a: ScoredTree, b: ScoredTree) -> SubsetComparison:
    """The comparison block of one scored subset: pairs over eligible in both, or passing the task's gate in both."""
    task = task_of(subset)
    assert task.paired is not None  # only subsets of compared tasks are compared
    gate = task.paired.gate
    sa, sb = a.rows.get(subset, {}), b.rows.get(subset, {})
    common = [i for i in sa if i in sb]
    # the task rows of the samples scored in both (eligible in both)
    ra = {i: sa[i].row for i in common if sa[i].row is not None}
    rb = {i: sb[i].row for i in common if sb[i].row is not None}
    both = [i for i in common if sa[i].eligible and sb[i].eligible]
    missing = next((i for i in both if i not in ra or i not in rb), None)
    if missing is not None:
        raise InputError(f"compare: sample {subset}/{missing}: eligible but not scored in "
                         f"{a.root if missing not in ra else b.root}; rerun `duplexeval fdb score`")
    metrics: dict[str, PairedMetric] = {}
    paired_ids = both
    exercised = None
    if gate is not None:
        ex_a = {i for i in both if gate.value(ra[i])}
        ex_b = {i for i in both if gate.value(rb[i])}
        paired_ids = [i for i in both if i in ex_a and i in ex_b]
        exercised = Exercised(len(paired_ids), len(ex_a - ex_b), len(ex_b - ex_a), len(both) - len(ex_a | ex_b))
        metrics[gate.name] = compare_metric(gate, [ra[i] for i in both], [rb[i] for i in both])
    pairing = Pairing(len(sa), len(sb), len(common), sum(1 for r in sa.values() if r.eligible),
                      sum(1 for r in sb.values() if r.eligible), len(both), len(paired_ids), exercised)
    for spec in task.paired.metrics:
        ids = paired_ids if spec.within is None else [i for i in paired_ids
                                                      if spec.within(ra[i]) and spec.within(rb[i])]
        metrics[spec.name] = compare_metric(spec, [ra[i] for i in ids], [rb[i] for i in ids])
    return SubsetComparison(task.name, pairing, task.paired.over, _context(a, subset), _context(b, subset), metrics)


def _dataset_difference(a: ScoredTree, b: ScoredTree) -> str | None:
    """Why two trees are not from the same dataset (name, declared sizes, an annotation or T of a shared sample)."""
    if a.manifest.dataset_name != b.manifest.dataset_name:
        return f"dataset name {a.manifest.dataset_name!r} vs {b.manifest.dataset_name!r}"
    if a.manifest.declared != b.manifest.declared:
        return f"declared subset sizes {a.manifest.declared} vs {b.manifest.declared}"
    eb = {e.key: e for e in b.manifest.samples}
    for e in a.manifest.samples:
        o = eb.get(e.key)
        if o is None:
            continue
        if e.T != o.T:
            return f"sample {e.key}: input length T {e.T!r} vs {o.T!r}"
        ann = e.annotation
        if ann and ann in e.files and ann in o.files and e.files[ann] != o.files[ann]:
            return f"sample {e.key}: {ann} differs (sha256 {e.files[ann][:12]}... vs {o.files[ann][:12]}...)"
    return None


def _component(sig: Signature, name: str) -> Component | None:
    return next((c for c in sig.components if c.name == name), None)


def check_comparable(a: ScoredTree, b: ScoredTree, allow_different_asr: bool = False) -> list[str]:
    """Refuse trees that are not comparable, naming the input that differs; returns notes for allowed differences."""
    where = f"compare: {a.root} and {b.root}"
    why = _dataset_difference(a, b)
    if why:
        raise RefusalError(f"{where} were made from different datasets ({why})")
    sa, sb = a.signature, b.signature
    if sa.definitions != sb.definitions:
        raise RefusalError(f"{where} were scored with different definitions ({sa.definitions} vs {sb.definitions}); "
                           "rescore both")
    va, vb = _component(sa, "vad"), _component(sb, "vad")
    if (va is not None and vb is not None
        and (va.value, va.hash, dict(va.settings)) != (vb.value, vb.hash, dict(vb.settings))):
        raise RefusalError(f"{where} were scored with different VAD ({va.compact()} vs {vb.compact()}); rescore both")
    aa, ab = _component(sa, "asr"), _component(sb, "asr")
    notes = []
    if (aa is not None and ab is not None
        and (aa.value, aa.hash, dict(aa.settings)) != (ab.value, ab.hash, dict(ab.settings))):
        if not allow_different_asr:
            raise RefusalError(
                f"{where} were transcribed by different ASR backends ({aa.compact()} vs {ab.compact()}); "
                "transcribe both the same way, or pass --allow-different-asr"
            )
        notes.append(f"different ASR backends allowed: {aa.compact()} vs {ab.compact()}")
    return notes


@dataclass
class CompareFile:
    """compare.json as an object; `to_json()` is the file (header first); each comparison's subsets hold the typed
    `PairedMetric` values, written as their JSON."""

    trees: list[ScoredTree]
    comparisons: list[Comparison]
    signature: Signature
    notes: list[str]

    def to_json(self) -> JsonObject:
        inputs = {}
        for k, t in enumerate(self.trees):
            inputs[f"{k}:unified.json"] = t.unified_sha256
            inputs[f"{k}:unified-samples.jsonl"] = t.rows_sha256
        return {
            **header(COMPARE_KIND, COMPARE_SCHEMA_VERSION, self.signature, inputs),
            "method": "paired percentile bootstrap over samples (2000 resamples, default_rng(0) per interval, "
            "quantile-rule endpoints at ranks 50 and 1950; a median's difference is the difference of the "
            "resample medians; not reached stays null); McNemar's exact two-sided test for the shares",
            "trees": [
                {"index": k, "path": str(t.root), "label": t.label, "signature": t.unified["signature"]["compact"]}
                for k, t in enumerate(self.trees)
            ],
            "notes": self.notes,
            "comparisons": [c.to_json() for c in self.comparisons],
        }


def compare(trees: Sequence[str | Path | ScoredTree], allow_different_asr: bool = False) -> CompareFile:
    """Compare every tree to the first (B - A with A the first tree)."""
    if len(trees) < 2:
        raise InputError("compare: give at least two trees")
    loaded = [t if isinstance(t, ScoredTree) else load_scored(t) for t in trees]
    base = loaded[0]
    notes: list[str] = []
    for other in loaded[1:]:
        notes += check_comparable(base, other, allow_different_asr)
    comparisons = []
    for k, other in enumerate(loaded[1:], 1):
        subsets = {
            s: compare_subset(s, base, other)
            for s in SUBSETS
            if task_of(s).paired is not None and (s in base.rows or s in other.rows)
        }
        comparisons.append(Comparison(0, k, subsets))
    inputs = {f"{k}:unified.json": t.unified_sha256 for k, t in enumerate(loaded)}
    return CompareFile(loaded, comparisons, compare_signature(base.signature, inputs), notes)


def check_out(out: Path, result: JsonObject, force: bool) -> None:
    """Before compare.json is written to `out`: the rule for every result (`reruns.check_replace`), with the trees
    named when they are what differs."""
    old = read_header(out)
    if old and not force and old.get("kind") == result["kind"]:
        was, now = ([t.get("path") for t in r.get("trees") or ()] for r in (old, result))
        if was != now:
            raise RefusalError(f"{out}: exists and compares other trees (there: {', '.join(map(str, was))}; "
                               f"now: {', '.join(map(str, now))}); "
                               "pass --force to replace it (or write elsewhere with --out)")
    check_replace(out, result, force)
