"""The HTML report of `eot sweep` summaries and `eot compare` files, from the real `eot demo` outputs."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from duplexeval import cli
from duplexeval.errors import InputError
from duplexeval.report.build import render_html

SVG = re.compile(r"<svg.*?</svg>", re.DOTALL)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`duplexeval eot demo --out DIR`: espeak-ng turns, real silero, the sweeps and the comparison."""
    out = tmp_path_factory.mktemp("eotdemo") / "demo"
    with pytest.raises(SystemExit) as e:
        cli.main(["eot", "demo", "--out", str(out)])
    assert e.value.code == 0
    assert (out / "silero" / "summary.json").is_file() and (out / "compare.json").is_file()
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _svgs(page: str) -> list[ET.Element]:
    found = SVG.findall(page)
    return [ET.fromstring(s) for s in found]


def test_sweep_page_has_every_operating_point_the_signature_and_a_parsing_frontier(demo: Path) -> None:
    path = demo / "silero" / "summary.json"
    s = json.loads(path.read_text())
    page = render_html([path])
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert f'<span class="sig">{s["signature"]["compact"]}</span>' in page
    assert "<h2>silero <span" in page  # headed by the detector, not by the file name
    points = {**s["operating_points"], **s["cutoff_at_latency_budget"]}
    assert set(points) == {"2pct", "5pct", "10pct", "300ms", "600ms"}
    for key, p in points.items():
        label = ("cutoff ≤ " + key.replace("pct", "%")) if key.endswith("pct") else "latency ≤ " + key
        assert p is not None, key  # the demo meets every budget
        fx, lat = (s["intervals"][key]["fixed_policy"]["cutoff_rate"],
                   s["intervals"][key]["fixed_policy"]["mean_latency"])
        wl = s["intervals"][key]["span_wilson_cutoff_rate"]
        never = " (never fires)" if p["threshold"] >= 1.0 else ""  # p_eot > 1.00 is impossible: the timeout decides
        row = (f"<td>{label}</td><td class=\"num\">{p['threshold']:.2f}{never} / {p['action_delay']:.1f} s / "
               f"{p['timeout']:.1f} s</td><td class=\"num\">{_pct(p['cutoff_rate'])} [{_pct(fx[0])}, "
               f"{_pct(fx[1])}]</td><td class=\"num\">[{_pct(wl[0])}, {_pct(wl[1])}]</td>"
               f"<td class=\"num\">{p['mean_latency'] * 1000:.0f} ms [{lat[0] * 1000:.0f}, "
               f"{lat[1] * 1000:.0f}] ms</td>")
        assert row in page, key
        v = {**s["vad_baseline"]["operating_points"], **s["vad_baseline"]["cutoff_at_latency_budget"]}[key]
        assert f"{_pct(v['cutoff_rate'])} @ {v['mean_latency'] * 1000:.0f} ms ({v['delay']:g} s)" in page
    assert (f"<td>mean_frontier_latency_0_10</td><td class=\"num\">{s['mean_frontier_latency_0_10'] * 1000:.0f} "
            "ms</td>" in page)
    assert f"<td>filtered.hold_too_short</td><td class=\"num\">{s['filtered']['hold_too_short']}</td>" in page
    svgs = _svgs(page)
    assert len(svgs) == 1
    text = " ".join(t for el in svgs[0].iter() for t in [el.text or ""] if t.strip())
    assert f"model Pareto frontier ({len(s['pareto_frontier'])} policies)" in text
    assert "frontier from the summary&#x27;s pareto_frontier; VAD curve from sweep.parquet" in page
    assert "threshold 1.00 never fires" in page
    # silero ranks the spans well, yet its cutoff-budget points are the silence timer's: the page says so
    assert s["auc"] > 0.8 and all(p["threshold"] >= 1.0 for p in s["operating_points"].values())
    assert f"AUC {s['auc']:.3f} says the scores rank" in page
    # spec 003's signed median: negative where most first commits are false cutoffs, and explained
    med = s["spec003"]["300ms"]["score"]["median_latency_ms"]
    assert med < 0 and f"{med:.0f} ms (most first commits came before the true end" in page
    labels = [t for el in svgs[0].iter() for t in [el.text or ""]
              if t.startswith(("1: picked", "2: picked", "3: picked"))]
    assert labels and len(labels) == len(set(labels))  # budgets that pick the same policy share one numbered marker
    assert render_html([path]) == page  # same bytes twice


