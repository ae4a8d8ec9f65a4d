"""The duplex-dialogue page (spec 004): the forest plot of every system's MiU and UiM metrics against the baseline
(with the paired differences `dialogue compare` computes), the numbers folded, and one card per case with every
system's outcome, the judge's verdict, the timings and each system's transcript."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from duplexeval.artifacts import check_kind
from duplexeval.dialogue.compare_stage import Comparison, compare_runs
from duplexeval.dialogue.judges import Judgement
from duplexeval.dialogue.kinds import CASES_KIND, JUDGEMENTS_KIND, REPORT_KIND, SCHEMA
from duplexeval.dialogue.rows import CaseRow, ErrorRow, MiURow, UiMRow, row_from_json
from duplexeval.dialogue.run_stage import CASES_FILE
from duplexeval.dialogue.score_stage import JUDGEMENTS_FILE
from duplexeval.errors import DuplexEvalError, InputError
from duplexeval.jsonio import json_lines, read_text
from duplexeval.jsontypes import JsonObject
from duplexeval.paired import PairedDifference
from duplexeval.report.explorer import Item, Verdict, explorer_html
from duplexeval.report.forest import HIGHER, LOWER, NEITHER, Estimate, ForestRow, forest_html
from duplexeval.report.page import esc, signature_line, table
from duplexeval.report.samples import field_label, field_text
from duplexeval.stats import json_interval

REPORT_FILE = "dialogue.json"

# (family, metric, label, better) of the forest plot
HEADLINE: tuple[tuple[str, str, str, int], ...] = (
    ("MiU", "precision", "precision (the paper's: proper cut-ins and end turns)", HIGHER),
    ("MiU", "recall", "recall (1 - MIR: took the turn at all)", HIGHER),
    ("MiU", "ir_mid", "took the turn mid-utterance", NEITHER),
    ("MiU", "PIR_mid", "proper mid-utterance cut-ins (of those)", HIGHER),
    ("MiU", "PRR_mid", "proper replies after a cut-in", HIGHER),
    ("MiU", "MIR", "never took the turn (MIR)", LOWER),
    ("MiU", "FTED_s", "first-token delay after the end (median)", LOWER),
    ("UiM", "PRR_noise", "kept talking through noise", HIGHER),
    ("UiM", "PRR_denial", "yielded to a denial", HIGHER),
    ("UiM", "PRR_affirmation", "kept talking through an affirmation", HIGHER),
    ("UiM", "PRR_shift", "yielded to a topic shift", HIGHER),
    ("UiM", "PRRavg", "PRR average", HIGHER),
)
FAMILY_NAMES = {"MiU": "machine interrupts user (MiU)", "UiM": "user interrupts machine (UiM)"}


@dataclass
class Run:
    """One scored run: its folder, dialogue.json (the document, as read), and (when beside it) its cases' rows and
    judgements by case id."""

    root: Path
    report: JsonObject
    cases: dict[str, CaseRow]
    verdicts: dict[str, Judgement]

    @property
    def system(self) -> str:
        return str(self.report.get("system") or self.root.name)


R_ = TypeVar("R_", CaseRow, Judgement)


def _rows(path: Path, kind: str, parse: Callable[[object, str], R_]) -> dict[str, R_]:
    """A header-first JSONL file of the run as id -> its typed row (empty when the file is not there)."""
    if not path.is_file():
        return {}
    items = json_lines(read_text(path), path)
    if not items:
        return {}
    check_kind(items[0][1], kind, path, SCHEMA)
    out: dict[str, R_] = {}
    for lineno, obj in items[1:]:
        row = parse(obj, f"{path}: line {lineno}")
        out[row.id] = row
    return out


def load_run(path: Path, report: JsonObject | None = None) -> Run:
    """A run folder (or its dialogue.json) with its per-case files."""
    root = path if path.is_dir() else path.parent
    if report is None:
        from duplexeval.jsonio import read_json

        rp = root / REPORT_FILE
        if not rp.is_file():
            raise InputError(f"{root}: no {REPORT_FILE}; score the run first (`duplexeval dialogue score {root}`)")
        report = check_kind(read_json(rp), REPORT_KIND, rp, SCHEMA)
    return Run(root, report, _rows(root / CASES_FILE, CASES_KIND, row_from_json),
               _rows(root / JUDGEMENTS_FILE, JUDGEMENTS_KIND, Judgement.from_json))


def _value(m: object, key: str) -> Estimate | None:
    if not isinstance(m, dict):
        return None
    if key == "FTED_s":
        n = m.get("n") or 0
        if m.get("median") is None:
            return Estimate(None, text=f"no data (n={n})" if not n else f"not reached (n={n})")
        lo, hi = (m.get("median_interval") or [None, None])[:2]
        return Estimate(float(m["median"]), lo, hi, f"{m['median']:.2f} s [{lo}, {hi}] (n={n})",
                        hi_open=lo is not None and hi is None)
    if m.get("value") is None:
        return Estimate(None, text=f"no data (0/{m.get('n', 0)})")
    lo, hi = (m.get("interval") or [None, None])[:2]
    count = f" ({m['count']}/{m['n']})" if "count" in m else f" (n={m['n']})" if "n" in m else ""
    return Estimate(float(m["value"]), lo, hi,
                    f"{m['value'] * 100:.1f}%" + (f" [{lo * 100:.1f}, {hi * 100:.1f}]" if lo is not None else "")
                    + count)


def _paired(runs: Sequence[Run], baseline: int) -> tuple[list[Comparison | None], str]:
    """`compare_runs(baseline, other)` for every other run; a reason when they cannot be paired."""
    out: list[Comparison | None] = []
    why = ""
    for k, r in enumerate(runs):
        if k == baseline or not r.verdicts or not runs[baseline].verdicts:
            out.append(None)
            continue
        try:
            out.append(compare_runs(runs[baseline].root, r.root))
        except DuplexEvalError as exc:
            why = str(exc)
            out.append(None)
    return out, why


def _diff_estimate(diff: float, lo: float, hi: float, n_pairs: object) -> Estimate:
    return Estimate(float(diff), lo, hi, f"{diff * 100:+.1f} pts [{lo * 100:+.1f}, {hi * 100:+.1f}], {n_pairs} cases")


def _diff_json(d: Mapping[str, Any] | None) -> Estimate | None:
    """A difference of a compare document (B - A with its interval)."""
    if not d or d.get("diff") is None:
        return None
    lo, hi = (d.get("interval") or [None, None])[:2]
    return _diff_estimate(d["diff"], lo, hi, d["n_pairs"])


def _diff(d: PairedDifference | None) -> Estimate | None:
    if d is None or d.diff is None:
        return None
    lo, hi = (json_interval(d.interval) or [None, None])[:2]
    assert lo is not None and hi is not None  # a difference has a finite interval
    return _diff_estimate(d.diff, lo, hi, d.n_pairs)


def forest_rows(runs: Sequence[Run], paired: Sequence[Comparison | None]) -> list[ForestRow]:
    rows = []
    for family, key, label, better in HEADLINE:
        vals = [_value((r.report.get(family) or {}).get(key), key) for r in runs]
        if all(v is None for v in vals):
            continue
        diffs: list[Estimate | None] = [None] * len(runs)
        if (family, key) in (("MiU", "precision"), ("UiM", "PRRavg")):
            diffs = [None if p is None else _diff((p.MiU if family == "MiU" else p.UiM).difference) for p in paired]
        unit = "s" if key == "FTED_s" else "share"
        rows.append(ForestRow(FAMILY_NAMES[family], label, unit, better, tuple(vals), tuple(diffs)))
    return rows


def _verdict(run: Run, cid: str, k: int) -> Verdict | None:
    c = run.cases.get(cid)
    j = run.verdicts.get(cid)
    if c is None:
        return None
    out = str(c.outcome)
    v = j.verdict if j is not None else None
    if isinstance(c, ErrorRow) or c.error or out == "error":
        return Verdict(k, "error", "neutral", f"system error: {c.error}", f"d{k}-{cid}")
    if isinstance(c, MiURow):
        if out == "end":
            why, cls = f"took the turn after the end (first token {c.fted_s or 0:.2f} s later)", "ok"
        elif out == "miss":
            why, cls = "never took the turn", "bad"
        else:
            timing, content = (v.timing, v.content) if v is not None else (None, None)
            judged = "not judged" if timing is None else (f"timing {'proper' if timing else 'improper'}, reply "
                                                          f"{'proper' if content else 'improper'}")
            why = f"cut in after chunk {c.heard_chunks} of {c.n_chunks} ({c.take_s} s); {judged}"
            cls = "neutral" if timing is None else "ok" if timing else "bad"
    else:
        score = v.score if v is not None else None
        expect = (c.expected.behaviour if c.expected is not None else None) or "?"
        why = f"{out} (expected: {expect})" + ("" if score is None else "; appropriate" if score else "; inappropriate")
        cls = "neutral" if score is None else "ok" if score else "bad"
    return Verdict(k, out, cls, why, f"d{k}-{cid}")


HIDDEN = ("id", "family", "transcript", "expected", "reply", "error", "outcome")


def _kind_or_reason(row: CaseRow) -> str:
    """What groups a case's card: an MiU case's kind, a UiM case's interruption reason."""
    if isinstance(row, MiURow):
        return row.kind
    if isinstance(row, UiMRow):
        return row.reason
    return row.kind or row.reason or ""


