"""Servers that break the protocols: each sample gets its recorded reason and the export one clear line.

Four servers, one sample each, all exported at once through `duplexeval fdb export`: a Moshi server that
sends a message of an unknown kind with every frame (discarded as the protocol says: eligible, counted,
one line), a native server that sends integer unit ids (sglang-omni sends `"unit_<n>"`), a native
deployment that refuses the pinned output rate, and a PersonaPlex server that drops the connection
during the handshake (no prompts in the query). Nothing is lost: every sample is in the manifest and
`fdb replay --check` rebuilds the tree byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duplexeval.cli import main
from duplexeval.systems.net import moshi_wire as mw
from duplexeval.systems.net.faults import Faults
from duplexeval.systems.net.moshi_server import MoshiServerSession
from duplexeval.systems.net.native_server import NativeServerSession
from duplexeval.systems.net.server import LoopbackServer, ServeConfig, ServerThread
from duplexeval.systems.registry import make_system
from tests.helpers.net import SERVED, user_turn
from tests.helpers.systems import Dataset, add_sample


class UnknownKindMoshi(MoshiServerSession):
    """Kyutai's server, plus a message of kind 7 after every output frame."""

    def deliver(self, at_s: float, message: str | bytes, tag: str | None = None, on_sent: Any = None) -> None:
        super().deliver(at_s, message, tag, on_sent)
        if isinstance(message, bytes) and message[:1] == bytes((mw.Kind.AUDIO,)):
            super().deliver(at_s, b"\x07future message kind")


class IntUnitNative(NativeServerSession):
    """A native server whose unit ids are integers (what this client used to expect)."""

    def deliver(self, at_s: float, message: str | bytes, tag: str | None = None, on_sent: Any = None) -> None:
        if isinstance(message, str) and '"unit_id":"unit_' in message:
            ev = json.loads(message)
            meta = ev.get("sglang") if ev["type"] == "response.output_audio.delta" else ev
            meta["unit_id"] = int(str(meta["unit_id"]).removeprefix("unit_"))
            message = json.dumps(ev)
        super().deliver(at_s, message, tag, on_sent)


def _cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _server(cls: type, options: dict[str, str] | None = None) -> ServerThread:
    cfg = ServeConfig(make_system(SERVED), Faults(), options=dict(options or {}))
    return ServerThread(LoopbackServer(cls, cfg)).start()


def test_bad_servers_get_reasons_and_one_clear_line_each(tmp_path: Path, capsys: Any) -> None:
    ds = Dataset("bad-servers", tmp_path / "ds")
    pcm = user_turn(3.0, ((0.2, 0.9),)).astype("float32") / 32768.0
    add_sample(ds, "candor_turn_taking", "1", pcm, [{"text": "[TURN-TAKING]", "timestamp": [1.0, 1.5]}])
    servers = {"kind": _server(UnknownKindMoshi), "unit": _server(IntUnitNative),
               "rate": _server(NativeServerSession), "drop": _server(MoshiServerSession, {"flavor": "personaplex"})}
    specs = {"kind": f"moshi:url={servers['kind'].url(mw.CHAT_PATH)}",
             "unit": f"native-duplex:url={servers['unit'].url('/v1/realtime')}",
             "rate": f"native-duplex:url={servers['rate'].url('/v1/realtime')},output_rate=22050",
             "drop": f"moshi:url={servers['drop'].url(mw.CHAT_PATH)},flavor=kyutai"}
    outs: dict[str, tuple[int, str, dict[str, Any]]] = {}
    try:
        for name, spec in specs.items():
            tree = tmp_path / name
            code = _cli(["fdb", "export", "--system", spec, "--dataset", str(ds.root), "--out", str(tree), "--quiet"])
            out = capsys.readouterr().out
            sample = json.loads((tree / "candor_turn_taking" / "1" / "trace.json").read_text())
            outs[name] = (code, out, sample)
            assert _cli(["fdb", "replay", str(tree), "--check"]) == 0, name
            capsys.readouterr()
    finally:
        for th in servers.values():
            th.stop()
    # a failed sample is a result, never exit 2 or a traceback: exit 1 by the exit contract (no eligible sample in
    # the subset), exit 0 for the discarded kinds (the sample stays eligible)
    assert {name: code for name, (code, _, _) in outs.items()} == {"kind": 0, "unit": 1, "rate": 1, "drop": 1}
    kind_out, kind = outs["kind"][1], outs["kind"][2]
    assert kind["result"]["eligible"]
    assert kind["result"]["extra"]["export"]["network"]["discarded"]["kind_7"] > 30
    assert "discarded as the protocol says (recorded, not disqualifying): kind_7 x" in kind_out
    unit_out, unit = outs["unit"][1], outs["unit"][2]
    assert unit["result"]["reasons"] == ["protocol_violation"]
    assert "first protocol_violation: candor_turn_taking/1: bad response.output_audio.delta: sglang.unit_id: " \
           "Input should be a valid string (got 0)" in unit_out
    rate_out, rate = outs["rate"][1], outs["rate"][2]
    assert rate["result"]["reasons"] == ["server_error"] and "output.wav" not in rate["result"]["files"]
    assert ("first server_error: candor_turn_taking/1: format refused (unsupported PCM format or sample rate): "
            "output_rate=22050 asked, the deployment serves 24000; leave output_rate unset") in rate_out
    drop_out, drop = outs["drop"][1], outs["drop"][2]
    assert drop["result"]["reasons"] == ["disconnected"]
    assert "ineligible, disconnected: 1 (candor_turn_taking/1)" in drop_out
    assert "first disconnected: candor_turn_taking/1: closed by the server during the handshake (code None)" in drop_out
