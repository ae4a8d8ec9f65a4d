"""The Python API of the FDB stages lives in one place, duplexeval.fdb, and runs the pipeline end to end."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import duplexeval.fdb as fdb


def test_api_lists_the_stages_in_pipeline_order() -> None:
    assert fdb.__all__ == ["asr", "evaluate", "score"]
    doc = fdb.__doc__ or ""
    names = ("synth.synthesize_dataset", "export_stage.export", "import_stage.import_outputs", "asr", "evaluate",
             "score")
    order = [doc.index(f"``{name}(") for name in names]
    assert order == sorted(order)
    for name in names[:3]:
        mod, fn = name.split(".")
        assert callable(getattr(importlib.import_module(f"duplexeval.fdb.{mod}"), fn))


def test_api_runs_export_asr_evaluate_score(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    res = importlib.import_module("duplexeval.fdb.export_stage").export("silent", "demo", tree,
                                                                        subsets=["candor_turn_taking"], limit=1,
                                                                        progress=False)
    assert res.tree == tree and (tree / "manifest.json").exists()
    stage = fdb.asr(tree, jobs=1, progress=False)
    assert not stage.failed
    summary = fdb.evaluate(tree, progress=False)
    assert "candor_turn_taking" in json.dumps(summary)
    result = fdb.score(tree)
    rate = result.to_json()["subsets"]["candor_turn_taking"]["metrics"]["response_rate_2s"]
    assert rate["count"] == 0 and rate["n"] == 1  # the silent system never responds, and stays counted
