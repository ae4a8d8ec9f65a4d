"""Bounded, cached, logged chat-completions calls for the chat manager and the ``openai`` judge.

The HTTP client is the project's one (``duplexeval.chat_http.ChatClient``: bounded reads,
timeout, no redirects). On top of it: a bounded number of attempts, an on-disk cache keyed by the
request's hash (and attempt number, so a retried reply is cached too: a rerun replays the same
answers and costs nothing), and a JSONL log of every exchange. The key comes only from the
environment and is removed from everything written in every form `duplexeval.redaction` knows; the
log and the cache hold a remote service's answers, so they are private files (mode 0600).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar
from urllib.parse import urlsplit

from duplexeval.chat_http import (
    ChatClient,
    api_key_from_env,
    redact_secret,
    sanitize_url,
    secret_variants,
)
from duplexeval.errors import InputError
from duplexeval.jsonio import append_text, atomic_write_text, dumps_line, sha256_bytes
from duplexeval.jsontypes import JsonObject

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_ATTEMPTS = 3
MAX_ATTEMPTS = 10
DEFAULT_BACKOFF_S = 0.5  # wait backoff * attempt before retrying after an HTTP error or timeout
MAX_REQUEST_BYTES = 1 << 20  # a request body over 1 MiB (a runaway transcript) is not sent


def default_cache_dir() -> Path:
    """`$DUPLEXEVAL_CACHE/dialogue-http`, else `~/.cache/duplexeval/dialogue-http`."""
    env = os.environ.get("DUPLEXEVAL_CACHE")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "duplexeval"
    return base / "dialogue-http"


def key_forms(key: str) -> list[str]:
    """Every spelling of the key that could end up in a file (raw, JSON-escaped, URL-encoded): the
    project's one list, ``duplexeval.chat_http.secret_variants``."""
    return secret_variants(key)


def redact_all(text: str, key: str) -> str:
    """`text` with every form of `key` replaced (``redact_secret``; nothing to do without a key)."""
    return redact_secret(text, key) if key else text


def api_key(env_name: str, what: str) -> str:
    """The key from the environment variable `env_name`; refuse when it is unset (``chat_http.api_key_from_env``)."""
    return api_key_from_env(env_name, what)


@dataclass(frozen=True)
class ChatFlags:
    """The key of the user's spec (`--judge openai:attempts=3`, `--system openai-chat:max_attempts=3`) that sets each
    setting of a chat endpoint, so an error names what to change."""

    model: str
    base_url: str
    attempts: str
    timeout: str
    backoff: str


# the errors already name the judge or the system (`what`): these name the parameter of its spec
JUDGE_FLAGS = ChatFlags("model", "base_url", "attempts", "timeout_s", "backoff_s")
SYSTEM_FLAGS = ChatFlags("model", "base_url", "max_attempts", "timeout_s", "backoff_s")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """The outcome of one logical request: the parsed reply, or why there is none."""

    parsed: T | None
    content: str | None
    error: str | None
    attempts: int
    request_sha256: str
    cached: bool


@dataclass
class CachedChat:
    """One OpenAI-compatible endpoint and model, with attempts, cache and log."""

    base_url: str
    model: str
    api_key_env: str
    what: str  # "--judge openai", "--system openai-chat": names the user of the key in errors
    log_path: Path
    cache_dir: Path
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = DEFAULT_ATTEMPTS
    backoff_s: float = DEFAULT_BACKOFF_S
    flags: ChatFlags = field(default_factory=lambda: JUDGE_FLAGS)
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "cached": 0, "failed": 0})

    def __post_init__(self) -> None:
        f, w = self.flags, self.what
        if not self.model:
            raise InputError(f"{w}: a model name is needed ({f.model}=...)")
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            raise InputError(f"{w}: {f.base_url}={sanitize_url(self.base_url)!r} must be an http:// or https:// URL")
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS:
            raise InputError(f"{w}: {f.attempts}={self.max_attempts} must be 1..{MAX_ATTEMPTS}")
        if not 0 < self.timeout_s <= 600:
            raise InputError(f"{w}: {f.timeout}={self.timeout_s:g} must be in (0, 600] s")
        if not 0 <= self.backoff_s <= 60:
            raise InputError(f"{w}: {f.backoff}={self.backoff_s:g} must be in [0, 60] s")
        self._key = api_key(self.api_key_env, self.what)
        self.client = ChatClient(self.base_url, self._key, self.timeout_s)

    def identity(self) -> dict[str, str | int]:
        """What determines the replies (never the key), in the order judgements.jsonl's `judge` record lists them."""
        return {"model": self.model, "base_url": sanitize_url(self.base_url), "max_attempts": self.max_attempts}

    def _log(self, record: JsonObject) -> None:
        append_text(self.log_path, redact_all(dumps_line(record), self._key), private=True)

    def _cache_file(self, sha: str) -> Path:
        return self.cache_dir / sha[:2] / f"{sha}.json"

    def _cached(self, sha: str) -> str | None:
        try:
            obj = json.loads(self._cache_file(sha).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        content = obj.get("content") if isinstance(obj, dict) and obj.get("request_sha256") == sha else None
        return content if isinstance(content, str) else None

    def ask(self, payload: JsonObject, accept: Callable[[str], T | None], tag: Mapping[str, str]) -> Answer[T]:
        """Send `payload` (the request body; the model is added) up to `max_attempts` times until `accept` parses a
        reply; `tag` (which case, what for) leads every log line."""
        body = {"model": self.model, **payload}
        size = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
        if size > MAX_REQUEST_BYTES:
            self.stats["failed"] += 1
            self._log({**tag, "event": "refused", "error": f"request of {size} bytes is over {MAX_REQUEST_BYTES}"})
            return Answer(None, None, f"request of {size} bytes is over the {MAX_REQUEST_BYTES}-byte bound", 0, "",
                          False)
        last_error: str | None = None
        http_failed = False
        content: str | None = None
        first_sha = ""
        any_cached = False
        for attempt in range(1, self.max_attempts + 1):
            blob = json.dumps({"base_url": sanitize_url(self.base_url), "request": body, "attempt": attempt},
                              sort_keys=True, ensure_ascii=False)
            sha = sha256_bytes(blob.encode("utf-8"))
            first_sha = first_sha or sha
            content = self._cached(sha)
            if content is not None:
                any_cached = True
                self.stats["cached"] += 1
                self._log({**tag, "event": "cached", "attempt": attempt, "request_sha256": sha})
            else:
                if http_failed and self.backoff_s:
                    time.sleep(self.backoff_s * (attempt - 1))
                self.stats["requests"] += 1
                ex = self.client.complete(body)
                content = None if ex.content is None else redact_all(ex.content, self._key)
                self._log({**tag, "event": "exchange", "attempt": attempt, "request_sha256": sha, "request": body,
                           "status": ex.status, "reply": content, "error": ex.error})
                if content is None:
                    last_error = ex.error or "no reply"
                    http_failed = True
                    continue
                http_failed = False
                atomic_write_text(self._cache_file(sha),
                                  redact_all(json.dumps({"request_sha256": sha, "content": content},
                                                        ensure_ascii=False), self._key) + "\n", private=True)
            parsed = accept(content)
            if parsed is not None:
                return Answer(parsed, content, None, attempt, first_sha, any_cached)
            last_error = "reply does not parse"
        self.stats["failed"] += 1
        return Answer(None, content, last_error, self.max_attempts, first_sha, any_cached)
