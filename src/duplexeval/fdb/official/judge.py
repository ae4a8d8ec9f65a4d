"""The interruption judge: rates takeovers through an OpenAI-compatible endpoint, logging and caching every rating.

The prompt lives in `judge_prompt` (ours, or the official one read from a local checkout), the HTTP
client in `duplexeval.chat_http` (bounded reads, timeout, no redirects, key redaction). Their names
are re-exported here for one release, for callers that imported them from this module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval.chat_http import (  # re-exported: the old home of the HTTP client (one release)
    DEFAULT_TIMEOUT_S,
    MAX_LOGGED_ERROR_BODY,
    MAX_RESPONSE_BYTES,
    ChatClient,
    Exchange,
    api_key_from_env,
    redact_secret,
    sanitize_url,
    secret_variants,
)
from duplexeval.errors import InputError
from duplexeval.fdb.official.judge_config import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_BASE_URL,
    MAX_ATTEMPTS,
    OFFICIAL_MODEL,
    OFFICIAL_SEED,
    JudgeConfig,
)
from duplexeval.fdb.official.judge_prompt import (  # re-exported: the old home of the prompt (one release)
    OFFICIAL_EVALUATOR_PATHS,
    OUR_PROMPT,
    OUR_SYSTEM,
    Prompt,
    load_official_prompt,
    parse_reply,
)
from duplexeval.jsonio import append_text, dumps_line, sha256_bytes, write_json
from duplexeval.jsontypes import JsonObject

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT_S",
    "JUDGE_LOG",
    "MAX_ATTEMPTS",
    "MAX_LOGGED_ERROR_BODY",
    "MAX_RESPONSE_BYTES",
    "OFFICIAL_EVALUATOR_PATHS",
    "OFFICIAL_MODEL",
    "OFFICIAL_SEED",
    "OUR_PROMPT",
    "OUR_SYSTEM",
    "RATING_FILE",
    "Rating",
    "ChatClient",
    "Exchange",
    "Judge",
    "JudgeConfig",
    "JudgeSignature",
    "Prompt",
    "RateFn",
    "RatedBlock",
    "check_timeout",
    "judge_label",
    "load_official_prompt",
    "parse_reply",
    "redact_secret",
    "sanitize_url",
    "secret_variants",
]

JUDGE_LOG = "judge-log.jsonl"
RATING_FILE = "rating.json"


@dataclass
class Rating:
    """The judge's verdict on one takeover: rating None when no attempt gave a parsable reply."""

    rating: int | None
    analysis: str | None
    attempts: int
    error: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "rating": self.rating,
            "analysis": self.analysis,
            "attempts": self.attempts,
            "retries": max(0, self.attempts - 1),
            "error": self.error,
        }


