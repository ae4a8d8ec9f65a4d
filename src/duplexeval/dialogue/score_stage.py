"""The `score` stage: judge a run's rows, compute spec 004's metrics from them and write
``judgements.jsonl`` (one verdict per case) and ``dialogue.json`` (metrics, counts, signature)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from duplexeval.artifacts import check_kind, header
from duplexeval.dialogue.cases import MiUExpected
from duplexeval.dialogue.judges import Judge, JudgeIdentity, Judgement, Verdict
from duplexeval.dialogue.kinds import CASES_KIND, JUDGEMENTS_KIND, REPORT_KIND, SCHEMA
from duplexeval.dialogue.metrics import ERROR, NOTE, MiUItem, UiMItem, miu_metrics, uim_metrics
from duplexeval.dialogue.rows import CaseRow, MiURow, UiMRow, row_from_json
from duplexeval.dialogue.run_stage import CASES_FILE
from duplexeval.errors import InputError
from duplexeval.jsonio import (
    atomic_write_text,
    dumps_line,
    json_lines,
    read_text,
    sha256_bytes,
    write_json,
)
from duplexeval.jsontypes import JsonObject
from duplexeval.plugins import returned
from duplexeval.progress import table_console
from duplexeval.signature import Component, Signature
from duplexeval.stats import NO_DATA, NOT_REACHED

REPORT_FILE = "dialogue.json"
JUDGED_MIU = ("PIR_mid", "PRR_mid", "precision")
JUDGED_UIM = ("PRR_noise", "PRR_denial", "PRR_affirmation", "PRR_shift", "PRRavg")
JUDGEMENTS_FILE = "judgements.jsonl"

# Published numbers (notes section 5), from summaries of the paper, not verified against its text.
PAPER_SECONDARY = {
    "FTED_s proposed (mean / p50 / p90)": "0.68 / 0.41 / 1.60",
    "FTED_s half-duplex baseline (mean / p50 / p90)": "2.28 / 2.19 / 2.75",
    "MiU precision: paper's model / GPT-4o / GPT-3.5-turbo": "54.7 / 46.6 / 24.7",
    "UiM PRR noise / denial / affirmation / shift, avg": "95.2 / 100 / 99.5 / 85.8, 96.7",
    "UiM PRRavg, GPT-4o": "96.1",
}


def read_run(run_dir: Path) -> tuple[JsonObject, list[CaseRow], str]:
    """The header (as parsed, kind and schema checked), the rows and the SHA-256 of a run's cases.jsonl."""
    path = Path(run_dir) / CASES_FILE
    text = read_text(path)
    items = json_lines(text, path)
    if not items:
        raise InputError(f"{path}: empty; expected a header line and one row per case")
    head = check_kind(items[0][1], CASES_KIND, path, SCHEMA)
    rows = [row_from_json(obj, f"{path}: line {lineno}") for lineno, obj in items[1:]]
    if len(rows) != head.get("n_cases"):
        raise InputError(f"{path}: header says {head.get('n_cases')} cases, found {len(rows)} rows (an interrupted "
                         "run? rerun it)")
    return head, rows, sha256_bytes(text.encode("utf-8"))


def _fted_us(row: MiURow) -> int | None:
    return None if row.fted_s is None else round(row.fted_s * 1_000_000)


def _kind(expected: object) -> str:
    return expected.kind if isinstance(expected, MiUExpected) else ""


def items_from(rows: Sequence[CaseRow], verdicts: Sequence[Verdict | None]) -> tuple[list[MiUItem], list[UiMItem]]:
    """The metric inputs: one item per row, in row order."""
    miu: list[MiUItem] = []
    uim: list[UiMItem] = []
    for row, v in zip(rows, verdicts):
        if isinstance(row, MiURow):
            miu.append(MiUItem(row.outcome, v.timing if v else None, v.content if v else None, _fted_us(row),
                               row.kind or _kind(row.expected)))
        elif isinstance(row, UiMRow):
            uim.append(UiMItem(row.reason, row.outcome, v.score if v else None))
        elif row.family == "MiU":  # a failed case, under its kind (an older error row has none: its labels')
            miu.append(MiUItem(ERROR, kind=row.kind or _kind(row.expected)))
        else:
            uim.append(UiMItem(row.reason or "", ERROR))
    return miu, uim


def score(run_dir: Path, judge: Judge) -> JsonObject:
    """Judge, compute and write; returns the report (dialogue.json's document, as written)."""
    run_dir = Path(run_dir)
    head, rows, rows_sha = read_run(run_dir)
    verdicts = [judge.judge(r) for r in rows]
    run_sig = Signature.from_json(head["signature"])
    ident: JudgeIdentity = returned("judge", judge.label, "identity", judge.identity(), JudgeIdentity,
                                    "a JudgeIdentity")
    jcomp = Component("judge", judge.label, hash=ident.prompt_sha256, settings={})
    sig = Signature(run_sig.definitions, (*run_sig.components, jcomp), {**run_sig.inputs, "run_cases": rows_sha},
                    run_sig.version).with_bootstrap()
    inputs = {"cases": head["inputs"]["cases"], "run_cases": rows_sha}
    jlines = [dumps_line({**header(JUDGEMENTS_KIND, SCHEMA, sig, inputs), "judge": ident.to_json()})]
    errors = 0
    for r, v in zip(rows, verdicts):
        if v is not None and v.error:
            errors += 1
        jlines.append(dumps_line(Judgement(r.id, r.family, r.outcome, v).to_json()))
    miu, uim = items_from(rows, verdicts)
    report = {
        **header(REPORT_KIND, SCHEMA, sig, inputs),
        "system": head.get("system"),
        # judged: cases the judge labelled (a judge_error is not judged), as MiU.counts and UiM.counts count them
        "judge": {**ident.to_json(), "label": judge.label,
                  "judged": sum(1 for v in verdicts if v is not None and not v.error), "judge_errors": errors},
        "clock": head.get("clock"),
        "run": {"cases": len(rows), "failures": head.get("failures", 0),
                "system_errors": sum(r.system_errors for r in rows)},
        "note": NOTE,
        # every judged number names its judge
        "MiU": miu_metrics(miu).to_json(judge.label) if miu else None,
        "UiM": uim_metrics(uim).to_json(judge.label) if uim else None,
        "paper_secondary": PAPER_SECONDARY,
    }
    atomic_write_text(run_dir / JUDGEMENTS_FILE, "".join(jlines))
    write_json(run_dir / REPORT_FILE, report)
    return report


