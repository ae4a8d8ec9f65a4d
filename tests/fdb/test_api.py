"""The public Python API of the FDB family is the package `duplexeval.fdb`: real signatures with the commands'
defaults, typed frozen results, readers for every artifact, in-memory scoring, and the README's example."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import duplexeval.fdb as fdb
from duplexeval import stats
from duplexeval.errors import InputError
from duplexeval.fdb.compare_stage import PairedMetric
from duplexeval.fdb.official.metric import Metric
from duplexeval.jsonio import dumps
from duplexeval.signature import Signature
from tests.helpers import ROOT

VERBS = ("synthesize", "export", "import_outputs", "asr", "evaluate", "score", "compare", "replay")
READERS = ("read_manifest", "read_asr", "read_words", "read_trace", "read_summary", "read_unified", "read_comparison")
TT, UI = "candor_turn_taking", "synthetic_user_interruption"


def test_the_package_lists_the_verbs_readers_and_types() -> None:
    assert set(VERBS) | set(READERS) | {"score_samples", "JudgeConfig", "Sample"} <= set(fdb.__all__)
    for name in fdb.__all__:
        obj = getattr(fdb, name)
        assert (obj.__doc__ or "").strip(), name  # every public name says what it is
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            assert obj.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
    doc = fdb.__doc__ or ""
    order = [doc.index(f"``{v}(") for v in VERBS]
    assert order == sorted(order)  # the docstring lists them in pipeline order


@pytest.mark.parametrize("name", [*VERBS, *READERS, "score_samples"])
def test_signatures_are_real(name: str) -> None:
    """The input positional, everything else keyword-only; no **kwargs, no renamed tree."""
    params = list(inspect.signature(getattr(fdb, name)).parameters.values())
    kinds = {p.kind for p in params}
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    assert "tree_path" not in {p.name for p in params}
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert all(p.default is inspect.Parameter.empty for p in positional), name
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[len(positional):]), name


def _defaults(fn: object) -> dict[str, object]:
    """A function's parameter defaults (a typer option's own default for a command)."""
    out = {}
    for p in inspect.signature(fn).parameters.values():  # type: ignore[arg-type]
        out[p.name] = getattr(p.default, "default", p.default)
    return out


def test_defaults_are_the_commands() -> None:
    from duplexeval import chat_http
    from duplexeval.fdb.asr_cli import asr_command
    from duplexeval.fdb.compare_cli import compare_command
    from duplexeval.fdb.evaluate_cli import JUDGE_DEFAULTS, evaluate_command
    from duplexeval.fdb.export_cli import export_command, import_command
    from duplexeval.fdb.official import judge_config
    from duplexeval.systems.runner import DEFAULT_CALL_TIMEOUT_S

    ex, cli = _defaults(fdb.export), _defaults(export_command)
    assert (ex["concurrency"], ex["call_timeout_s"], ex["limit"], ex["force"]) == \
        (cli["concurrency"], cli["call_timeout"], cli["limit"], cli["force"])
    assert ex["call_timeout_s"] == DEFAULT_CALL_TIMEOUT_S
    im, cli = _defaults(fdb.import_outputs), _defaults(import_command)
    keys = ("name", "channel", "ignore_output_json")
    assert [im[k] for k in keys] == [cli[k] for k in keys]
    assert _defaults(fdb.asr)["backend"] == _defaults(asr_command)["backend"]
    ev, cli = _defaults(fdb.evaluate), _defaults(evaluate_command)
    for key in ("backchannel_rules", "silero", "behavior_model", "force", "icc_gt"):
        assert ev[key] == cli[key], key
    assert _defaults(fdb.compare)["out"] == str(_defaults(compare_command)["out"])
    judge = fdb.JudgeConfig()
    assert {k: getattr(judge, k) for k in JUDGE_DEFAULTS} == JUDGE_DEFAULTS
    assert judge_config.DEFAULT_TIMEOUT_S == chat_http.DEFAULT_TIMEOUT_S


def test_importing_the_package_loads_no_stage() -> None:
    """`import duplexeval.fdb` stays cheap: not even `fdb.api` until a name is used, no stage until a verb runs."""
    code = ("import sys, duplexeval.fdb; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'pydantic', 'soundfile', 'typer') or m.startswith(('duplexeval.stats', 'duplexeval.fdb.tree', "
            "'duplexeval.fdb.unified', 'duplexeval.fdb.export_stage', 'duplexeval.fdb.official', "
            "'duplexeval.fdb.api')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two exported, transcribed, evaluated and scored demo trees (one turn-taking, one interruption sample each)."""
    base = tmp_path_factory.mktemp("api")
    out = []
    for system in ("silent", "turn-based"):
        tree = base / system
        res = fdb.export(system, "demo", tree, subsets=[TT, UI], limit=1, progress=False)
        assert isinstance(res, fdb.ExportResult) and res.manifest == tree / "manifest.json"
        assert res.eligible[TT] == stats.Share(1, 1)
        out.append(tree)
        stage = fdb.asr(tree, jobs=1, progress=False)
        assert not stage.failed and stage.transcribed == stats.Share(2, 2)
        assert isinstance(stage.signature, Signature) and stage.asr_json.is_file()
    return out[0], out[1]


