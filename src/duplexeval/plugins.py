"""Calling a user's plugin (system, EOT detector, controller, dialogue system, ASR backend): whatever its own code
does wrong (raises, calls ``sys.exit``, returns the wrong thing) becomes one ``PluginError`` line naming the plugin,
the method and what happened, e.g. ``system 'my.mod:Agent': __init__ raised RuntimeError: no GPU``.

``duplexeval --debug`` (or ``DUPLEXEVAL_DEBUG=1``) prints the plugin's traceback above that line.

Every method call of a guarded plugin (EOT detectors, controllers, dialogue systems: the synchronous families)
must return within ``DUPLEXEVAL_CALL_TIMEOUT`` seconds (default 120, ``0`` for no bound), or it fails with
``... METHOD did not return within N s``. The bound is a SIGALRM timer armed around the call, so it applies
where plugins run: the main thread of the command or of an executor's worker process; a call made from
another thread is not bounded, nor one blocked inside C code that never returns to Python, nor one that
replaces the SIGALRM handler or swallows every interruption (``except BaseException`` in a loop).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, TypeVar, cast

from duplexeval.errors import DuplexEvalError, InputError, clip

R = TypeVar("R")
DEBUG_ENV = "DUPLEXEVAL_DEBUG"
CALL_TIMEOUT_ENV = "DUPLEXEVAL_CALL_TIMEOUT"
DEFAULT_CALL_TIMEOUT_S = 120.0
MAX_CALL_TIMEOUT_S = 86400.0


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


def call_timeout_s() -> float | None:
    """The per-call bound of guarded plugin methods, in seconds (``DUPLEXEVAL_CALL_TIMEOUT``); None when it is 0."""
    raw = os.environ.get(CALL_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_CALL_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= MAX_CALL_TIMEOUT_S):
        raise InputError(f"{CALL_TIMEOUT_ENV}={clip(raw, 40)!r}: expected seconds in [0, {MAX_CALL_TIMEOUT_S:g}] "
                         "(0: no bound)")
    return value or None


class _Overran(BaseException):
    """Raised inside a plugin's call when it overran its bound (a BaseException: `except Exception` in the
    plugin does not swallow it)."""


class _Deadline:
    """The one SIGALRM deadline of this process's main thread (armed around one plugin call at a time)."""

    installed = False
    armed = False
    fired = False
    previous: Any = signal.SIG_DFL  # the handler found when ours was installed: alarms outside a call go there


def _on_alarm(signum: int, frame: Any) -> None:
    if not _Deadline.armed:  # not ours: what the process did with SIGALRM before
        prev = _Deadline.previous
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:  # the default action (end the process), as if we were never installed
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGALRM)
        return
    _Deadline.fired = True
    if frame is not None and frame.f_code is call_bounded.__code__:
        return  # in the bookkeeping around the call, not in the plugin: `fired` is checked there
    raise _Overran()


def call_bounded(kind: str, spec: str, method: str, timeout_s: float | None, fn: Callable[..., R], *args: Any,
                 **kwargs: Any) -> R:
    """``call`` that must return within `timeout_s` seconds (None: unbounded), or a ``PluginError`` saying so.

    Bounded on the main thread only (signals are delivered there); a call nested in a bounded one shares its
    deadline. The timer repeats every second until the call ends, so a plugin that catches the first
    interruption is interrupted again; a call that overran and returned anyway is still an error.
    """
    if timeout_s is None or _Deadline.armed or threading.current_thread() is not threading.main_thread():
        return call(kind, spec, method, fn, *args, **kwargs)
    if not _Deadline.installed:  # once per process: swapping the handler per call (or reading it) costs 4 us
        prev = signal.signal(signal.SIGALRM, _on_alarm)
        _Deadline.previous = signal.SIG_DFL if prev is None else prev
        _Deadline.installed = True
    _Deadline.fired = False
    _Deadline.armed = True
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout_s, 1.0)
        try:
            value = call(kind, spec, method, fn, *args, **kwargs)
        except _Overran:
            pass
        except PluginError:
            if not _Deadline.fired:
                raise  # its own failure; once it overran, that is what is reported (it may have caught the alarm)
    finally:
        _Deadline.armed = False  # first: an alarm from here on is ignored
        signal.setitimer(signal.ITIMER_REAL, 0)
    if _Deadline.fired:
        raise PluginError(kind, spec, method, f"did not return within {timeout_s:g} s ({CALL_TIMEOUT_ENV})")
    return value


def returned(kind: str, spec: str, method: str, value: Any, expect: type | tuple[type, ...], what: str) -> Any:
    """`value` when it is an `expect` instance, else a ``PluginError`` saying what came back instead."""
    if isinstance(value, bool) and bool not in (expect if isinstance(expect, tuple) else (expect,)):
        ok = False
    else:
        ok = isinstance(value, expect)
    if not ok:
        raise PluginError(kind, spec, method, f"returned {type(value).__name__} {clip(repr(value), 80)}, "
                                              f"expected {what}")
    return value


def json_value(kind: str, spec: str, method: str, value: R) -> R:
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

    For the synchronous families (EOT detectors, controllers, dialogue systems), each call bounded by
    ``call_timeout_s()`` (read when the object is guarded); attributes that are not methods are read through
    unchanged. An async system's calls are bounded by the session runner instead.
    """

    __slots__ = ("_obj", "_kind", "_spec", "_timeout_s")

    def __init__(self, obj: Any, kind: str, spec: str) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_timeout_s", call_timeout_s())

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._obj, name)
        if not callable(value) or isinstance(value, type):
            return value
        kind, spec, timeout_s = self._kind, self._spec, self._timeout_s

        def guarded(*args: Any, **kwargs: Any) -> Any:
            return call_bounded(kind, spec, name, timeout_s, value, *args, **kwargs)

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


def guard(obj: R, kind: str, spec: str) -> R:
    """`obj` with every method call guarded (``Guarded``); an object already guarded is returned as it is."""
    # a Guarded stands in for the object (same methods and attributes, isinstance holds): typed as the object
    return obj if isinstance(obj, Guarded) else cast(R, Guarded(obj, kind, spec))


def unwrap(obj: Any) -> tuple[Any, str, str]:
    """(the object itself, its kind, its spec) of a guarded plugin; a plain object gives its class name as spec."""
    if isinstance(obj, Guarded):
        return obj.plugin, obj._kind, obj._spec
    return obj, "plugin", type(obj).__name__