def test_frontier_from_sweep_parquet_when_the_summary_has_none(demo: Path, tmp_path: Path) -> None:
    s = json.loads((demo / "silero" / "summary.json").read_text())
    n_frontier = len(s.pop("pareto_frontier"))
    beside = tmp_path / "silero"
    beside.mkdir()
    (beside / "summary.json").write_text(json.dumps(s))
    shutil.copy(demo / "silero" / "sweep.parquet", beside / "sweep.parquet")
    page = render_html([beside / "summary.json"])
    assert "frontier from sweep.parquet (is_pareto rows)" in page
    [fig] = _svgs(page)
    assert any(f"model Pareto frontier ({n_frontier} policies)" in (el.text or "") for el in fig.iter())
    (beside / "sweep.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"sweep.parquet: cannot read the sweep table: ") as e:
        render_html([beside / "summary.json"])
    assert "\n" not in str(e.value)
    (beside / "sweep.parquet").unlink()
    alone = render_html([beside / "summary.json"])
    assert "no model Pareto frontier: the summary carries none and no sweep.parquet is beside it" in alone
    assert "VAD curve from the summary&#x27;s vad_baseline points" in alone
    assert len(_svgs(alone)) == 1


def test_sweeps_of_a_comparison_share_one_frontier_figure_and_forest(demo: Path) -> None:
    page = render_html([demo / "silence" / "summary.json", demo / "silero" / "summary.json", demo / "compare.json"])
    assert "Which detector is better" in page and page.count('class="forest"') == 2  # the summary and the compare card
    first = _svgs(page)[0]
    text = " ".join(el.text or "" for el in first.iter())
    assert "silence: Pareto frontier" in text and "silero: Pareto frontier" in text  # both detectors, one figure
    assert "difference from silence, paired 95% interval" in page


def test_compare_page_has_the_paired_difference_per_budget(demo: Path) -> None:
    path = demo / "compare.json"
    c = json.loads(path.read_text())
    assert set(c["frontier"]) == {"a", "b"} and c["score_mode"] == {"a": "max", "b": "max"} and c["notes"] == []
    page = render_html([path, demo / "silence" / "summary.json"])
    assert f'<span class="sig">{c["signature"]["compact"]}</span>' in page
    assert set(c["budgets"]) == {"2pct", "5pct", "10pct", "300ms", "600ms"}
    for key, e in c["budgets"].items():
        label = ("cutoff ≤ " + key.replace("pct", "%")) if key.endswith("pct") else "latency ≤ " + key
        d, lo_hi = e["mean_latency_diff"], e["mean_latency_diff"]["interval"]
        cd = e["cutoff_rate_diff"]
        assert (f"<td class=\"num\">{cd['diff'] * 100:+.1f} pts</td><td class=\"num\">[{cd['interval'][0] * 100:+.1f}, "
                f"{cd['interval'][1] * 100:+.1f}] pts</td><td class=\"num\">{d['diff'] * 1000:+.1f} ms</td>"
                f"<td class=\"num\">[{lo_hi[0] * 1000:+.1f}, {lo_hi[1] * 1000:+.1f}] ms</td>"
                f"<td class=\"num\">{d['n_pairs']}</td>") in page, key
        assert f"<td>{label}</td>" in page
    assert f"A = {c['a']}, B = {c['b']}; paired on {c['pairing']['common_spans']} common spans" in page
    assert render_html([path, demo / "silence" / "summary.json"]) == page


def test_wrong_kind_and_malformed_files_are_one_line(demo: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    s = json.loads((demo / "silero" / "summary.json").read_text())
    (tmp_path / "other.json").write_text(json.dumps({**s, "kind": "duplexeval.eot.sweeps"}))
    with pytest.raises(InputError, match="other.json: is a 'duplexeval.eot.sweeps' file, expected kind 'one of "):
        render_html([tmp_path / "other.json"])
    s["operating_points"]["2pct"].pop("threshold")
    (tmp_path / "broken.json").write_text(json.dumps(s))
    for bad, msg in ((tmp_path / "other.json", "is a 'duplexeval.eot.sweeps' file"),
                     (tmp_path / "broken.json", "broken.json: malformed duplexeval.eot.sweep file: missing "
                                                "field 'threshold'")):
        with pytest.raises(SystemExit) as e:
            cli.main(["report", str(bad), "--out", str(tmp_path / "r.html")])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and "\n" not in err
    assert not (tmp_path / "r.html").exists()