def test_evaluate_returns_typed_official_numbers_and_read_summary_agrees(trees: tuple[Path, Path]) -> None:
    silent, _ = trees
    res = fdb.evaluate(silent, progress=False)
    assert res.summary == silent / "summary.json" and res.summary_sha256
    assert res.subsets[TT].evaluated == stats.Share(1, 1)
    assert all(isinstance(m, Metric) for m in res.subsets[TT].metrics.values())
    assert res.signature.compact().startswith("fdb-v1.0-official")
    again = fdb.read_summary(silent)
    assert again == res and again.to_json() == res.to_json()
    with pytest.raises(InputError, match="is a 'duplexeval.fdb.summary' file, expected kind 'duplexeval.fdb.unified'"):
        fdb.read_unified(silent / "summary.json")


def test_score_returns_stats_values_and_the_files_agree(trees: tuple[Path, Path]) -> None:
    silent, _ = trees
    res = fdb.score(silent)
    rate = res.subsets[TT].metrics["response_rate_2s"]
    assert isinstance(rate, stats.Share) and (rate.count, rate.n) == (0, 1)  # the silent system never responds
    assert isinstance(res.subsets[UI].metrics["stop_latency_s"], stats.Latency)
    assert res.unified == silent / "unified.json" and res.samples_file == silent / "unified-samples.jsonl"
    assert dumps(res.to_json()) == res.unified.read_text(encoding="utf-8")
    assert res.samples_jsonl() == res.samples_file.read_text(encoding="utf-8")
    read = fdb.read_unified(silent)
    assert read.signature == res.signature and read.kinds[TT]["response_rate_2s"] is stats.Share
    assert read.subsets[TT]["metrics"]["response_rate_2s"] == rate.to_json()
    assert read.metrics[f"{TT}.response_rate_2s"] == rate  # the share read back as the Share it was
    assert isinstance(read.metrics[f"{UI}.stop_latency_s"], stats.Estimate)
    def rows(samples: tuple[fdb.UnifiedSample, ...]) -> list[tuple[str, str, object]]:
        return [(s.subset, s.sample_id, s.fields) for s in samples]

    assert rows(read.samples) == rows(res.samples)
    assert all(s.row is not None for s in res.samples)


def test_readers_of_the_tree_files(trees: tuple[Path, Path]) -> None:
    silent, _ = trees
    manifest = fdb.read_manifest(silent)
    entry = next(e for e in manifest.samples if e.subset == TT)
    assert fdb.read_manifest(silent / "manifest.json").samples == manifest.samples
    assert entry.key in fdb.read_asr(silent).samples
    assert fdb.read_words(entry.dir(silent)) == []  # silent: no word
    assert fdb.read_trace(entry.dir(silent)).result.key == entry.key
    with pytest.raises(InputError, match="is a 'duplexeval.fdb.asr' file, expected kind 'duplexeval.systems.trace'"):
        fdb.read_trace(silent / "asr.json")


