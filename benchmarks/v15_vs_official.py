"""FDB v1.5: our official-rule engine against the official v1.5 scripts, value for value, and their times.

Builds a synthetic v1.5 tree (espeak-ng stimuli of the four scenarios and a scripted system whose replies and
transcripts are exact: `duplexeval.fdb.tasks.overlap.synth`), copies it twice, and runs on the copies

- ours: the tree adopted by `fdb import` and `fdb asr --backend import`, then the stages `fdb evaluate` (the
  official rules through the v1.5 task package: Silero v5 by default, Praat, our behaviour judge) and `fdb score`
  (our rules), timed apart from the adoption;
- theirs: the official scripts of a local checkout (`--official DIR`, CC BY-NC, never copied into this
  project), run as their README runs them, one process per script and subset, in `--official-python` (a venv
  with torch 2.13.0 CPU, praat-parselmouth, librosa, pandas, scipy, statsmodels and pip `silero-vad==5.1.2`).

Both sides talk to the same fake judge: an OpenAI-compatible chat server on 127.0.0.1 whose answer is a
function of the request (the user message and the seed); it refuses the first attempt of about one sample in
eleven, so the retry path runs on both sides. What the official scripts need and cannot have offline is
substituted by stand-ins written to a temporary folder (each one listed in `STAND_INS` and printed):

- `torch.hub.load("snakers4/silero-vad", ...)` loads from a local folder holding `hubconf.py` and `src/` of
  silero-vad commit bbf22a0 (`--silero-hub DIR`; the repository's master on the v1.5 release date), so the real
  v5 TorchScript model and that commit's utilities run;
- `torchaudio` (its PyPI wheels are CUDA builds that do not load here): `load`/`save` through soundfile
  (channels-first float32, as torchaudio returns PCM16), and everything else raising as a network-less
  machine would (SQuIM weights, resampling of non-16 kHz audio, which the tree never needs);
- `utmosv2` (installed from GitHub, weights downloaded at run time): `create_model` raises, so every UTMOSv2
  value is NaN on their side, as it is on any machine without the weights;
- `openai.OpenAI` (same HTTP request through urllib) and `dotenv.load_dotenv` (no-op).

    .venv/bin/python benchmarks/v15_vs_official.py --official /tmp/v15ref --official-python /tmp/fdb15-off/bin/python \
        --silero-hub /tmp/silero-hub-bbf22a0 [--full | --per-subset N] [--fixture tests/data/fdb_v15/official.json]

Prints whether every official value equals ours, the first differences, and both wall times. With `--fixture`
it writes their results (and the tree's hashes) to a JSON file that `tests/fdb/tasks/overlap/test_parity.py` checks in
CI.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from duplexeval.audio import write_wav_pcm16  # noqa: E402
from duplexeval.fdb.dataset import load_dataset  # noqa: E402
from duplexeval.fdb.tasks.overlap import synth  # noqa: E402
from duplexeval.fdb.tasks.overlap.scenarios import SUBSET_ORDER  # noqa: E402
from duplexeval.jsonio import write_json  # noqa: E402

METRICS = ("utmosv2", "wpm", "mean_pitch", "std_pitch", "mean_intensity", "std_intensity")
LABELS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")
STAND_INS = (
    "torch.hub.load('snakers4/silero-vad') -> local hubconf.py + src/ of silero-vad bbf22a0 (v5 TorchScript model)",
    "torchaudio -> soundfile load/save (float32, channels first); resample, SQuIM, pitch/vad raise",
    "utmosv2.create_model -> raises (weights are downloaded at run time): every UTMOSv2 value is NaN",
    "openai.OpenAI -> urllib POST of the same body to the loopback fake judge",
    "dotenv.load_dotenv -> no-op",
)

# ------------------------------------------------------------------------------------------- the fake judge


def fake_answer(user: str, seed: int) -> str:
    """A deterministic judge: the label is a function of the user message; one sample in 11 fails its first try."""
    h = int(hashlib.sha256(user.encode("utf-8")).hexdigest(), 16)
    if h % 11 == 3 and seed == 1:
        return "I cannot decide yet."
    return f'Reasoning: deterministic.\n{{ "behaviour": ["{LABELS[h % 4 if h % 5 else 0]}"] }}'


class _Judge(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "gpt-4o-2024-08-06", "object": "model"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        text = fake_answer(req["messages"][1]["content"], int(req.get("seed", 0)))
        self._send({"id": "x", "object": "chat.completion", "model": req.get("model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})


class FakeJudge:
    def __enter__(self) -> FakeJudge:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------------------------------------ the tree


def build_tree(root: Path, counts: dict[str, int], seed: int = 0) -> Path:
    """A v1.5 tree in the official per-sample layout: inputs, scripted outputs, metadata, four transcripts."""
    for subset in SUBSET_ORDER:
        for i in range(counts.get(subset, 0)):
            st = synth.make_stimulus(subset, i, seed)
            out = synth.scripted_outputs(st, i, seed)
            d = root / subset / st.id
            d.mkdir(parents=True, exist_ok=True)
            write_wav_pcm16(d / "input.wav", st.input)
            write_wav_pcm16(d / "clean_input.wav", st.clean_input)
            write_wav_pcm16(d / "output.wav", out.output)
            write_wav_pcm16(d / "clean_output.wav", out.clean_output)
            write_json(d / "metadata.json", st.metadata.to_json())
            inp, clean_inp = synth.input_transcripts(st)
            write_json(d / "input.json", inp)
            write_json(d / "clean_input.json", clean_inp)
            write_json(d / "output.json", out.output_json)
            write_json(d / "clean_output.json", out.clean_output_json)
    return root


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------- theirs

SITECUSTOMIZE = '''
import os, torch.hub
_orig = torch.hub.load
def _load(repo_or_dir, model, *args, **kw):
    if repo_or_dir == "snakers4/silero-vad":
        kw.pop("force_reload", None); kw.pop("trust_repo", None)
        return _orig(os.environ["FDB15_SILERO_HUB"], model, *args, source="local", **kw)
    return _orig(repo_or_dir, model, *args, **kw)
torch.hub.load = _load
'''
TORCHAUDIO = '''
import numpy as np, soundfile as sf, torch
__version__ = "0.0+duplexeval-stand-in"
from . import functional, pipelines, transforms
def load(path, *a, **k):
    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return torch.from_numpy(np.ascontiguousarray(data.T)), sr
def save(path, tensor, sr, *a, **k):
    sf.write(str(path), tensor.detach().cpu().numpy().T, sr, subtype="PCM_16")
def list_audio_backends():
    return ["soundfile"]
'''
TA_FUNCTIONAL = '''
def resample(*a, **k):
    raise NotImplementedError("torchaudio stand-in: resampling is not available (the tree is 16 kHz)")
def detect_pitch_frequency(*a, **k):
    raise NotImplementedError("torchaudio stand-in: no YIN pitch")
def vad(*a, **k):
    raise NotImplementedError("torchaudio stand-in: no vad")
'''
TA_PIPELINES = '''
class _Bundle:
    def get_model(self):
        raise RuntimeError("SQuIM weights are downloaded at run time; no network here")
SQUIM_OBJECTIVE = _Bundle()
SQUIM_SUBJECTIVE = _Bundle()
'''
TA_TRANSFORMS = '''
class Resample:
    def __init__(self, *a, **k):
        raise NotImplementedError("torchaudio stand-in: no resampling")
'''
UTMOSV2 = '''
def create_model(*a, **k):
    raise RuntimeError("UTMOSv2 downloads its weights at run time; not available offline")
'''
DOTENV = "def load_dotenv(*a, **k):\n    return False\n"
OPENAI = '''
import json, os, urllib.request
_URL = os.environ["FDB15_JUDGE_URL"]
class _O:
    def __init__(self, **kw): self.__dict__.update(kw)
class _Completions:
    def create(self, **kw):
        req = urllib.request.Request(_URL + "/chat/completions", data=json.dumps(kw).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
        with urllib.request.urlopen(req, timeout=60) as r:
            content = json.loads(r.read())["choices"][0]["message"]["content"]
        return _O(choices=[_O(message=_O(content=content))])
class OpenAI:
    def __init__(self, *a, **k):
        self.chat = _O(completions=_Completions())
        self.models = _O(list=lambda: None)
'''
TESTS_DRIVER = '''
import json, sys
from pathlib import Path
import significance_test as st
root = Path(sys.argv[1]).resolve()
df = st.load_general_split_files(root)
wpm_cols = [c for c in df.columns if c.endswith("wpm")]
df = df[(df[wpm_cols] != 0).all(axis=1)]
res = st.run_batch_tests(df=df, metrics=sys.argv[2].split(","))
out = []
for _, r in res.iterrows():
    out.append({k: (None if isinstance(v, float) and v != v else (v.item() if hasattr(v, "item") else v))
                for k, v in r.items() if k != "conclusion"})
print("TESTS_JSON " + json.dumps(out))
'''


def write_stand_ins(d: Path) -> None:
    (d / "torchaudio").mkdir(parents=True)
    (d / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (d / "torchaudio" / "__init__.py").write_text(TORCHAUDIO)
    (d / "torchaudio" / "functional.py").write_text(TA_FUNCTIONAL)
    (d / "torchaudio" / "pipelines.py").write_text(TA_PIPELINES)
    (d / "torchaudio" / "transforms.py").write_text(TA_TRANSFORMS)
    (d / "utmosv2.py").write_text(UTMOSV2)
    (d / "dotenv.py").write_text(DOTENV)
    (d / "openai.py").write_text(OPENAI)
    (d / "fdb15_tests_driver.py").write_text(TESTS_DRIVER)


def eval_dir(official: Path) -> Path:
    for sub in ("v1_v1.5/evaluation", "evaluation"):
        if (official / sub / "eval_behavior.py").is_file():
            return official / sub
    raise SystemExit(f"{official}: no v1_v1.5/evaluation/eval_behavior.py (give a checkout of the official repository)")


def run_official(tree: Path, official: Path, python: str, silero_hub: Path, judge_url: str, log: Path,
                 subsets: tuple[str, ...] = SUBSET_ORDER) -> tuple[dict[str, Any], float]:
    """Run the four official v1.5 steps on every subset of `tree`; their outputs, and the wall time."""
    ev = eval_dir(official)
    work = Path(tempfile.mkdtemp(prefix="fdb15-official-"))
    shims = work / "shims"
    write_stand_ins(shims)
    cwd = work / "cwd"
    cwd.mkdir()
    (cwd / "instruction").symlink_to(ev / "instruction")
    env = {**os.environ, "PYTHONPATH": f"{shims}{os.pathsep}{ev}", "FDB15_SILERO_HUB": str(silero_hub),
           "FDB15_JUDGE_URL": judge_url, "PYTHONHASHSEED": "0"}
    out: dict[str, Any] = {}
    spent = 0.0  # the official steps only (not the driver that reads their t-test table back)
    with open(log, "w", encoding="utf-8") as fh:
        for subset in subsets:
            root = tree / subset
            if not root.is_dir():
                continue
            steps = [
                [python, str(ev / "evaluate.py"), "--task", "behavior", "--root_dir", str(root)],
                [python, str(ev / "evaluate.py"), "--task", "general_before_after", "--root_dir", str(root)],
                [python, str(ev / "get_timing.py"), "--root_dir", str(root)],
                [python, str(ev / "significance_test.py"), "--root_dir", str(root), "--metrics", *METRICS],
            ]
            for cmd in steps:
                fh.write(f"$ {' '.join(cmd)}\n")
                fh.flush()
                t_step = time.perf_counter()
                subprocess.run(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
                spent += time.perf_counter() - t_step
                print(f"official {subset} {Path(cmd[1]).name} {' '.join(cmd[2:4]) if 'evaluate' in cmd[1] else ''}: "
                      f"{time.perf_counter() - t_step:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
            res = subprocess.run([python, str(shims / "fdb15_tests_driver.py"), str(root), ",".join(METRICS)],
                                 cwd=cwd, env=env, capture_output=True, text=True, check=False)
            m = re.search(r"^TESTS_JSON (.*)$", res.stdout, re.MULTILINE)
            fh.write(res.stdout + res.stderr)
            out[subset] = collect_official(root, cwd, json.loads(m.group(1)) if m else None)
    return out, spent


def _read_log_dict(path: Path, prefix: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    out: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(": ")
        if name.startswith(prefix) or prefix == "":
            out[name] = ast.literal_eval(value)
    return out


def collect_official(root: Path, cwd: Path, tests: list[dict[str, Any]] | None) -> dict[str, Any]:
    name = root.name
    samples: dict[str, Any] = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        def rd(f: str, d: Path = d) -> Any:
            p = d / f
            return json.loads(p.read_text().replace("NaN", "null")) if p.is_file() else None
        samples[d.name] = {"content_tag": rd("content_tag.json"), "general_split": rd("general_split.json"),
                           "latency_intervals": rd("latency_intervals.json")}
    behavior = _read_log_dict(cwd / f"{name}_behavior.log", "Ratios")
    general = _read_log_dict(cwd / f"{name}_general.log", "")
    return {"samples": samples, "ratios": None if behavior is None else behavior.get("Ratios (C-axis)"),
            "aggregate": general, "tests": tests}


# --------------------------------------------------------------------------------------------------- ours


def stage_tree(tree: Path) -> Path:
    """Where ours puts the FDB tree made from `tree` (`fdb import` + `fdb asr --backend import`)."""
    return tree.with_name(tree.name + "-fdb")


def prepare_ours(tree: Path) -> tuple[Path, float]:
    """The benchmark tree as an FDB tree: `fdb import` (both outputs beside the inputs, the four transcripts) and
    `fdb asr --backend import` (the scripted transcripts adopted as they are); the FDB tree and the wall time."""
    from duplexeval.fdb import asr_stage
    from duplexeval.fdb.import_stage import import_outputs

    out = stage_tree(tree)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    import_outputs(tree, tree, out, name="scripted", progress=False)
    res = asr_stage.asr(out, backend="import", declare="scripted-transcripts", progress=False)
    if res.failed:
        raise SystemExit(f"asr import failed: {res.errors[:3]}")
    return out, time.perf_counter() - t0


def as_result(sub: dict[str, Any]) -> dict[str, Any]:
    """A summary.json subset block in the shape `compare` reads (the official per-sample files, aggregate, tests)."""
    from duplexeval.fdb.tasks.overlap.before_after import METRIC_ORDER

    samples = {r["id"]: {k: r[k] for k in ("general_split", "latency_intervals", "content_tag", "notes")}
               for r in sub["samples"] if r.get("evaluated")}
    m = sub["metrics"]
    aggregate = {side: {k: m[f"{side}_{k}"]["value"] for k in METRIC_ORDER if m[f"{side}_{k}"]["value"] is not None}
                 for side in ("pre", "post")}
    return {"samples": samples, "aggregate": aggregate, "ratios": sub.get("ratios_log"), "tests": sub["tests"]}


def run_ours(tree: Path, judge_url: str, silero_name: str,
             subsets: tuple[str, ...] = SUBSET_ORDER) -> tuple[dict[str, Any], float]:
    """`fdb evaluate` (the stage: official rules through the task package, the behaviour judge) on the FDB tree made
    from `tree`; the results of every subset and the stage's wall time (the tree is prepared first, untimed here)."""
    from duplexeval.fdb.official import evaluate
    from duplexeval.fdb.official.judge_config import JudgeConfig

    out = stage_tree(tree) if (stage_tree(tree) / "asr.json").is_file() else prepare_ours(tree)[0]
    t0 = time.perf_counter()
    summary = evaluate(out, subsets=[s for s in subsets if (tree / s).is_dir()], progress=False,
                       judge=JudgeConfig(base_url=judge_url, api_key_env=""),
                       options={"silero": silero_name, "behavior_prompt": os.environ["FDB15_PROMPT"]})
    took = time.perf_counter() - t0
    return {s: as_result(b) for s, b in summary["subsets"].items()}, took


