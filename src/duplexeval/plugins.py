"""Calling a user's plugin (system, EOT detector, controller, dialogue system, ASR backend): whatever its own code
does wrong (raises, calls ``sys.exit``, returns the wrong thing) becomes one ``PluginError`` line naming the plugin,
the method and what happened, e.g. ``system 'my.mod:Agent': __init__ raised RuntimeError: no GPU``.

``duplexeval --debug`` (or ``DUPLEXEVAL_DEBUG=1``) prints the plugin's traceback above that line.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from duplexeval.errors import DuplexEvalError, InputError, clip

R = TypeVar("R")
DEBUG_ENV = "DUPLEXEVAL_DEBUG"


def debug_enabled() -> bool:
    """True when tracebacks were asked for (``--debug`` sets the variable, so worker processes see it too)."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def print_traceback(exc: BaseException) -> None:
    """In debug mode, the full traceback of `exc` (and its causes) on stderr; otherwise nothing."""
    if debug_enabled():
        sys.stderr.write("".join(traceback.format_exception(exc)))
        sys.stderr.flush()


class PluginError(InputError):
    """A plugin's own code failed; one line: ``KIND 'SPEC': METHOD PROBLEM``."""

    def __init__(self, kind: str, spec: str, method: str, problem: str) -> None:
        super().__init__(f"{kind} {clip(spec, 120)!r}: {method} {problem}")
        self.kind, self.spec, self.method = kind, spec, method


def what_happened(exc: BaseException) -> str:
    """`raised Type: message` or `called sys.exit(code)`, one line, the message capped."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({clip(repr(exc.code), 60)})"
    text = " ".join(str(exc).split())
    return f"raised {type(exc).__name__}" + (f": {clip(text)}" if text else "")


def call(kind: str, spec: str, method: str, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)``; an exception or ``SystemExit`` from the plugin becomes a ``PluginError``.

    A ``DuplexEvalError`` the plugin raises on purpose (already one line) passes through unchanged.
    """
    try:
        return fn(*args, **kwargs)
    except DuplexEvalError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the plugin's own failure, reported as one line
        raise PluginError(kind, spec, method, what_happened(exc)) from exc


def returned(kind: str, spec: str, method: str, value: Any, expect: type | tuple[type, ...], what: str) -> Any:
    """`value` when it is an `expect` instance, else a ``PluginError`` saying what came back instead."""
    if isinstance(value, bool) and bool not in (expect if isinstance(expect, tuple) else (expect,)):
        ok = False
    else:
        ok = isinstance(value, expect)
    if not ok:
        raise PluginError(kind, spec, method, f"returned {type(value).__name__} {clip(repr(value), 80)}, expected {what}")
    return value


def json_value(kind: str, spec: str, method: str, value: Any) -> Any:
    """`value` when it is plain JSON (dicts with string keys, lists, strings, finite numbers, booleans, null)."""
    problem = _not_json(value)
    if problem is not None:
        raise PluginError(kind, spec, method, f"returned a value that is not plain JSON ({problem})")
    return value


def _not_json(value: Any, where: str = "the value", depth: int = 0) -> str | None:
    if depth > 64:
        return f"{where} is nested more than 64 levels deep"
    if value is None or isinstance(value, (bool, str, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}"
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            p = _not_json(v, f"{where}[{i}]", depth + 1)
            if p is not None:
                return p
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where} has the key {clip(repr(k), 40)}, not a string"
            p = _not_json(v, f"{where}[{clip(repr(k), 40)}]", depth + 1)
            if p is not None:
                return p
        return None
    return f"{where} has type {type(value).__name__}"


class Guarded:
    """A plugin object whose method calls go through ``call``, so a failure names the plugin and the method.

    For the synchronous families (EOT detectors, controllers, dialogue systems); attributes that are not
    methods are read through unchanged. An async system's calls are bounded by the session runner instead.
    """

    __slots__ = ("_obj", "_kind", "_spec")

    def __init__(self, obj: Any, kind: str, spec: str) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_spec", spec)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._obj, name)
        if not callable(value) or isinstance(value, type):
            return value
        kind, spec = self._kind, self._spec

        def guarded(*args: Any, **kwargs: Any) -> Any:
            return call(kind, spec, name, value, *args, **kwargs)

        return guarded

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._obj, name, value)

    @property  # type: ignore[misc]  # isinstance(guarded, ThePluginClass) holds, as for the object itself
    def __class__(self) -> type:
        return type(self._obj)

    def __repr__(self) -> str:
        return f"Guarded({self._kind} {self._spec!r}: {self._obj!r})"

    @property
    def plugin(self) -> Any:
        """The object itself."""
        return self._obj


def guard(obj: Any, kind: str, spec: str) -> Any:
    """`obj` with every method call guarded (``Guarded``); an object already guarded is returned as it is."""
    return obj if isinstance(obj, Guarded) else Guarded(obj, kind, spec)


def unwrap(obj: Any) -> tuple[Any, str, str]:
    """(the object itself, its kind, its spec) of a guarded plugin; a plain object gives its class name as spec."""
    if isinstance(obj, Guarded):
        return obj.plugin, obj._kind, obj._spec
    return obj, "plugin", type(obj).__name__
