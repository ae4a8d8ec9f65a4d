"""Paired comparison of two scored runs on the same cases (``duplexeval.paired``).

Per case, MiU: *proper* is 1 for a turn taken at the end, the judge's timing score for a
mid-utterance cut-in, 0 for a miss (so the mean over the cases is the paper's precision when every
cut-in was judged); UiM: the judge's score. Cases a judge could not score on either side are left
out of the pairs and counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.artifacts import check_kind, header
from duplexeval.dialogue.judges import Judgement, Verdict
from duplexeval.dialogue.kinds import COMPARE_KIND, JUDGEMENTS_KIND, REPORT_KIND, SCHEMA
from duplexeval.dialogue.metrics import END, MID, MISS
from duplexeval.dialogue.score_stage import JUDGEMENTS_FILE
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import json_lines, read_json, read_text, sha256_file
from duplexeval.jsontypes import JsonObject
from duplexeval.paired import McNemar, PairedDifference, mcnemar_exact, paired_mean_difference


def _component(head: JsonObject, name: str) -> tuple[str, str | None]:
    for c in head.get("signature", {}).get("components", []):
        if c.get("name") == name:
            return c.get("value", ""), c.get("hash")
    return "", None


def proper_by_case(run_dir: Path) -> tuple[JsonObject, dict[str, tuple[str, int | None]]]:
    """The header (as parsed) and id -> (family, proper 0/1 or None) of a scored run's judgements.jsonl."""
    path = Path(run_dir) / JUDGEMENTS_FILE
    items = json_lines(read_text(path), path)
    if not items:
        raise InputError(f"{path}: empty; score the run first")
    head = check_kind(items[0][1], JUDGEMENTS_KIND, path, SCHEMA)
    out: dict[str, tuple[str, int | None]] = {}
    for lineno, obj in items[1:]:
        j = Judgement.from_json(obj, f"{path}: line {lineno}")
        v = j.verdict or Verdict()
        if j.family == "MiU":
            o = j.outcome
            value = 1 if o == END else 0 if o == MISS else v.timing if o == MID else None
        else:
            value = v.score if j.outcome != "error" else None
        out[j.id] = (j.family, value)
    return head, out


@dataclass(frozen=True)
class FamilyComparison:
    """B - A of one family's per-case 0/1 (MiU proper, UiM appropriate) over the cases judged in both runs."""

    what: str
    difference: PairedDifference
    mcnemar: McNemar
    cases_in_both: int
    unjudged_left_out: int

    def to_json(self) -> JsonObject:
        return {"what": self.what, "difference": self.difference.to_json(), "mcnemar": self.mcnemar.to_json(),
                "cases_in_both": self.cases_in_both, "unjudged_left_out": self.unjudged_left_out}


@dataclass(frozen=True)
class Comparison:
    """Both families' comparisons; `to_json()` is their part of the compare document."""

    MiU: FamilyComparison
    UiM: FamilyComparison

    def to_json(self) -> JsonObject:
        return {"MiU": self.MiU.to_json(), "UiM": self.UiM.to_json()}


def compare_runs(run_a: Path, run_b: Path) -> Comparison:
    """B - A of the MiU proper share and the UiM appropriate share, with paired bootstrap and McNemar."""
    (ha, a), (hb, b) = proper_by_case(run_a), proper_by_case(run_b)
    for name, what in (("cases", "case sets"), ("judge", "judges")):
        if _component(ha, name) != _component(hb, name):
            raise RefusalError(f"{run_a} and {run_b} were made with different {what} "
                               f"({_component(ha, name)[0]} vs {_component(hb, name)[0]}); a paired comparison "
                               "needs the same")
    out: list[FamilyComparison] = []
    for family, label in (("MiU", "proper (precision)"), ("UiM", "appropriate reply")):
        ids = sorted(i for i in a if i in b and a[i][0] == family)
        xa: list[float] = []
        xb: list[float] = []
        for i in ids:
            va, vb = a[i][1], b[i][1]
            if va is not None and vb is not None:
                xa.append(float(va))
                xb.append(float(vb))
        out.append(FamilyComparison(label, paired_mean_difference(xa, xb),
                                    mcnemar_exact([x == 1 for x in xa], [x == 1 for x in xb]), len(ids),
                                    len(ids) - len(xa)))
    return Comparison(*out)


def format_comparison(label_a: str, label_b: str, cmp: Mapping[str, Any]) -> list[str]:
    """One line per family: B - A [interval] (pairs), McNemar discordant counts and p."""
    lines = []
    for family in ("MiU", "UiM"):
        c = cmp[family]
        d, m = c["difference"], c["mcnemar"]
        if d["diff"] is None:
            lines.append(f"{family} {c['what']}: {label_b} - {label_a}: - ({d['reason']})")
            continue
        iv = d["interval"] or [None, None]
        lines.append(
            f"{family} {c['what']}: {label_b} - {label_a} = {d['diff']:+.3f} [{iv[0]:+.3f}, {iv[1]:+.3f}] "
            f"({d['n_pairs']} pairs, {c['unjudged_left_out']} unjudged left out); McNemar {label_a} only "
            f"{m['a_only']}, {label_b} only {m['b_only']}, p = {m['p_value']:.3g}"
        )
    return lines


def compare(run_a: Path, run_b: Path) -> JsonObject:
    """The compare document (what `dialogue compare --json` writes): the header, both runs' signatures (a number is
    only comparable with its signature) and the comparison."""
    sigs = {}
    for key, run in (("a", run_a), ("b", run_b)):
        rep = check_kind(read_json(Path(run) / "dialogue.json"), REPORT_KIND,
                         Path(run) / "dialogue.json", SCHEMA)
        sigs[key] = rep["signature"]["compact"]
    inputs = {f"{k}_judgements": sha256_file(Path(r) / JUDGEMENTS_FILE) for k, r in (("a", run_a), ("b", run_b))}
    return {**header(COMPARE_KIND, SCHEMA, None, inputs), "a": str(run_a), "b": str(run_b), "signatures": sigs,
            **compare_runs(run_a, run_b).to_json()}
