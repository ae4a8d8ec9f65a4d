"""First-playout deviation: a baseline in-process versus the same baseline through a loopback server, on the demo set.

Exports the demo set with SYSTEM in-process (virtual clock) and through `loopback:protocol=P,serve=SYSTEM`
(a `duplexeval serve` child process, all samples at once), then prints per sample the first playout time of
both, the difference, the session's worst send lateness and its reasons.

    .venv/bin/python benchmarks/network_vs_inprocess.py                       # openai-realtime (PCM16 at 24 kHz)
    .venv/bin/python benchmarks/network_vs_inprocess.py --protocol ws-pcm
    # no network: only the two resamplers
    .venv/bin/python benchmarks/network_vs_inprocess.py --offline-resample [--rate R]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.export_stage import export


def _rows(tree: Path) -> dict[str, dict]:
    man = json.loads((tree / "manifest.json").read_text())
    return {f"{s['subset']}/{s['id']}": s for s in man["samples"]}


def _server_cpu_s() -> float:
    """User + system CPU seconds of the loopback `duplexeval serve` child(ren) so far (from /proc)."""
    from duplexeval.systems.net import loopback

    total = 0.0
    for th in loopback._SERVERS.values():
        proc = getattr(th, "proc", None)
        if proc is not None:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _variant_firsts(system: object, sample: object, rate: int) -> list[float | None]:
    """First playout (virtual clock) of the baseline on the input, its round trip, the delay alone, the round trip -
    delay.

    `round trip`: the input streamed 16 kHz -> rate -> 16 kHz through the client's and the server's stream
    resamplers (80 ms chunks), i.e. what the served system hears; `delay only`: the input shifted by that round
    trip's constant delay (no resampling); `round trip - delay`: the round trip with its delay taken out.
    """
    import numpy as np

    from duplexeval.audio import to_pcm16
    from duplexeval.systems.base import SampleInfo
    from duplexeval.systems.net.pcm import StreamResampler
    from duplexeval.systems.runner import run_session

    s: Any = sample
    x = to_pcm16(s.read_input_16k()).astype("<i2")
    n = len(x)
    up, down = StreamResampler(16000, rate), StreamResampler(rate, 16000)
    lag = round((up.delay_s + down.delay_s) * 16000)
    y = np.frombuffer(b"".join(down(up(x[i:i + 1280].tobytes())) for i in range(0, n, 1280)), dtype="<i2")[:n]
    shifted = np.concatenate([np.zeros(lag, dtype="<i2"), x])[:n]
    advanced = np.concatenate([y[lag:], np.zeros(lag, dtype="<i2")])
    firsts = []
    for pcm in (x, y, shifted, advanced):
        tr = run_session(system, pcm.astype(np.int16), SampleInfo(s.subset, s.id, s.T, n))  # type: ignore[arg-type]
        firsts.append(next((it.received_at_s for it in tr.items if it.kind == "audio"), None))
    return firsts


def offline_resample(system_spec: str, rate: int) -> None:
    """The baseline in-process on its input and on three variants (`_variant_firsts`), first playout minus the
    input's."""
    from duplexeval.systems.net.pcm import StreamResampler
    from duplexeval.systems.registry import make_system

    system = make_system(system_spec.replace(";", ","))
    lag = round((StreamResampler(16000, rate).delay_s + StreamResampler(rate, 16000).delay_s) * 16000)
    cols: list[list[float]] = [[], [], []]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'sample':34} {'input':>8} {'round trip':>10} {'delay only':>10} {'rt - delay':>10}  (ms vs input)")
    for s in load_dataset("demo").samples():
        firsts = _variant_firsts(system, s, rate)
        diffs = [None if f is None or firsts[0] is None else (f - firsts[0]) * 1000 for f in firsts[1:]]
        for col, d in zip(cols, diffs):
            if d is not None:
                col.append(d)
        shown = ["" if d is None else f"{d:+.0f}" for d in diffs]
        print(f"{s.subset + '/' + s.id:34} {'' if firsts[0] is None else f'{firsts[0]:.3f}':>8} {shown[0]:>10} "
              f"{shown[1]:>10} {shown[2]:>10}")
    for name, col in zip(("round trip", f"delay only ({lag} samples)", "round trip - delay"), cols):
        moved = sorted(round(d) for d in col if abs(d) > 0.5)
        print(f"16 -> {rate} -> 16 kHz, {name}: {len(moved)} of {len(col)} first playouts moved {moved} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="turn-based", help="The baseline (';' separates its parameters).")
    ap.add_argument("--protocol", default="openai-realtime", choices=["openai-realtime", "ws-pcm"])
    ap.add_argument("--rate", type=int, default=24000,
                    help="--offline-resample only: the wire rate of the round trip (openai-realtime is 24 kHz, "
                         "PCM16 only).")
    ap.add_argument("--offline-resample", action="store_true",
                    help="No network: the baseline on its input, its 16 -> rate -> 16 kHz stream round trip, the round "
                         "trip's delay alone, and the round trip without its delay.")
    args = ap.parse_args()
    if args.offline_resample:
        offline_resample(args.system, args.rate)
        return
    ds = load_dataset("demo")
    spec = f"loopback:protocol={args.protocol},serve={args.system}"
    with tempfile.TemporaryDirectory() as tmp:
        ref_tree, net_tree = Path(tmp) / "in-process", Path(tmp) / "net"
        export(args.system.replace(";", ","), ds, ref_tree, progress=False)
        t0, c0 = time.monotonic(), time.process_time()
        export(spec, ds, net_tree, progress=False, concurrency=len(ds.samples()))
        wall, client_cpu = time.monotonic() - t0, time.process_time() - c0
        server_cpu = _server_cpu_s()
        ref, net = _rows(ref_tree), _rows(net_tree)
    heard: dict[str, float | None] = {}  # in-process on what the served system hears (the resamplers' round trip)
    if args.protocol == "openai-realtime":
        from duplexeval.systems.registry import make_system

        system = make_system(args.system.replace(";", ","))
        heard = {f"{s.subset}/{s.id}": _variant_firsts(system, s, 24000)[1] for s in ds.samples()}
    devs, rt_devs = [], []
    print(f"{spec}: {len(net)} sessions at once, {wall:.1f} s wall, load average {os.getloadavg()[0]:.1f}; "
          f"CPU: client {client_cpu:.2f} s (with the export's own work), server process {server_cpu:.2f} s")
    print(f"{'sample':34} {'in-process':>10} {'network':>10} {'diff ms':>8} {'late ms':>8} {'rt ref':>8} "
          f"{'vs rt':>7}  reasons")
    for key, row in net.items():
        a, b = ref[key]["export"]["first_playout_s"], row["export"]["first_playout_s"]
        d = None if a is None or b is None else (b - a) * 1000
        if d is not None:
            devs.append(abs(d))
        late = row["export"]["network"]["max_send_lateness_s"] * 1000
        h = heard.get(key)
        dr = None if h is None or b is None else (b - h) * 1000
        if dr is not None:
            rt_devs.append(abs(dr))
        print(f"{key:34} {a!s:>10} {b!s:>10} {'' if d is None else f'{d:+.1f}':>8} {late:8.1f} "
              f"{'' if h is None else f'{h:.3f}':>8} {'' if dr is None else f'{dr:+.1f}':>7}  "
              f"{','.join(row['reasons'])}")
    devs.sort()
    if devs:
        print(f"|diff| median {devs[len(devs) // 2]:.1f} ms, max {devs[-1]:.1f} ms over {len(devs)} samples")
    rt_devs.sort()
    if rt_devs:
        print(f"|vs rt| (network - in-process on the resampled input) median {rt_devs[len(rt_devs) // 2]:.1f} ms, "
              f"max {rt_devs[-1]:.1f} ms")


if __name__ == "__main__":
    main()
