"""Time `duplexeval report` on the full-size FDB v1.0 case (727 samples, two systems), measure the page's size, and
its first paint and readiness in headless Chromium.

Tree A is the one `benchmarks/score_full_tree.py` builds (default .cache/bench-full-tree; built here when missing).
Tree B has A's annotations and, as each sample's output, the output and words of the next sample of the same subset
(fitted to the sample's length): other audio and other words, as another system's would be, so the page's compressed
evidence is not flattered by repetition. The dataset the report reads the user's side from has A's annotations and,
as each input.wav, the output of the sample two further on: the right length and real speech, which is all a size
and speed benchmark needs. Targets: a page of at most 5 MB with
every figure inline (`--audio link`: the players point at the WAV files), and first paint under 2 s.

    .venv/bin/python benchmarks/report.py [--cache DIR] [--jobs N] [--audio link|none|inline] [--no-browser]

Prints the wall and CPU time of the CLI (process start included), the page size and its parts, Chromium's first
contentful paint and the time until the sample explorer is ready, and the load average, since the build machine is
shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the root: tests.helpers.chromium


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "duplexeval", *args]


def _borrowed(a: Path, entries: list, k: int, shift: int) -> tuple[Any, list]:
    """The output audio and words of the sample `shift` places further in the same subset, fitted to sample k's T."""
    from duplexeval.audio import fit_length, n_samples_for, read_audio
    from duplexeval.fdb.transcript import parse_output_json

    e = entries[k]
    same = [x for x in entries if x.subset == e.subset]
    src = same[(same.index(e) + shift) % len(same)]
    audio, _ = read_audio(src.dir(a) / "output.wav")
    words = parse_output_json(json.loads((src.dir(a) / "output.json").read_text()), src.dir(a) / "output.json")
    return fit_length(audio, n_samples_for(e.T)), [w for w in words if w.start < e.T
                                                   and (w.end is None or w.end <= e.T)]


def second_tree(a: Path, b: Path) -> None:
    """B: each sample's output and words borrowed from another sample of the same subset (so B's evidence differs
    from A's as another system's would), A's annotations and eligibility, then scored."""
    from duplexeval.audio import write_wav_pcm16
    from duplexeval.fdb.transcript import transcript_bytes
    from duplexeval.fdb.tree import AsrSample, load_asr, load_manifest, write_asr, write_manifest
    from duplexeval.jsonio import atomic_write_bytes, sha256_bytes

    if (b / "unified.json").is_file():
        return
    shutil.rmtree(b, ignore_errors=True)
    m, _ = load_manifest(a)
    rec, _ = load_asr(a)
    samples = {}
    for k, e in enumerate(m.samples):
        d = e.dir(b)
        d.mkdir(parents=True)
        audio, words = _borrowed(a, m.samples, k, 1)
        e.files["output.wav"] = write_wav_pcm16(d / "output.wav", audio)
        if e.annotation:
            shutil.copyfile(e.dir(a) / e.annotation, d / e.annotation)
        old = rec.samples[e.key]
        cut = float(old.extra.get("cut_s") or 0.0)  # interruption transcripts hold only words from R on
        tb = transcript_bytes([w for w in words if w.start >= cut])
        atomic_write_bytes(d / "output.json", tb)
        samples[e.key] = AsrSample("ok", sha256_bytes(tb), None, {**old.extra, "audio_sha256": e.files["output.wav"]})
    m.extra["system"] = {"name": "bench-b"}
    msha = write_manifest(b, m)
    write_asr(b, type(rec)(msha, rec.backend, samples))
    subprocess.run(_cli("fdb", "score", str(b)), check=True, stdout=subprocess.DEVNULL)


def dataset_of(a: Path, ds: Path) -> None:
    """A dataset folder with A's annotations and, as each input.wav, the output of a sample two places further on."""
    from duplexeval.audio import write_wav_pcm16
    from duplexeval.fdb.tree import load_manifest

    if (ds / ".complete").is_file():
        return
    shutil.rmtree(ds, ignore_errors=True)
    entries = load_manifest(a)[0].samples
    for k, e in enumerate(entries):
        d = ds / e.subset / e.id
        d.mkdir(parents=True)
        write_wav_pcm16(d / "input.wav", _borrowed(a, entries, k, 2)[0])
        if e.annotation:
            shutil.copyfile(e.dir(a) / e.annotation, d / e.annotation)
    (ds / ".complete").write_text("")