def case_items(runs: Sequence[Run], labels: Sequence[str]) -> list[Item]:
    """One card per case id, in the first run's case order; problems first within each family and kind."""
    ids: list[str] = []
    for r in runs:
        ids += [i for i in r.cases if i not in ids]
    items = []
    for n, cid in enumerate(ids):
        verdicts = [v for k, r in enumerate(runs) if (v := _verdict(r, cid, k)) is not None]
        first = next(r.cases[cid] for r in runs if cid in r.cases)
        group = f"{first.family} {_kind_or_reason(first)}".strip()
        cols, names, chats = [], [], []
        for k, r in enumerate(runs):
            c = r.cases.get(cid)
            if c is None:
                continue
            names.append(labels[k])
            f = {key: val for key, val in c.to_json().items() if key not in HIDDEN}
            j = r.verdicts.get(cid)
            for vk, vv in (j.verdict.to_json().items() if j is not None and j.verdict is not None else ()):
                if vk not in ("analysis",) and vv not in (None, ""):
                    f[f"judge {vk}"] = vv
            cols.append(f)
            turns = () if isinstance(c, ErrorRow) else c.transcript
            chats.append((labels[k], [(role, text) for role, text in turns if text]))
        order: list[str] = []
        for col in cols:
            order += [x for x in col if x not in order]
        rows = [(field_label(x), [field_text(x, col.get(x)) if x in col else "—" for col in cols]) for x in order]
        cues = ", ".join(first.expected.reply_cues if first.expected is not None else [])
        text = " ".join(t for _, turns in chats for _, t in turns) + " " + cues
        item = Item(f"c-{cid}", group, cid, verdicts, None, chats=chats, field_head=names, field_rows=rows, text=text)
        rank = min((0 if v.cls == "bad" else 1 if v.cls == "neutral" else 2 for v in verdicts), default=3)
        items.append(((group, rank, n), item))
    items.sort(key=lambda x: x[0])
    return [i for _, i in items]




