"""duplexeval.dialogue's typed API: the verbs, the readers, score_samples, and docs/dialogue.md's examples run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import duplexeval.dialogue as dialogue
from duplexeval.cli import main
from duplexeval.dialogue.metrics import MiUItem, UiMItem
from duplexeval.errors import InputError, RefusalError
from duplexeval.stats import Estimate, Share

ROOT = Path(__file__).resolve().parents[2]


def test_package_exports_the_verbs_and_imports_no_stage():
    code = ("import sys, duplexeval.dialogue as d; heavy = [m for m in ('numpy', 'pydantic', 'typer', "
            "'duplexeval.dialogue.run_stage') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for verb in ("synth", "run", "score", "compare"):
        fn = getattr(dialogue, verb)
        assert fn.__module__ == "duplexeval.dialogue.api" and fn.__doc__
    from duplexeval.dialogue import run_stage, score_stage  # noqa: F401  a stage import leaves the verbs alone

    assert dialogue.run.__module__ == dialogue.score.__module__ == "duplexeval.dialogue.api"


def test_score_samples_in_memory():
    res = dialogue.score_samples([MiUItem("end", fted_us=400_000), MiUItem("mid", timing=1, content=1),
                                  MiUItem("miss")], [UiMItem("noise", "yielded", 1)])  # fmt: skip
    assert res.metrics["MiU.ir_end"] == Share(1, 3, 0, 3) and res.metrics["MiU.MIR"] == Share(1, 3, 0, 3)
    precision = res.metrics["MiU.precision"]
    assert isinstance(precision, Estimate) and precision.value == pytest.approx(2 / 3)
    fted = res.metrics["MiU.FTED_s"]  # the quantile rule's median of {0.4 s, never}: the first of two
    assert isinstance(fted, Estimate) and fted.value == 0.4 and fted.fields["p90_reached"] is False
    assert res.metrics["UiM.PRRavg"].value is None  # three reasons have no case
    with pytest.raises(InputError, match="at least one"):
        dialogue.score_samples()


def test_verbs_write_what_the_commands_write_and_read_back(tmp_path):
    syn = dialogue.synth(out=tmp_path / "cases.jsonl", n_miu=6, n_uim=2)
    assert syn.paths == (tmp_path / "cases.jsonl",) and (syn.n_miu, syn.n_uim) == (6, 8)
    r = dialogue.run(tmp_path / "cases.jsonl", system="half-duplex", out=tmp_path / "api")
    with pytest.raises(SystemExit) as e:
        main(["dialogue", "run", "--cases", str(tmp_path / "cases.jsonl"), "--system", "half-duplex", "--out",
              str(tmp_path / "cli")])  # fmt: skip
    assert e.value.code == 0
    for name in ("cases.jsonl", "decisions.jsonl"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert r.eligible == {"MiU": Share(6, 6), "UiM": Share(8, 8)} and len(r.rows) == 14 and r.failures == 0
    assert dialogue.read_run(tmp_path / "api") == r
    s = dialogue.score(tmp_path / "api")
    with pytest.raises(SystemExit) as e:
        main(["dialogue", "score", str(tmp_path / "cli")])
    assert e.value.code == 0
    for name in ("judgements.jsonl", "dialogue.json"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert s.paths == (tmp_path / "api" / "judgements.jsonl", tmp_path / "api" / "dialogue.json")
    assert s.judge == "expected" and s.signature is not None
    back = dialogue.read_report(tmp_path / "api")
    assert back.metrics == s.metrics and back.signature == s.signature
    assert dialogue.read_judgements(tmp_path / "api").signature == s.signature
    (tmp_path / "other.json").write_text('{"kind": "duplexeval.eot.report", "schema_version": 2}')
    with pytest.raises(InputError, match="expected kind 'duplexeval.dialogue.report'"):
        dialogue.read_report(tmp_path / "other.json")
    c = dialogue.compare(tmp_path / "api", tmp_path / "cli", json_out=tmp_path / "compare.json")
    assert c.metrics["MiU.difference"].value == 0 and c.paths == (tmp_path / "compare.json",)
    assert dialogue.read_compare(tmp_path / "compare.json").metrics == c.metrics


def test_score_refuses_another_judges_report(tmp_path):
    dialogue.synth(out=tmp_path / "cases.jsonl", n_miu=2, n_uim=1)
    dialogue.run(tmp_path / "cases.jsonl", system="eager", out=tmp_path / "r")
    dialogue.score(tmp_path / "r")

    class Other:
        label = "other"

        def identity(self):
            return {"name": "other"}

        def judge(self, row):
            return None

    with pytest.raises(RefusalError, match="judged by another judge"):
        dialogue.score(tmp_path / "r", judge=Other())  # type: ignore[arg-type]


def test_the_documented_examples_run(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "dialogue.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    manager = next(b for b in blocks if b.startswith("# my_manager.py"))
    examples = [b for b in blocks if b.startswith("import duplexeval.dialogue as dialogue")]
    assert len(examples) == 2
    (tmp_path / "my_manager.py").write_text(manager)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for k, block in enumerate(examples):
        exec(compile(block, f"docs/dialogue.md example {k + 1}", "exec"), {})
    assert capsys.readouterr().out.splitlines()[0] == "0.45 0.5"  # what the page says it printed


def test_the_readers_check_the_kinds_and_versions_the_stages_write():
    from duplexeval.dialogue import api, compare_stage, run_stage, score_stage

    assert (api.CASES_KIND, api.DECISIONS_KIND) == (run_stage.CASES_KIND, run_stage.DECISIONS_KIND)
    assert api.SCHEMA == run_stage.SCHEMA
    assert (api.REPORT_KIND, api.JUDGEMENTS_KIND) == (score_stage.REPORT_KIND, score_stage.JUDGEMENTS_KIND)
    assert api.COMPARE_KIND == compare_stage.COMPARE_KIND
