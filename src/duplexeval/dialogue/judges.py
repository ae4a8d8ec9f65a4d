"""Judges of appropriateness, kept apart from the metrics: ``expected`` (offline, from the cases'
labels) and ``openai`` (an OpenAI-compatible model with a fixed prompt and JSON output).

Only mid-utterance MiU interruptions (timing and content) and UiM replies are judged. A judge that
cannot score a case says why (``judge_error``); the case stays in the counts as unknown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from duplexeval.dialogue.http import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    CachedChat,
    default_cache_dir,
)
from duplexeval.dialogue.metrics import MID
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_bytes

JUDGE_LOG = "judge-log.jsonl"
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class Verdict:
    """MiU: timing and content (0/1); UiM: score (0/1). None where not judged; error says why."""

    timing: int | None = None
    content: int | None = None
    score: int | None = None
    error: str | None = None
    analysis: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"timing": self.timing, "content": self.content, "score": self.score, "judge_error": self.error,
                "analysis": self.analysis}


class Judge(Protocol):
    """What `score` needs of a judge: a label for its numbers, its identity for the signature, a verdict per row."""

    @property
    def label(self) -> str: ...

    def identity(self) -> dict[str, Any]: ...

    def judge(self, row: dict[str, Any]) -> Verdict | None: ...


def needs_judging(row: dict[str, Any]) -> bool:
    """Mid-utterance MiU interruptions and every UiM case with an outcome."""
    if row.get("outcome") == "error":
        return False
    return row["family"] == "UiM" or row.get("outcome") == MID


def _norm(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def mentions(reply: str, cues: list[str]) -> bool:
    """True if the reply names any cue as whole words (case-insensitive); no cues: any non-empty reply."""
    r = _norm(reply)
    if not cues:
        return bool(r.strip())
    return any(_norm(c) in r for c in cues if c.strip())


class ExpectedJudge:
    """Scores from the labels: MiU timing is appropriate when the cut-in came after the user had said
    the chunk where cutting in becomes appropriate; content when the reply names a cue word. UiM:
    ``continue`` is right when the machine did not yield; ``yield`` when it yielded and the reply
    names a cue; ``acknowledge`` when the reply names a cue, yielding or not."""

    label = "expected"

    def identity(self) -> dict[str, Any]:
        return {"mode": "expected"}

    def judge(self, row: dict[str, Any]) -> Verdict | None:
        if not needs_judging(row):
            return None
        exp = row.get("expected")
        if not exp:
            return Verdict(error="case has no expected labels (use --judge openai)")
        if row["family"] == "MiU":
            chunk = row.get("cut_in_chunk")
            timing = int(chunk is not None and row["heard_chunks"] >= chunk + 1)
            return Verdict(timing=timing, content=int(mentions(row["reply"], exp["reply_cues"])))
        behaviour = exp["behaviour"]
        yielded = row["outcome"] == "yielded"
        if behaviour == "continue":
            ok = not yielded
        elif behaviour == "yield":
            ok = yielded and mentions(row["reply"], exp["reply_cues"])
        else:
            ok = mentions(row["reply"], exp["reply_cues"])
        return Verdict(score=int(ok))


# ---------------------------------------------------------------------------------------------
# The openai judge


MIU_PROMPT = """You rate one moment of a spoken conversation with a full-duplex voice assistant. The user's
speech reached the assistant in small recognised pieces and the assistant cut in before the user
had finished, so the user's last turn below is incomplete: it is what the user had said when the
assistant started talking. Judge two things, each 0 (inappropriate) or 1 (appropriate):
timing: was cutting in at that point reasonable (the user had made an obvious error, or had said
enough for a useful answer)?
content: is what the assistant said after cutting in a sensible reply to what the user had said?
Answer with a JSON object only: {"analysis": "<one or two sentences>", "timing": 0 or 1, "content": 0 or 1}"""

UIM_PROMPT = """You rate one moment of a spoken conversation with a full-duplex voice assistant. The assistant
was speaking when the user (or something in the user's room) talked over it. Decide whether what the
assistant did next suits the interruption: background noise or talk not meant for the assistant
should be ignored and the assistant should go on; a correction should be addressed; agreement
should be acknowledged; a new question should be answered. The assistant's last line is what it
said after the interruption began (empty if it said nothing new).
Answer with a JSON object only: {"analysis": "<one or two sentences>", "score": 0 or 1}"""


class _MiUReply(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    analysis: str
    timing: Literal[0, 1]
    content: Literal[0, 1]


class _UiMReply(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    analysis: str
    score: Literal[0, 1]


def _schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": model.model_json_schema(), "strict": True}}


def parse_json_reply(content: str, model: type[BaseModel]) -> BaseModel | None:
    """The reply as `model`; a ```json fence is tolerated; anything else that does not validate is None."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return model.model_validate(json.loads(text))
    except (ValueError, ValidationError):
        return None


def transcript_text(transcript: list[list[str]]) -> str:
    """'USER: ...' / 'ASSISTANT: ...' lines, empty turns kept visible."""
    return "\n".join(f"{role.upper()}: {text}" for role, text in transcript)


def prompt_sha256() -> str:
    """SHA-256 of the two fixed judge prompts (in the signature, so a changed prompt is a different judge)."""
    return sha256_bytes(json.dumps({"miu": MIU_PROMPT, "uim": UIM_PROMPT}).encode("utf-8"))


@dataclass
class OpenAIJudge:
    """A model behind an OpenAI-compatible endpoint; every number it produced carries its model name."""

    chat: CachedChat

    @classmethod
    def create(cls, out_dir: Path, model: str, base_url: str, api_key_env: str, *, cache_dir: Path | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, max_attempts: int = DEFAULT_ATTEMPTS,
               backoff_s: float = DEFAULT_BACKOFF_S) -> OpenAIJudge:
        chat = CachedChat(base_url, model, api_key_env, "--judge openai", Path(out_dir) / JUDGE_LOG,
                          cache_dir or default_cache_dir(), timeout_s, max_attempts, backoff_s)
        return cls(chat)

    @property
    def label(self) -> str:
        return f"openai:{self.chat.model}"

    def identity(self) -> dict[str, Any]:
        return {"mode": "openai", **self.chat.identity(), "prompt_sha256": prompt_sha256()}

    def judge(self, row: dict[str, Any]) -> Verdict | None:
        if not needs_judging(row):
            return None
        miu = row["family"] == "MiU"
        model: type[BaseModel] = _MiUReply if miu else _UiMReply
        payload = {
            "messages": [
                {"role": "system", "content": MIU_PROMPT if miu else UIM_PROMPT},
                {"role": "user", "content": transcript_text(row["transcript"])},
            ],
            "temperature": 0,
            "response_format": _schema(model, "miu_verdict" if miu else "uim_verdict"),
        }
        ans = self.chat.ask(payload, lambda c: parse_json_reply(c, model), {"case": row["id"], "use": "judge"})
        if ans.parsed is None:
            return Verdict(error=f"judge_error: {ans.error} after {ans.attempts} attempt(s)")
        p = ans.parsed
        if isinstance(p, _MiUReply):
            return Verdict(timing=p.timing, content=p.content, analysis=p.analysis)
        assert isinstance(p, _UiMReply)
        return Verdict(score=p.score, analysis=p.analysis)


JUDGES = ("expected", "openai")


def make_judge(name: str, out_dir: Path, *, model: str = "", base_url: str = "", api_key_env: str = "OPENAI_API_KEY",
               cache_dir: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
               max_attempts: int = DEFAULT_ATTEMPTS, backoff_s: float = DEFAULT_BACKOFF_S) -> Judge:
    """`expected` or `openai` (which needs model=... and base_url=... in its spec)."""
    if name == "expected":
        return ExpectedJudge()
    if name == "openai":
        if not base_url:
            raise InputError("--judge openai needs base_url=URL, an OpenAI-compatible endpoint: --judge "
                             "openai:model=M,base_url=URL")
        return OpenAIJudge.create(out_dir, model, base_url, api_key_env, cache_dir=cache_dir, timeout_s=timeout_s,
                                  max_attempts=max_attempts, backoff_s=backoff_s)
    raise InputError(f"unknown judge {name!r}; available: {', '.join(JUDGES)}")
