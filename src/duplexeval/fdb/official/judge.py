"""The interruption judge: an OpenAI-compatible chat-completions client (stdlib only) and its prompt.

stdlib `urllib` instead of the `openai` package: we need bounded reads, no redirects (the key must
never follow one to another host) and a loopback-testable client with no extra dependency.
The official prompt is never shipped: it is read from a local checkout (`--reference-source`).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError, RefusalError
from duplexeval.fdb.official.interruption import Rating
from duplexeval.jsonio import dumps_line, sha256_bytes

OFFICIAL_MODEL = "gpt-4-turbo"
OFFICIAL_SEED = 0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
MAX_ATTEMPTS = 3
DEFAULT_TIMEOUT_S = 60.0
MAX_RESPONSE_BYTES = 1 << 20  # a chat reply is a few KB; refuse anything over 1 MiB
MAX_LOGGED_ERROR_BODY = 2000  # characters of an error body kept in the log
JUDGE_LOG = "judge-log.jsonl"
RATING_FILE = "rating.json"

# Where the official evaluator lives in a checkout: v1.0 layout first, then HEAD's.
OFFICIAL_EVALUATOR_PATHS = ("evaluation/eval_user_interruption.py", "v1_v1.5/evaluation/eval_user_interruption.py")

# The reply format both prompts ask for: an "Analysis:" paragraph, then the fixed rating sentence.
# The last match wins and the reply gets a trailing newline first, as in the official parser.
_REPLY = re.compile(r"Analysis:\s*(?P<analysis>.*?)\nI would rate the AI's response as (?P<rating>\d+)", re.DOTALL)


def parse_reply(text: str) -> tuple[str, int] | None:
    """(analysis, rating) from a judge reply, or None when it does not follow the format."""
    found: tuple[str, int] | None = None
    for m in _REPLY.finditer(text + "\n"):
        found = (m.group("analysis").strip(), int(m.group("rating")))
    return found


# ---------------------------------------------------------------------------------------------
# Prompts


@dataclass(frozen=True)
class Prompt:
    """A system message and a user-message template with three slots: context, interrupt, response."""

    source: str  # "official" (read from a checkout) or "duplexeval"
    system: str
    user_parts: tuple[str | int, ...]  # literal text, or slot index 0/1/2
    file: str | None = None
    file_sha256: str | None = None

    def user(self, context: str, interrupt: str, response: str) -> str:
        values = (context, interrupt, response)
        return "".join(p if isinstance(p, str) else values[p] for p in self.user_parts)

    @property
    def sha256(self) -> str:
        """Hash of the prompt itself (system text and user template), independent of the file around it."""
        blob = json.dumps({"system": self.system, "user": list(self.user_parts)}, ensure_ascii=False)
        return sha256_bytes(blob.encode("utf-8"))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "sha256": self.sha256, "file": self.file, "file_sha256": self.file_sha256}


OUR_SYSTEM = """You judge one moment of a spoken conversation between a user and an AI voice assistant.
The user spoke first and the AI began to answer. While the AI was still talking, the user cut in
with a new turn. You will see the user's first turn, the interrupting turn, and what the AI said
after the interruption.

Rate how well the AI's words after the interruption respond to the interrupting turn, on a scale
from 0 (worst) to 5 (best):
0 = nothing to do with the interrupting turn
1 = unrelated to it
2 = only loosely related to it
3 = related to it
4 = closely related to it
5 = fully responsive to it

First give a short analysis of the interrupting turn and the AI's reply. Then answer in exactly
this format, the second line holding a single integer:
Analysis: <your analysis>
I would rate the AI's response as <rating>"""

OUR_PROMPT = Prompt(
    source="duplexeval",
    system=OUR_SYSTEM,
    user_parts=("User's first turn: ", 0, "\nUser's interrupting turn: ", 1, "\nAI's reply after the interruption: ", 2, "\n"),
)


def _find_assign(func: ast.AST, name: str) -> ast.expr | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
    return None


