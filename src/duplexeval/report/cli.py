"""`duplexeval report` and `duplexeval fdb show` (filled in below)."""


def register(apps) -> None:  # noqa: ANN001
    """Add `report` and `fdb show`."""