def check_timeout(timeout_s: object) -> float:
    """The judge's `timeout_s` must be a positive, finite number of seconds."""
    if (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s)
        or timeout_s <= 0):
        raise InputError(f"--judge openai: timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def judge_label(prompt: Prompt, model: str, seed: int) -> str:
    """`official` only for the official prompt, gpt-4-turbo and seed 0; else the judge's model (spec 000)."""
    if prompt.source == "official" and model == OFFICIAL_MODEL and seed == OFFICIAL_SEED:
        return "official"
    if prompt.source == "official":
        return model
    return f"{model} (duplexeval prompt)"


@dataclass(frozen=True)
class JudgeSignature:
    """Everything that determines the interruption ratings (never the key): the start of the judge block."""

    label: str
    model: str
    seed: int
    base_url: str  # sanitized
    prompt: Prompt
    max_attempts: int

    def to_json(self) -> JsonObject:
        return {
            "label": self.label,
            "mode": "openai",
            "model": self.model,
            "seed": self.seed,
            "base_url": self.base_url,
            "prompt": self.prompt.to_json(),
            "max_attempts": self.max_attempts,
        }


@dataclass(frozen=True)
class RatedBlock:
    """A judged subset's judge block: the judge's signature, then how many takeovers got a rating, how many got
    none and how many needed more than one request."""

    judge: JudgeSignature
    rated: int
    failed: int
    retried_samples: int

    def to_json(self) -> JsonObject:
        return {**self.judge.to_json(), "rated": self.rated, "failed": self.failed,
                "retried_samples": self.retried_samples}


@dataclass
class Judge:
    """Rates takeovers with up to `max_attempts` requests each; logs every exchange to the tree."""

    config: JudgeConfig
    prompt: Prompt
    client: ChatClient
    log_path: Path
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "retries": 0, "failed": 0, "reused": 0})

    @classmethod
    def create(cls, config: JudgeConfig, tree: Path) -> Judge:
        if config.max_attempts < 1:
            raise InputError(f"judge attempts must be at least 1, got {config.max_attempts}")
        check_timeout(config.timeout_s)
        key = api_key_from_env(config.api_key_env, "--judge openai", "name another with --judge openai:api_key_env=VAR")
        prompt = load_official_prompt(config.reference_source) if config.reference_source else OUR_PROMPT
        client = ChatClient(config.base_url, key, config.timeout_s)
        return cls(config, prompt, client, Path(tree) / JUDGE_LOG)

    @property
    def label(self) -> str:
        return judge_label(self.prompt, self.config.model, self.config.seed)

    def signature(self) -> JudgeSignature:
        """Everything that determines the ratings (never the key)."""
        c = self.config
        return JudgeSignature(self.label, c.model, c.seed, sanitize_url(c.base_url), self.prompt, c.max_attempts)

    def payload(self, context: str, interrupt: str, response: str) -> JsonObject:
        """The request body: model, one system and one user message, seed; default temperature (not sent)."""
        return {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": self.prompt.system},
                {"role": "user", "content": self.prompt.user(context, interrupt, response)},
            ],
            "seed": self.config.seed,
        }

    def _log(self, record: JsonObject) -> None:
        append_text(self.log_path, self.client.redact(dumps_line(record)), private=True)

    def log_run_start(self, subset: str) -> None:
        self._log({"event": "run", "subset": subset, "judge": self.signature().to_json()})

    def rate(self, key: str, sample_dir: Path, context: str, interrupt: str, response: str) -> Rating:
        """Rate one takeover; reuse `rating.json` when it was made from the very same request."""
        payload = self.payload(context, interrupt, response)
        request_sha = sha256_bytes(
            json.dumps({"request": payload, "base_url": sanitize_url(self.config.base_url)},
                       ensure_ascii=False).encode("utf-8")
        )
        cached = _read_cached_rating(sample_dir / RATING_FILE, request_sha)
        if cached is not None:
            self.stats["reused"] += 1
            self._log({"event": "reused", "sample": key, "request_sha256": request_sha, "rating": cached.rating})
            return cached
        last_error: str | None = None
        for attempt in range(1, self.config.max_attempts + 1):
            if attempt > 1:
                self.stats["retries"] += 1
            self.stats["requests"] += 1
            ex = self.client.complete(payload)
            parsed = parse_reply(ex.content) if ex.content is not None else None
            if ex.error is None and parsed is None:
                last_error = "unparsable reply (no 'Analysis: ...' followed by the rating sentence)"
            else:
                last_error = ex.error
            self._log(
                {
                    "event": "exchange",
                    "sample": key,
                    "attempt": attempt,
                    "request": payload,
                    "status": ex.status,
                    "reply": ex.content,
                    "error": None if parsed else last_error,
                    "rating": parsed[1] if parsed else None,
                }
            )
            if parsed is not None:
                rating = Rating(parsed[1], parsed[0], attempt)
                _write_rating(sample_dir / RATING_FILE, rating, request_sha, self.label)
                return rating
        self.stats["failed"] += 1
        return Rating(None, None, self.config.max_attempts, last_error)


def _read_cached_rating(path: Path, request_sha: str) -> Rating | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    meta = obj.get("duplexeval") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or meta.get("request_sha256") != request_sha:
        return None
    rating, analysis, attempts = obj.get("rating"), obj.get("analysis"), meta.get("attempts")
    if isinstance(rating, bool) or not isinstance(rating, int) or not isinstance(analysis, str):
        return None
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        return None
    return Rating(rating, analysis, attempts)


def _write_rating(path: Path, rating: Rating, request_sha: str, label: str) -> None:
    """`rating.json` in the official shape, plus what request produced it (so a rerun can reuse it)."""
    write_json(
        path,
        {
            "analysis": rating.analysis,
            "rating": rating.rating,
            "duplexeval": {"judge": label, "request_sha256": request_sha, "attempts": rating.attempts},
        },
        private=True,  # a remote service's answer (a cache of it), like the judge log
    )


RateFn = Callable[[str, Path, str, str, str], Rating]
