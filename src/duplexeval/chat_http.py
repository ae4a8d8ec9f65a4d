"""The project's one OpenAI-compatible chat-completions client (stdlib only) and the key-redaction rules.

Shared by the FDB interruption judge and the dialogue family. stdlib `urllib` instead of the `openai`
package: we need bounded reads, no redirects (the key must never follow one to another host) and a
loopback-testable client with no extra dependency. The key comes only from the environment
(`redaction.secret_from_env`, which registers it), so every file and line the process writes has it
removed in every encoding it can take (`redaction`).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from typing import IO, Protocol

from duplexeval import redaction
from duplexeval.errors import InputError, RefusalError
from duplexeval.jsontypes import JsonObject

DEFAULT_TIMEOUT_S = 60.0
MAX_RESPONSE_BYTES = 1 << 20  # a chat reply is a few KB; refuse anything over 1 MiB
MAX_LOGGED_ERROR_BODY = 2000  # characters of an error body kept in the log


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: it would carry the Authorization header to wherever it points."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        return None


class _Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class Exchange:
    """One HTTP round trip: the reply text, or why there is none."""

    status: int | None
    content: str | None
    error: str | None


def sanitize_url(url: str) -> str:
    """The base URL without user info, query or fragment (safe to write to a file)."""
    return redaction.safe_url(url)


def api_key_from_env(env_name: str, what: str, rename_hint: str = "name another variable") -> str:
    """The key from the environment variable `env_name` ("" when no variable is named); refuse when it is unset.

    `what` names the user of the key in the error ("--judge openai"); `rename_hint` says how to name
    another variable.
    """
    if not env_name:
        return ""
    key = redaction.secret_from_env(env_name)
    if not key:
        raise RefusalError(
            f"{what} needs an API key in the environment variable {env_name} "
            f"(set it to any value for a server that needs none, or {rename_hint})"
        )
    return key


class ChatClient:
    """POST {base_url}/chat/completions with a bounded read and a timeout; never raises for HTTP trouble."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_bytes: int = MAX_RESPONSE_BYTES):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"base_url {sanitize_url(base_url)!r}: must be an http:// or https:// URL with a host")
        try:
            port = parts.port
        except ValueError:
            port = -1
        if port is not None and not 1 <= port <= 65535:
            raise InputError(f"base_url {sanitize_url(base_url)!r}: the port must be a whole number in 1..65535")
        redaction.refuse_url_credentials(base_url, f"base_url {sanitize_url(base_url)}")
        redaction.register(api_key)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._key = api_key
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self._opener = urllib.request.build_opener(_NoRedirect)

    def _read_bounded(self, fh: _Readable, deadline: float) -> bytes:
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

    def complete(self, payload: JsonObject) -> Exchange:
        """Send one chat-completions request; the reply's first choice text, or an error description."""
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                status: int = resp.status
                raw = self._read_bounded(resp, deadline)
        except urllib.error.HTTPError as exc:
            try:
                text = self._read_bounded(exc, deadline).decode("utf-8", "replace")
            except Exception:  # noqa: BLE001 - the status alone is enough to report
                text = ""
            return Exchange(exc.code, None, f"HTTP {exc.code}: {self.redact(text[:MAX_LOGGED_ERROR_BODY])}")
        except TimeoutError:
            return Exchange(None, None, f"timed out after {self.timeout_s:g} s")
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError since 3.10
                return Exchange(None, None, f"timed out after {self.timeout_s:g} s")
            return Exchange(None, None, f"connection failed: {self.redact(str(reason))}")
        except (ValueError, OSError) as exc:
            return Exchange(None, None, self.redact(str(exc)))
        try:
            obj = json.loads(raw.decode("utf-8"))
            content = obj["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
            return Exchange(status, None,
                            "reply is not a chat completion: "
                            + self.redact(raw[:MAX_LOGGED_ERROR_BODY].decode("utf-8", "replace")))
        if not isinstance(content, str):
            return Exchange(status, None, "reply has no text content")
        return Exchange(status, self.redact(content), None)

    def redact(self, text: str) -> str:
        """Remove the key, in every encoding it may come back in, from anything that might be logged."""
        return redact_secret(text, self._key)


def secret_variants(secret: str) -> list[str]:
    """The text forms of a secret that redaction removes (`redaction.forms_of`), longest first."""
    return sorted(redaction.forms_of(secret), key=len, reverse=True)


def redact_secret(text: str, secret: str) -> str:
    """`text` with every form of `secret` (and of every other known secret) replaced by [redacted]."""
    return redaction.redact_with(text, [secret])
