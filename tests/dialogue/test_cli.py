"""`duplexeval dialogue synth | run | score | demo`: known answers on the built-in set, artifacts, determinism,
errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from duplexeval.dialogue import run_stage, score_stage
from duplexeval.dialogue.demo import run_demo
from duplexeval.dialogue.judges import ExpectedJudge
from duplexeval.dialogue.load import load_cases
from duplexeval.dialogue.simulator import Clock
from duplexeval.dialogue.synth_stage import caseset_text
from duplexeval.errors import InputError
from duplexeval.executors import ExecutorSpec
from tests.helpers import SRC as SRC_DIR

SRC = str(SRC_DIR)


def cli(*args, cwd=None):
    """The real command in a new process (exit status, stdout, stderr)."""
    return subprocess.run([sys.executable, "-m", "duplexeval", "dialogue", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "COLUMNS": "200"}, timeout=120, cwd=cwd,
                          check=False)


class Result:
    def __init__(self, code, out, err):
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture
def incli(capsys, monkeypatch):
    """`duplexeval.cli.main` in this process (faster than a new interpreter); the same code path and exit status."""
    from duplexeval.cli import main

    def run(*args, cwd=None):
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main(["dialogue", *args])
        out, err = capsys.readouterr()
        return Result(exc.value.code or 0, out, err)

    return run


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from rich.console import Console

    out = tmp_path_factory.mktemp("demo")
    console = Console(record=True, width=220)
    reports = run_demo(out, 0, console)
    return out, dict(zip(("half-duplex", "eager", "keyword"), (r.document for r in reports))), console.export_text()


def test_demo_known_answers(demo):
    _, reps, _ = demo
    hd = reps["half-duplex"]["MiU"]
    assert hd["counts"]["n"] == 400
    assert hd["ir_end"]["value"] == 1 and hd["ir_mid"]["value"] == 0 and hd["MIR"]["value"] == 0
    assert hd["PIR_mid"]["value"] is None and hd["PRR_mid"]["value"] is None
    # FTED = delay (500 ms) + first-token overhead (300 ms), on every case
    assert hd["FTED_s"]["median"] == pytest.approx(0.8) and hd["FTED_s"]["p90"] == pytest.approx(0.8)
    assert hd["FTED_s"]["mean"] == pytest.approx(0.8) and hd["FTED_s"]["responded"] == 400
    assert hd["precision"]["value"] == 1.0 and hd["recall"]["value"] == 1.0
    assert hd["outcomes_by_kind"]["complete"]["end"] == sum(hd["outcomes_by_kind"]["complete"].values()) > 0
    eg = reps["eager"]["MiU"]
    assert eg["ir_mid"]["value"] == 1 and eg["ir_end"]["value"] == 0 and eg["FTED_s"]["n"] == 0
    assert 0 < eg["PIR_mid"]["value"] < 1  # the first boundary is too early for the error cases
    kw = reps["keyword"]["MiU"]
    assert 0 < kw["ir_mid"]["value"] < 1 and kw["MIR"]["value"] == 0
    # UiM: half-duplex yields to everything, so noise is never handled right
    hu = reps["half-duplex"]["UiM"]
    assert hu["PRR_noise"]["value"] == 0 and hu["counts"]["noise"]["yielded"] == 100
    assert reps["keyword"]["UiM"]["PRR_noise"]["value"] > 0.5
    for rep in reps.values():
        u = rep["UiM"]
        vals = [u[f"PRR_{r}"]["value"] for r in ("noise", "denial", "affirmation", "shift")]
        assert u["PRRavg"]["value"] == pytest.approx(sum(vals) / 4)
        assert rep["judge"]["judge_errors"] == 0


def test_demo_prints_table_secondary_numbers_and_signatures(demo):
    _, _, text = demo
    assert "PIR_mid" in text and "PRRavg" in text and "precision (paper's formula)" in text
    assert "secondary" in text and "54.7" in text
    assert "not the standard binary precision and recall" in text
    sig_lines = [ln for ln in text.splitlines() if ln.startswith("signature (")]
    assert len(sig_lines) == 3 and all("|judge:expected|boot:2000@0|" in ln for ln in sig_lines)
    assert "clock:asr640,ft300,tok60,ep0,hz10000" in sig_lines[0]


def test_artifacts_start_with_header_and_signature(demo):
    out, _, _ = demo
    run = out / "half-duplex"
    for name, kind in (("decisions.jsonl", "decisions"), ("cases.jsonl", "cases"), ("judgements.jsonl", "judgements")):
        head = json.loads((run / name).read_text().splitlines()[0])
        assert list(head)[:5] == ["kind", "schema_version", "duplexeval", "signature", "inputs"]
        assert head["kind"] == f"duplexeval.dialogue.{kind}"
        assert head["inputs"]["cases"] == head["signature"]["inputs"]["cases"]
    rep = json.loads((run / "dialogue.json").read_text())
    assert rep["kind"] == "duplexeval.dialogue.report" and rep["signature"]["compact"].startswith(
        "dialogue-spec004-2|cases:jsonl:400miu+400uim@")
    assert [c["name"] for c in rep["signature"]["components"]] == ["cases", "system", "clock", "judge", "boot"]
    rows = (run / "cases.jsonl").read_text().splitlines()[1:]
    assert len(rows) == 800  # one row per case, none dropped
    decisions = [json.loads(x) for x in (run / "decisions.jsonl").read_text().splitlines()[1:]]
    first = [d for d in decisions if d["case"] == "miu-0000"]
    assert first[-1]["what"] == "playback_done"
    assert {d["what"] for d in first} == {"user_chunk", "user_end", "wait", "timer", "action", "say", "playback_done"}
    assert [d["t_s"] for d in first] == sorted(d["t_s"] for d in first)


def test_rows_and_judgements_read_back_to_the_same_lines(demo):
    from duplexeval.dialogue.judges import Judgement
    from duplexeval.dialogue.rows import ErrorRow, MiURow, UiMRow, row_from_json
    from duplexeval.jsonio import dumps_line

    out, _, _ = demo
    for name in ("half-duplex", "eager", "keyword"):
        lines = (out / name / "cases.jsonl").read_text().splitlines(keepends=True)[1:]
        rows = [row_from_json(json.loads(ln), f"line {k}") for k, ln in enumerate(lines)]
        assert {type(r) for r in rows} == {MiURow, UiMRow}
        assert [dumps_line(r.to_json()) for r in rows] == lines
        judged = (out / name / "judgements.jsonl").read_text().splitlines(keepends=True)[1:]
        assert [dumps_line(Judgement.from_json(json.loads(ln), "x").to_json()) for ln in judged] == judged
    failed = {"id": "m1", "family": "MiU", "outcome": "error", "error": "boom", "kind": "", "expected": None}
    assert row_from_json(failed, "x") == ErrorRow("m1", "MiU", "boom", kind="")
    assert row_from_json(failed, "x").to_json() == failed
    with pytest.raises(InputError, match=r"^f: line 3: 'heard_chunks' must be an integer, got '2'$"):
        row_from_json({**json.loads(lines[0]), "heard_chunks": "2"}, "f: line 3")


def test_a_judge_whose_identity_is_not_a_judge_identity_is_one_line(demo, tmp_path):
    import shutil

    from duplexeval.plugins import PluginError

    out, _, _ = demo
    shutil.copytree(out / "eager", tmp_path / "run")

    class Old:
        label = "old"

        def identity(self):
            return {"mode": "old"}

        def judge(self, row):
            return None

    with pytest.raises(PluginError, match=r"^judge 'old': identity returned dict \{'mode': 'old'\}, expected a "
                                          r"JudgeIdentity$"):
        score_stage.score(tmp_path / "run", Old())


def test_same_inputs_same_bytes(demo, tmp_path):
    out, _, _ = demo
    run_demo(tmp_path, 0, console=_quiet())
    for p in sorted(out.rglob("*")):
        if p.is_file():
            assert (tmp_path / p.relative_to(out)).read_bytes() == p.read_bytes(), p


def _quiet():
    import io

    from rich.console import Console

    return Console(file=io.StringIO(), width=200)


def test_two_workers_give_the_same_bytes(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(caseset_text(5, 30, 5), encoding="utf-8")
    cs = load_cases(path)
    run_stage.run(cs, "keyword", {}, Clock(), tmp_path / "a")
    run_stage.run(cs, "keyword", {}, Clock(), tmp_path / "b", ExecutorSpec(jobs=2))
    for name in ("cases.jsonl", "decisions.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    ra = score_stage.score(tmp_path / "a", ExpectedJudge())
    rb = score_stage.score(tmp_path / "b", ExpectedJudge())
    assert ra == rb


def test_cli_synth_run_score(tmp_path, incli):
    cli = incli
    cases = tmp_path / "cases.jsonl"
    p = cli("synth", "--out", str(cases), "--seed", "2", "--n-miu", "12", "--n-uim", "3")
    assert p.returncode == 0, p.stderr
    assert "wrote 12 MiU + 12 UiM cases" in p.stdout
    assert p.stderr.splitlines()[-1] == f"dialogue synth: exit 0: 24 cases in {cases} (no rule beyond bad input)"
    p = cli("run", "--cases", str(cases), "--system", "half-duplex:delay_ms=700", "--first-token-ms", "100", "--out",
            str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[-1].startswith("dialogue run: exit 0: 24/24 without a system failure in 2 subsets")
    assert "system:half-duplex@" in p.stdout and ":delay_ms700|clock:asr640,ft100," in p.stdout
    p = cli("score", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    assert "ir_end" in p.stdout and "1.000 [0.758, 1.000] (12/12)" in p.stdout  # Wilson for 12/12
    assert p.stdout.strip().splitlines()[-1].startswith("signature: dialogue-spec004-2|")
    rep = json.loads((tmp_path / "r" / "dialogue.json").read_text())
    assert rep["MiU"]["FTED_s"]["median"] == pytest.approx(0.8)  # 700 + 100 ms


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("run", "--cases", "nope.jsonl", "--system", "eager", "--out", "r"), "nope.jsonl: file not found"),
        (("run", "--cases", "c.jsonl", "--system", "bogus", "--out", "r"),
         "unknown dialogue system 'bogus'; available:"),
        (("run", "--cases", "c.jsonl", "--system", "eager:x", "--out", "r"), "'eager:x'"),
        (("run", "--cases", "c.jsonl", "--system", "eager", "--per-token-ms", "-1", "--out", "r"),
         "clock setting per_token_ms"),
        (("run", "--cases", "c.jsonl", "--system", "no.such.module:Cls", "--out", "r"),
         "cannot import module 'no.such.module'"),
        (("score", "empty"), "cases.jsonl: file not found"),
        (("score", "r0", "--judge", "human"), "unknown judge 'human'"),
        (("synth", "--out", "x.jsonl", "--n-miu", "-1"), "--n-miu and --n-uim must be non-negative"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path, args, problem, incli):
    (tmp_path / "c.jsonl").write_text(caseset_text(0, 2, 1), encoding="utf-8")
    (tmp_path / "empty").mkdir()
    run_stage.run(load_cases(tmp_path / "c.jsonl"), "eager", {}, Clock(), tmp_path / "r0")
    p = incli(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("duplexeval: error: ") and problem in lines[0], p.stderr


def test_score_refuses_a_truncated_run(tmp_path):
    """A new process: the real exit status."""
    (tmp_path / "c.jsonl").write_text(caseset_text(0, 3, 1), encoding="utf-8")
    run_stage.run(load_cases(tmp_path / "c.jsonl"), "eager", {}, Clock(), tmp_path / "r")
    f = tmp_path / "r" / "cases.jsonl"
    f.write_text("\n".join(f.read_text().splitlines()[:-1]) + "\n")
    p = cli("score", str(tmp_path / "r"))
    assert p.returncode == 2 and "header says 7 cases, found 6 rows" in p.stderr


def test_run_refuses_to_replace_another_run_unless_forced(tmp_path, incli):
    cli = incli
    (tmp_path / "c.jsonl").write_text(caseset_text(0, 3, 1), encoding="utf-8")
    cs = load_cases(tmp_path / "c.jsonl")
    run_stage.run(cs, "eager", {}, Clock(), tmp_path / "r")
    run_stage.run(cs, "eager", {}, Clock(), tmp_path / "r")  # the same run again: fine
    p = cli("run", "--cases", str(tmp_path / "c.jsonl"), "--system", "keyword", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "holds another run (dialogue-spec004-2|" in p.stderr and "--force" in p.stderr
    assert json.loads((tmp_path / "r" / "cases.jsonl").read_text().splitlines()[0])["system"] == "eager"
    p = cli("run", "--cases", str(tmp_path / "c.jsonl"), "--system", "keyword", "--out", str(tmp_path / "r"), "--force")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "r" / "cases.jsonl").read_text().splitlines()[0])["system"] == "keyword"
    # score files of the replaced run are removed, never left to describe the new one
    score_stage.score(tmp_path / "r", ExpectedJudge())
    assert (tmp_path / "r" / "dialogue.json").exists()
    run_stage.run(cs, "eager", {}, Clock(), tmp_path / "r", force=True)
    assert not (tmp_path / "r" / "dialogue.json").exists() and not (tmp_path / "r" / "judgements.jsonl").exists()
    run_stage.run(cs, "eager", {}, Clock(), tmp_path / "r")  # the same run again keeps nothing stale either way



def test_every_dialogue_command_and_option_has_help():
    import typer.main

    from duplexeval.cli import _make_app

    group = typer.main.get_command(_make_app()).commands["dialogue"]  # type: ignore[attr-defined]
    assert sorted(group.commands) == ["compare", "demo", "run", "score", "synth"]
    for name, cmd in group.commands.items():
        assert cmd.help, name
        for p in cmd.params:
            assert getattr(p, "help", None), f"{name} {p.name}"


def test_paired_comparison_matches_the_metrics(demo, incli, tmp_path):
    from duplexeval.dialogue.compare_stage import compare_runs

    out, reps, text = demo
    cmp = compare_runs(out / "half-duplex", out / "eager")
    d = cmp.MiU.difference
    assert d.n_pairs == 400 and d.a == reps["half-duplex"]["MiU"]["precision"]["value"]
    assert d.diff == pytest.approx(reps["eager"]["MiU"]["precision"]["value"] - 1.0)
    assert d.interval is not None and d.diff is not None
    lo, hi = d.interval
    assert lo < d.diff < hi < 0
    m = cmp.MiU.mcnemar
    assert m.b_only == 0 and m.a_only == 400 - reps["eager"]["MiU"]["PIR_mid"]["count"]
    u = compare_runs(out / "half-duplex", out / "keyword").UiM.difference
    assert u.diff == pytest.approx(0.89 - 0.75)  # all four reasons have 100 cases: pooled = PRRavg here
    assert "paired on the same cases" in text and "McNemar" in text
    p = incli("compare", str(out / "half-duplex"), str(out / "keyword"), "--json", str(tmp_path / "c.json"))
    assert p.returncode == 0, p.stderr
    assert "UiM appropriate reply:" in p.stdout and p.stdout.count("signature ") == 2
    js = json.loads((tmp_path / "c.json").read_text())
    assert js["kind"] == "duplexeval.dialogue.compare" and js["UiM"]["difference"]["diff"] == pytest.approx(0.14)
    p = incli("compare", str(out / "half-duplex"), str(out / "keyword"), "--json", "-")  # stdout: the document only
    assert p.returncode == 0 and json.loads(p.stdout) == js
    p = incli("compare", str(out / "half-duplex"), str(tmp_path))
    assert p.returncode == 2 and "dialogue.json: file not found" in p.stderr


def test_compare_refuses_different_case_sets(demo, tmp_path, incli):
    out, _, _ = demo
    (tmp_path / "c.jsonl").write_text(caseset_text(9, 3, 1), encoding="utf-8")
    run_stage.run(load_cases(tmp_path / "c.jsonl"), "eager", {}, Clock(), tmp_path / "other")
    score_stage.score(tmp_path / "other", ExpectedJudge())
    p = incli("compare", str(out / "eager"), str(tmp_path / "other"))
    assert p.returncode == 2 and "were made with different case sets" in p.stderr


def test_run_out_that_is_a_file_is_one_line(tmp_path, incli):
    (tmp_path / "c.jsonl").write_text(caseset_text(0, 2, 1), encoding="utf-8")
    (tmp_path / "afile").write_text("x")
    p = incli("run", "--cases", str(tmp_path / "c.jsonl"), "--system", "eager", "--out", str(tmp_path / "afile"))
    assert p.returncode == 2 and "afile: --out is an existing file, not a folder" in p.stderr
