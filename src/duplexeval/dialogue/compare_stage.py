"""Paired comparison of two scored runs on the same cases (``duplexeval.paired``).

Per case, MiU: *proper* is 1 for a turn taken at the end, the judge's timing score for a
mid-utterance cut-in, 0 for a miss (so the mean over the cases is the paper's precision when every
cut-in was judged); UiM: the judge's score. Cases a judge could not score on either side are left
out of the pairs and counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplexeval.artifacts import check_kind, header
from duplexeval.dialogue.kinds import COMPARE_KIND, JUDGEMENTS_KIND, SCHEMA
from duplexeval.dialogue.metrics import END, MID, MISS
from duplexeval.dialogue.score_stage import JUDGEMENTS_FILE
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsonio import json_lines, read_json, read_text, sha256_file
from duplexeval.paired import mcnemar_exact, paired_mean_difference


def _component(head: dict[str, Any], name: str) -> tuple[str, str | None]:
    for c in head.get("signature", {}).get("components", []):
        if c.get("name") == name:
            return c.get("value", ""), c.get("hash")
    return "", None


def proper_by_case(run_dir: Path) -> tuple[dict[str, Any], dict[str, tuple[str, int | None]]]:
    """The header and id -> (family, proper 0/1 or None) of a scored run's judgements.jsonl."""
    path = Path(run_dir) / JUDGEMENTS_FILE
    items = json_lines(read_text(path), path)
    if not items:
        raise InputError(f"{path}: empty; score the run first")
    head = check_kind(items[0][1], JUDGEMENTS_KIND, path, SCHEMA)
    out: dict[str, tuple[str, int | None]] = {}
    for _, row in items[1:]:
        v = row.get("verdict") or {}
        if row["family"] == "MiU":
            o = row["outcome"]
            value = 1 if o == END else 0 if o == MISS else v.get("timing") if o == MID else None
        else:
            value = v.get("score") if row["outcome"] != "error" else None
        out[row["id"]] = (row["family"], value)
    return head, out




def compare_runs(run_a: Path, run_b: Path) -> dict[str, Any]:
    """B - A of the MiU proper share and the UiM appropriate share, with paired bootstrap and McNemar."""
    (ha, a), (hb, b) = proper_by_case(run_a), proper_by_case(run_b)
    for name, what in (("cases", "case sets"), ("judge", "judges")):
        if _component(ha, name) != _component(hb, name):
            raise RefusalError(f"{run_a} and {run_b} were made with different {what} "
                               f"({_component(ha, name)[0]} vs {_component(hb, name)[0]}); a paired comparison "
                               "needs the same")
    out: dict[str, Any] = {}
    for family, label in (("MiU", "proper (precision)"), ("UiM", "appropriate reply")):
        ids = sorted(i for i in a if i in b and a[i][0] == family)
        pairs = [(a[i][1], b[i][1]) for i in ids if a[i][1] is not None and b[i][1] is not None]
        xa = [float(p[0]) for p in pairs]  # type: ignore[arg-type]
        xb = [float(p[1]) for p in pairs]  # type: ignore[arg-type]
        out[family] = {
            "what": label,
            "difference": paired_mean_difference(xa, xb).to_json(),
            "mcnemar": mcnemar_exact([x == 1 for x in xa], [x == 1 for x in xb]).to_json(),
            "cases_in_both": len(ids),
            "unjudged_left_out": len(ids) - len(pairs),
        }
    return out


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


def compare(run_a: Path, run_b: Path) -> dict[str, Any]:
    """The comparison with the header and both runs' signatures (a number is only comparable with its signature)."""
    sigs = {}
    for key, run in (("a", run_a), ("b", run_b)):
        rep = check_kind(read_json(Path(run) / "dialogue.json"), "duplexeval.dialogue.report",
                         Path(run) / "dialogue.json", SCHEMA)
        sigs[key] = rep["signature"]["compact"]
    inputs = {f"{k}_judgements": sha256_file(Path(r) / JUDGEMENTS_FILE) for k, r in (("a", run_a), ("b", run_b))}
    return {**header(COMPARE_KIND, SCHEMA, None, inputs), "a": str(run_a), "b": str(run_b), "signatures": sigs,
            **compare_runs(run_a, run_b)}