def load_official_prompt(reference_source: str | Path) -> Prompt:
    """Read the judge prompt from a local checkout of the official repository (parsed, never executed)."""
    root = Path(reference_source)
    path = next((root / p for p in OFFICIAL_EVALUATOR_PATHS if (root / p).is_file()), None)
    if path is None:
        raise InputError(
            f"{root}: --reference-source must be a checkout of DanielLin94144/Full-Duplex-Bench "
            f"(looked for {' or '.join(OFFICIAL_EVALUATOR_PATHS)})"
        )
    data = path.read_bytes()
    try:
        module = ast.parse(data.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot parse the official evaluator: {exc}") from None
    func = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "eval_user_interruption"), None)
    if func is None:
        raise InputError(f"{path}: no function eval_user_interruption; not the v1.0 official evaluator")
    system = _find_assign(func, "system_msg")
    user = _find_assign(func, "user_msg")
    if not (isinstance(system, ast.Constant) and isinstance(system.value, str)):
        raise InputError(f"{path}: system_msg is not a plain string literal; cannot read the official prompt")
    if not isinstance(user, ast.JoinedStr):
        raise InputError(f"{path}: user_msg is not an f-string; cannot read the official prompt")
    parts: list[str | int] = []
    slot = 0
    for v in user.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(v.value)
        elif isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None and slot < 3:
            parts.append(slot)  # in file order: context, interrupt, response
            slot += 1
        else:
            raise InputError(f"{path}: user_msg has an unexpected part; cannot read the official prompt")
    if slot != 3:
        raise InputError(f"{path}: user_msg has {slot} fields, expected 3 (context, interrupt, response)")
    return Prompt("official", system.value, tuple(parts), str(path), sha256_bytes(data))


# ---------------------------------------------------------------------------------------------
# HTTP


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: it would carry the Authorization header to wherever it points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201
        return None


@dataclass(frozen=True)
class Exchange:
    """One HTTP round trip: the reply text, or why there is none."""

    status: int | None
    content: str | None
    error: str | None


def sanitize_url(url: str) -> str:
    """The base URL without user info, query or fragment (safe to write to a file)."""
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