# ---------------------------------------------------------------------------------------------
# The printed table


def fmt_share(js: Mapping[str, Any] | None) -> str:
    """A share cell: 'value [lo, hi] (count/n)', '-' when empty."""
    if not js or js.get("value") is None:
        return f"{NO_DATA} (0/{js.get('n', 0)})" if js else NO_DATA
    iv = js.get("interval") or [None, None]
    return f"{js['value']:.3f} [{iv[0]:.3f}, {iv[1]:.3f}] ({js['count']}/{js['n']})"


def fmt_value(js: Mapping[str, Any] | None) -> str:
    """A value with its interval (precision, PRRavg)."""
    if not js or js.get("value") is None:
        return NO_DATA
    iv = js.get("interval")
    if not iv or iv[0] is None or iv[1] is None:
        return f"{js['value']:.3f}"
    n = f" (n={js['n']})" if "n" in js else ""
    return f"{js['value']:.3f} [{iv[0]:.3f}, {iv[1]:.3f}]{n}"


def fmt_fted(js: Mapping[str, Any] | None) -> str:
    """FTED cell: mean / p50 [95%] / p90 (responded/n); 'n/r' for a quantile that is not reached."""
    if not js or not js.get("n"):
        return NO_DATA
    def q(v: float | None, reached: bool | None) -> str:
        return NOT_REACHED if v is None and reached is False else (NO_DATA if v is None else f"{v:.2f}")
    iv = js.get("median_interval") or [None, None]
    ivs = "[" + ", ".join(NOT_REACHED if x is None else f"{x:.2f}" for x in iv) + "]"
    mean = NO_DATA if js.get("mean") is None else f"{js['mean']:.2f}"
    return (f"{mean} / {q(js['median'], js['median_reached'])} {ivs} / {q(js['p90'], js['p90_reached'])} "
            f"({js['responded']}/{js['n']})")


def table_rows(report: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(family, metric, cell) for every number of one report."""
    rows: list[tuple[str, str, str]] = []
    m = report.get("MiU")
    if m:
        c = m["counts"]
        rows.append(("MiU", "outcomes mid / end / miss (errors)", f"{c['mid']} / {c['end']} / {c['miss']} "
                                                                  f"({c['errors']})"))
        for k in ("ir_mid", "ir_end", "MIR", "PIR_mid", "PRR_mid"):
            rows.append(("MiU", k, fmt_share(m[k])))
        rows.append(("MiU", "precision (paper's formula)", fmt_value(m["precision"])))
        rows.append(("MiU", "recall = 1 - MIR (paper's)", fmt_share(m["recall"])))
        rows.append(("MiU", "FTED s: mean / p50 [95%] / p90 (responded/n)", fmt_fted(m["FTED_s"])))
    u = report.get("UiM")
    if u:
        for r in ("noise", "denial", "affirmation", "shift"):
            rows.append(("UiM", f"PRR_{r}", fmt_share(u[f"PRR_{r}"])))
        rows.append(("UiM", "PRRavg", fmt_value(u["PRRavg"])))
    return rows


def render(reports: Sequence[Mapping[str, Any]], labels: Sequence[str], title: str) -> Any:
    """A rich Table: one column per report; rows are metrics."""
    table = Table(title=title)
    table.add_column("family", style="bold")
    table.add_column("metric")
    for lab in labels:
        table.add_column(lab, justify="right")
    per = [table_rows(r) for r in reports]
    prev = None
    for i, (fam, metric, _) in enumerate(per[0]):
        table.add_row(fam if fam != prev else "", metric, *(p[i][2] if i < len(p) else NO_DATA for p in per))
        prev = fam
    return table


def print_report(reports: Sequence[Mapping[str, Any]], labels: Sequence[str], title: str,
                 console: Any | None = None) -> None:
    """Table, the paper's numbers marked secondary, the definitions note, and the signature line(s)."""
    console = console or table_console()
    console.print(render(reports, labels, title))
    paper = (Table(title="paper's published numbers (secondary: from summaries of Wang et al. 2024, not our "
                         "measurement)"))
    paper.add_column("metric")
    paper.add_column("secondary", justify="right")
    for k, v in PAPER_SECONDARY.items():
        paper.add_row(k, v)
    console.print(paper)
    console.print(f"note: {NOTE}. MIR counts only cases where the system never took the turn.")
    for lab, rep in zip(labels, reports):
        console.print(f"signature ({lab}): {rep['signature']['compact']}" if len(reports) > 1
                      else f"signature: {rep['signature']['compact']}")
