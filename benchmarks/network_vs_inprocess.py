"""First-playout deviation: a baseline in-process versus the same baseline through a loopback server, on the demo set.

Exports the demo set with SYSTEM in-process (virtual clock) and through `loopback:protocol=P,serve=SYSTEM`
(a `duplexeval serve` child process, all samples at once), then prints per sample the first playout time of
both, the difference, the session's worst send lateness and its reasons.

    .venv/bin/python benchmarks/network_vs_inprocess.py                       # openai-realtime at 16 kHz
    .venv/bin/python benchmarks/network_vs_inprocess.py --rate 24000          # the default rate (two resamplers)
    .venv/bin/python benchmarks/network_vs_inprocess.py --protocol ws-pcm
    .venv/bin/python benchmarks/network_vs_inprocess.py --offline-resample   # no network: only the two resamplers
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.export import export


def _rows(tree: Path) -> dict[str, dict]:
    man = json.loads((tree / "manifest.json").read_text())
    return {f"{s['subset']}/{s['id']}": s for s in man["samples"]}


def offline_resample(system_spec: str, rate: int) -> None:
    """The baseline in-process (virtual clock) on its input and on three variants, first playout minus the input's.

    `round trip`: the input streamed 16 kHz -> rate -> 16 kHz through the client's and the server's stream
    resamplers (80 ms chunks); `delay only`: the input shifted by that round trip's constant delay (no
    resampling); `round trip - delay`: the round trip with its delay taken out. The columns split what the
    resamplers change into the delay's part and the filtering's part.
    """
    import numpy as np

    from duplexeval.audio import to_pcm16
    from duplexeval.systems.base import SampleInfo
    from duplexeval.systems.net.pcm import StreamResampler
    from duplexeval.systems.registry import make_system
    from duplexeval.systems.runner import run_session

    system = make_system(system_spec.replace(";", ","))
    cols: list[list[float]] = [[], [], []]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'sample':34} {'input':>8} {'round trip':>10} {'delay only':>10} {'rt - delay':>10}  (ms vs input)")
    for s in load_dataset("demo").samples():
        x = to_pcm16(s.read_input_16k()).astype("<i2")
        n = len(x)
        up, down = StreamResampler(16000, rate), StreamResampler(rate, 16000)
        lag = round((up.delay_s + down.delay_s) * 16000)
        y = np.frombuffer(b"".join(down(up(x[i:i + 1280].tobytes())) for i in range(0, n, 1280)), dtype="<i2")[:n]
        shifted = np.concatenate([np.zeros(lag, dtype="<i2"), x])[:n]
        advanced = np.concatenate([y[lag:], np.zeros(lag, dtype="<i2")])
        firsts = []
        for pcm in (x, y, shifted, advanced):
            tr = run_session(system, pcm.astype(np.int16), SampleInfo(s.subset, s.id, s.T, n))
            firsts.append(next((it.received_at_s for it in tr.items if it.kind == "audio"), None))
        diffs = [None if f is None or firsts[0] is None else (f - firsts[0]) * 1000 for f in firsts[1:]]
        for col, d in zip(cols, diffs):
            if d is not None:
                col.append(d)
        shown = ["" if d is None else f"{d:+.0f}" for d in diffs]
        print(f"{s.subset + '/' + s.id:34} {'' if firsts[0] is None else f'{firsts[0]:.3f}':>8} {shown[0]:>10} {shown[1]:>10} {shown[2]:>10}")
    for name, col in zip(("round trip", f"delay only ({lag} samples)", "round trip - delay"), cols):
        moved = sorted(round(d) for d in col if abs(d) > 0.5)
        print(f"16 -> {rate} -> 16 kHz, {name}: {len(moved)} of {len(col)} first playouts moved {moved} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="turn-based", help="The baseline (';' separates its parameters).")
    ap.add_argument("--protocol", default="openai-realtime", choices=["openai-realtime", "ws-pcm"])
    ap.add_argument("--rate", type=int, default=16000, help="openai-realtime: the rate the server grants.")
    ap.add_argument("--offline-resample", action="store_true", help="No network: the baseline on its input, its 16 -> rate -> 16 kHz stream round trip, the round trip's delay alone, and the round trip without its delay.")
    args = ap.parse_args()
    if args.offline_resample:
        offline_resample(args.system, 24000 if args.rate == 16000 else args.rate)
        return
    ds = load_dataset("demo")
    spec = f"loopback:protocol={args.protocol},serve={args.system}"
    if args.protocol == "openai-realtime":
        spec += f",options=rate={args.rate},client=rate={args.rate}"
    with tempfile.TemporaryDirectory() as tmp:
        ref_tree, net_tree = Path(tmp) / "in-process", Path(tmp) / "net"
        export(args.system.replace(";", ","), ds, ref_tree, progress=False)
        t0 = time.monotonic()
        export(spec, ds, net_tree, progress=False, concurrency=len(ds.samples()))
        wall = time.monotonic() - t0
        ref, net = _rows(ref_tree), _rows(net_tree)
    devs = []
    print(f"{spec}: {len(net)} sessions at once, {wall:.1f} s wall, load average {os.getloadavg()[0]:.1f}")
    print(f"{'sample':34} {'in-process':>10} {'network':>10} {'diff ms':>8} {'late ms':>8}  reasons")
    for key, row in net.items():
        a, b = ref[key]["export"]["first_playout_s"], row["export"]["first_playout_s"]
        d = None if a is None or b is None else (b - a) * 1000
        if d is not None:
            devs.append(abs(d))
        late = row["export"]["network"]["max_send_lateness_s"] * 1000
        print(f"{key:34} {a!s:>10} {b!s:>10} {'' if d is None else f'{d:+.1f}':>8} {late:8.1f}  {','.join(row['reasons'])}")
    devs.sort()
    if devs:
        print(f"|diff| median {devs[len(devs) // 2]:.1f} ms, max {devs[-1]:.1f} ms over {len(devs)} samples")


if __name__ == "__main__":
    main()
