"""The one redaction point: the secrets this process knows, removed in every form from all it writes and prints.

A secret reaches the registry three ways: `secret_from_env(NAME)` (the only way code reads a key from the
environment), `register(value)` (what a system declares through `secrets()` or an `Authorization`
header), and `refuse_url_credentials`, which registers a credential it finds in a URL before refusing it.
`jsonio` scrubs every file it writes (`scrub_text`, `scrub_bytes`) and `guard_streams` wraps stdout and
stderr, so every line printed goes through `scrub_text` too.

Forms removed, for each secret `s` (its UTF-8 bytes `b`):
- raw `s`; JSON-escaped once and twice (ASCII-only and not); percent-encoded (`quote`, `quote_plus`,
  upper- and lower-case hex);
- base64 and base64url of `b`, with and without padding, and the same percent-encoded;
- hex of `b`, lower- and upper-case (a server that echoes a value as bytes in hex);
- `b` inside a longer base64 / base64url blob at any offset: for each offset modulo 3, the run of blob
  characters that holds only bits of `b` (the one character at each end of the key's span that mixes
  key bits with the blob's stays: at most 4 + 2 bits of the key);
- a form cut short (a message capped at N characters): any run of at least `PARTIAL_MIN` characters
  that starts a form or ends one.
Not covered: base64 split over lines (MIME wrapping), hex inside a longer hex blob at an odd offset, other encodings of
the key (and
transformations a server might apply). Values shorter than `MIN_SECRET_LEN` are not secrets here (the
docs suggest a placeholder such as `x` for a server that needs no key; redacting it would break files).
Text is redacted with `[redacted]`; binary files (audio, parquet) get the same number of `*` bytes, so
their sizes and offsets stay.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import re
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from duplexeval.errors import InputError

MIN_SECRET_LEN = 8
PARTIAL_MIN = 12  # characters of a form that, at its start or end, are redacted on their own
MARK = "[redacted]"

_LOCK = threading.Lock()
_SECRETS: dict[str, None] = {}  # insertion-ordered set
_TEXT_FORMS: tuple[str, ...] = ()
_BYTE_FORMS: tuple[bytes, ...] = ()


# ---------------------------------------------------------------- the forms of one secret


def _json_forms(s: str) -> set[str]:
    forms = {s}
    for _ in range(2):  # a JSON body echoed inside a JSON log line is escaped twice
        forms |= {json.dumps(f, ensure_ascii=ascii_only)[1:-1] for f in forms for ascii_only in (False, True)}
    return forms


def _percent_forms(s: str) -> set[str]:
    out = set()
    for f in (urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s, safe=""), urllib.parse.quote(s)):
        out.add(f)
        out.add(_lower_hex(f))
    return out


def _lower_hex(s: str) -> str:
    parts = s.split("%")
    return parts[0] + "".join(("%" + p[:2].lower() + p[2:]) for p in parts[1:])


def _b64_cores(b: bytes) -> set[str]:
    """For each offset of `b` modulo 3 inside a longer blob, the blob characters that only `b` determines."""
    out = set()
    for shift, skip in ((0, 0), (1, 2), (2, 3)):
        total = shift + len(b)
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * shift + b).decode("ascii").rstrip("=")
            core = text[skip : len(text) - (1 if total % 3 else 0)]
            if core:
                out.add(core)
    return out


def forms_of(secret: str) -> set[str]:
    """Every text form of `secret` this module removes (see the module docstring)."""
    if not secret:
        return set()
    b = secret.encode("utf-8")
    forms = _json_forms(secret)
    for f in list(forms):
        forms |= _percent_forms(f)
    b64 = set()
    for enc in (base64.b64encode, base64.urlsafe_b64encode):
        full = enc(b).decode("ascii")
        b64 |= {full, full.rstrip("=")}
    b64 |= _b64_cores(b)
    for f in list(b64):
        b64 |= _percent_forms(f)
    hexes = {b.hex(), b.hex().upper()}
    return {f for f in forms | b64 | hexes if f}


def _rebuild() -> None:
    global _TEXT_FORMS, _BYTE_FORMS
    forms: set[str] = set()
    for s in _SECRETS:
        forms |= forms_of(s)
    ordered = sorted(forms, key=lambda f: (-len(f), f))
    _TEXT_FORMS = tuple(ordered)
    _BYTE_FORMS = tuple(f.encode("utf-8") for f in ordered)


# ---------------------------------------------------------------- the registry


def register(*values: str | None) -> None:
    """Add secrets to this process's registry (empty, None and values under MIN_SECRET_LEN are ignored)."""
    new = [v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN and v not in _SECRETS]
    if not new:
        return
    with _LOCK:
        for v in new:
            _SECRETS[v] = None
        _rebuild()


