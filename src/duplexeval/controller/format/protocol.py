"""The streaming controller interface the runner, the registry and the benchmark share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np

# What one step returns: any of the four heads (the runner checks each; extra keys are ignored). "yield" is a
# Python keyword, hence the functional form.
StepOutput = TypedDict(
    "StepOutput",
    {"state_probs": "np.ndarray | Sequence[float]", "endpoint": float, "yield": float, "backchannel": float},
    total=False,
)


@runtime_checkable
class Controller(Protocol):
    """A streaming turn-taking controller, one decision per 80 ms frame.

    ``step`` gets 1280 float32 samples (16 kHz) of the user microphone and of the agent playback and the
    previous state (an index into ``data.STATES``), and returns a mapping with any of ``state_probs`` (4 floats in
    STATES order), ``endpoint``, ``yield``, ``backchannel`` (floats). Optional extras used by ``bench``:
    ``prefill(user[n,1280], agent[n,1280], prev_states[n])``, ``weight_bytes()``, ``state_bytes()``.
    """

    def reset(self) -> None: ...

    def step(self, user: np.ndarray, agent: np.ndarray, prev_state: int) -> Mapping[str, Any]: ...
