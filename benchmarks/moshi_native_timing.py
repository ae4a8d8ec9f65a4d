"""How far the moshi and native-duplex network paths move the first playout, and where the difference comes from.

Exports the turn-based baseline over a small espeak set (2 turn-taking, 1 pause, 1 interruption)
in-process, in-process on the Opus-round-tripped input (what a Moshi server hears), and through the
loopback `moshi` and `native-duplex` servers (child `duplexeval serve` processes, real adapters),
then prints per sample the first audible output sample of each tree and the differences:

- `native - in-process`: transport + server work + receipt (native input is bit-exact PCM);
- `moshi - reference(opus)`: the same, against the in-process run on the Opus-round-tripped input
  with its output through Opus too (equal model input, equal codec on the reply);
- `residual`: the difference once the measured delay of the frame that plays the first audible
  sample (its playout start minus its 80 ms slot, from the trace) is taken out;
- `moshi - in-process`: also what Opus does to the served system's VAD and to the reply's onset.

Run: PYTHONPATH=src python benchmarks/moshi_native_timing.py [--out DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.helpers

from duplexeval.fdb.export_stage import export
from duplexeval.systems.net.moshi_wire import opus_round_trip
from tests.helpers.net_protocols import first_loud_s, frame_delay, timing_datasets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="keep the trees here (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=1, help="network exports per protocol (the timing varies run to run)")
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="moshi-native-timing-"))
    ds, heard = timing_datasets(root)
    export("turn-based", ds, root / "in-process", progress=False)
    export("turn-based", heard, root / "in-process-opus", progress=False)
    keys = [(s.subset, s.id) for s in ds.rows]
    ref = {
        k: first_loud_s(sf.read(str(root / "in-process" / k[0] / k[1] / "output.wav"), dtype="int16")[0]) for k in keys}
    # Moshi's reference: the in-process run on Opus input, its output through Opus too (what the client decodes).
    ref_opus = {k: first_loud_s(opus_round_trip(sf.read(str(root / "in-process-opus" / k[0] / k[1] / "output.wav"),
                                                        dtype="int16")[0])) for k in keys}
    diffs: dict[str, list[float]] = {k: [] for k in ("native - in-process", "native residual",
                                                      "moshi - reference(opus)", "moshi residual",
                                                     "moshi - in-process")}
    for rep in range(args.repeat):
        for proto, conc in (("native-duplex", 4), ("moshi", 1)):
            tree = root / f"{proto}-{rep}"
            export(f"loopback:protocol={proto},serve=turn-based", ds, tree, progress=False, concurrency=conc)
            man = json.loads((tree / "manifest.json").read_text())
            for s in man["samples"]:
                k = (s["subset"], s["id"])
                got = (first_loud_s(sf.read(str(tree / k[0] / k[1] / "output.wav"), dtype="int16")[0]) if s["eligible"]
                       else None)
                if got is None or ref[k] is None or ref_opus[k] is None:
                    print(f"{proto:14s} rep {rep} {k[0]}/{k[1]}: eligible={s['eligible']} reasons={s['reasons']}")
                    continue
                delay = frame_delay(tree / k[0] / k[1], got)
                base = ref[k] if proto == "native-duplex" else ref_opus[k]
                print(f"{proto:14s} rep {rep} {k[0]}/{k[1]}: first audible {got:.4f} s, reference {base:.4f} s, "
                      f"difference {1000 * (got - base):+.1f} ms = frame delay {1000 * delay:+.1f} ms "
                      f"+ residual {1000 * (got - delay - base):+.1f} ms; vs plain in-process "
                      f"{1000 * (got - ref[k]):+.1f} ms")
                if proto == "native-duplex":
                    diffs["native - in-process"].append(got - ref[k])
                    diffs["native residual"].append(got - delay - ref[k])
                else:
                    diffs["moshi - in-process"].append(got - ref[k])
                    diffs["moshi - reference(opus)"].append(got - ref_opus[k])
                    diffs["moshi residual"].append(got - delay - ref_opus[k])
    for name, d in diffs.items():
        if d:
            a = np.asarray(d) * 1000
            print(f"{name:26s} n={a.size} min {a.min():+.1f} ms  median {np.median(a):+.1f} ms  max {a.max():+.1f} ms")
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
