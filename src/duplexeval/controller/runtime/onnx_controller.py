"""An ONNX model as a streaming controller (onnxruntime, CPU), by a fixed input/output naming convention.

Inputs: ``user`` and ``agent`` float32 [1, 1280], ``prev_state`` int64 [1]; every other input ``X`` is recurrent
state, zeros at reset (dynamic dimensions taken as 1), fed back from the output ``X_out``. Outputs (any subset):
``state_probs`` [1, 4], ``endpoint``, ``yield``, ``backchannel`` (one value each).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_file
from duplexeval.jsontypes import JsonObject

_FIXED = ("user", "agent", "prev_state")
_HEADS = ("state_probs", "endpoint", "yield", "backchannel")
_DTYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
           "tensor(double)": np.float64}


class OnnxController:
    """Runs one ONNX session step per frame; recurrent state lives in numpy arrays between steps."""

    def __init__(self, path: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"{self.path}: ONNX controller file not found")
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        try:
            self._sess = ort.InferenceSession(str(self.path), sess_options=so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise InputError(f"{self.path}: cannot load ONNX model: {' '.join(str(exc).split())}") from None
        ins = {i.name: i for i in self._sess.get_inputs()}
        missing = [n for n in _FIXED if n not in ins]
        if missing:
            raise InputError(f"{self.path}: ONNX controller lacks input(s) {', '.join(missing)} (see "
                             "docs/controller-labels.md)")
        outs = {o.name for o in self._sess.get_outputs()}
        self._state_names = [n for n in ins if n not in _FIXED]
        for n in self._state_names:
            if f"{n}_out" not in outs:
                raise InputError(f"{self.path}: recurrent input {n} has no output {n}_out")
        self._heads = [h for h in _HEADS if h in outs]
        if not self._heads:
            raise InputError(f"{self.path}: ONNX controller has none of the outputs {', '.join(_HEADS)}")
        self._state_spec = {
            n: (tuple(d if isinstance(d, int) and d > 0 else 1 for d in ins[n].shape),
                _DTYPES.get(ins[n].type, np.float32))
            for n in self._state_names
        }
        self._prev_dtype = _DTYPES.get(ins["prev_state"].type, np.int64)
        self._fetch = self._heads + [f"{n}_out" for n in self._state_names]
        self.name = self.path.stem
        self.reset()

    def reset(self) -> None:
        self._state = {n: np.zeros(shape, dtype=dt) for n, (shape, dt) in self._state_spec.items()}

    def step(self, user: np.ndarray, agent: np.ndarray, prev_state: int) -> dict[str, float | np.ndarray]:
        feed = {
            "user": np.asarray(user, dtype=np.float32).reshape(1, -1),
            "agent": np.asarray(agent, dtype=np.float32).reshape(1, -1),
            "prev_state": np.asarray([prev_state], dtype=self._prev_dtype),
        }
        feed.update(self._state)
        res = self._sess.run(self._fetch, feed)
        out: dict[str, float | np.ndarray] = {}
        for h, v in zip(self._heads, res):
            out[h] = np.asarray(v).reshape(-1) if h == "state_probs" else float(np.asarray(v).reshape(-1)[0])
        for n, v in zip(self._state_names, res[len(self._heads) :]):
            self._state[n] = v
        return out

    def weight_bytes(self) -> int:
        """The model file size (initializers dominate it; graph structure is a few kB)."""
        return self.path.stat().st_size

    def state_bytes(self) -> int:
        return int(sum(a.nbytes for a in self._state.values()))

    def config(self) -> JsonObject:
        return {"onnx": self.path.name, "sha256": sha256_file(self.path)}