def test_compare_returns_paired_metrics_and_read_comparison_agrees(trees: tuple[Path, Path], tmp_path: Path) -> None:
    for tree in trees:
        fdb.score(tree)
    out = tmp_path / "cmp.json"
    res = fdb.compare(list(trees), out=out)
    m = res.comparisons[0].subsets[TT].metrics["response_rate_2s"]
    assert isinstance(m, PairedMetric) and m.kind == "share" and m.count_a == 0
    assert res.trees == trees and res.path == out
    read = fdb.read_comparison(out)
    assert read.signature == res.signature and list(read.comparisons) == res.to_json()["comparisons"]
    assert read.metrics[0][f"{TT}.response_rate_2s"].value == m.difference.diff
    assert fdb.compare(list(trees), out=None).path is None


def test_score_samples_gives_the_trees_numbers_in_memory(trees: tuple[Path, Path]) -> None:
    """The same samples scored from a tree and from memory: the same blocks and rows (Silero on the same audio)."""
    _, tree = trees
    scored = fdb.score(tree, write=False)
    samples = []
    for e in fdb.read_manifest(tree).samples:
        d = e.dir(tree)
        ann = (d / e.annotation).read_bytes() if e.annotation else None
        samples.append(fdb.Sample(e.subset, e.id, e.T, json.loads(ann) if ann else None, fdb.read_words(d),
                                  audio=(d / "output.wav").read_bytes()))
    mem = fdb.score_samples(samples, declared=fdb.read_manifest(tree).declared)
    assert mem.tree is None and mem.unified is None
    assert mem.to_json()["subsets"] == scored.to_json()["subsets"]
    assert mem.samples_jsonl() == scored.samples_jsonl()
    assert mem.subsets[TT].metrics == scored.subsets[TT].metrics
    # the caller's own VAD segments stand in for Silero's, and say so in the signature
    segs = [dataclasses.replace(s, audio=s.audio, segments=[(0, 16000)]) if s.subset == UI else s for s in samples]
    own = fdb.score_samples(segs)
    assert own.to_json()["vad"]["package"] == "injected"
    with pytest.raises(InputError, match="whose task does not use VAD"):
        fdb.score_samples([dataclasses.replace(s, segments=[(0, 1)]) for s in samples])


def test_score_samples_of_your_own_turns() -> None:
    """Turn taking from hand-made records: E is the end of the user's turn; a word 0.5 s after it is a response."""
    ann = [{"text": "[TURN-TAKING]", "timestamp": [2.0, 2.4]}]
    res = fdb.score_samples([
        fdb.Sample(TT, "a", 6.0, ann, [("sure", 2.5, 2.8)]),
        fdb.Sample(TT, "b", 6.0, ann, []),
        fdb.Sample(TT, "c", 6.0, ann, eligible=False, reasons=("missing_output",)),
    ])
    m = res.subsets[TT].metrics
    assert (m["response_rate_1s"].count, m["response_rate_1s"].n) == (1, 2)
    assert m["response_rate_1s"].bounds == (1 / 3, 2 / 3)  # the ineligible sample is counted, never dropped
    assert [s.fields.get("outcome") for s in res.samples] == ["response", "no_response", None]
    with pytest.raises(InputError, match="sample candor_turn_taking/x: no annotation"):
        fdb.score_samples([fdb.Sample(TT, "x", 6.0)])


def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """README's "The same from Python" block, run as it is (in a scratch folder): it uses only the package API."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    at = readme.index("The same from Python")
    block = re.search(r"```python\n(.*?)```", readme[at:], re.S)
    assert block is not None
    code = block.group(1)
    assert re.findall(r"^(?:import|from) .*$", code, re.M) == ["import duplexeval.fdb as fdb"]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - the repository's own example
    printed = capsys.readouterr().out
    assert "fdb-v1.0-unified" in printed and (tmp_path / "runs").is_dir()


def test_import_outputs_and_replay(trees: tuple[Path, Path], tmp_path: Path) -> None:
    """A tree's outputs imported as if made elsewhere; replay needs a network export and says so in one line."""
    silent, _ = trees
    res = fdb.import_outputs("demo", silent, tmp_path / "imported", subsets=[TT], limit=1, progress=False)
    assert res.eligible == {TT: stats.Share(1, 1)} and res.manifest.is_file() and res.ran == 1
    with pytest.raises(InputError, match="no sample has a wire trace"):
        fdb.replay(silent)
