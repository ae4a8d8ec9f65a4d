"""A task written outside duplexeval (`tests/helpers/fdb_plugin_task.py`), published under the entry-point group
`duplexeval.fdb_tasks` by a `.dist-info` on the path, goes through every stage: synth, export, asr, evaluate,
score, compare, report. Each stage runs as the command line, in a child process that sees the plugin as
installed; nothing in duplexeval names the task."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.plugins import declare_entry_point

SCRIPT = """name: questions
samples:
  - {subset: toy_questions, id: 1, text: "What time does the train to the city leave tomorrow?"}
  - {subset: toy_questions, id: 2, text: "Can you tell me a short story about a lighthouse?", tail: 4.0}
"""


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("plugin")
    env = declare_entry_point(folder, "toy-fdb-task", "duplexeval.fdb_tasks", "answer_question",
                              "tests.helpers.fdb_plugin_task:TASK")
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{ROOT}"
    return env


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "duplexeval", *args], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode == 0, f"duplexeval {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_a_plugin_task_goes_through_every_stage(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    (tmp_path / "questions.yaml").write_text(SCRIPT)
    ds = tmp_path / "ds"
    _run(plugin_env, "fdb", "synth", str(tmp_path / "questions.yaml"), "--out", str(ds), "-q")
    assert json.loads((ds / "toy_questions" / "1" / "question.json").read_text())[0]["timestamp"][1] > 1.0
    trees = {}
    for system in ("turn-based", "silent"):
        tree = tmp_path / system
        _run(plugin_env, "fdb", "export", "--system", system, "--dataset", str(ds), "--out", str(tree), "--quiet")
        _run(plugin_env, "fdb", "asr", str(tree), "-q")
        _run(plugin_env, "fdb", "evaluate", str(tree), "-q")
        _run(plugin_env, "fdb", "score", str(tree), "-q")
        trees[system] = tree
    answering, silent = trees["turn-based"], trees["silent"]
    manifest = json.loads((answering / "manifest.json").read_text())
    assert {(s["subset"], s["eligible"]) for s in manifest["samples"]} == {("toy_questions", True)}
    assert all("question.json" in s["files"] for s in manifest["samples"])

    summary = json.loads((answering / "summary.json").read_text())["subsets"]["toy_questions"]
    assert summary["task"] == "answer_question" and summary["metrics"]["Answered"]["value"] == 1.0
    block = json.loads((answering / "unified.json").read_text())["subsets"]["toy_questions"]
    assert block["task"] == "answer_question" and block["metrics"]["answered_rate"]["count"] == 2
    assert (json.loads((silent / "unified.json").read_text())["subsets"]["toy_questions"]["metrics"]["answered_rate"]
            ["count"] == 0)
    rows = [json.loads(line) for line in (answering / "unified-samples.jsonl").read_text().splitlines()]
    assert [r["answered"] for r in rows] == [True, True] and all(r["latency_s"] > 0 for r in rows)

    _run(plugin_env, "fdb", "compare", str(answering), str(silent), "--out", str(tmp_path / "compare.json"))
    comparison = json.loads((tmp_path / "compare.json").read_text())["comparisons"][0]["subsets"]["toy_questions"]
    assert comparison["task"] == "answer_question" and comparison["pairing"]["paired"] == 2
    assert comparison["metrics"]["answered_rate"]["diff"] == -1.0

    _run(plugin_env, "report", str(answering), str(silent), "--out", str(tmp_path / "report.html"), "--jobs", "1")
    page = (tmp_path / "report.html").read_text()
    assert "(toy_questions, answer_question)" in page and "questions answered" in page  # heading and figure
    assert "answered after the question" in page  # the forest plot's row of its headline metric
    assert "no answer after the question" in page and "answered after " in page  # the task's "why" lines
    blob = re.search(r'id="dx-data">([^<]+)</script>', page)
    assert blob is not None
    cards = json.loads(gzip.decompress(base64.b64decode(blob.group(1))))["items"]
    marks = [m for card in cards.values() if "toy_questions" in card["text"] for m in card["marks"]]
    assert marks and all(label == "Q" for label, _ in marks)  # its timeline mark, in the sample explorer's data
