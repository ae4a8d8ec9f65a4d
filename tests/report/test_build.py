"""`duplexeval report` and `fdb show`: demo-like trees (espeak-ng speech, real Silero VAD) rendered to HTML,
opened in headless Chromium, and checked as a reader would: every subset and sample is on the page."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from duplexeval import cli
from duplexeval.errors import InputError
from duplexeval.fdb.unified import score
from duplexeval.report.build import ReportOptions, render_html, write_report
from tests.helpers.fdb import (
    FixtureSample,
    interrupt_ann,
    pause_ann,
    place,
    turn_ann,
    write_tree,
)

P, SP, TT, UI, BC = ("candor_pause_handling", "synthetic_pause_handling", "candor_turn_taking",
                     "synthetic_user_interruption", "icc_backchannel")  # fmt: skip


def _speech(text: str):
    from duplexeval.tts import synthesize

    return synthesize(text)


def _words(sp, start: float) -> list[tuple[str, float, float]]:
    return [(w.text, round(start + w.start_s, 3), round(start + w.end_s, 3)) for w in sp.words]


def demo_like_tree(root: Path, system: str) -> Path:
    """A small tree over every subset: a talker that speaks early and through the interruption ('talk'),
    or a polite one that waits ('wait'); one ineligible sample."""
    sp = _speech("sure, I can help with that")
    talk = system == "talk"
    at = 2.2 if talk else 4.0  # pause samples: pause [2, 3.5]; turn-taking E = 3.0
    s = [
        FixtureSample(P, "1", 8.0, pause_ann((2.0, 3.5)), _words(sp, at), place(8.0, [(at, sp.audio)])),
        FixtureSample(P, "2", 8.0, pause_ann((2.0, 3.5)), []),
        FixtureSample(SP, "1", 7.0, pause_ann((1.5, 2.5)), _words(sp, at - 0.5), place(7.0, [(at - 0.5, sp.audio)])),
        FixtureSample(TT, "1", 9.0, turn_ann(3.0), _words(sp, 2.5 if talk else 3.6),
                      place(9.0, [(2.5 if talk else 3.6, sp.audio)])),
        FixtureSample(TT, "2", 9.0, turn_ann(3.0), _words(sp, 3.3), place(9.0, [(3.3, sp.audio)])),
        FixtureSample(TT, "3", 9.0, turn_ann(3.0), None, eligible=False, reasons=["late_input"], wav=False),
        # interruption S = 5, R = 6.5: speech from 3.5 s, cut at S + 0.3 (wait) or carried over R (talk)
        FixtureSample(UI, "1", 12.0, interrupt_ann(5.0, 6.5),
                      _words(sp, 7.2) if not talk else [("and", 6.6, 6.8)],
                      place(12.0, [(3.5, sp.audio[: int(1.8 * 16000)]), (7.2, sp.audio)]) if not talk
                      else place(12.0, [(3.5, sp.audio), (4.9, sp.audio), (6.2, sp.audio)])),
        FixtureSample(BC, "1", 10.0, None, _words(sp, 4.0), place(10.0, [(4.0, sp.audio)])),
    ]
    tree = write_tree(root, s, declared={P: 216, SP: 137, TT: 119, UI: 200, BC: 55}, dataset="demo-like")
    score(tree)  # real Silero VAD on the interruption output
    return tree


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("report")
    return [demo_like_tree(base / "wait", "wait"), demo_like_tree(base / "talk", "talk")]


@pytest.fixture(scope="module")
def dataset(trees: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset the trees were 'exported from': each sample's input.wav (T long) and the same annotation bytes."""
    from duplexeval.audio import write_wav_pcm16
    from duplexeval.fdb.tree import load_manifest

    root = tmp_path_factory.mktemp("dataset") / "demo-like"
    sp = _speech("can you help me with something")
    for e in load_manifest(trees[0])[0].samples:
        d = root / e.subset / e.id
        d.mkdir(parents=True)
        write_wav_pcm16(d / "input.wav", place(e.T, [(0.5, sp.audio)]))
        if e.annotation:
            shutil.copyfile(e.dir(trees[0]) / e.annotation, d / e.annotation)
    return root


def _keys(tree: Path) -> list[str]:
    m = json.loads((tree / "manifest.json").read_text())
    return [f"{s['subset']}/{s['id']}" for s in m["samples"]]


def page_data(page: str) -> dict:
    """The explorer's evidence: the gzip'd JSON blob in #dx-data."""
    blob = re.search(r'<script type="application/octet-stream" id="dx-data">([^<]+)</script>', page)
    assert blob is not None
    return json.loads(gzip.decompress(base64.b64decode(blob.group(1))))


def _audio(page: str) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in re.findall(r'<script type="text/plain" id="([^"]+)" '
                                                          r'data-type="audio/ogg">([^<]+)</script>', page)}


