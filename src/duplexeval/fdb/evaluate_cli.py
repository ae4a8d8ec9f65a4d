"""`duplexeval fdb evaluate` (alias `reference-evaluate`): the official v1.0 rules -> TREE/summary.json."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from duplexeval.exits import eligibility, finish
from duplexeval.specs import known_params, parse_spec, typed_params

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps
    from duplexeval.fdb.official.judge_config import JudgeConfig
    from duplexeval.jsontypes import JsonObject

# `--judge openai:k=v,...`: the parameters and their defaults (the official run's model, seed and endpoint).
JUDGE_DEFAULTS: dict[str, str | int | float] = {"model": "gpt-4-turbo", "base_url": "https://api.openai.com/v1",
                                                "api_key_env": "OPENAI_API_KEY", "seed": 0, "timeout_s": 60.0}


def judge_settings(spec: str, reference_source: str | None = None) -> tuple[str, JudgeConfig | None]:
    """The judge's name and how it runs from `--judge NAME[:k=v,...]` (every default filled in; None: `none`)."""
    from duplexeval.fdb.official.judge_config import JudgeConfig

    name, raw = parse_spec(spec, "--judge")
    known_params("--judge", spec, raw, JUDGE_DEFAULTS if name == "openai" else ())
    j = {**JUDGE_DEFAULTS, **typed_params("--judge", spec, raw, {k: type(v) for k, v in JUDGE_DEFAULTS.items()})}
    if name == "none":
        return name, None
    return name, JudgeConfig(model=str(j["model"]), base_url=str(j["base_url"]), api_key_env=str(j["api_key_env"]),
                             seed=int(j["seed"]), timeout_s=float(j["timeout_s"]), reference_source=reference_source)


def evaluate_command(
    tree: Path = typer.Argument(..., help="A tree written by export/import and transcribed by `fdb asr`."),
    subset: list[str] | None = typer.Option(None, "--subset", help="Evaluate only this subset (repeatable)."),
    judge: str = typer.Option(
        "none", "--judge",
        help="Judge: none (ratings and v1.5 behaviour tags not judged) or openai[:model=M,base_url=URL,api_key_env=VAR,"
             "seed=N,timeout_s=S] (defaults: gpt-4-turbo, https://api.openai.com/v1, OPENAI_API_KEY, 0 as the official "
             "run, 60 s per request; the key is read from the environment and never written). model and seed are the "
             "v1.0 interruption judge's; the v1.5 behaviour judge uses the same endpoint with --behavior-model.",
    ),
    reference_source: Path | None = typer.Option(
        None, "--reference-source", help="Local checkout of the official repository; its judge prompt is used."
    ),
    icc_gt: Path | None = typer.Option(
        None, "--icc-gt", help="The official icc_gt_distribution.json (CC BY-NC, not shipped); default "
                               "TREE/icc_gt_distribution.json."
    ),
    backchannel_rules: str = typer.Option(
        "2025-06", "--backchannel-rules", help="Backchannel loop: 2025-06 (v1.0 table) or 2026-02 (HEAD)."
    ),
    silero: str = typer.Option("v5", "--silero", help="FDB v1.5: the Silero model of the official rules: v5 (what the "
                                                       "published v1.5 numbers used) or v6.2 (our VAD's)."),
    silero_model: Path | None = typer.Option(None, "--silero-model", help="FDB v1.5: the v5 silero_vad.onnx file "
                                                                          "(checked by its SHA-256); default: the one "
                                                                          "`make venv` installs."),
    behavior_prompt: Path | None = typer.Option(
        None, "--behavior-prompt", help="FDB v1.5: the official behaviour prompt file (CC BY-NC, not shipped; its "
                                        "SHA-256 says whether it is the official one); default: "
                                        "instruction/behavior.txt of --reference-source."),
    behavior_model: str = typer.Option("gpt-4o-2024-08-06", "--behavior-model",
                                       help="FDB v1.5: the behaviour judge's model (the official script's default)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines and no timing line."),
    force: bool = typer.Option(False, "--force", help="Replace a summary.json made with another judge, judge model, "
                                                      "backchannel rules or subsets (it may hold paid-for ratings)."),
    min_eligible: float | None = typer.Option(
        None, "--min-eligible", min=0.0, max=1.0, metavar="FRACTION",
        help="Exit 1 unless every evaluated subset has at least this share of its selected samples evaluated "
             "(default: at least one in every subset; 0: never)."),
) -> None:
    """Reproduce the official Full-Duplex-Bench v1.0 evaluator rules and write TREE/summary.json."""
    from duplexeval.fdb.api import evaluate
    from duplexeval.fdb.tree import tree_audio_s
    from duplexeval.progress import StageClock

    clock = StageClock("evaluate")
    _, config = judge_settings(judge, str(reference_source) if reference_source else None)
    result = evaluate(
        tree,
        subsets=list(subset) if subset else None,
        judge=config,
        icc_gt=icc_gt,
        backchannel_rules=backchannel_rules,
        silero=silero,
        silero_model=silero_model,
        behavior_prompt=behavior_prompt,
        behavior_model=behavior_model,
        force=force,
        progress=not quiet,
    )
    summary = result.to_json()
    for line in format_summary(summary):
        typer.echo(line)
    typer.echo(f"wrote {tree / 'summary.json'}")
    if not quiet:
        clock.say(tree_audio_s(tree))
    counts = {name: (sub["n_evaluated"], sub["counts"]["selected"]) for name, sub in summary["subsets"].items()}
    finish("evaluate", eligibility(counts, min_eligible, "evaluated"))


def _fmt(x: Any) -> str:
    return "null" if x is None else f"{x:.4f}"


def format_summary(summary: JsonObject) -> list[str]:
    """One line per metric, as `subset  name  value [± std]  (n)  note`."""
    from duplexeval.fdb.official.metric import NEEDS_JUDGE, needs_judge
    from duplexeval.fdb.tasks import get_task

    rules = summary["rules"]
    tasks = dict.fromkeys(sub["task"] for sub in summary["subsets"].values() if "task" in sub)  # evaluated, in order
    notes = [note for t in tasks if (note := get_task(t).official.rules_note(rules))]
    lines = [f"official rules: {rules['name']}" + (f" ({'; '.join(notes)})" if notes else "")]
    for name, sub in summary["subsets"].items():
        c = sub["counts"]
        lines.append(f"{name}: evaluated {sub['n_evaluated']} of {c['selected']} selected ({c['declared']} declared)")
        if "judge" in sub:
            lines.append(f"  judge: {sub['judge']['label']}")
        for metric, m in sub["metrics"].items():
            if needs_judge(m):
                lines.append(f"  {metric}: {NEEDS_JUDGE} openai (--judge none was used; the official run asks "
                             "gpt-4-turbo)")
                continue
            val = _fmt(m["value"]) + (f" ± {_fmt(m['std'])}" if m["std"] is not None else "")
            note = f"  [{m['note']}]" if m["note"] else ""
            lines.append(f"  {metric}: {val}  (n={m['n']}){note}")
    if "signature" in summary:
        lines.append(f"signature: {summary['signature']['compact']}")
    return lines


def register(apps: CliApps) -> None:
    """Add `fdb evaluate` and its hidden alias `fdb reference-evaluate`."""
    apps.fdb.command("evaluate")(evaluate_command)
    apps.fdb.command("reference-evaluate", hidden=True)(evaluate_command)
