"""Command registration for this feature (filled in by the feature's owner)."""

from __future__ import annotations


def register(apps) -> None:  # noqa: ANN001 - CliApps, imported lazily to avoid a cycle
    """Add this feature's commands to the CLI."""
