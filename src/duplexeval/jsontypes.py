"""The one spelling of "a JSON object" (`dict[str, Any]`): what a file or a wire message holds once parsed or
before it is written. Internal rows and results are typed records; this alias marks where JSON enters or leaves."""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]

__all__ = ["JsonObject"]
