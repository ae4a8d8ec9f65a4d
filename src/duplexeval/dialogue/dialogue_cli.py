"""`duplexeval dialogue synth | run | score | demo` (spec 004); imports stay inside the commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from duplexeval.cli_options import emit_json, jobs_option, json_option, json_to_stdout
from duplexeval.exits import Status, eligibility, fail_over_option, fail_under_option, finish, gated, parse_gates

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps

DEMO_OUT = Path("duplexeval-dialogue-demo")


def dialogue_synth(
    out: Annotated[Path, typer.Option("--out", help="Where to write the case set (JSONL, a header line first).")],
    seed: Annotated[int, typer.Option("--seed", help="Generator seed: the same seed gives the same bytes.")] = 0,
    n_miu: Annotated[int, typer.Option("--n-miu", help="Number of machine-interrupts-user cases.")] = 400,
    n_uim: Annotated[
        int, typer.Option("--n-uim", help="Number of user-interrupts-machine cases per reason (4 reasons).")] = 100,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace a case set made with another seed or size.")] = False,
) -> None:
    """Write the built-in synthetic case set (ours, made from templates; not the paper's data); at most 100,000
    cases."""
    from duplexeval.dialogue.api import synth

    synth(out=out, seed=seed, n_miu=n_miu, n_uim=n_uim, progress=not quiet, force=force)
    typer.echo(f"wrote {n_miu} MiU + {4 * n_uim} UiM cases to {out}")
    finish("dialogue synth", Status(0, f"{n_miu + 4 * n_uim} cases in {out} (no rule beyond bad input)"))


def dialogue_run(
    cases: Annotated[
        Path, typer.Option("--cases", help="Case file: our JSONL, or the reproduction's tape JSON array.")],
    system: Annotated[str, typer.Option("--system", help="NAME[:key=value,...]: half-duplex, eager, keyword, "
                                                        "openai-chat, or module.path:Class, e.g. "
                                                        "half-duplex:delay_ms=800.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder: decisions.jsonl and cases.jsonl are "
                                                          "written here.")],
    asr_chunk_ms: Annotated[int, typer.Option("--asr-chunk-ms", help="ASR delivery cadence in ms (0: each chunk "
                                                                     "at its end).")] = 640,
    first_token_ms: Annotated[int, typer.Option("--first-token-ms", help="Delay before the first token of a response "
                                                                         "is heard, ms.")] = 300,
    per_token_ms: Annotated[int, typer.Option("--per-token-ms", help="Duration of each spoken token, ms.")] = 60,
    endpoint_ms: Annotated[int, typer.Option("--endpoint-ms", help="End-of-speech detection delay, ms (VAD latency; 0 "
                                                                   "as in the paper).")] = 0,
    horizon_ms: Annotated[int, typer.Option("--horizon-ms", help="How long a case runs after the end of "
                                                                 "user speech, ms.")] = 10000,
    jobs: Annotated[int, jobs_option(None)] = 1,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a run of another system, case set or clock in --out.")] = False,
    min_eligible: Annotated[float | None, typer.Option(
        "--min-eligible", min=0.0, max=1.0, metavar="FRACTION",
        help="Exit 1 unless every case family (MiU, UiM) has at least this share of cases the system did not fail "
             "(default: at least one in each; 0: never).")] = None,
) -> None:
    """Replay every case against a dialogue manager on the virtual clock."""
    from duplexeval.dialogue.api import run

    res = run(cases, system=system, out=out, asr_chunk_ms=asr_chunk_ms, first_token_ms=first_token_ms,
              per_token_ms=per_token_ms, endpoint_ms=endpoint_ms, horizon_ms=horizon_ms, jobs=jobs, force=force)
    typer.echo(f"{system}: {len(res.rows)} cases ({res.failures} failed) -> {out}/cases.jsonl, {out}/decisions.jsonl")
    typer.echo(f"signature: {res.signature.compact()}")
    counts = {fam: (share.count, share.n) for fam, share in res.eligible.items()}
    finish("dialogue run", eligibility(counts, min_eligible, "without a system failure"))


def dialogue_score(
    run: Annotated[Path, typer.Argument(help="Run folder written by `duplexeval dialogue run`.")],
    judge: Annotated[str, typer.Option(
        "--judge", help="expected (offline, from the cases' labels) or openai:model=M,base_url=URL[,api_key_env=VAR,"
                        "cache_dir=DIR,attempts=N,timeout_s=S] (defaults: OPENAI_API_KEY, "
                        "$DUPLEXEVAL_CACHE/dialogue-http, 3 requests per case before it counts as judge_error, 30 s "
                        "per request).")] = "expected",
    force: Annotated[bool, typer.Option("--force", help="Replace a dialogue.json judged by another judge "
                                                        "(it may hold paid-for verdicts).")] = False,
    fail_under: Annotated[list[str] | None, fail_under_option(annotated=True)] = None,
    fail_over: Annotated[list[str] | None, fail_over_option(annotated=True)] = None,
) -> None:
    """Judge a run, compute spec 004's metrics and write dialogue.json; print the table.

    Gates name MiU.* and UiM.* numbers of dialogue.json, e.g. --fail-under MiU.precision=0.8 or
    --fail-over MiU.FTED_s=1.0 (its median; .p90 for the 90th percentile)."""
    parse_gates(fail_under, fail_over)
    from duplexeval.dialogue.api import score
    from duplexeval.dialogue.score_stage import print_report

    res = score(run, judge=judge, force=force)
    rep = res.document
    print_report([rep], [str(rep.get("system"))], f"duplex dialogue (spec 004): {rep.get('system')}, "
                                                        f"judge {res.judge}")
    gated("dialogue score", fail_under, fail_over, {"MiU": rep.get("MiU"), "UiM": rep.get("UiM")}, " in dialogue.json")


def dialogue_demo(
    out: Annotated[
        Path, typer.Option("--out", help="Folder for the case set and one run folder per baseline.")] = DEMO_OUT,
    seed: Annotated[int, typer.Option("--seed", help="Generator seed of the built-in case set.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace an earlier demo of another seed in --out.")] = False,
) -> None:
    """Offline: the built-in case set, the three baselines, the expected judge, one comparison table."""
    from duplexeval.dialogue.demo import run_demo

    t0 = time.perf_counter()
    run_demo(out, seed, force=force)
    typer.echo(f"done in {time.perf_counter() - t0:.1f} s; runs in {out}/<system>/ (cases.jsonl, decisions.jsonl, "
               "dialogue.json)")


def dialogue_compare(
    run_a: Annotated[Path, typer.Argument(help="Scored run folder A (the reference).")],
    run_b: Annotated[Path, typer.Argument(help="Scored run folder B, on the same cases.")],
    json_out: Annotated[Path | None, json_option("the comparison", annotated=True)] = None,
    fail_under: Annotated[list[str] | None, fail_under_option(annotated=True)] = None,
    fail_over: Annotated[list[str] | None, fail_over_option(annotated=True)] = None,
) -> None:
    """Paired comparison of two scored runs: B - A with a paired bootstrap interval, McNemar's exact test.

    Gates judge the differences B - A, e.g. --fail-under MiU.difference=-0.05."""
    parse_gates(fail_under, fail_over)
    from duplexeval.dialogue.api import compare
    from duplexeval.dialogue.compare_stage import format_comparison

    art = compare(run_a, run_b, json_out=None if json_to_stdout(json_out) else json_out).document
    if not json_to_stdout(json_out):
        for line in format_comparison(str(run_a), str(run_b), art):
            typer.echo(line)
        typer.echo(f"signature A: {art['signatures']['a']}")
        typer.echo(f"signature B: {art['signatures']['b']}")
    else:
        emit_json(json_out, dict(art))
    gated("dialogue compare", fail_under, fail_over, {"MiU": art.get("MiU"), "UiM": art.get("UiM")},
          " in the comparison")


def register(apps: CliApps) -> None:
    """Add the `dialogue` commands."""
    apps.dialogue.command("synth")(dialogue_synth)
    apps.dialogue.command("run")(dialogue_run)
    apps.dialogue.command("score")(dialogue_score)
    apps.dialogue.command("demo")(dialogue_demo)
    apps.dialogue.command("compare")(dialogue_compare)