def compare_file_body(label: str, cmp: JsonObject, colors: Sequence[str]) -> str:
    """A `dialogue compare --json` file: A's and B's shares and B - A of MiU proper and UiM appropriate, as a forest."""
    names = [Path(str(cmp.get("a"))).name, Path(str(cmp.get("b"))).name]
    rows = []
    for fam in ("MiU", "UiM"):
        c = cmp.get(fam) or {}
        d = c.get("difference") or {}
        vals = tuple(None if d.get(s) is None else Estimate(float(d[s]), text=f"{d[s] * 100:.1f}%") for s in ("a", "b"))
        rows.append(ForestRow(FAMILY_NAMES[fam], str(c.get("what") or fam), "share", HIGHER, vals,
                              (None, _diff_json(d))))
    sig = "".join(signature_line(f"{n}: {s}") for n, s in zip(names, (cmp.get("signatures") or {}).values()))
    return (f'<section class="card"><h2>{esc(label)}: {esc(names[1])} against {esc(names[0])}</h2>'
            + forest_html(names, colors, 0, rows, "Shares over the cases judged in both runs; right: B - A "
                          "with the paired bootstrap interval (McNemar's exact test in the file).")
            + sig + "</section>")


def dialogue_body(runs: Sequence[Run], labels: Sequence[str], colors: Sequence[str],
                  baseline: int) -> tuple[str, list[Item]]:
    """The page body and its explorer cards."""
    paired, why = _paired(runs, baseline)
    rows = forest_rows(runs, paired)
    caption = ("Left: each system's share with its 95% interval (Wilson; precision and PRR average: "
               "bootstrap). Right: the paired difference from the baseline over the same cases (dialogue compare: MiU "
               "proper, UiM appropriate reply), 'better' or 'worse' when its interval excludes 0.")
    if why:
        caption += f" Not paired: {why}"
    parts = ['<section class="card" id="summary"><h2>Which dialogue system is better, and how sure are we?</h2>'
             + forest_html(labels, colors, baseline if len(runs) > 1 else None, rows, caption, legend=False)
             + (f'<p class="note">{esc(runs[0].report.get("note"))}</p>' if runs[0].report.get("note") else "")
             + "</section>"]
    numbers = []
    for fam in ("MiU", "UiM"):
        names: list[str] = []
        for r in runs:
            names += [n for n, m in (r.report.get(fam) or {}).items() if isinstance(m, dict) and n not in names
                      and n != "counts" and ("value" in m or "median" in m)]
        body = []
        for n in names:
            cells = [n]
            for r in runs:
                e = _value((r.report.get(fam) or {}).get(n), n)
                cells.append("—" if e is None else e.text)
            body.append(cells)
        numbers.append(f"<h4>{esc(FAMILY_NAMES[fam])}</h4>" + table(["metric", *labels], body))
    sigs = "".join(signature_line(f"{lb}: {r.report['signature']['compact']}") for lb, r in zip(labels, runs)
                   if isinstance(r.report.get("signature"), dict))
    parts.append('<section class="card"><details><summary>All '
                 f'numbers</summary>{"".join(numbers)}</details>{sigs}</section>')
    items = case_items(runs, labels)
    parts.append('<h2 id="samples">Cases</h2>')
    if items:
        parts.append(explorer_html(items, labels, colors, "family and kind"))
    else:
        parts.append('<p class="note">No cases.jsonl beside dialogue.json, so no per-case cards.</p>')
    return "".join(parts), items
