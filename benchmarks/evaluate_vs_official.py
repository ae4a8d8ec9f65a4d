"""`duplexeval fdb evaluate` against the official FDB v1.0 evaluator scripts, in the same run, on the full tree.

The tree is the 727-sample one of `score_full_tree.py` (built into its cache if missing). Both sides get a fresh
copy of it (copying is not timed), the same fake judge (an OpenAI-compatible chat server on 127.0.0.1 that
rates every request 4), and do the same work: every eligible sample of the five subsets.

- ours: one `duplexeval fdb evaluate --judge openai --base-url http://127.0.0.1:PORT/v1 ...` process;
- official: the scripts of a local checkout (`--official DIR`, CC BY-NC, never copied into this project) run
  as their `evaluate.py` runs them, one process per task and subset root (5 processes), from the checkout's
  evaluation folder. The machine has no torch, so two imports are answered by stand-ins written to a temporary
  folder: `torchaudio.load` (soundfile, channels-first float32, a torch tensor when torch is there) and, unless
  `--official-python` names an interpreter with torch and silero-vad 6.2.3 (then the real `load_silero_vad()`
  JIT model runs), `silero_vad` (our per-frame onnxruntime port of the same Silero model, one frame per call as
  the official call steps it); the judge client is a stand-in for `openai.OpenAI` making the same HTTP request
  with urllib.

    .venv/bin/python benchmarks/evaluate_vs_official.py --official /path/to/Full-Duplex-Bench [--repeat N]
        [--official-python /tmp/silero-ref/bin/python]   # torch + silero-vad venv (scripts/silero_reference.py)

Prints both wall times (process start included) and CPU times, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPLY = "Analysis: The response addresses the interruption.\nI would rate the AI's response as 4"
TASKS = (
    ("candor_pause_handling", "eval_pause_handling", "eval_pause_handling(root)"),
    ("synthetic_pause_handling", "eval_pause_handling", "eval_pause_handling(root)"),
    ("candor_turn_taking", "eval_smooth_turn_taking", "eval_smooth_turn_taking(root)"),
    ("synthetic_user_interruption", "eval_user_interruption", "eval_user_interruption(root, client)"),
    ("icc_backchannel", "eval_backchannel", "eval_backchannel(root)"),
)

SHIM_TORCHAUDIO = '''
import numpy as np, soundfile as sf
def load(path):
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    wav = np.ascontiguousarray(data.T)
    try:
        import torch
    except ImportError:
        return wav, sr
    return torch.from_numpy(wav), sr
'''
SHIM_SILERO = '''
import numpy as np
from duplexeval.vad import OFFICIAL_SETTINGS, SileroVad
def load_silero_vad():
    return SileroVad()
def get_speech_timestamps(wav, model, return_seconds=False, **kw):
    a = np.asarray(wav)
    a = a[0] if a.ndim == 2 else a
    segs = model.segments_s(a, OFFICIAL_SETTINGS, official_rounding=True)
    return [{"start": s, "end": e} for s, e in segs]
'''
DRIVER = '''
import json, sys, urllib.request
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, ".")
root, url = sys.argv[2], sys.argv[3]
class _Msg:
    def __init__(self, c): self.content = c
class _Choice:
    def __init__(self, c): self.message = _Msg(c)
class _Resp:
    def __init__(self, c): self.choices = [_Choice(c)]
class _Completions:
    def create(self, **kw):
        req = urllib.request.Request(url + "/chat/completions", data=json.dumps(kw).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return _Resp(json.loads(r.read())["choices"][0]["message"]["content"])
class _Chat:
    completions = _Completions()
class _Models:
    def list(self):
        with urllib.request.urlopen(url + "/models", timeout=30) as r:
            return json.loads(r.read())
class Client:
    chat = _Chat()
    models = _Models()
client = Client()
client.models.list()
from MODULE import FUNCTION
CALL
'''


class _Judge(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _send(self, obj: dict) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "gpt-4-turbo", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send({"id": "x", "object": "chat.completion", "model": "gpt-4-turbo",
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]})


def _timed(cmd: list[str], cwd: Path | None = None, env: dict | None = None,
           log: Path | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log or os.devnull, "ab") as out:
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _official_numbers(log: Path) -> dict[str, float]:
    """The numbers an official script printed under [Result]: `Name: value` or `Name - Mean: value ± std`."""
    out: dict[str, float] = {}
    seen = False
    for line in log.read_text(errors="replace").splitlines():
        if line.strip() == "[Result]":
            seen = True
        elif seen and ":" in line and not line.startswith("-"):
            name, _, value = line.partition(":")
            name = name.replace(" - Mean", "").strip()
            try:
                out[name] = float(value.split("±")[0])
            except ValueError:
                pass
    return out


def _compare(summary: Path, logs: dict[str, Path]) -> tuple[int, list[str]]:
    """(numbers compared, mismatches): each official printed number against ours in summary.json (printed with
    4 decimals: within 5e-5; printed in full: within 1e-12 relative, as the sums run in another order)."""
    ours = json.loads(summary.read_text())["subsets"]
    n, bad = 0, []
    for subset, log in logs.items():
        for name, value in _official_numbers(log).items():
            if name not in ours[subset]["metrics"]:
                continue
            mine = ours[subset]["metrics"][name]["value"]
            text = log.read_text(errors="replace")
            tol = 5e-5 if f"{name} - Mean: {value:.4f}" in text else 1e-12 * max(1.0, abs(value))
            n += 1
            if mine is None or abs(mine - value) > tol:
                bad.append(f"{subset} {name}: official {value}, ours {mine}")
    return n, bad


def _eval_dir(official: Path) -> Path:
    for sub in ("evaluation", "v1_v1.5/evaluation"):
        if (official / sub / "eval_backchannel.py").is_file():
            return official / sub
    sys.exit(f"{official}: no evaluation/eval_backchannel.py (a checkout of the official repository?)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official", type=Path, required=True, help="local checkout of the official repository")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache/bench-full-tree")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the working copies and logs here")
    ap.add_argument("--no-skip", action="store_true",
                    help="run ours with the VAD's leading-silence skip off (no effect on this tree's backchannel "
                         "outputs, which have a noise floor)")
    ap.add_argument("--backchannel-rules", default="auto",
                    help="ours: 2025-06 or 2026-02; auto: the checkout's (HEAD's v1_v1.5/evaluation is 2026-02)")
    ap.add_argument("--official-python", default=sys.executable,
                    help="interpreter for the official scripts; one with torch and silero-vad 6.2.3 runs the real "
                         "load_silero_vad() JIT model (otherwise our per-frame onnxruntime port stands in)")
    args = ap.parse_args(argv)
    evaldir = _eval_dir(args.official.resolve())
    rules = args.backchannel_rules
    if rules == "auto":
        rules = "2026-02" if evaldir.parent.name == "v1_v1.5" else "2025-06"
    sys.path.insert(0, str(Path(__file__).parent))
    from score_full_tree import ensure_built

    ensure_built(args.cache)  # (re)built when missing or made by an older recipe
    manifest = json.loads((args.cache / "manifest.json").read_text())
    eligible = {(s["subset"], s["id"]) for s in manifest["samples"] if s["eligible"]}

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-eval-"))
    work.mkdir(parents=True, exist_ok=True)
    shims = work / "shims"
    shims.mkdir(exist_ok=True)

    def has(module: str) -> bool:
        return subprocess.run([args.official_python, "-c", f"import {module}"], check=False,
                              capture_output=True).returncode == 0

    real_silero = has("silero_vad") and has("torch")
    if not has("torchaudio"):
        (shims / "torchaudio.py").write_text(SHIM_TORCHAUDIO)
    if not real_silero:
        (shims / "silero_vad.py").write_text(SHIM_SILERO)
    print(f"official scripts: {args.official_python}; VAD: "
          + ("silero_vad load_silero_vad() (torch JIT)" if real_silero
             else "stand-in (duplexeval per-frame onnxruntime)"))
    env = dict(os.environ, BENCH_FAKE_KEY="sk-bench-not-a-key",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    results = []
    for rep in range(args.repeat):
        ours_tree, off_root = work / f"ours{rep}", work / f"official{rep}"
        for p in (ours_tree, off_root):
            shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(args.cache, ours_tree)
        for subset, _, _ in TASKS:  # the official scripts walk folders: give them the eligible samples only
            for d in sorted((args.cache / subset).iterdir()):
                if (subset, d.name) in eligible:
                    shutil.copytree(d, off_root / subset / d.name)
        ours = [sys.executable, "-m", "duplexeval"]
        if args.no_skip:  # the VAD cost on outputs without leading digital silence
            ours = [sys.executable, "-c", ("import sys; import duplexeval.vad_batched as s; "
                                           "s.SKIP_LEADING_SILENCE = False; from duplexeval.cli import main; "
                                           "main(sys.argv[1:])")]
        cmd = [*ours, "fdb", "evaluate", str(ours_tree), "--judge", "openai",
               "--base-url", url, "--api-key-env", "BENCH_FAKE_KEY", "--reference-source", str(args.official),
               "--icc-gt", str(evaldir / "icc_gt_distribution.json"), "--backchannel-rules", rules, "-q"]
        load = os.getloadavg()[0]
        ours_wall, ours_cpu = _timed(cmd, env=env, log=work / f"ours{rep}.log")
        off_wall = off_cpu = 0.0
        per_task = {}
        for subset, module, call in TASKS:
            driver = DRIVER.replace("MODULE", module).replace("FUNCTION", module).replace("CALL", call)
            w, c = _timed([args.official_python, "-c", driver, str(shims), str(off_root / subset), url], cwd=evaldir,
                          env=env, log=work / f"official{rep}-{subset}.log")
            per_task[subset] = round(w, 2)
            off_wall += w
            off_cpu += c
        results.append((ours_wall, ours_cpu, off_wall, off_cpu, per_task))
        n_cmp, bad = _compare(ours_tree / "summary.json", {s: work / f"official{rep}-{s}.log" for s, _, _ in TASKS})
        print(f"run {rep + 1} (load {load:.1f} before, {os.getloadavg()[0]:.1f} after): ours {ours_wall:.2f} s wall "
              f"({ours_cpu:.2f} s CPU); official {off_wall:.2f} s wall ({off_cpu:.2f} s CPU) {per_task}; "
              f"official / ours = {off_wall / ours_wall:.1f}x wall, {off_cpu / ours_cpu:.1f}x CPU")
        print(f"  official numbers equal ours: {'yes' if not bad else 'NO'} ({n_cmp} compared, backchannel "
              f"rules {rules})"
              + "".join(f"\n    {b}" for b in bad))
    server.shutdown()
    best = min(results, key=lambda r: r[0])
    print(f"eligible samples: {len(eligible)}; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"summary: ours {best[0]:.2f} s, official {best[2]:.2f} s (same run), ratio {best[2] / best[0]:.1f}x wall, "
          f"{best[3] / best[1]:.1f}x CPU")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