def secret_from_env(name: str) -> str:
    """The value of the environment variable `name` ("" when unset or no name), registered as a secret."""
    if not name:
        return ""
    value = os.environ.get(name, "")
    register(value)
    return value


def register_headers(headers: dict[str, str]) -> None:
    """Register the credential values among HTTP headers (Authorization and any *key*/*token*/*secret* header)."""
    for name, value in headers.items():
        if not _credential_name(name) and name.lower() not in ("authorization", "proxy-authorization", "cookie"):
            continue
        register(value)
        scheme, _, rest = value.partition(" ")
        if rest and scheme.lower() in ("bearer", "basic", "token"):
            register(rest.strip())


def known() -> tuple[str, ...]:
    """The registered secrets (for tests and for handing to a worker process)."""
    return tuple(_SECRETS)


def forget_all() -> None:
    """Empty the registry (tests)."""
    with _LOCK:
        _SECRETS.clear()
        _rebuild()


# ---------------------------------------------------------------- scrubbing


def _scrub(data: Any, forms: tuple[Any, ...], mark: Any, same_length: bool) -> Any:
    for form in forms:
        if form in data:
            data = data.replace(form, mark * len(form) if same_length else mark)
    for form in forms:
        if len(form) > PARTIAL_MIN:
            data = _scrub_partial(data, form, mark, same_length)
    return data


def _scrub_partial(data: Any, form: Any, mark: Any, same_length: bool) -> Any:
    """Runs of at least PARTIAL_MIN characters that start `form` (cut at its end) or end it (cut at its start)."""
    head, tail = form[:PARTIAL_MIN], form[-PARTIAL_MIN:]
    if head not in data and tail not in data:
        return data
    spans: list[tuple[int, int]] = []
    i = data.find(head)
    while i != -1:
        n = PARTIAL_MIN
        while n < len(form) and i + n < len(data) and data[i + n : i + n + 1] == form[n : n + 1]:
            n += 1
        spans.append((i, i + n))
        i = data.find(head, i + n)
    j = data.find(tail)
    while j != -1:
        end = j + PARTIAL_MIN
        n = PARTIAL_MIN
        while n < len(form) and end - n - 1 >= 0 and data[end - n - 1 : end - n] == form[
            len(form) - n - 1 : len(form) - n]:
            n += 1
        spans.append((end - n, end))
        j = data.find(tail, end)
    spans.sort()
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    parts = []
    last = 0
    for a, b in merged:
        parts.append(data[last:a])
        parts.append(mark * (b - a) if same_length else mark)
        last = b
    parts.append(data[last:])
    return data[:0].join(parts)


def scrub_text(text: str) -> str:
    """`text` with every known secret, in every form, replaced by [redacted]."""
    forms = _TEXT_FORMS
    if not forms or not text:
        return text
    return str(_scrub(text, forms, MARK, False))


def scrub_bytes(data: bytes) -> bytes:
    """Bytes with every known secret's forms overwritten by as many `*` bytes (sizes and offsets kept)."""
    forms = _BYTE_FORMS
    if not forms or not data:
        return data
    return bytes(_scrub(bytes(data), forms, b"*", True))


def redact_with(text: str, secrets: Iterable[str | None]) -> str:
    """Register `secrets`, then scrub `text` (for callers holding a key of their own)."""
    register(*secrets)
    return scrub_text(text)


# ---------------------------------------------------------------- URL credentials

_CREDENTIAL_EXACT = frozenset({"key", "sig", "pass", "pwd", "code", "jwt"})
_CREDENTIAL_PARTS = ("token", "secret", "passw", "apikey", "api_key", "auth", "credential", "signature", "session_id")


def _credential_name(name: str) -> bool:
    n = name.strip().lower().replace("-", "_")
    return n in _CREDENTIAL_EXACT or n.endswith("_key") or any(p in n for p in _CREDENTIAL_PARTS)


