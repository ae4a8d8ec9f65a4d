"""docs/cli.md section 4: a result already there is this run's (resume or rewrite), another run's (refused in one line
naming the difference, exit 2), or replaced with --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duplexeval.errors import RefusalError
from duplexeval.reruns import check_replace, difference, read_header
from tests.helpers.cli import run_cli as run
from tests.helpers.fdb import FixtureSample, turn_ann, write_tree

TT = "candor_turn_taking"


def _head(inputs: dict[str, str], settings: dict[str, object], version: str = "0.1.0") -> dict[str, object]:
    return {"kind": "k", "duplexeval": version, "inputs": inputs,
            "signature": {"definitions": "d-1", "duplexeval": version, "inputs": inputs,
                          "components": [{"name": "asr", "value": "x", "hash": None, "settings": settings}]}}


def test_difference_names_the_first_thing_that_differs() -> None:
    a = _head({"m": "aa" * 32}, {"t": 0.5})
    assert difference(a, _head({"m": "aa" * 32}, {"t": 0.5}, version="9.9")) is None  # duplexeval's version is left out
    assert difference(a, {**a, "kind": "other"}) == "holds k, not other"
    assert difference(a, _head({"m": "bb" * 32}, {"t": 0.5})) == ("was made from other inputs (m: aaaaaaaa there, "
                                                                  "bbbbbbbb now)")
    assert difference(a, _head({"m": "aa" * 32}, {"t": 0.7})) == ("was made with other settings (asr: asr:x:t0.5 "
                                                                  "there, asr:x:t0.7 now)")


def test_check_replace_on_files(tmp_path: Path) -> None:
    head = _head({"m": "aa" * 32}, {})
    f = tmp_path / "r.json"
    assert read_header(f) is None and check_replace(f, head, False) is False  # nothing there
    f.write_text(json.dumps(head))
    assert check_replace(f, head, False) is True  # this run's
    with pytest.raises(RefusalError, match=r"^.*r.json: exists and was made from other inputs .*; pass --force "
                                           r"to replace it"):
        check_replace(f, _head({"m": "cc" * 32}, {}), False)
    assert check_replace(f, _head({"m": "cc" * 32}, {}), True) is False  # forced
    f.write_text("not json")
    with pytest.raises(RefusalError, match="holds something duplexeval did not write"):
        check_replace(f, head, False)


def _tree(root: Path, words: list[tuple[str, float, float]]) -> Path:
    return write_tree(root, [FixtureSample(TT, str(i), 6.0, annotation=turn_ann(1.0), words=words) for i in (1, 2)])


def test_fdb_compare_never_overwrites_another_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    a, b, c = (_tree(tmp_path / n, [("yes", 1.5, 1.8)]) for n in ("a", "b", "c"))
    for t in (a, b, c):
        assert run(["fdb", "score", str(t), "-q"], capsys)[0] == 0
    assert run(["fdb", "compare", "a", "b"], capsys)[0] == 0
    first = (tmp_path / "compare.json").read_bytes()
    assert run(["fdb", "compare", "a", "b"], capsys)[0] == 0  # the same comparison: rewritten, the same bytes
    assert (tmp_path / "compare.json").read_bytes() == first
    code, _out, err = run(["fdb", "compare", "a", "c"], capsys)
    assert code == 2 and err == ("duplexeval: error: compare.json: exists and compares other trees (there: a, b; "
                                 "now: a, c); pass --force to replace it (or write elsewhere with --out)\n")
    assert (tmp_path / "compare.json").read_bytes() == first
    assert run(["fdb", "compare", "a", "c", "--force"], capsys)[0] == 0
    assert json.loads((tmp_path / "compare.json").read_text())["trees"][1]["path"] == "c"


def test_fdb_asr_finished_is_up_to_date_and_another_backend_is_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path / "t",
                      [FixtureSample(TT, "1", 3.0, annotation=turn_ann(1.0), words=[("fine", 1.5, 1.8)])], asr=False)
    argv = ["fdb", "asr", str(tree), "--backend", "import", "--declare", "x"]
    assert run(argv, capsys)[0] == 0
    asr = (tree / "asr.json").read_bytes()
    code, out, err = run(argv, capsys)
    assert code == 0 and "1 ok, 0 failed of 1 eligible samples (1 resumed)" in out and "x real time" not in err
    assert (tree / "asr.json").read_bytes() == asr
    code, _out, err = run([*argv[:-1], "y"], capsys)
    assert code == 2 and "asr.json: exists and was made with other settings" in err
    assert run([*argv[:-1], "y", "--force"], capsys)[0] == 0


def test_fdb_evaluate_guards_its_own_settings_before_any_work(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path / "t", [("yes", 1.5, 1.8)])
    assert run(["fdb", "evaluate", str(tree), "-q"], capsys)[0] == 0
    first = (tree / "summary.json").read_bytes()
    assert run(["fdb", "evaluate", str(tree), "-q"], capsys)[0] == 0 and (tree / "summary.json").read_bytes() == first
    code, _out, err = run(["fdb", "evaluate", str(tree), "-q", "--backchannel-rules", "2026-02"], capsys)
    assert code == 2 and "(backchannel rules: 2025-06 there, 2026-02 now); pass --force" in err
    # a paid judge is never asked before the refusal: no key is set, and the refusal still comes first
    code, _out, err = run(["fdb", "evaluate", str(tree), "-q", "--judge", "openai:api_key_env=NO_SUCH_KEY_VAR"], capsys)
    assert code == 2 and "(judge: none there, openai (model gpt-4-turbo) now)" in err


def test_dialogue_synth_and_controller_demo_keep_other_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "c.jsonl"
    small = ["--n-miu", "2", "--n-uim", "1"]
    assert run(["dialogue", "synth", "--out", str(cases), *small], capsys)[0] == 0
    assert run(["dialogue", "synth", "--out", str(cases), *small], capsys)[0] == 0
    code, _out, err = run(["dialogue", "synth", "--out", str(cases), *small, "--seed", "3"], capsys)
    assert code == 2 and "made with other settings (synth: synth:seed0," in err
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "mine.txt").write_text("x")
    code, _out, err = run(["controller", "demo", "--out", str(tmp_path / "d")], capsys)
    assert code == 2 and "holds no controller demo; pass --force" in err
