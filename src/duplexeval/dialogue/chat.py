"""`openai-chat`: a dialogue manager behind an OpenAI-compatible chat endpoint, prompted with the
control-token protocol.

At each decision point (a clause boundary or the end of user speech while listening; each user
chunk and the end of speech while the user interrupts it) it sends the dialogue so far and asks for
one control token, optionally followed by the words to say. The virtual clock does not time the
request (the clock's first-token overhead stands for it), so a run is reproducible from the cache.
A reply that does not start with an allowed token is retried a bounded number of times, then
counted as a protocol error and read as "no change".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval.chat_http import sanitize_url
from duplexeval.dialogue.http import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    SYSTEM_FLAGS,
    CachedChat,
    default_cache_dir,
)
from duplexeval.dialogue.protocol import (
    C_LISTEN,
    C_SPEAK,
    S_LISTEN,
    S_SPEAK,
    USER_CHUNK,
    USER_END,
    Action,
    CaseView,
    Event,
)
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject

CHAT_LOG = "chat-log.jsonl"
MAX_REPLY_TOKENS = 200

SYSTEM_PROMPT = """You are the dialogue manager of a full-duplex voice assistant. The user's speech reaches you
as small text pieces from a streaming recogniser (no punctuation), while you may be listening or
speaking. At every step answer with exactly one control token, optionally followed by the words to say:
[C.LISTEN]  keep listening (you are listening)
[S.SPEAK]   start speaking now, then the words you say (you may cut in before the user finishes,
            when what they said is wrong or already clear enough)
[C.SPEAK]   keep speaking (you are speaking), optionally followed by words that replace the rest
            of your current sentence
[S.LISTEN]  stop speaking and listen
Answer with the token first and nothing before it."""


def _timeline(view: CaseView, heard: Sequence[str], said: Sequence[str]) -> str:
    lines = [f"{r.upper()}: {t}" for r, t in view.context]
    if view.family == "UiM":
        lines.append(f"ASSISTANT (speaking now): {view.machine_text}")
        if heard:
            lines.append("USER (talking over you): " + " | ".join(heard))
    elif heard:
        lines.append("USER (still speaking): " + " | ".join(heard))
    if said:
        lines.append("ASSISTANT (you said): " + " ".join(said))
    return "\n".join(lines)


def parse_control(content: str, speaking: bool) -> list[str] | None:
    """[token, words...] if the reply starts with a token allowed in the current state, else None."""
    parts = content.strip().split()
    if not parts:
        return None
    allowed = (C_SPEAK, S_LISTEN) if speaking else (C_LISTEN, S_SPEAK)
    if parts[0] not in allowed:
        return None
    words = [w for w in parts[1:] if w not in (S_SPEAK, S_LISTEN, C_SPEAK, C_LISTEN)]
    return [parts[0], *words[:MAX_REPLY_TOKENS]]


@dataclass
class ChatManager:
    """Settings are the spec's key=value parameters; the key is read from the environment variable `api_key_env`."""

    model: str = ""
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_attempts: int = DEFAULT_ATTEMPTS
    cache_dir: str = ""
    max_tokens: int = 64
    backoff_s: float = DEFAULT_BACKOFF_S
    _chat: CachedChat | None = field(default=None, init=False, repr=False)
    _view: CaseView | None = field(default=None, init=False, repr=False)
    _heard: list[str] = field(default_factory=list, init=False, repr=False)
    _said: list[str] = field(default_factory=list, init=False, repr=False)
    _speaking: bool = field(default=False, init=False, repr=False)
    _errors: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.max_tokens <= 4096:
            raise InputError(f"--system openai-chat: max_tokens={self.max_tokens} must be 1..4096")

    def bind(self, out_dir: Path) -> None:
        """Open the endpoint; the run stage calls this with its output folder (the log goes there)."""
        self._chat = CachedChat(
            self.base_url, self.model, self.api_key_env, "--system openai-chat", Path(out_dir) / CHAT_LOG,
            Path(self.cache_dir) if self.cache_dir else default_cache_dir(), self.timeout_s, self.max_attempts,
            self.backoff_s, SYSTEM_FLAGS,
        )

    def settings(self) -> JsonObject:
        """What determines the decisions (never the key)."""
        return {"model": self.model, "base_url": sanitize_url(self.base_url), "max_attempts": self.max_attempts,
                "max_tokens": self.max_tokens, "prompt_sha256": _prompt_sha()}

    def reset(self, view: CaseView) -> None:
        self._view = view
        self._heard, self._said = [], []
        self._speaking = view.family == "UiM"
        self._errors = 0

    def case_errors(self) -> int:
        """Protocol errors in the last case (replies that never parsed)."""
        return self._errors

    def _decide(self, kind: str) -> list[str]:
        if self._chat is None:
            self.bind(Path("."))
        assert self._chat is not None and self._view is not None
        state = "SPEAKING" if self._speaking else "LISTENING"
        event = "the user stopped speaking" if kind == USER_END else "a new piece of user speech arrived"
        payload = {
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"{_timeline(self._view, self._heard, self._said)}\n\nNow: {event}. You "
                                            f"are {state}."},
            ],
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        speaking = self._speaking
        ans = self._chat.ask(payload, lambda c: parse_control(c, speaking), {"case": self._view.id, "use": "manager"})
        if ans.parsed is None:
            self._errors += 1
            return [C_SPEAK if speaking else C_LISTEN]
        return ans.parsed

    def on_event(self, ev: Event) -> Sequence[Action]:
        assert self._view is not None
        if ev.kind == USER_CHUNK:
            self._heard.append(ev.text)
            ask = (self._speaking and self._view.family == "UiM") or (not self._speaking and ev.clause_end)
        else:
            ask = ev.kind == USER_END and not self._speaking
        if not ask:
            return []
        out = self._decide(ev.kind)
        if out[0] == S_SPEAK:
            self._speaking = True
        elif out[0] == S_LISTEN:
            self._speaking = False
        self._said.extend(out[1:])
        return out


def _prompt_sha() -> str:
    return sha256_bytes(SYSTEM_PROMPT.encode("utf-8"))