def url_credentials(url: str) -> list[tuple[str, str]]:
    """(where, value) of each credential a URL carries: userinfo, or a query/fragment parameter by a common name."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        user, _, password = userinfo.partition(":")
        found.append(("user:password@" if password else "user@", urllib.parse.unquote(password or user)))
    for piece in (parts.query, parts.fragment):
        for key, value in urllib.parse.parse_qsl(piece, keep_blank_values=True):
            if _credential_name(key):
                found.append((f"{key}=", value))
    return found


_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_URL_END = re.compile(r"[\s,;'\"]")


def urls_in(text: str) -> list[str]:
    """The URLs inside a text (a `--system` spec, a command-line argument): what the pattern
    ``[A-Za-z][A-Za-z0-9+.-]*://[^\\s,;'"]+`` finds, found from each ``://`` (the pattern itself takes time
    quadratic in a long run of letters, 13 s for one 100,000-character argument)."""
    found: list[str] = []
    floor = pos = 0  # no URL starts before `floor` (the end of the last one found)
    while (sep := text.find("://", pos)) >= 0:
        start = sep
        while start > floor and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < sep and not ("A" <= text[start] <= "Z" or "a" <= text[start] <= "z"):
            start += 1  # a scheme starts with a letter
        if start < sep:  # the body: up to the first delimiter (scanned once: the next search starts after it)
            end_match = _URL_END.search(text, sep + 3)
            end = end_match.start() if end_match else len(text)
            if end > sep + 3:
                found.append(text[start:end])
                floor = pos = end
                continue
        pos = sep + 1
    return found


def register_url_credentials(text: str) -> None:
    """Register every credential carried by a URL inside `text` (before anything can echo it)."""
    for url in urls_in(text):
        register(*(value for _, value in url_credentials(url)))


def refuse_url_credentials(url: str, what: str) -> None:
    """InputError when `url` carries a credential; the value is registered and never echoed."""
    found = url_credentials(url)
    if not found:
        return
    for _, value in found:
        register(value)
    names = ", ".join(dict.fromkeys(w + "..." for w, _ in found))
    raise InputError(f"{what} must not carry a credential ({names}): a URL is written to manifests and logs; "
                     "put the key in an environment variable (api_key_env)")


def safe_url(url: str) -> str:
    """The URL without userinfo, query or fragment (what may be written or printed)."""
    p = urllib.parse.urlsplit(url)
    host = p.netloc.rpartition("@")[2].lower()  # host[:port] as written (p.port raises on a port like 70000 or abc)
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


# ---------------------------------------------------------------- printed lines


class _ScrubbingStream(io.TextIOBase):
    """A text stream that scrubs what it passes on, a line (or a `\\r` progress update) at a time."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._buf = ""
        self._lock = threading.Lock()  # a progress bar refreshes from its own thread

    def write(self, s: str) -> int:
        with self._lock:
            if not _TEXT_FORMS and not self._buf:
                return self._inner.write(s)
            self._buf += s
            cut = max(self._buf.rfind("\n"), self._buf.rfind("\r"))
            if cut >= 0:
                out, self._buf = self._buf[: cut + 1], self._buf[cut + 1 :]
                self._inner.write(scrub_text(out))
            return len(s)

    def flush(self) -> None:
        with self._lock:
            if self._buf:
                out, self._buf = self._buf, ""
                self._inner.write(scrub_text(out))
        self._inner.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return bool(self._inner.isatty())

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._inner, "encoding", "utf-8"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _scrubbing_factory(inner: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = inner(*args, **kwargs)
        if _TEXT_FORMS:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a bad format string: logging reports it itself
                return record
            record.msg, record.args = scrub_text(message), None
        return record

    make.duplexeval_scrubbing = True  # type: ignore[attr-defined]
    return make


@contextmanager
def guard_streams() -> Iterator[None]:
    """While active, everything written to sys.stdout / sys.stderr, and every log record's message (whatever
    handler gets it: a file, a test's capture), is scrubbed. The CLI runs inside this."""
    old_out, old_err = sys.stdout, sys.stderr
    old_factory = logging.getLogRecordFactory()
    sys.stdout = _ScrubbingStream(old_out)
    sys.stderr = _ScrubbingStream(old_err)
    if not getattr(old_factory, "duplexeval_scrubbing", False):
        logging.setLogRecordFactory(_scrubbing_factory(old_factory))
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed pipe: nothing more can be printed anyway
                pass
        sys.stdout, sys.stderr = old_out, old_err
        logging.setLogRecordFactory(old_factory)


def install_stream_guard() -> None:
    """Wrap sys.stdout / sys.stderr and scrub log records for the rest of this process (pool workers)."""
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "duplexeval_scrubbing", False):
        logging.setLogRecordFactory(_scrubbing_factory(factory))
    if not isinstance(sys.stdout, _ScrubbingStream):
        sys.stdout = _ScrubbingStream(sys.stdout)
    if not isinstance(sys.stderr, _ScrubbingStream):
        sys.stderr = _ScrubbingStream(sys.stderr)