def parts(page: str) -> dict[str, int]:
    """Bytes of the page's parts: the data blob, inline audio, inline SVG figures, the script and style, the rest."""
    blob = sum(len(m) for m in re.findall(r'<script type="application/octet-stream"[^>]*>[^<]*</script>', page))
    audio = sum(len(m) for m in re.findall(r'<script type="text/plain"[^>]*>[^<]*</script>', page))
    svg = sum(len(m) for m in re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL))
    code = sum(len(m) for m in re.findall(r"<script>.*?</script>|<style>.*?</style>", page, flags=re.DOTALL))
    return {"data blob": blob, "inline audio": audio, "SVG": svg, "script+style": code,
            "HTML rest": len(page) - blob - audio - svg - code}


def first_paint(page: Path, runs: int = 3) -> list[tuple[float, float, float]]:
    """(first contentful paint, load event, explorer ready) in ms per run, each in a fresh Chromium."""
    from tests.helpers.chromium import Browser

    out = []
    for _ in range(runs):
        with Browser(1280, 900, timeout_s=120) as b:
            t0 = time.monotonic()
            b.open(page.resolve().as_uri())
            load = (time.monotonic() - t0) * 1000
            b.wait_for("document.documentElement.getAttribute('data-ready') === '1'", timeout_s=120)
            ready = (time.monotonic() - t0) * 1000
            fcp = b.js("(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime")
            out.append((float(fcp), load, ready))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path(".cache/bench-full-tree"))
    ap.add_argument("--jobs", type=int, default=0, help="processes reading the samples (0: one per CPU)")
    ap.add_argument("--audio", default="link", choices=("link", "none", "inline"))
    ap.add_argument("--out", type=Path, default=None, help="where to write the page (default: "
                                                           "CACHE/../report-full.html)")
    ap.add_argument("--no-browser", action="store_true", help="skip the Chromium measurements")
    args = ap.parse_args()
    a = args.cache
    if not (a / "asr.json").is_file():
        from score_full_tree import build

        t0 = time.perf_counter()
        build(a)
        print(f"built {a} in {time.perf_counter() - t0:.1f} s")
    if not (a / "unified.json").is_file():
        subprocess.run(_cli("fdb", "score", str(a)), check=True, stdout=subprocess.DEVNULL)
    b = a.parent / (a.name + "-b")
    ds = a.parent / (a.name + "-dataset")
    second_tree(a, b)
    dataset_of(a, ds)
    out = args.out or a.parent / "report-full.html"
    jobs = args.jobs or os.cpu_count() or 1
    n_samples = len(json.loads((a / "manifest.json").read_text())["samples"])

    load0 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(_cli("report", str(a), str(b), "--dataset", str(ds), "--audio", args.audio, "--out", str(out),
                        "--jobs", str(jobs)), check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = out.stat().st_size
    page = out.read_text(encoding="utf-8")
    cards = page.count('<article class="smp')
    print(f"`duplexeval report A B --dataset DS --audio {args.audio}` ({n_samples} samples x 2 systems): wall "
          f"{wall:.2f} s, CPU {cpu:.2f} s (user+sys, all processes), {jobs} processes; load average {load0:.1f} before")
    print(
        f"page: {out}, {size / 1e6:.2f} MB, {cards} sample cards, {len(re.findall(r'<svg', page))} inline SVG figures")
    print("parts: " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in parts(page).items()))
    print(f"target: at most 5 MB {'met' if size <= 5e6 else 'NOT met'}")
    if not args.no_browser:
        runs = first_paint(out)
        best = min(r[0] for r in runs)
        print("chromium (fresh browser per run): " + "; ".join(
            f"first contentful paint {f:.0f} ms, load event {ld:.0f} ms, explorer ready {rd:.0f} ms"
            for f, ld, rd in runs))
        print(f"target: first paint under 2 s {'met' if max(r[0] for r in runs) < 2000 else 'NOT met'} (best "
              f"{best:.0f} ms)")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (timings are inflated when it "
          "exceeds the CPUs)")


if __name__ == "__main__":
    main()
