"""Plugins by name: built-ins registered in code, installed packages by entry point, anything by `module.path:Name`.

One small registry per kind of plugin (systems, ASR backends, controllers, EOT detectors, dialogue
systems, judges), after lm-eval's registry: a name either resolves or the error lists what is
available. ``Registry.resolve("pkg.mod:Class")`` imports the object directly, so a user's own class
works from the command line without touching the package.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from duplexeval.errors import InputError
from duplexeval.plugins import PluginError, call, what_happened

T = TypeVar("T")

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
ENTRY_POINT_PREFIX = "duplexeval."


def is_import_spec(name: str) -> bool:
    """True for `module.path:Name` (a plugin named by import path, not by registry name)."""
    mod, sep, attr = name.partition(":")
    return bool(sep) and bool(_DOTTED.match(mod)) and bool(_DOTTED.match(attr))


def _import_module(name: str) -> object:
    """`importlib.import_module`, and when the module's top-level package is nowhere on the import path, once
    more with the current folder appended to it (so `--system mymodule:MyAgent` works from mymodule's folder;
    appended, so it never shadows an installed module)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if exc.name != name.split(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        importlib.invalidate_caches()
        return importlib.import_module(name)


def import_object(spec: str, what: str = "plugin") -> object:
    """Import `module.path:Name` (Name may be dotted); one-line InputError when it cannot be found."""
    if not is_import_spec(spec):
        raise InputError(f"{what} {spec!r}: expected module.path:Name")
    mod_name, _, attr = spec.partition(":")
    try:
        obj: object = _import_module(mod_name)
    except ImportError as exc:
        top = mod_name.split(".")[0]
        where = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == top:
            where = (f"; looked on the import path and in the current folder {os.getcwd()}: run from the folder that "
                     f"holds {top}.py (or the {top}/ package), or put that folder on PYTHONPATH")
        raise InputError(f"{what} {spec!r}: cannot import module {mod_name!r} ({exc}){where}") from exc
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the plugin module's own code failed as it was imported
        raise PluginError(what, spec, "import", what_happened(exc)) from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{what} {spec!r}: module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class _Deferred:
    """A built-in registered by import path, imported on first `get` (keeps a light command light)."""

    spec: str


class Registry(Generic[T]):
    """Named factories of one kind: ``register``, ``names``, ``get`` (by name or `module:Name`)."""

    def __init__(self, kind: str, loader: Callable[[], None] | None = None) -> None:
        self.kind = kind  # e.g. "system", "ASR backend"; also names the entry-point group
        self._items: dict[str, T] = {}
        self._loader = loader  # registers the built-ins on first use (keeps imports light)
        self._loaded = False

    @property
    def entry_point_group(self) -> str:
        return ENTRY_POINT_PREFIX + self.kind.replace(" ", "_").lower() + "s"

    def register(self, name: str, item: T) -> T:
        """Make `item` available as `name`; registering a different item under a taken name is an error."""
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def register_deferred(self, name: str, spec: str) -> None:
        """Make the object `module.path:Name` available as `name`, imported on first `get` (an import error is the
        same one line as for `module.path:Name` itself)."""
        self._items[name] = _Deferred(spec)  # type: ignore[assignment]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._loader is not None:
            self._loader()
        for ep in metadata.entry_points(group=self.entry_point_group):
            if ep.name not in self._items:
                self._items[ep.name] = ep  # type: ignore[assignment]  # loaded on first get

    def names(self, sort: bool = True) -> list[str]:
        """Every registered name, sorted (or in the order registered: the built-ins first, then entry points)."""
        self._load()
        return sorted(self._items) if sort else list(self._items)

    def get(self, name: str) -> T:
        """The item registered as `name`, or the object `module.path:Name` imports."""
        if is_import_spec(name):
            return import_object(name, self.kind)  # type: ignore[return-value]
        self._load()
        if name not in self._items:
            raise InputError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names()) or 'none'}")
        item = self._items[name]
        if isinstance(item, metadata.EntryPoint):
            ep = item
            try:
                item = ep.load()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin package is a user-facing setup error
                raise PluginError(self.kind, name, f"entry point {ep.value!r}:",
                                  f"import {what_happened(exc)}") from exc
            self._items[name] = item
        elif isinstance(item, _Deferred):
            item = import_object(item.spec, self.kind)  # type: ignore[assignment]
            self._items[name] = item
        return item

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The plugin `name` built with ``(*args, **kwargs)``: whatever its own code does wrong is one PluginError
        line."""
        factory: Any = self.get(name)
        return call(self.kind, name, factory_method(factory), factory, *args, **kwargs)


def factory_method(factory: object) -> str:
    """How an error names the call that builds a plugin: ``__init__`` for a class, the function's name for a factory
    function."""
    if isinstance(factory, type):
        return "__init__"
    return str(getattr(factory, "__name__", type(factory).__name__))
