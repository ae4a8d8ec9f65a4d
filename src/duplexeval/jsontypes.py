"""The two spellings of a dict of values of any type: `JsonObject`, what a file or a wire message holds once parsed or
before it is written, and `Kwargs`, keyword arguments for a callable chosen at run time (a plugin named by a spec).
Internal rows and results are typed records; these aliases mark where such a dict enters or leaves."""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
Kwargs: TypeAlias = dict[str, Any]

__all__ = ["JsonObject", "Kwargs"]