def test_page_is_self_contained_deterministic_and_every_sample_has_its_card(trees: list[Path], tmp_path: Path) -> None:
    opts = ReportOptions(labels=("wait", "talk"))
    a = write_report(trees, tmp_path / "a.html", options=replace(opts, jobs=1)).read_bytes()
    b = write_report(trees, tmp_path / "b.html", options=replace(opts, jobs=2)).read_bytes()
    assert a == b  # same bytes, whichever number of processes read and encoded the samples
    page = a.decode("utf-8")
    assert "<link" not in page and "<img" not in page and "<script src" not in page and "<iframe" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert not re.search(r"https?://(?!www\.w3\.org/)", page)  # no URL but the SVG namespaces
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL)
    for s in svgs:
        ET.fromstring(s)  # every inline figure and forest strip is well-formed XML
    assert page.count('class="forest"') == 1 and "Which system is better" in page
    targets = set(re.findall(r'id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    assert links and all(x in targets for x in links)  # every menu and worst-case link lands
    data = page_data(page)
    for k in (0, 1):
        for key in _keys(trees[k]):
            subset, sid = key.split("/")
            assert f'id="s{k}-{subset}-{sid}"' in page  # each tree's reading of each sample
            assert f"x-{subset}-{sid}" in data["items"]  # one card per sample, both trees in it
    card = data["items"][f"x-{UI}-1"]
    assert [t["sys"] for t in card["tracks"]] == [0, 1] and card["marks"] == [["S", 5.0], ["R", 6.5]]
    assert card["tracks"][0]["vad"] and card["tracks"][0]["words"] and card["tracks"][0]["env"]
    cells = [c for item in data["items"].values() for _, row in item["fields"]["rows"] for c in row]
    assert cells and not {"None", "True", "False", "nan", "inf"} & set(cells)  # no Python values leak
    assert "Paired comparison" in page and "McNemar" in page and "Reference column" not in page  # no summary.json
    assert "No summary.json, so no reference column" in page
    assert page.count("signature: ") >= 5
    # the ineligible sample has its card and says why; not_exercised is never shown as fine
    assert re.search(r'data-outcome="ineligible" data-verdict="neutral"', page)
    assert not re.search(r'data-outcome="not_exercised" data-verdict="ok"', page)


def test_forest_compares_with_the_baseline_and_labels_follow_the_options(trees: list[Path]) -> None:
    page = render_html(trees, options=ReportOptions(labels=("polite", "talker"), baseline="talker", audio="none"))
    assert "difference from talker, paired 95% interval" in page and "<b>polite</b> vs talker" in page
    assert "A = talker, B = polite" in page  # the paired tables follow the baseline too
    assert "better" in page and "worse" in page  # the talker starts early, so the polite one is better somewhere
    with pytest.raises(InputError, match="--baseline: 'nobody' is none of the inputs"):
        render_html(trees, options=ReportOptions(baseline="nobody"))
    with pytest.raises(InputError, match="--label: give one label per input"):
        render_html(trees, options=ReportOptions(labels=("one",)))
    assert "au-" not in page  # --audio none: no audio at all


def test_inline_and_linked_audio_and_the_input_from_the_dataset(trees: list[Path], dataset: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import soundfile as sf

    from duplexeval.fdb.tree import load_manifest

    out = tmp_path / "page" / "r.html"
    out.parent.mkdir()
    page = write_report(trees, out, options=ReportOptions(dataset=str(dataset))).read_text()
    audio = _audio(page)
    entries = load_manifest(trees[0])[0].samples
    assert {f"au-in-{e.subset}-{e.id}" for e in entries} <= set(audio)  # the user's side of every sample
    assert {f"au-0-{e.subset}-{e.id}" for e in entries if e.eligible} <= set(audio)
    a, sr = sf.read(io.BytesIO(audio[f"au-0-{UI}-1"]))
    assert sr == 16000 and abs(len(a) / sr - 12.0) < 0.1  # the output, whole: T = 12 s
    card = page_data(page)["items"][f"x-{UI}-1"]
    assert (card["tracks"][0]["sys"] == -1 and card["tracks"][0]["env"]
            and card["tracks"][0]["audio"] == f"#au-in-{UI}-1")
    linked = write_report(trees, out, options=ReportOptions(dataset=str(dataset), audio="link")).read_text()
    assert not _audio(linked)
    for t in page_data(linked)["items"][f"x-{UI}-1"]["tracks"]:
        assert (out.parent / t["audio"]).resolve().is_file()  # relative to the page
    import duplexeval.report.build as build

    monkeypatch.setattr(build, "AUTO_INLINE_MAX_S", 60.0)  # two outputs and the input: over 3 min, so auto links
    auto = write_report(trees, out, options=ReportOptions(dataset=str(dataset))).read_text()
    assert not _audio(auto) and "min of audio: too much to inline" in auto
    other = dataset.parent / "other"
    shutil.copytree(dataset, other)
    (other / TT / "1" / "turn_taking.json").write_text(json.dumps(turn_ann(3.5)))
    with pytest.raises(InputError,
                       match=f"--dataset {other}: sample {TT}/1 has another turn_taking.json in the dataset"):
        render_html(trees, options=ReportOptions(dataset=str(other)))


def test_reference_column_only_when_hashes_match(trees: list[Path], tmp_path: Path) -> None:
    from duplexeval.fdb.official import evaluate

    one = tmp_path / "one"
    shutil.copytree(trees[0], one)
    evaluate(one, subsets=[P, SP, TT, UI], progress=False)
    page = render_html([one])
    assert "Reference column: official rules" in page and "Average take turn" in page
    summary = json.loads((one / "summary.json").read_text())
    (one / "summary.json").write_text(json.dumps({**summary, "asr_sha256": "0" * 64}))
    page = render_html([one])
    assert "Reference column left out: asr.json changed since summary.json was written" in page


def test_compare_json_renders_as_in_the_tree_report(trees: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    with pytest.raises(SystemExit) as e:
        cli.main(["fdb", "compare", str(trees[0]), str(trees[1]), "--out", str(out), "--no-write"])
    assert e.value.code == 0 and not out.exists()
    with pytest.raises(SystemExit):
        cli.main(["fdb", "compare", str(trees[0]), str(trees[1]), "--out", str(out)])
    from_file = render_html([out])
    from_trees = render_html(trees, options=ReportOptions(labels=("wait", "talk"), audio="none"))
    tables = from_trees[from_trees.index('<h3 id="compare">'):from_trees.index('<h2 id="samples">')]
    tables = tables[: tables.index("</details>")]
    assert tables in from_file and "exercised in both" in tables
    assert 'class="forest"' in from_file and "difference from wait" in from_file


def test_worst_cases_come_first(trees: list[Path]) -> None:
    page = render_html([trees[1]], options=ReportOptions(audio="none"))
    tt = page[page.index('id="x-candor_turn_taking-'):]
    assert tt.index('id="x-candor_turn_taking-1"') < tt.index('id="x-candor_turn_taking-2"')  # early start first
    assert "early start: first word" in page and "speaking at end" in page


def test_fdb_show_draws_a_png_and_refuses_bad_samples(trees: list[Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    out = tmp_path / "one.png"
    with pytest.raises(SystemExit) as e:
        cli.main(["fdb", "show", str(trees[1]), f"{UI}/1", "--out", str(out)])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"{out}: {UI}/1: speaking_at_end"
    assert Image.open(out).size[0] > 800
    for bad, msg in ((f"{UI}/../x", "sample id '../x' is not allowed"),
                     (f"{TT}/9", f"sample {TT}/9 is not in manifest.json"), ("nope/1", "unknown subset 'nope'")):
        with pytest.raises(SystemExit) as e:
            cli.main(["fdb", "show", str(trees[1]), bad, "--out", str(out)])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and "\n" not in err


def test_controller_and_eot_reports_share_the_page(tmp_path: Path) -> None:
    from duplexeval.controller.format.data import write_data
    from duplexeval.eot.pairs import EOTPair
    from duplexeval.eot.report import build_report
    from duplexeval.jsonio import write_json
    from tests.helpers.controller import turn_clip

    write_data(tmp_path / "ctl", [turn_clip(f"c{k}", f"g{k // 2}", 26 + k) for k in range(4)])
    with pytest.raises(SystemExit):
        cli.main(["controller", "evaluate", str(tmp_path / "ctl"), "--json", str(tmp_path / "ctl.json")])
    write_data(tmp_path / "ctl-b", [turn_clip(f"c{k}", f"g{k // 2}", 28 + k) for k in range(4)])
    with pytest.raises(SystemExit):
        cli.main(
            ["controller", "compare", str(tmp_path / "ctl"), str(tmp_path / "ctl-b"), "--json",
             str(tmp_path / "cmp.json")])
    write_json(tmp_path / "eot.json", build_report([EOTPair(1.0, 1.3), EOTPair(2.0, 1.9), EOTPair(3.0, 4.2)]))
    page = render_html([tmp_path / "ctl.json", tmp_path / "eot.json"])
    assert "Event metrics" in page and "false cutoff" in page and "hang &gt; " in page
    # the EOT shares in the stats.Share shape: 1 of 3 pairs commits early, Wilson interval of 1/3
    assert ('<td>false cutoff</td><td class="num">0.3333</td><td class="num">[0.0615, 0.7923]</td><td '
            'class="num">1/3</td>') in page
    cmp = render_html([tmp_path / "cmp.json"])
    assert "endpoint.latency_median_ms" in cmp and "+160" in cmp and "|boot:2000@0|" in cmp  # 2 frames later in B
    assert 'class="forest"' in cmp and "endpoint latency (median)" in cmp  # the file's B - A drawn as a forest
    assert "signature: " in page and "controller-spec002-1" in page
    assert render_html([tmp_path / "ctl.json", tmp_path / "eot.json"]) == page
    write_json(tmp_path / "other.json", {"kind": "duplexeval.fdb.summary"})
    with pytest.raises(InputError, match="other.json: is a 'duplexeval.fdb.summary' file"):
        render_html([tmp_path / "other.json"])
    with pytest.raises(InputError, match="not a scored FDB tree .no manifest.json. or a scored dialogue run"):
        render_html([tmp_path, tmp_path / "eot.json"])


def test_dialogue_and_controller_demos_get_pages_like_the_fdb_one(tmp_path: Path) -> None:
    """The dialogue demo's run folders and the controller demo's files: a forest against the baseline, cards per
    case / clip with every system's reading, and the controller demo's compare.json accepted (it has a header)."""
    from duplexeval.controller.demo import run_demo as controller_demo
    from duplexeval.dialogue.demo import run_demo as dialogue_demo

    dialogue_demo(tmp_path / "dlg", 0, None)
    runs = [tmp_path / "dlg" / s for s in ("half-duplex", "eager", "keyword")]
    page = render_html(runs)
    assert "Which dialogue system is better" in page and "difference from half-duplex" in page
    data = page_data(page)
    assert len(data["items"]) == 800 and page.count('<article class="smp') == 800  # one card per case
    card = data["items"]["c-miu-0001"]
    assert [who for who, _ in card["chats"]] == ["half-duplex", "eager", "keyword"]
    assert re.search(r'id="d1-miu-0001" data-sys="1" data-outcome="mid" data-verdict="(ok|bad)"', page)
    from duplexeval.dialogue import compare_stage
    from duplexeval.jsonio import write_json

    write_json(tmp_path / "dcmp.json", compare_stage.compare(runs[0], runs[2]))
    one = render_html([tmp_path / "dcmp.json"])
    assert "keyword against half-duplex" in one and "difference from half-duplex" in one and 'class="forest"' in one

    controller_demo(tmp_path / "ctl", n=2, exchanges=2)
    files = [tmp_path / "ctl" / n for n in ("report-silence.json", "report-silero.json", "compare.json")]
    page = render_html(files, options=ReportOptions(audio="none"))
    assert "Which controller is better" in page and "difference from silence, paired 95% interval" in page
    cards = page_data(page)["items"]
    assert set(cards) == {"k-conv000", "k-conv001"}
    lanes = cards["k-conv000"]["tracks"]
    assert [t["sys"] for t in lanes] == [-1, -2, 0, 1] and lanes[2]["curve"] and lanes[2]["level"] == 0.91
    assert lanes[0]["words"] and lanes[1]["words"]  # the conversation's own words on both channels


@pytest.fixture
def one_sample_tree(tmp_path: Path) -> Path:
    tree = write_tree(tmp_path / "tree", [FixtureSample(TT, "1", 4.0, turn_ann(1.5), [("yes", 2.0, 2.3)])])
    score(tree)
    return tree


def _show(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        cli.main(["fdb", "show", *args])
    return int(e.value.code or 0), capsys.readouterr().err


def test_fdb_show_refuses_an_id_without_a_slash_a_missing_output_and_another_dataset(
        one_sample_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from tests.helpers.systems import Dataset, add_sample

    out = tmp_path / "one.png"
    code, err = _show([str(one_sample_tree), TT, "--out", str(out)], capsys)
    assert (code, err) == (2, f"duplexeval: error: SAMPLE '{TT}': expected SUBSET/ID, e.g. candor_turn_taking/3\n")
    # a dataset whose sample is not the one the tree was made from (another length)
    other = Dataset("other", tmp_path / "ds")
    add_sample(other, TT, "1", np.zeros(16000 * 3, np.float32), turn_ann(1.5))
    code, err = _show([str(one_sample_tree), f"{TT}/1", "--out", str(out), "--dataset", str(other.root)], capsys)
    assert code == 2 and err == (f"duplexeval: error: --dataset {other.root}: sample {TT}/1: its input lasts 3 s, the "
                                 "tree's sample 4 s; the tree was not made from this dataset\n")
    wav = one_sample_tree / TT / "1" / "output.wav"
    wav.unlink()
    code, err = _show([str(one_sample_tree), f"{TT}/1", "--out", str(out)], capsys)
    assert code == 2 and err == f"duplexeval: error: {wav}: sample {TT}/1: file not found\n"
    assert not out.exists()
