"""End-of-turn detector scoring (spec 003): the public surface, re-exported from ``duplexeval.eot.pairs``."""

from duplexeval.eot.pairs import (
    DEFAULT_LATENCY_BANDS_MS,
    EOTPair,
    false_cutoff_rate,
    hang_rate,
    median_latency_s,
    score,
)

__all__ = ["DEFAULT_LATENCY_BANDS_MS", "EOTPair", "false_cutoff_rate", "hang_rate", "median_latency_s", "score"]