class ChatClient:
    """POST {base_url}/chat/completions with a bounded read and a timeout; never raises for HTTP trouble."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S, max_bytes: int = MAX_RESPONSE_BYTES):
        scheme = urllib.parse.urlsplit(base_url).scheme
        if scheme not in ("http", "https"):
            raise InputError(f"--base-url {sanitize_url(base_url)!r}: must be an http:// or https:// URL")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._key = api_key
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self._opener = urllib.request.build_opener(_NoRedirect)

    def _read_bounded(self, fh: Any, deadline: float) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reply not complete within {self.timeout_s:g} s")
            block = fh.read(65536)
            if not block:
                return b"".join(chunks)
            total += len(block)
            if total > self.max_bytes:
                raise ValueError(f"reply larger than {self.max_bytes} bytes")
            chunks.append(block)

    def complete(self, payload: dict[str, Any]) -> Exchange:
        """Send one chat-completions request; the reply's first choice text, or an error description."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                status = resp.status
                raw = self._read_bounded(resp, deadline)
        except urllib.error.HTTPError as exc:
            try:
                text = self._read_bounded(exc, deadline).decode("utf-8", "replace")
            except Exception:  # noqa: BLE001 - the status alone is enough to report
                text = ""
            return Exchange(exc.code, None, f"HTTP {exc.code}: {self.redact(text[:MAX_LOGGED_ERROR_BODY])}")
        except (TimeoutError, socket.timeout):
            return Exchange(None, None, f"timed out after {self.timeout_s:g} s")
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                return Exchange(None, None, f"timed out after {self.timeout_s:g} s")
            return Exchange(None, None, f"connection failed: {self.redact(str(reason))}")
        except (ValueError, OSError) as exc:
            return Exchange(None, None, self.redact(str(exc)))
        try:
            obj = json.loads(raw.decode("utf-8"))
            content = obj["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
            return Exchange(status, None, "reply is not a chat completion: " + self.redact(raw[:MAX_LOGGED_ERROR_BODY].decode("utf-8", "replace")))
        if not isinstance(content, str):
            return Exchange(status, None, "reply has no text content")
        return Exchange(status, self.redact(content), None)

    def redact(self, text: str) -> str:
        """Remove the key, in every encoding it may come back in, from anything that might be logged."""
        return redact_secret(text, self._key)


def secret_variants(secret: str) -> list[str]:
    """The forms a secret can take in text we log: raw, JSON-escaped (once and twice, ASCII or not), URL-encoded."""
    if not secret:
        return []
    forms = {secret}
    for _ in range(2):  # a JSON body echoed inside a JSON log line is escaped twice
        for s in list(forms):
            forms.add(json.dumps(s, ensure_ascii=False)[1:-1])
            forms.add(json.dumps(s, ensure_ascii=True)[1:-1])
    for s in (secret, *list(forms)):
        forms.add(urllib.parse.quote(s, safe=""))
        forms.add(urllib.parse.quote_plus(s, safe=""))
    return sorted(forms, key=len, reverse=True)


def redact_secret(text: str, secret: str) -> str:
    """`text` with every variant of `secret` replaced by [redacted] (longest first)."""
    for form in secret_variants(secret):
        text = text.replace(form, "[redacted]")
    return text


# ---------------------------------------------------------------------------------------------
# Judging


@dataclass
class JudgeConfig:
    """How the judge runs; the key itself is read from the environment variable `api_key_env`."""

    model: str = OFFICIAL_MODEL
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_API_KEY_ENV
    seed: int = OFFICIAL_SEED
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = MAX_ATTEMPTS
    reference_source: str | None = None


def check_timeout(timeout_s: object) -> float:
    """`--judge-timeout` must be a positive, finite number of seconds."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise InputError(f"--judge-timeout must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def judge_label(prompt: Prompt, model: str, seed: int) -> str:
    """`official` only for the official prompt, gpt-4-turbo and seed 0; else the judge's model (spec 000)."""
    if prompt.source == "official" and model == OFFICIAL_MODEL and seed == OFFICIAL_SEED:
        return "official"
    if prompt.source == "official":
        return model
    return f"{model} (duplexeval prompt)"


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
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        if config.api_key_env and not key:
            raise RefusalError(
                f"--judge openai needs an API key in the environment variable {config.api_key_env} "
                "(set it to any value for a server that needs none, or name another with --api-key-env)"
            )
        prompt = load_official_prompt(config.reference_source) if config.reference_source else OUR_PROMPT
        client = ChatClient(config.base_url, key, config.timeout_s)
        return cls(config, prompt, client, Path(tree) / JUDGE_LOG)

    @property
    def label(self) -> str:
        return judge_label(self.prompt, self.config.model, self.config.seed)

    def signature(self) -> dict[str, Any]:
        """Everything that determines the ratings (never the key)."""
        return {
            "label": self.label,
            "mode": "openai",
            "model": self.config.model,
            "seed": self.config.seed,
            "base_url": sanitize_url(self.config.base_url),
            "prompt": self.prompt.to_json(),
            "max_attempts": self.config.max_attempts,
        }

    def payload(self, context: str, interrupt: str, response: str) -> dict[str, Any]:
        """The request body: model, one system and one user message, seed; default temperature (not sent)."""
        return {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": self.prompt.system},
                {"role": "user", "content": self.prompt.user(context, interrupt, response)},
            ],
            "seed": self.config.seed,
        }

    def _log(self, record: dict[str, Any]) -> None:
        line = self.client.redact(dumps_line(record))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(line)

    def log_run_start(self, subset: str) -> None:
        self._log({"event": "run", "subset": subset, "judge": self.signature()})

    def rate(self, key: str, sample_dir: Path, context: str, interrupt: str, response: str) -> Rating:
        """Rate one takeover; reuse `rating.json` when it was made from the very same request."""
        payload = self.payload(context, interrupt, response)
        request_sha = sha256_bytes(
            json.dumps({"request": payload, "base_url": sanitize_url(self.config.base_url)}, ensure_ascii=False).encode("utf-8")
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
    from duplexeval.jsonio import write_json

    write_json(
        path,
        {
            "analysis": rating.analysis,
            "rating": rating.rating,
            "duplexeval": {"judge": label, "request_sha256": request_sha, "attempts": rating.attempts},
        },
    )


RateFn = Callable[[str, Path, str, str, str], Rating]
