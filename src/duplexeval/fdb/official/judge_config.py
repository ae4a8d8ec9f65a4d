"""How the FDB interruption judge runs (`JudgeConfig`): a light module, so `duplexeval.fdb` can name it cheaply.

The judge itself (prompt, HTTP client, ratings cache) lives in `fdb.official.judge`; this module holds only its
settings and their defaults, which are the official run's (gpt-4-turbo, seed 0, api.openai.com).
"""

from __future__ import annotations

from dataclasses import dataclass

OFFICIAL_MODEL = "gpt-4-turbo"
OFFICIAL_SEED = 0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_TIMEOUT_S = 60.0  # the same as duplexeval.chat_http.DEFAULT_TIMEOUT_S (a test checks they agree)
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class JudgeConfig:
    """How the judge runs (`fdb evaluate --judge openai:k=v,...`); the key is read from the variable `api_key_env`.

    `reference_source` is a local checkout of the official repository whose judge prompt is used (and, for FDB
    v1.5, whose instruction/behavior.txt is the behaviour prompt unless another is given).
    """

    model: str = OFFICIAL_MODEL
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_API_KEY_ENV
    seed: int = OFFICIAL_SEED
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = MAX_ATTEMPTS
    reference_source: str | None = None


__all__ = ["DEFAULT_API_KEY_ENV", "DEFAULT_BASE_URL", "DEFAULT_TIMEOUT_S", "MAX_ATTEMPTS", "OFFICIAL_MODEL",
           "OFFICIAL_SEED", "JudgeConfig"]
