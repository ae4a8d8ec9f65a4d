"""Turn-taking controllers by name, through the shared `duplexeval.registry.Registry`.

A controller spec is a registered name (``silence``, ``silero``, or one an installed package publishes
under the entry-point group ``duplexeval.controllers``), ``baseline:NAME`` (the older spelling of a
built-in), a ``FILE.onnx`` (runner convention in docs/controller-labels.md), or ``module.path:Name``
for a user's own class or factory. A class or factory is called with the options as keyword
arguments; an object that already has ``step`` is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplexeval.controller.format.protocol import Controller
from duplexeval.controller.runtime.baselines import BASELINES
from duplexeval.controller.runtime.onnx_controller import OnnxController
from duplexeval.errors import InputError
from duplexeval.plugins import call, guard, json_value, unwrap
from duplexeval.registry import Registry, is_import_spec

EXPECTED = "expected NAME, baseline:NAME, FILE.onnx or package.module:factory"


def _register_builtins() -> None:
    for name, cls in BASELINES.items():
        CONTROLLERS.register(name, cls)


KIND = "controller"
CONTROLLERS: Registry[Any] = Registry(KIND, loader=_register_builtins)


def load_controller(spec: str, options: Mapping[str, Any] | None = None) -> Controller:
    """The controller a spec names (module docstring), built with `options`; one-line InputError otherwise."""
    opts = dict(options or {})
    if spec.endswith(".onnx"):
        return guard(call(KIND, spec, "__init__", OnnxController, Path(spec), **opts), KIND, spec)
    name = spec.split(":", 1)[1] if spec.startswith("baseline:") else spec
    if not is_import_spec(name) and name not in CONTROLLERS.names():
        available = ", ".join(CONTROLLERS.names())
        raise InputError(f"unknown controller {spec!r}; available: {available} ({EXPECTED})")
    factory = CONTROLLERS.get(name)
    obj = factory if not isinstance(factory, type) and hasattr(factory, "step") else CONTROLLERS.build(name, **opts)
    if not isinstance(obj, Controller):
        raise InputError(f"controller {spec!r}: the object has no reset() and step(user, agent, prev_state)")
    return guard(obj, KIND, spec)


def controller_config(ctl: Any) -> Any:
    """A controller's `config()` for the files it is recorded in (None without one); it must be plain JSON."""
    if not hasattr(ctl, "config"):
        return None
    _, kind, spec = unwrap(ctl)
    return json_value(kind, spec, "config", guard(ctl, kind, spec).config())
