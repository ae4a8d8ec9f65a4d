"""`write_report`: one HTML page from scored trees, dialogue runs, or controller / EOT / FDB-compare files.

Each input is read by its family's loader and checked; the page has one section per family, each opening on its
forest plot. `ReportOptions` holds what the command line chooses: the systems' labels, the baseline, how audio
is included and where the user's input audio comes from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from duplexeval.artifacts import check_kind
from duplexeval.controller.kinds import COMPARE_KIND as CONTROLLER_COMPARE
from duplexeval.controller.kinds import COMPARE_SCHEMA as CONTROLLER_COMPARE_SCHEMA
from duplexeval.controller.kinds import REPORT_KIND as CONTROLLER_REPORT
from duplexeval.controller.kinds import REPORT_SCHEMA as CONTROLLER_SCHEMA
from duplexeval.dialogue.kinds import COMPARE_KIND as DIALOGUE_COMPARE
from duplexeval.dialogue.kinds import REPORT_KIND as DIALOGUE_REPORT
from duplexeval.dialogue.kinds import SCHEMA as DIALOGUE_SCHEMA
from duplexeval.eot.kinds import COMPARE_KIND as EOT_COMPARE
from duplexeval.eot.kinds import COMPARE_SCHEMA as EOT_COMPARE_SCHEMA
from duplexeval.eot.kinds import REPORT_KIND as EOT_REPORT
from duplexeval.eot.kinds import SWEEP_KIND as EOT_SWEEP
from duplexeval.eot.kinds import SWEEP_SCHEMA
from duplexeval.errors import InputError
from duplexeval.fdb.compare_stage import COMPARE_SCHEMA_VERSION
from duplexeval.fdb.results import ScoredTree, load_scored
from duplexeval.fdb.selection import DatasetArg, resolve_dataset
from duplexeval.fdb.tasks import task_of
from duplexeval.fdb.tree import MANIFEST_FILE, OUTPUT_WAV
from duplexeval.fdb.tree_writer import dataset_mismatch
from duplexeval.jsonio import atomic_write_text, read_json
from duplexeval.jsontypes import JsonObject
from duplexeval.report import other_pages
from duplexeval.report.clips import OGG_MIME
from duplexeval.report.controller_page import controller_body, load_controller
from duplexeval.report.dialogue_page import REPORT_FILE as DIALOGUE_FILE
from duplexeval.report.dialogue_page import compare_file_body as dialogue_compare_body
from duplexeval.report.dialogue_page import dialogue_body, load_run
from duplexeval.report.eot_pages import compare_body, eot_summary, sweep_body
from duplexeval.report.explorer import PageData
from duplexeval.report.fdb_evidence import (
    AUDIO_MODES,
    AUTO,
    AUTO_INLINE_MAX_S,
    INLINE,
    LINK,
    FdbEvidence,
    gather,
    page_url,
)
from duplexeval.report.fdb_page import compare_file_body, fdb_body
from duplexeval.report.forest import system_chips
from duplexeval.report.page import document, esc
from duplexeval.report.samples import Lineup, fdb_items
from duplexeval.report.svg import COLORS

FDB_COMPARE = "duplexeval.fdb.compare"
FILE_KINDS = (CONTROLLER_REPORT, CONTROLLER_COMPARE, EOT_REPORT, EOT_SWEEP, EOT_COMPARE, FDB_COMPARE, DIALOGUE_REPORT,
              DIALOGUE_COMPARE)


@dataclass(frozen=True)
class ReportOptions:
    """What the page shows: `labels` (one per input, in order; default from each system's spec), the `baseline`
    (a label, folder name or system name; default the first input), `audio` (auto, inline, link or none), `dataset`
    (the folder the FDB trees were exported from, or "demo"; default: the demo set for demo trees)."""

    labels: tuple[str, ...] = ()
    baseline: str | None = None
    audio: str = AUTO
    dataset: DatasetArg | None = None
    jobs: int = 1
    out: Path = field(default=Path("report.html"))


def render_html(paths: Sequence[str | Path], jobs: int = 1, options: ReportOptions | None = None) -> str:
    """The page for `paths`: FDB trees (folders), or report files; a mix of trees and files is refused."""
    opts = options or ReportOptions(jobs=jobs)
    if opts.audio not in AUDIO_MODES:
        raise InputError(f"--audio: expected one of {', '.join(AUDIO_MODES)}, got {opts.audio!r}")
    if not paths:
        raise InputError("report: give at least one tree or report file")
    given = [Path(p) for p in paths]
    if opts.labels and len(opts.labels) != len(given):
        raise InputError(f"--label: give one label per input ({len(given)} inputs, {len(opts.labels)} labels)")
    trees = [p for p in given if p.is_dir() and (p / MANIFEST_FILE).is_file()]
    if trees and len(trees) != len(given):
        raise InputError("report: give either scored FDB trees (folders) or other report inputs, not both")
    if trees:
        return _fdb_page(given, opts)

    files = []
    for p in given:
        if p.is_dir():
            if not (p / DIALOGUE_FILE).is_file():
                raise InputError(f"{p}: not a scored FDB tree (no {MANIFEST_FILE}) or a scored dialogue run (no "
                                 f"{DIALOGUE_FILE})")
            p = p / DIALOGUE_FILE
        if not p.is_file():
            raise InputError(f"{p}: not found (expected a scored tree folder, a dialogue run or a report JSON file)")
        obj = read_json(p)
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if not isinstance(kind, str) or kind not in FILE_KINDS:
            check_kind(obj, CONTROLLER_REPORT if kind is None else f"one of {', '.join(FILE_KINDS)}", p)
            raise AssertionError("unreachable: check_kind refused the file")
        version = {CONTROLLER_REPORT: CONTROLLER_SCHEMA, CONTROLLER_COMPARE: CONTROLLER_COMPARE_SCHEMA,
                   FDB_COMPARE: COMPARE_SCHEMA_VERSION, EOT_SWEEP: SWEEP_SCHEMA, EOT_COMPARE: EOT_COMPARE_SCHEMA,
                   DIALOGUE_REPORT: DIALOGUE_SCHEMA, DIALOGUE_COMPARE: DIALOGUE_SCHEMA}.get(kind)  # fmt: skip
        files.append((p, kind, check_kind(obj, kind, p, version) if version is not None else check_kind(obj, kind, p)))
    labels = list(opts.labels)
    bodies = []
    data = PageData()
    nav: list[tuple[str, str]] = []
    title = "duplexeval report"
    dialogue = [(i, p, o) for i, (p, k, o) in enumerate(files) if k == DIALOGUE_REPORT]
    if dialogue:
        bodies.append(_dialogue_family(dialogue, labels, opts.baseline, data))
        nav += [("summary", "summary"), ("samples", "cases")]
        title = "duplexeval report: duplex dialogue (spec 004)"
    if any(k in (EOT_SWEEP, EOT_COMPARE, EOT_REPORT) for _, k, _ in files):
        bodies.append(_eot_family([(i, p, o) for i, (p, k, o) in enumerate(files)
                                   if k in (EOT_SWEEP, EOT_COMPARE, EOT_REPORT)],
                                  files, labels, opts.baseline))
    if any(k in (CONTROLLER_REPORT, CONTROLLER_COMPARE) for _, k, _ in files):
        bodies.append(_controller_family(files, labels, opts, data))
        nav += [("summary", "summary"), ("samples", "clips")]
        title = "duplexeval report: turn-taking controllers (spec 002)"
    for p, kind, obj in files:
        if kind == FDB_COMPARE:
            bodies.append(compare_file_body(p.name, obj))
        elif kind == DIALOGUE_COMPARE:
            bodies.append(_render(p, kind, partial(dialogue_compare_body, p.name, obj, COLORS)))
    return document(title, "".join(bodies), "Files: " + esc(", ".join(str(p) for p in given)), nav, data.html())


def _controller_family(files: Sequence[tuple[Path, str, JsonObject]], labels: Sequence[str], opts: ReportOptions,
                       data: PageData) -> str:
    reports = [(i, p, o) for i, (p, k, o) in enumerate(files) if k == CONTROLLER_REPORT]
    comps = [(p, o) for p, k, o in files if k == CONTROLLER_COMPARE]
    ctls = [load_controller(p, o) for _, p, o in reports]
    names = [labels[i] for i, _, _ in reports] if labels else [c.name for c in ctls]
    if len(set(names)) != len(names):
        names = [c.path.stem for c in ctls]
    aliases = [(c.path.stem, str(c.path), str((c.report.get("data") or {}).get("path"))) for c in ctls]
    if opts.baseline is None and comps and ctls:
        a_folder = Path(str((comps[0][1].get("a") or {}).get("path") or "")).name
        base = next(
            (k for k, c in enumerate(ctls)
             if Path(str((c.report.get("data") or {}).get("path") or "")).name == a_folder), 0)
    else:
        base = pick_baseline(names, aliases, opts.baseline) if ctls else 0
    chips = system_chips(names, COLORS, base)
    body = controller_body(ctls, comps, names, COLORS, base, data, opts.audio)
    return (f'<div class="chips" style="margin:10px 0 0">{chips}</div>' if chips else "") + body


def _dialogue_family(chosen: Sequence[tuple[int, Path, JsonObject]], labels: Sequence[str], baseline: str | None,
                     data: PageData) -> str:
    runs = [load_run(p.parent, o) for _, p, o in chosen]
    names = [labels[i] for i, _, _ in chosen] if labels else [r.system for r in runs]
    if len(set(names)) != len(names):
        names = [r.root.name for r in runs]
    if len(set(names)) != len(names):
        raise InputError(f"--label: two dialogue runs have the same name ({', '.join(names)}); give --label")
    base = pick_baseline(names, [(r.root.name, str(r.root), r.system) for r in runs], baseline)
    chips = system_chips(names, COLORS, base)
    body, items = dialogue_body(runs, names, COLORS, base)
    data.add(items)
    return f'<div class="chips" style="margin:10px 0 0">{chips}</div>' + body


def _eot_family(chosen: Sequence[tuple[int, Path, JsonObject]], files: Sequence[tuple[Path, str, JsonObject]],
                labels: Sequence[str], baseline: str | None) -> str:
    """The EOT section: with two or more sweeps, their frontiers on one figure and a forest of the operating points
    first; then each sweep, each comparison (its own two frontiers and differences) and each spec 003 report."""
    sweeps = [(i, p, o) for i, p, o in chosen if files[i][1] == EOT_SWEEP]
    names = [labels[i] if labels else _detector_label(o, p) for i, p, o in sweeps]
    if not labels and len(set(names)) != len(names):
        names = [_file_label(p) for _, p, _ in sweeps]
    compares = [(i, p, o) for i, p, o in chosen if files[i][1] == EOT_COMPARE]
    aliases = [(_file_label(p), p.parent.name, str(p)) for _, p, _ in sweeps]
    if baseline is None:
        base = next((names.index(str(c["a"])) for _, _, c in compares if str(c.get("a")) in names), 0)
    else:
        base = pick_baseline(names, aliases, baseline)
    parts = []
    if len(sweeps) >= 2:
        diffs: list[JsonObject | None] = [None] * len(sweeps)
        for _, _, c in compares:
            if str(c.get("a")) == names[base] and str(c.get("b")) in names:
                diffs[names.index(str(c["b"]))] = c.get("budgets")
        summary = partial(eot_summary, names, COLORS, [(o, p) for _, p, o in sweeps], base, diffs)
        parts.append(_render(sweeps[0][1], EOT_SWEEP, summary))
    for k, (_i, p, o) in enumerate(sweeps):
        body = partial(sweep_body, names[k], o, p, COLORS[k % len(COLORS)], _file_label(p))
        parts.append('<section class="card">' + _render(p, EOT_SWEEP, body) + "</section>")
    for i, p, o in chosen:
        if files[i][1] == EOT_COMPARE:
            body = partial(compare_body, labels[i] if labels else _file_label(p), o)
            parts.append('<section class="card">' + _render(p, EOT_COMPARE, body) + "</section>")
        elif files[i][1] == EOT_REPORT:
            parts.append('<section class="card">' + other_pages.eot_body(labels[i] if labels else p.name, o)
                         + "</section>")
    return "".join(parts)


def _detector_label(summary: JsonObject, path: Path) -> str:
    """A sweep's detector, from its signature (`det:silero:...` -> silero), else its folder's name."""
    sig = summary.get("signature")
    comps = (sig.get("components") or []) if isinstance(sig, dict) else []
    det = next((c for c in comps if isinstance(c, dict) and c.get("name") == "det"), None)
    value = str((det or {}).get("value") or "").split(":")[0]
    return value if value and value != "external" else (path.parent.name or path.stem)


# ---------------------------------------------------------------------------------------------------- FDB trees


def default_labels(trees: Sequence[ScoredTree]) -> list[str]:
    """Each tree's system spec: its name, plus the parameters that tell two trees of one system apart; folder names
    when even those are the same."""
    systems = [t.manifest.extra.get("system") or {} for t in trees]
    names = [str(s.get("name") or t.label) for s, t in zip(systems, trees)]
    out = []
    for name, s in zip(names, systems):
        same = [j for j, n in enumerate(names) if n == name]
        if len(same) == 1:
            out.append(name)
            continue
        params = s.get("params") or {}
        keys = sorted({key for j in same for key in (systems[j].get("params") or {})})
        differ = [key for key in keys if len({repr((systems[j].get("params") or {}).get(key)) for j in same}) > 1]
        out.append(f"{name}:" + ",".join(f"{key}={params.get(key)}" for key in differ) if differ else name)
    if len(set(out)) != len(out):
        out = [t.label for t in trees]
    return out


def pick_baseline(labels: Sequence[str], aliases: Sequence[Sequence[str]], baseline: str | None) -> int:
    """The index of the input whose label (or folder, path or system name) is `baseline`; 0 when none is asked."""
    if baseline is None:
        return 0
    hits = [k for k, lb in enumerate(labels) if lb == baseline]
    hits = hits or [k for k, names in enumerate(aliases) if baseline in names]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise InputError(f"--baseline: {baseline!r} names {len(hits)} inputs ({', '.join(labels[k] for k in hits)}); "
                         "use its label")
    raise InputError(f"--baseline: {baseline!r} is none of the inputs (labels: {', '.join(labels)})")


def _inputs(trees: Sequence[ScoredTree], dataset: DatasetArg | None) -> tuple[dict[tuple[str, str], Path], str]:
    """The user's input file of every sample, from the dataset the trees were exported from (checked: same T and
    annotation); for demo trees the demo set is found by itself. A note says why there are none."""
    auto = dataset is None
    if dataset is None:
        if {t.manifest.dataset_name for t in trees} != {"demo"}:
            return {}, ("The trees hold no input audio: pass --dataset FOLDER (the dataset they were exported from) to "
                        "see and hear the user's side.")
        dataset = "demo"
    ds = resolve_dataset(dataset)
    where = f"--dataset {dataset}" if isinstance(dataset, (str, os.PathLike)) else f"dataset {ds.name!r}"
    by_key = {(s.subset, s.id): s for s in ds.samples()}
    out: dict[tuple[str, str], Path] = {}
    for t in trees:
        for e in t.manifest.samples:
            s = by_key.get((e.subset, e.id))
            if s is None:
                problem: str | None = "is not in the dataset"
            elif (why := dataset_mismatch(s, e.dir(t.root), e.T)) is not None:
                problem = f"of {t.root}: {why}"
            elif e.annotation and getattr(s, "annotation_sha256", None) not in (None, e.files.get(e.annotation)):
                problem = f"has another {e.annotation} in the dataset than in {t.root}"
            else:
                out[(e.subset, e.id)] = Path(s.input_path)
                continue
            if auto:
                return {}, ("No input audio: the demo set here differs from the one the trees were made from (sample "
                            f"{e.key} {problem}).")
            raise InputError(f"{where}: sample {e.key} {problem}")
    return out, ""


def _audio_refs(trees: Sequence[ScoredTree], ev: FdbEvidence, opts: ReportOptions,
                data: PageData) -> dict[tuple[Any, ...], str]:
    refs: dict[tuple[Any, ...], str] = {}
    if opts.audio == INLINE:
        for (k, subset, sid), got in ev.outputs.items():
            if got.audio is not None:
                name = f"au-{k}-{subset}-{sid}"
                data.audio[name] = (OGG_MIME, got.audio)
                refs[("out", k, subset, sid)] = "#" + name
        for (subset, sid), got in ev.inputs.items():
            if got.audio is not None:
                name = f"au-in-{subset}-{sid}"
                data.audio[name] = (OGG_MIME, got.audio)
                refs[("in", subset, sid)] = "#" + name
    elif opts.audio == LINK:
        for k, t in enumerate(trees):
            for e in t.manifest.samples:
                if (k, e.subset, e.id) in ev.outputs and ev.outputs[(k, e.subset, e.id)].peaks is not None:
                    refs[("out", k, e.subset, e.id)] = page_url(e.dir(t.root) / "output.wav", opts.out)
        for (subset, sid), path in ev.input_paths.items():
            refs[("in", subset, sid)] = page_url(path, opts.out)
    return refs


def _fdb_page(given: Sequence[Path], opts: ReportOptions) -> str:
    trees = [load_scored(p) for p in given]
    labels = list(opts.labels) or default_labels(trees)
    if len(set(labels)) != len(labels):
        raise InputError(f"--label: two inputs have the same label ({', '.join(labels)})")
    aliases = [(t.label, str(t.root), str((t.manifest.extra.get("system") or {}).get("name", ""))) for t in trees]
    baseline = pick_baseline(labels, aliases, opts.baseline)
    lineup = Lineup(tuple(labels), COLORS, baseline if len(trees) > 1 else None)
    inputs, note = _inputs(trees, opts.dataset)
    if opts.audio == AUTO:
        seconds = sum(e.T for t in trees for e in t.manifest.samples if OUTPUT_WAV in e.files)
        seconds += sum(e.T for e in trees[0].manifest.samples if (e.subset, e.id) in inputs)
        opts = replace(opts, audio=INLINE if seconds <= AUTO_INLINE_MAX_S else LINK)
        if opts.audio == LINK:
            note = " ".join(x for x in (note, f"{seconds / 60:.0f} min of audio: too much to inline (more than "
                                              f"{AUTO_INLINE_MAX_S / 60:.0f} min), so the players link the files; "
                                              "--audio inline puts it in the page anyway.") if x)
    ev = gather(trees, inputs, opts.audio, opts.jobs)
    data = PageData(legend=[("user input", "#b0773c"), ("VAD speech", "#2f9e44"),
                            ("ASR words", "#3b6fd4"), ("annotated pause", "#ffe08a"),
                            ("interruption [S, R]", "#f3c6f5")])
    items = fdb_items(trees, lineup, ev, _audio_refs(trees, ev, opts, data))
    data.add(items)
    if opts.audio == LINK:
        note = " ".join(x
                        for x in (note, "Audio is linked, not inlined: keep the trees (and dataset) where they are "
                                        "relative to this page.") if x)
    body, nav = fdb_body(trees, lineup, items, note)
    chips = system_chips(labels, lineup.colors, lineup.baseline)
    bench = benchmark_name(trees)
    subtitle = (f'<div class="chips">{chips}</div>{bench}, unified rules; dataset '
                f"{esc(trees[0].manifest.dataset_name)}; {sum(len(t.manifest.samples) for t in trees)} samples in "
                f"{len(trees)} "
                + ("tree" if len(trees) == 1 else "trees"))
    return document(f"duplexeval report: {bench}", body, subtitle, nav, data.html())


def benchmark_name(trees: Sequence[ScoredTree]) -> str:
    """`Full-Duplex-Bench v1.0` (or v1.5, or both): the releases of the trees' subsets' tasks
    (`DatasetRules.release`)."""
    releases = sorted({task_of(e.subset).dataset.release for t in trees for e in t.manifest.samples})
    return "Full-Duplex-Bench " + " + ".join(r.removeprefix("fdb-") for r in releases or ["fdb-v1.0"])


def _render(path: Path, kind: str, make: Callable[[], str]) -> str:
    """Run one page maker; a field missing or of the wrong type in the file is one line naming the file."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = (f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0] if str(exc)
                else type(exc).__name__)
        raise InputError(f"{path}: malformed {kind} file: {what}") from None


def _file_label(p: Path) -> str:
    """The heading of a file's section: `DIR/summary.json` (every sweep's file has the same name), else the name."""
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def write_report(paths: Sequence[str | Path], out: str | Path, jobs: int = 1,
                 options: ReportOptions | None = None) -> Path:
    """Write the page atomically; returns its path. `jobs` processes read the samples (same bytes for any number)."""
    out = Path(out)
    opts = options if options is not None else ReportOptions(jobs=jobs)
    html = render_html(paths, options=replace(opts, out=out))
    try:
        atomic_write_text(out, html)
    except OSError as exc:
        raise InputError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return out