def run_our_score(tree: Path, subsets: tuple[str, ...] = SUBSET_ORDER) -> tuple[dict[str, Any], float]:
    """`fdb score` (our rules) on the FDB tree made from `tree`, reading the judge's tags evaluate left; wall time."""
    from duplexeval.fdb.unified import score

    t0 = time.perf_counter()
    res = score(stage_tree(tree))
    return {s: b for s, b in res.unified["subsets"].items() if s in subsets}, time.perf_counter() - t0


# ------------------------------------------------------------------------------------------------ compare


def _close(a: Any, b: Any, rel: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rel * max(1.0, abs(a), abs(b)))
    return bool(a == b)


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> tuple[int, list[str]]:
    """(values compared, differences). Per-sample values exactly; sums over samples to 1e-12 (order of addition)."""
    n = 0
    diffs: list[str] = []

    def check(where: str, a: Any, b: Any, rel: float = 0.0) -> None:
        nonlocal n
        n += 1
        if not _close(a, b, rel):
            diffs.append(f"{where}: ours {a!r} theirs {b!r}")

    for subset, t in theirs.items():
        o = ours[subset]
        for sid, ts in t["samples"].items():
            os_ = o["samples"][sid]
            check(f"{subset}/{sid} content_tag", os_["content_tag"], ts["content_tag"])
            check(f"{subset}/{sid} latency_intervals", os_["latency_intervals"], ts["latency_intervals"])
            tg, og = ts["general_split"], os_["general_split"]
            for k in ("split_t", "distractor_end", "pre_dur_s", "post_dur_s"):
                check(f"{subset}/{sid} {k}", og[k], tg[k])
            for side in ("pre", "post", "clean"):
                tside = {k: v for k, v in (tg.get(side) or {}).items() if v is not None}
                oside = og.get(side) or {}
                check(f"{subset}/{sid} {side} keys", sorted(oside), sorted(tside))
                for k, v in tside.items():
                    check(f"{subset}/{sid} {side}.{k}", oside.get(k), v)
        tr = {k: round(v, 2) for k, v in (o["ratios"] or {}).items()}
        check(f"{subset} ratios (2 dp, as logged)", tr, t["ratios"])
        for side in ("pre", "post"):
            for k, v in (t["aggregate"] or {}).get(side, {}).items():
                check(f"{subset} aggregate {side}.{k}", (o["aggregate"] or {}).get(side, {}).get(k), v, 1e-12)
            check(f"{subset} aggregate {side} keys", sorted((o["aggregate"] or {}).get(side, {})),
                  sorted((t["aggregate"] or {}).get(side, {})))
        theirs_tests = {(r["metric"], r["pair"]): r for r in (t["tests"] or [])}
        ours_tests = {(r["metric"], r["pair"]): r for r in o["tests"]}
        check(f"{subset} tests run", sorted(ours_tests), sorted(theirs_tests))
        for key, r in theirs_tests.items():
            mine = ours_tests.get(key, {})
            for a, b in (("n_raw", "n_raw"), ("n_valid", "n_valid"), ("n_used", "n_used"), ("n_dropped", "n_dropped"),
                         ("mean_before", "mean_before"), ("mean_after", "mean_after"), ("mean_diff", "mean_diff"),
                         ("ci95_low", "ci95_low"), ("ci95_high", "ci95_high"), ("t", "t"), ("df", "df"), ("p", "p_t"),
                         ("p_holm", "p_adj"), ("cohen_dz", "cohen_dz")):
                check(f"{subset} test {key} {a}", mine.get(a), r.get(b), 1e-12)
    return n, diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", type=Path, required=True, help="local checkout of the official repository")
    ap.add_argument("--official-python", required=True, help="python of the venv that runs the official scripts")
    ap.add_argument("--silero-hub", type=Path, required=True, help="hubconf.py + src/ of silero-vad commit bbf22a0")
    ap.add_argument("--per-subset", type=int, default=2, help="samples per subset (default 2)")
    ap.add_argument("--full", action="store_true", help="the published sizes: 200 + 99 + 100 + 100 = 499 samples")
    ap.add_argument("--silero", default="v5", help="our Silero model (v5 or v6.2)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "duplexeval-v15-bench")
    ap.add_argument("--fixture", type=Path, help="write their results and the tree's hashes here")
    ap.add_argument("--subset", action="append", choices=SUBSET_ORDER,
                    help="only these subsets, on both sides (repeatable)")
    ap.add_argument("--ours-only", action="store_true", help="time ours (evaluate + score) and stop")
    args = ap.parse_args()
    counts = synth.full_size() if args.full else synth.small(args.per_subset)
    base = args.cache / ("full" if args.full else f"n{args.per_subset}")
    tree = base / "tree"
    if not (tree / "done").is_file():
        shutil.rmtree(tree, ignore_errors=True)
        t0 = time.perf_counter()
        build_tree(tree, counts)
        (tree / "done").write_text("")
        print(f"built {sum(counts.values())} samples in {time.perf_counter() - t0:.1f} s", flush=True)
    (tree / "done").unlink()
    hashes = tree_hashes(tree)
    (tree / "done").write_text("")
    load_dataset(tree)  # the FDB dataset loader accepts the tree (it also holds outputs and transcripts)
    os.environ["FDB15_PROMPT"] = str(args.official)
    copies = {}
    for side in ("ours", "theirs"):
        copies[side] = base / side
        shutil.rmtree(copies[side], ignore_errors=True)
        shutil.rmtree(stage_tree(copies[side]), ignore_errors=True)
        shutil.copytree(tree, copies[side])
    load = os.getloadavg()
    subsets = tuple(args.subset) if args.subset else SUBSET_ORDER
    n_samples = sum(counts[s] for s in subsets)
    _, t_prep = prepare_ours(copies["ours"])
    print(f"ours fdb import + fdb asr --backend import ({sum(counts.values())} samples): {t_prep:.1f} s "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    with FakeJudge() as judge:
        ours, t_ours = run_ours(copies["ours"], judge.url, args.silero, subsets)
        print(f"ours evaluate ({n_samples} samples): {t_ours:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        _, t_score = run_our_score(copies["ours"], subsets)
        print(f"ours score ({n_samples} samples): {t_score:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
        if args.ours_only:
            return
        theirs, t_theirs = run_official(copies["theirs"], args.official, args.official_python, args.silero_hub,
                                        judge.url, base / "official.log", subsets)
    n, diffs = compare(ours, theirs)
    print("stand-ins on the official side:\n  " + "\n  ".join(STAND_INS))
    print(f"samples: {n_samples}; values compared: {n}; differences: {len(diffs)}")
    for d in diffs[:30]:
        print("  " + d)
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"ours: evaluate (official rules, Silero {args.silero}) {t_ours:.2f} s + score (unified rules) "
          f"{t_score:.2f} s wall; official scripts: {t_theirs:.2f} s wall; ratio {t_theirs / t_ours:.1f}x (evaluate), "
          f"{t_theirs / (t_ours + t_score):.1f}x (evaluate + score)")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"official log: {base / 'official.log'}")
    if args.fixture:
        write_json(args.fixture, {"kind": "duplexeval.test.fdb_v15_official", "counts": counts, "tree_sha256": hashes,
                                  "stand_ins": list(STAND_INS), "official": theirs})
        print(f"wrote {args.fixture}")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
