"""`duplexeval dialogue synth | run | score | demo` (spec 004); imports stay inside the commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec
from duplexeval.jsonio import atomic_write_text, write_json

if TYPE_CHECKING:  # the command groups; duplexeval.cli imports this module
    from duplexeval.cli import CliApps

DEMO_OUT = Path("duplexeval-dialogue-demo")


def _clock(asr_chunk_ms: int, first_token_ms: int, per_token_ms: int, endpoint_ms: int, horizon_ms: int) -> Any:
    from duplexeval.dialogue.simulator import Clock

    return Clock(asr_chunk_ms, first_token_ms, per_token_ms, endpoint_ms, horizon_ms)


def dialogue_synth(
    out: Annotated[Path, typer.Option("--out", help="Where to write the case set (JSONL, a header line first).")],
    seed: Annotated[int, typer.Option("--seed", help="Generator seed: the same seed gives the same bytes.")] = 0,
    n_miu: Annotated[int, typer.Option("--n-miu", help="Number of machine-interrupts-user cases.")] = 400,
    n_uim: Annotated[int, typer.Option("--n-uim", help="Number of user-interrupts-machine cases per reason (4 reasons).")] = 100,
) -> None:
    """Write the built-in synthetic case set (ours, made from templates; not the paper's data)."""
    from duplexeval.dialogue.synth import caseset_text

    if n_miu < 0 or n_uim < 0 or n_miu + n_uim == 0:
        raise InputError(f"--n-miu and --n-uim must be non-negative and not both 0, got {n_miu} and {n_uim}")
    atomic_write_text(out, caseset_text(seed, n_miu, n_uim))
    typer.echo(f"wrote {n_miu} MiU + {4 * n_uim} UiM cases to {out}")


def dialogue_run(
    cases: Annotated[Path, typer.Option("--cases", help="Case file: our JSONL, or the reproduction's tape JSON array.")],
    system: Annotated[str, typer.Option("--system", help="half-duplex, eager, keyword, openai-chat, or module.path:Class.")],
    out: Annotated[Path, typer.Option("--out", help="Run folder: decisions.jsonl and cases.jsonl are written here.")],
    param: Annotated[list[str] | None, typer.Option("--param", help="System setting key=value (repeatable), e.g. delay_ms=800.")] = None,
    asr_chunk_ms: Annotated[int, typer.Option("--asr-chunk-ms", help="ASR delivery cadence in ms (0: each chunk at its end).")] = 640,
    first_token_ms: Annotated[int, typer.Option("--first-token-ms", help="Delay before the first token of a response is heard, ms.")] = 300,
    per_token_ms: Annotated[int, typer.Option("--per-token-ms", help="Duration of each spoken token, ms.")] = 60,
    endpoint_ms: Annotated[int, typer.Option("--endpoint-ms", help="End-of-speech detection delay, ms (VAD latency; 0 as in the paper).")] = 0,
    horizon_ms: Annotated[int, typer.Option("--horizon-ms", help="How long a case runs after the end of user speech, ms.")] = 10000,
    jobs: Annotated[int, typer.Option("--jobs", help="Local worker processes.")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace a run of another system, case set or clock in --out.")] = False,
) -> None:
    """Replay every case against a dialogue manager on the virtual clock."""
    from duplexeval.dialogue.baselines import parse_params
    from duplexeval.dialogue.load import load_cases
    from duplexeval.dialogue.run import run_cases

    cs = load_cases(cases)
    clock = _clock(asr_chunk_ms, first_token_ms, per_token_ms, endpoint_ms, horizon_ms)
    res = run_cases(cs, system, parse_params(param or []), clock, out, ExecutorSpec(jobs=jobs), force=force)
    typer.echo(f"{system}: {len(res.rows)} cases ({res.failures} failed) -> {out}/cases.jsonl, {out}/decisions.jsonl")
    typer.echo(f"signature: {res.signature.compact()}")


def dialogue_score(
    run: Annotated[Path, typer.Argument(help="Run folder written by `duplexeval dialogue run`.")],
    judge: Annotated[str, typer.Option("--judge", help="expected (offline, from the cases' labels) or openai.")] = "expected",
    judge_model: Annotated[str, typer.Option("--judge-model", help="openai judge: the model name.")] = "",
    judge_base_url: Annotated[str, typer.Option("--judge-base-url", help="openai judge: OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1).")] = "",
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="openai judge: environment variable holding the key.")] = "OPENAI_API_KEY",
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="openai judge: reply cache (default $DUPLEXEVAL_CACHE/dialogue-http).")] = None,
    attempts: Annotated[int, typer.Option("--attempts", help="openai judge: requests per case before it counts as judge_error.")] = 3,
    timeout_s: Annotated[float, typer.Option("--timeout-s", help="openai judge: per-request timeout, seconds.")] = 30.0,
) -> None:
    """Judge a run, compute spec 004's metrics and write dialogue.json; print the table."""
    from duplexeval.dialogue.judges import make_judge
    from duplexeval.dialogue.score import print_report, score_run

    j = make_judge(judge, run, model=judge_model, base_url=judge_base_url, api_key_env=api_key_env,
                   cache_dir=cache_dir, timeout_s=timeout_s, max_attempts=attempts)
    rep = score_run(run, j)
    print_report([rep], [str(rep.get("system"))], f"duplex dialogue (spec 004): {rep.get('system')}, judge {j.label}")


def dialogue_demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the case set and one run folder per baseline.")] = DEMO_OUT,
    seed: Annotated[int, typer.Option("--seed", help="Generator seed of the built-in case set.")] = 0,
) -> None:
    """Offline: the built-in case set, the three baselines, the expected judge, one comparison table."""
    from duplexeval.dialogue.demo import run_demo

    t0 = time.perf_counter()
    run_demo(out, seed)
    typer.echo(f"done in {time.perf_counter() - t0:.1f} s; runs in {out}/<system>/ (cases.jsonl, decisions.jsonl, dialogue.json)")


def dialogue_compare(
    run_a: Annotated[Path, typer.Argument(help="Scored run folder A (the reference).")],
    run_b: Annotated[Path, typer.Argument(help="Scored run folder B, on the same cases.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the comparison JSON here.")] = None,
) -> None:
    """Paired comparison of two scored runs: B - A with a paired bootstrap interval, McNemar's exact test."""
    from duplexeval.dialogue.compare import comparison_artifact, format_comparison

    art = comparison_artifact(run_a, run_b)
    for line in format_comparison(str(run_a), str(run_b), art):
        typer.echo(line)
    typer.echo(f"signature A: {art['signatures']['a']}")
    typer.echo(f"signature B: {art['signatures']['b']}")
    if json_out is not None:
        write_json(json_out, art)


def register(apps: CliApps) -> None:
    """Add the `dialogue` commands."""
    apps.dialogue.command("synth")(dialogue_synth)
    apps.dialogue.command("run")(dialogue_run)
    apps.dialogue.command("score")(dialogue_score)
    apps.dialogue.command("demo")(dialogue_demo)
    apps.dialogue.command("compare")(dialogue_compare)
