"""Where the first reply's time goes, stage by stage, for a baseline through the loopback openai-realtime server.

Runs the demo set one session at a time through `loopback:protocol=openai-realtime,in_process=true` at
24 kHz (the server in a thread of this process, instrumented) and prints per sample:

- `lag frames`: how many input packets after its own each 80 ms server frame became complete (0 = the
  packet that carries its end completes it; 1 = it waited for the next packet, i.e. 80 ms), max over frames;
- `feed ms`: median of (wall time the system saw frame k) - (t0 + (k + 1) * 80 ms), the server's hold-back;
- `due`: the virtual time the served system emitted its first reply at; `call ms`: when the server's
  response code got it, after t0 + due; `work ms`: how long building the response took (resampling, base64);
  `late ms`: how much later than
  t0 + due the server put the first delta on the wire; `recv ms`: client receipt of it minus due;
- `in-process` / `network` first playout and their difference.

The frame lag is structural (the resamplers' block sizes), so it does not depend on load.

    .venv/bin/python benchmarks/network_stages.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from duplexeval.fdb.dataset import load_dataset
from duplexeval.fdb.export_stage import export
from duplexeval.systems.net import openai_realtime_server as oair
from duplexeval.systems.net import server as srv

STAGES: list[dict[str, Any]] = []  # one per server session, in connection order


def _instrument() -> None:
    """Wrap the server's input, frame and response hooks to record wall times against the session clock."""
    orig_input, orig_feed, orig_respond, orig_deliver = (
        srv.ServerSession.input_audio, srv.SystemDriver.feed, oair.RealtimeServerSession._respond,
        srv.ServerSession.deliver)

    def stage(sess: srv.ServerSession) -> dict[str, Any]:
        st = getattr(sess, "_probe", None)
        if st is None:
            st = {"packets": 0, "arrivals": [], "frames": [], "first_due": None, "first_sent": None}
            sess._probe = st  # type: ignore[attr-defined]
            STAGES.append(st)
        return st

    def input_audio(self: srv.ServerSession, seconds: float) -> None:
        st = stage(self)
        st["packets"] += 1
        st["arrivals"].append(time.monotonic())
        orig_input(self, seconds)

    async def feed(self: srv.SystemDriver, pcm16k: bytes) -> None:
        st = stage(self.sink)
        before = self.frames
        await orig_feed(self, pcm16k)
        now = time.monotonic()
        for k in range(before, self.frames):  # frame k ends at input time (k + 1) * 80 ms = end of packet k
            st["frames"].append((k, st["packets"] - 1, now))

    def respond(self: oair.RealtimeServerSession, pcm16k: bytes, at_s: float) -> None:
        st = stage(self)
        first = st["first_due"] is None
        if first:
            st["first_due"] = max(at_s, self.free_at)
            st["respond_start"] = time.monotonic()
        orig_respond(self, pcm16k, at_s)
        if first:
            st["respond_end"] = time.monotonic()

    def deliver(self: srv.ServerSession, at_s: float, message: str | bytes, tag: str | None = None,
                on_sent: Any = None) -> None:
        st = stage(self)
        if on_sent is not None and st["first_sent"] is None and not st.get("hooked"):
            st["hooked"] = True

            def first(orig: Any = on_sent) -> None:
                st["first_sent"] = time.monotonic()
                orig()

            on_sent = first
        orig_deliver(self, at_s, message, tag, on_sent)

    srv.ServerSession.input_audio = input_audio  # type: ignore[method-assign]
    srv.SystemDriver.feed = feed  # type: ignore[method-assign]
    oair.RealtimeServerSession._respond = respond  # type: ignore[method-assign]
    srv.ServerSession.deliver = deliver  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="turn-based", help="The baseline (';' separates its parameters).")
    args = ap.parse_args()
    args.rate = 24000  # openai-realtime carries PCM16 at 24 kHz only (both dialects)
    _instrument()
    ds = load_dataset("demo")
    spec = f"loopback:protocol=openai-realtime,serve={args.system},in_process=true"
    print(f"load before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        export(args.system.replace(";", ","), ds, Path(tmp) / "ref", progress=False)
        export(spec, ds, Path(tmp) / "net", progress=False, concurrency=1)
        ref = {
            f"{s['subset']}/{s['id']}": s for s in json.loads(
                (Path(tmp) / "ref" / "manifest.json").read_text())["samples"]}
        net = json.loads((Path(tmp) / "net" / "manifest.json").read_text())["samples"]
    print(f"load after: {os.getloadavg()}")
    print(f"rate {args.rate}: {'sample':32} {'lag frames':>10} {'feed ms':>8} {'due':>7} {'call ms':>8} {'work ms':>8} "
          f"{'late ms':>8} {'recv ms':>8} {'in-proc':>8} {'network':>9} {'diff ms':>8}")
    diffs, lags, feeds = [], [], []
    for row, st in zip(net, STAGES):
        key = f"{row['subset']}/{row['id']}"
        t0 = st["arrivals"][0]  # packet 0's arrival = the session's input time 0 (to within the send time)
        lag = max(p - k for k, p, _ in st["frames"])
        feed = statistics.median((now - t0 - (k + 1) * 0.08) * 1000 for k, _, now in st["frames"])
        due = st["first_due"]
        call = None if due is None else (st["respond_start"] - t0 - due) * 1000
        work = None if due is None else (st["respond_end"] - st["respond_start"]) * 1000
        late = None if due is None or st["first_sent"] is None else (st["first_sent"] - t0 - due) * 1000
        a, b = ref[key]["export"]["first_playout_s"], row["export"]["first_playout_s"]
        recv = None if due is None or b is None else (b - due) * 1000
        d = None if a is None or b is None else (b - a) * 1000
        lags.append(lag)
        feeds.append(feed)
        if d is not None:
            diffs.append(abs(d))

        def f(v: float | None, fmt: str = "+.1f") -> str:
            return "" if v is None else format(v, fmt)

        print(f"{'':11}{key:32} {lag:>10} {feed:8.1f} {f(due, '.3f'):>7} {f(call):>8} {f(work):>8} {f(late):>8} "
              f"{f(recv):>8} {a!s:>8} {b!s:>9} {f(d):>8}")
    diffs.sort()
    print(f"rate {args.rate}: max frame lag {max(lags)} packets, feed hold-back median "
          f"{statistics.median(feeds):.1f} ms; |diff| median {diffs[len(diffs) // 2]:.1f} ms, max {diffs[-1]:.1f} ms "
          f"over {len(diffs)} samples")


if __name__ == "__main__":
    main()
