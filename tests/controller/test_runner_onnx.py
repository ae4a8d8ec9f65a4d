"""The ONNX controller adapter and `controller bench`, on a tiny model written here as raw protobuf bytes
(the `onnx` package is not a dependency; the wire format of the few messages needed is small)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from duplexeval.controller.runtime.bench import bench
from duplexeval.controller.runtime.runner import load_controller, run

FLOAT, INT64 = 1, 7


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _f(field: int, value) -> bytes:  # noqa: ANN001
    if isinstance(value, int):
        return _varint(field << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, elem: int, dims: list[int]) -> bytes:
    shape = b"".join(_f(1, _f(1, d)) for d in dims)
    return _f(1, name) + _f(2, _f(1, _f(1, elem) + _f(2, shape)))


def _node(op: str, inputs: list[str], outputs: list[str], attrs: bytes = b"") -> bytes:
    return b"".join(_f(1, i) for i in inputs) + b"".join(_f(2, o) for o in outputs) + _f(4, op) + attrs


def _int_attr(name: str, v: int) -> bytes:
    return _f(5, _f(1, name) + _f(3, v) + _f(20, 2))


def tiny_model() -> bytes:
    """h_out = h + 1 (frames since reset); endpoint = h_out; yield = float(prev_state); backchannel = max(user)."""
    one = _f(1, 1) + _f(1, 1) + _f(2, FLOAT) + _f(8, "one") + _f(9, np.array([1.0], np.float32).tobytes())
    nodes = [
        _node("Add", ["h", "one"], ["h_out"]),
        _node("Identity", ["h_out"], ["endpoint"]),
        _node("Cast", ["prev_state"], ["yield"], _int_attr("to", FLOAT)),
        _node("ReduceMax", ["user"], ["backchannel"], _int_attr("keepdims", 0)),
    ]
    graph = (
        b"".join(_f(1, n) for n in nodes) + _f(2, "tiny") + _f(5, one)
        + _f(11, _value_info("user", FLOAT, [1, 1280])) + _f(11, _value_info("agent", FLOAT, [1, 1280]))
        + _f(11, _value_info("prev_state", INT64, [1])) + _f(11, _value_info("h", FLOAT, [1, 1]))
        + _f(12, _value_info("h_out", FLOAT, [1, 1])) + _f(12, _value_info("endpoint", FLOAT, [1, 1]))
        + _f(12, _value_info("yield", FLOAT, [1])) + _f(12, _value_info("backchannel", FLOAT, []))
    )  # fmt: skip
    return _f(1, 8) + _f(7, graph) + _f(8, _f(1, "") + _f(2, 13))


@pytest.fixture()
def model(tmp_path):
    p = tmp_path / "tiny.onnx"
    p.write_bytes(tiny_model())
    return p


def test_onnx_controller_state_and_forcing(model):
    ctl = load_controller(str(model))
    n = 4
    user = np.zeros(n * 1280, np.float32)
    user[1280 + 5] = 0.5  # frame 1 peaks at 0.5
    truth = np.array([0, 2, 1, 3], np.int8)
    res = run(ctl, user, np.zeros_like(user), n, truth)
    assert res.endpoint.tolist() == [1, 2, 3, 4]  # recurrent state fed back, reset before the listen pass
    assert res.yield_.tolist() == [0, 0, 2, 1]  # teacher-forced previous state reached the model
    assert res.backchannel.tolist() == [0, 0.5, 0, 0] and res.state_probs is None
    assert ctl.state_bytes() == 4 and ctl.weight_bytes() == model.stat().st_size


def test_onnx_missing_inputs_is_an_error(tmp_path):
    from duplexeval.errors import InputError

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(InputError, match="cannot load"):
        load_controller(str(bad))


def test_bench_protocol_on_onnx_and_baseline(model, tmp_path):
    rep = bench(load_controller(str(model)), prefill=64, updates=20, repeats=3)
    w = rep["wall_time_per_update_ms"]
    assert w["n"] == 60 and len(w["per_repeat_median"]) == 3 and 0 < w["median"] <= w["p90"]
    assert rep["weight_bytes"]["value"] == model.stat().st_size and rep["recurrent_state_bytes"]["value"] == 4
    assert rep["protocol"]["prefill_via"] == "step() x n" and rep["device_event_time_ms"]["value"] is None
    assert rep["peak_memory"]["python_heap_bytes"] >= 0 and rep["peak_memory"]["process_rss_high_water_bytes"] > 0

    class Counting:
        def __init__(self):
            self.steps, self.prefills = 0, []

        def reset(self):
            pass

        def prefill(self, u, a, p):
            self.prefills.append(u.shape)

        def step(self, u, a, p):
            self.steps += 1
            return {}

    c = Counting()
    rep = bench(c, prefill=64, updates=200, repeats=3)
    # 3 timed repeats + 1 untimed memory repeat, each one prefill of 64 frames and 200 updates
    assert c.prefills == [(64, 1280)] * 4 and c.steps == 800 and rep["protocol"]["prefill_via"] == "prefill()"
    assert rep["weight_bytes"]["value"] is None and rep["wall_time_per_update_ms"]["n"] == 600
    json.dumps(rep, allow_nan=False)
