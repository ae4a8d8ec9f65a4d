"""Byte-identity harness: every artifact a source revision writes, listed with its SHA-256.

A refactor must leave every artifact byte-identical. This runs one revision's code (a `git archive` of it, so
uncommitted edits do not leak in; the current interpreter with PYTHONPATH=<archive>/src) through the demo
trees, the full benchmark tree and the eot / controller / dialogue demos, always in the same output folder
(paths can end up in artifacts) with a private DUPLEXEVAL_CACHE, then lists every file it produced with its
SHA-256, sorted, and prints the SHA-256 of that list:

    nice -n 5 .venv/bin/python scripts/artifact_hashes.py run main --list /tmp/main.txt
    nice -n 5 .venv/bin/python scripts/artifact_hashes.py run my-branch --list /tmp/mine.txt
    .venv/bin/python scripts/artifact_hashes.py compare /tmp/main.txt /tmp/mine.txt   # the files that differ

What runs, in order (OUT is BASE/out): `fdb synth demo --out`; `duplexeval demo` with its four in-process
systems (FDB v1.0, then v1.5's overlap part); the demo's network tree from a frozen capture (`fdb replay`,
`fdb replay --check`, asr, evaluate, score); `duplexeval report` of every demo tree and of the five v1.0 trees
together (labelled as the demo labels them); `fdb compare` of the five v1.0 trees (exit 1 is its contract
here: the silent tree has no exercised interruption) and of the four v1.5 trees, each with its report;
`fdb score --sensitivity` of the v1.0 trees; the full benchmark tree (`benchmarks/score_full_tree.py`'s build:
score --sensitivity, evaluate with a fixed icc file, report); `eot demo`, `controller demo`, `dialogue demo`.
Command logs (stdout/stderr, with timings) go to BASE/logs and are not listed.

A live network capture is timing-dependent, so the demo's network system (the turn-based baseline behind a
loopback openai-realtime server) is exported once (`freeze`, kept in BASE/frozen-net.tar; a missing one is made
by the first `run`) and every run rebuilds that tree from it. The capture must stay the same between the runs
you compare (its SHA-256 is printed).
Runs take a lock (BASE/lock): one at a time, as they share the folder. About 5 min at load 2, 15 at load 8.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

BASE = Path(os.environ.get("ARTIFACT_HASHES_BASE", "/tmp/duplexeval-artifact-hashes"))
NETWORK_DEMO = "loopback:protocol=openai-realtime,serve=turn-based"  # duplexeval.demo.NETWORK_DEMO
NET_TREE = "turn-based-openai-realtime"  # its folder in the demo (duplexeval.demo.tree_name)
V10_TREES = ("silent", "turn-based", "talk-over", "backchannel", NET_TREE)
V15_TREES = ("silent", "turn-based", "talk-over", "backchannel")
V10_TASKS = ("pause_handling", "smooth_turn_taking", "user_interruption", "backchannel")
PHASES = ("demo", "reports", "compare", "bench", "families")
LISTED = ("out", "cache")  # the folders under BASE whose files are listed


class Harness:
    def __init__(self, src: Path, label: str) -> None:
        self.src, self.label = src, label
        self.out, self.cache, self.logs = BASE / "out", BASE / "cache", BASE / "logs"
        self.env = dict(os.environ, PYTHONPATH=f"{src / 'src'}{os.pathsep}{src / 'benchmarks'}",
                        DUPLEXEVAL_CACHE=str(self.cache), COLUMNS="200", PYTHONHASHSEED="0")
        self.env.pop("DUPLEXEVAL_DEBUG", None)
        self.step = 0

    def run(self, args: list[str], ok: tuple[int, ...] = (0,), what: str | None = None) -> int:
        """One command of this revision (`python -m duplexeval ARGS` unless ARGS starts with '-c').

        Its log goes to BASE/logs.
        """
        self.step += 1
        argv = [sys.executable, *(args if args[0] == "-c" else ["-m", "duplexeval", *args])]
        name = what or " ".join(args)
        log = self.logs / f"{self.step:02d}.log"
        t0 = time.monotonic()
        with log.open("w") as fh:
            fh.write(f"$ {' '.join(argv)}\n")
            fh.flush()
            rc = subprocess.run(argv, cwd=BASE, env=self.env, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL).returncode
        print(f"  [{self.step:02d}] {name[:110]}: exit {rc} ({time.monotonic() - t0:.0f} s)", flush=True)
        if rc not in ok:
            print(log.read_text()[-3000:], file=sys.stderr)
            raise SystemExit(f"artifact_hashes: step {self.step} ({name}) exited {rc}, expected {ok}; log {log}")
        return rc

    def fresh(self) -> None:
        for d in (self.out, self.cache, self.logs):
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)

    def check_import(self) -> None:
        """The children import this revision's duplexeval, not the venv's install."""
        got = subprocess.run([sys.executable, "-c", "import duplexeval; print(duplexeval.__file__)"], env=self.env,
                             cwd=BASE, capture_output=True, text=True, check=True).stdout.strip()
        if not Path(got).resolve().is_relative_to((self.src / "src").resolve()):
            raise SystemExit(f"artifact_hashes: duplexeval imports from {got}, not {self.src / 'src'}")

    def demo_set(self) -> Path:
        """The demo set in the private cache (made by `fdb synth --demo`), as the demo finds it."""
        self.run(["fdb", "synth", "--demo", "-q"])
        found = sorted(p for p in self.cache.glob("demo-*") if p.is_dir())
        if len(found) != 1:
            raise SystemExit(f"artifact_hashes: expected one demo set in {self.cache}, found {found}")
        return found[0]

    def freeze(self, frozen: Path, tries: int = 1) -> None:
        """Export the demo set with the demo's network system once (what `duplexeval demo` runs in its child)."""
        ds = self.demo_set()
        n = len(json.loads((ds / "dataset.json").read_text())["samples"]) if (ds / "dataset.json").is_file() else 0
        n = n or sum(1 for _ in ds.glob("*/*/input.wav"))
        best: tuple[int, Path] | None = None
        for attempt in range(1, tries + 1):  # a loaded machine paces some sessions late: try for a clean capture
            tree = self.out / "freeze" / str(attempt) / NET_TREE
            self.run(["fdb", "export", "--system", NETWORK_DEMO, "--dataset", str(ds), "--out", str(tree),
                      "--concurrency", str(n), "--quiet", "--min-eligible", "0"])
            manifest = json.loads((tree / "manifest.json").read_text())
            bad = [f"{s['subset']}/{s['id']}" for s in manifest["samples"] if not s["eligible"]]
            print(f"  capture {attempt}: {len(manifest['samples'])} samples, ineligible: {bad or 'none'} "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
            if best is None or len(bad) < best[0]:
                best = (len(bad), tree)
            if not bad:
                break
        assert best is not None
        tree = best[1]
        frozen.parent.mkdir(parents=True, exist_ok=True)
        tmp = frozen.with_suffix(".tmp")
        with tarfile.open(tmp, "w") as tar:
            tar.add(tree, arcname=NET_TREE, filter=_plain)
        tmp.replace(frozen)
        shutil.rmtree(self.out / "freeze")
        print(f"  wrote {frozen} (sha256 {sha256_file(frozen)})")

    def unpack(self, frozen: Path, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(frozen) as tar:
            tar.extractall(dest, filter="data")

    def all_steps(self, frozen: Path, start: str = PHASES[0]) -> None:
        """Every phase in order (from `start`: only to finish a run of the same revision that stopped there)."""
        for phase in PHASES[PHASES.index(start):]:
            getattr(self, f"phase_{phase}")(frozen)

    def phase_demo(self, frozen: Path) -> None:
        self.run(["fdb", "synth", "demo", "--out", "out/synth-demo", "-q"])
        # the demo with its in-process systems (the v1.0 part, then v1.5's); its network system is captured live,
        # so its tree is made from the frozen capture instead: replay, check, then every scoring stage
        self.run(["demo", "--out", "out/demo", "-q", *(a for n in V10_TREES[:-1] for a in ("--systems", n))])
        self.unpack(frozen, self.out / "demo")
        net = f"out/demo/{NET_TREE}"
        self.run(["fdb", "replay", net])
        self.run(["fdb", "replay", net, "--check"])
        self.run(["fdb", "asr", net, "-q"])
        self.run(["fdb", "evaluate", net, "-q"])
        self.run(["fdb", "score", net, "-q"])

    def phase_reports(self, frozen: Path) -> None:
        """Each demo tree alone, the v1.0 trees together (as the demo's own report labels them)."""
        (self.out / "reports").mkdir(exist_ok=True)
        for name in V10_TREES:
            self.run(["report", f"out/demo/{name}", "--out", f"out/reports/v10-{name}.html"])
        for name in V15_TREES:
            self.run(["report", f"out/demo/v1.5/{name}", "--out", f"out/reports/v15-{name}.html"])
        self.run(["report", *(f"out/demo/{n}" for n in V10_TREES), "--baseline", "turn-based",
                  *(a for n in V10_TREES for a in ("--label", "turn-based@openai-realtime" if n == NET_TREE else n)),
                  "--out", "out/reports/v10-all.html"])

    def phase_compare(self, frozen: Path) -> None:
        """Exit 1 is the contract here: the silent tree has no exercised interruption, so a pairing rule fails."""
        (self.out / "compare").mkdir(exist_ok=True)
        self.run(["fdb", "compare", *(f"out/demo/{n}" for n in V10_TREES), "--out", "out/compare/v10.json"],
                 ok=(0, 1))
        self.run(["report", "out/compare/v10.json", "--out", "out/reports/compare-v10.html"])
        self.run(["fdb", "compare", *(f"out/demo/v1.5/{n}" for n in V15_TREES),
                  "--out", "out/compare/v15.json"], ok=(0, 1))
        self.run(["report", "out/compare/v15.json", "--out", "out/reports/compare-v15.html"])
        for name in V10_TREES:
            self.run(["fdb", "score", f"out/demo/{name}", "--sensitivity", "-q"])

    def phase_bench(self, frozen: Path) -> None:
        """The full-size tree (727 samples) as benchmarks/score_full_tree.py builds it, its v1.0 subsets only (the
        script at 4de0490 also made v1.5 subsets out of v1.0 recipes, which `fdb score` refuses)."""
        bench = "out/bench-full"
        shutil.rmtree(self.out / "bench-full", ignore_errors=True)
        self.run(["-c", "from pathlib import Path; import score_full_tree as b; "
                        f"b.SUBSETS = {{k: v for k, v in b.SUBSETS.items() if v.task in {sorted(V10_TASKS)!r}}}; "
                        f"b.build(Path({bench!r}))"], what="benchmarks/score_full_tree.py build")
        icc = self.out / "icc_gt_distribution.json"
        icc.write_text(json.dumps(fixed_icc(bench_ids(self.out / "bench-full")), indent=1) + "\n")
        self.run(["fdb", "score", bench, "--sensitivity", "-q"])
        self.run(["fdb", "evaluate", bench, "--icc-gt", "out/icc_gt_distribution.json", "-q"])
        (self.out / "reports").mkdir(exist_ok=True)
        self.run(["report", bench, "--out", "out/reports/bench-full.html"])

    def phase_families(self, frozen: Path) -> None:
        self.run(["eot", "demo", "--out", "out/eot-demo"])
        self.run(["controller", "demo", "--out", "out/controller-demo"])
        self.run(["dialogue", "demo", "--out", "out/dialogue-demo"])


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def bench_ids(tree: Path) -> list[str]:
    manifest = json.loads((tree / "manifest.json").read_text())
    return sorted((s["id"] for s in manifest["samples"] if s["subset"] == "icc_backchannel"), key=int)


def fixed_icc(ids: list[str]) -> dict[str, list[float]]:
    """A fixed stand-in for the official icc_gt_distribution.json (CC BY-NC, not shipped): 30 bins per sample."""
    return {i: [round(((int(i) * 7 + k * 13) % 17 + 1) / 17, 4) for k in range(30)] for i in ids}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def listing() -> bytes:
    """`SHA256  PATH` for every file under BASE/out and BASE/cache, sorted by path (UTF-8, one per line)."""
    rows = []
    for top in LISTED:
        for p in (BASE / top).rglob("*"):
            if p.is_file() and not p.is_symlink():
                rows.append((p.relative_to(BASE).as_posix(), sha256_file(p)))
    rows.sort()
    return "".join(f"{h}  {p}\n" for p, h in rows).encode()


def archive(repo: Path, rev: str, dest: Path) -> str:
    """`git archive REV | tar -x` into dest; returns the full commit id."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                            capture_output=True, text=True).stdout.strip()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    git = subprocess.Popen(["git", "-C", str(repo), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=git.stdout, check=True)
    if git.wait() != 0:
        raise SystemExit(f"artifact_hashes: git archive {rev} failed")
    return commit


def read_list(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        h, _, p = line.partition("  ")
        out[p] = h
    return out


def compare(a: Path, b: Path) -> int:
    la, lb = read_list(a), read_list(b)
    diff = sorted(p for p in set(la) | set(lb) if la.get(p) != lb.get(p))
    for p in diff:
        state = "only in A" if p not in lb else "only in B" if p not in la else "differs"
        print(f"{state}: {p}")
    print(f"A {a}: {len(la)} files, list sha256 {hashlib.sha256(a.read_bytes()).hexdigest()}")
    print(f"B {b}: {len(lb)} files, list sha256 {hashlib.sha256(b.read_bytes()).hexdigest()}")
    print(f"{len(diff)} files differ" if diff else "identical: every file has the same SHA-256")
    return 1 if diff else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run REV's code through every step; write the hash list")
    r.add_argument("rev", help="a commit, branch or tag of --repo")
    r.add_argument("--repo", type=Path, default=Path.cwd(), help="the git checkout REV is in (default: here)")
    r.add_argument("--list", type=Path, help="also copy the hash list here")
    r.add_argument("--frozen", type=Path, default=BASE / "frozen-net.tar", help="the frozen network capture")
    r.add_argument("--tries", type=int, default=5, help="when the capture is missing: see freeze")
    r.add_argument("--resume-at", choices=PHASES, help="finish a run of the same REV that stopped in this phase "
                   "(keeps BASE/out; the list is only valid if nothing else ran in between)")
    f = sub.add_parser("freeze", help="make the frozen network capture with REV's code (replaces --frozen)")
    f.add_argument("rev")
    f.add_argument("--repo", type=Path, default=Path.cwd())
    f.add_argument("--frozen", type=Path, default=BASE / "frozen-net.tar")
    f.add_argument("--tries", type=int, default=5, help="export again until every sample is eligible (at most N)")
    c = sub.add_parser("compare", help="print the files whose hashes differ between two lists; exit 1 if any")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "compare":
        return compare(args.a, args.b)
    BASE.mkdir(parents=True, exist_ok=True)
    with (BASE / "lock").open("w") as lock:
        if os.environ.get("ARTIFACT_HASHES_NOWAIT"):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            print(f"artifact_hashes: waiting for {BASE / 'lock'} (one run at a time)", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        src = BASE / "src"
        commit = archive(args.repo, args.rev, src)
        h = Harness(src, args.rev)
        resume = getattr(args, "resume_at", None)
        if resume:
            stamp = (BASE / "commit").read_text().strip() if (BASE / "commit").is_file() else ""
            if stamp != commit:
                raise SystemExit(f"artifact_hashes: BASE/out is from {stamp or 'nothing'}, not {commit}: run it whole")
            h.step = len(list(h.logs.glob("*.log")))
        h.check_import()
        if not resume:
            h.fresh()
            (BASE / "commit").write_text(commit + "\n")
        print(f"artifact_hashes: {args.cmd} {args.rev} = {commit} (load {os.getloadavg()[0]:.1f})", flush=True)
        if args.cmd == "freeze" or not args.frozen.is_file():
            h.freeze(args.frozen, args.tries)
            if args.cmd == "freeze":
                return 0
            h.fresh()
            (BASE / "commit").write_text(commit + "\n")
        h.all_steps(args.frozen, resume or PHASES[0])
        data = listing()
        lists = BASE / "lists"
        lists.mkdir(exist_ok=True)
        dest = lists / f"{commit[:12]}.txt"
        dest.write_bytes(data)
        if args.list is not None:
            args.list.parent.mkdir(parents=True, exist_ok=True)
            args.list.write_bytes(data)
        n = data.count(b"\n")
        print(f"artifact_hashes: {args.rev} = {commit}: {n} files in {time.monotonic() - t0:.0f} s "
              f"(load {os.getloadavg()[0]:.1f}); frozen capture sha256 {sha256_file(args.frozen)}")
        print(f"list {dest}" + (f" and {args.list}" if args.list else ""))
        print(f"list sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
