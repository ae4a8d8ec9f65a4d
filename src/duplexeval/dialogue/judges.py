"""Judges of appropriateness, kept apart from the metrics: ``expected`` (offline, from the cases'
labels) and ``openai`` (an OpenAI-compatible model with a fixed prompt and JSON output).

Only mid-utterance MiU interruptions (timing and content) and UiM replies are judged. A judge that
cannot score a case says why (``judge_error``); the case stays in the counts as unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError

from duplexeval.dialogue.http import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BACKOFF_S,
    DEFAULT_TIMEOUT_S,
    CachedChat,
    default_cache_dir,
)
from duplexeval.dialogue.metrics import ERROR, MID
from duplexeval.dialogue.rows import CaseRow, ErrorRow, Family, MiURow
from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject

JUDGE_LOG = "judge-log.jsonl"
_WORD = re.compile(r"[a-z0-9']+")


JsonScalar: TypeAlias = str | int | float | bool | None


def _score(js: JsonObject, key: str, where: str) -> int | None:
    v = js.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise InputError(f"{where}: verdict '{key}' must be an integer (0 or 1) or null, got {v!r}")
    return v


@dataclass(frozen=True)
class Verdict:
    """MiU: timing and content (0/1); UiM: score (0/1). None where not judged; error says why."""

    timing: int | None = None
    content: int | None = None
    score: int | None = None
    error: str | None = None
    analysis: str = ""

    def to_json(self) -> JsonObject:
        return {"timing": self.timing, "content": self.content, "score": self.score, "judge_error": self.error,
                "analysis": self.analysis}

    @classmethod
    def from_json(cls, js: object, where: str) -> Verdict:
        """A verdict of judgements.jsonl read back (`where` names the file and line)."""
        if not isinstance(js, dict):
            raise InputError(f"{where}: 'verdict' must be an object or null")
        error, analysis = js.get("judge_error"), js.get("analysis", "")
        if (error is not None and not isinstance(error, str)) or not isinstance(analysis, str):
            raise InputError(f"{where}: verdict 'judge_error' and 'analysis' must be strings")
        return cls(_score(js, "timing", where), _score(js, "content", where), _score(js, "score", where), error,
                   analysis)


@dataclass(frozen=True)
class Judgement:
    """One line of judgements.jsonl: the case, its outcome and the judge's verdict (None: not judged)."""

    id: str
    family: Family
    outcome: str
    verdict: Verdict | None

    def to_json(self) -> JsonObject:
        return {"id": self.id, "family": self.family, "outcome": self.outcome,
                "verdict": self.verdict.to_json() if self.verdict else None}

    @classmethod
    def from_json(cls, js: object, where: str) -> Judgement:
        """A parsed line read back; one line naming `where` when it is not a judgement."""
        if not isinstance(js, dict) or not isinstance(js.get("id"), str) or js.get("family") not in ("MiU", "UiM") \
                or not isinstance(js.get("outcome"), str):
            raise InputError(f"{where}: not a judgement row (needs id, family, outcome, verdict)")
        v = js.get("verdict")
        return cls(js["id"], js["family"], js["outcome"], None if v is None else Verdict.from_json(v, where))


@dataclass(frozen=True)
class JudgeIdentity:
    """What determines a judge's verdicts (never a key): its mode, its settings in order, and the SHA-256 of its
    fixed prompts when it has any (the judge's hash in the signature). `to_json()` is the `judge` record of
    judgements.jsonl's header and of dialogue.json."""

    mode: str
    settings: Mapping[str, JsonScalar] = field(default_factory=lambda: MappingProxyType({}))
    prompt_sha256: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"mode": self.mode, **self.settings}
        if self.prompt_sha256 is not None:
            out["prompt_sha256"] = self.prompt_sha256
        return out


class Judge(Protocol):
    """What `score` needs of a judge: a label for its numbers, its identity for the signature, a verdict per row
    (None: the row needs no judging, see `needs_judging`)."""

    @property
    def label(self) -> str: ...

    def identity(self) -> JudgeIdentity: ...

    def judge(self, row: CaseRow) -> Verdict | None: ...


def needs_judging(row: CaseRow) -> bool:
    """Mid-utterance MiU interruptions and every UiM case with an outcome."""
    if isinstance(row, ErrorRow) or row.outcome == ERROR:
        return False
    return row.family == "UiM" or row.outcome == MID


def _norm(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def mentions(reply: str, cues: Sequence[str]) -> bool:
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

    def identity(self) -> JudgeIdentity:
        return JudgeIdentity("expected")

    def judge(self, row: CaseRow) -> Verdict | None:
        if isinstance(row, ErrorRow) or not needs_judging(row):
            return None
        if row.expected is None:
            return Verdict(error="case has no expected labels (use --judge openai)")
        if isinstance(row, MiURow):
            chunk = row.cut_in_chunk
            timing = int(chunk is not None and row.heard_chunks >= chunk + 1)
            return Verdict(timing=timing, content=int(mentions(row.reply, row.expected.reply_cues)))
        behaviour, cues = row.expected.behaviour, row.expected.reply_cues
        yielded = row.outcome == "yielded"
        if behaviour == "continue":
            ok = not yielded
        elif behaviour == "yield":
            ok = yielded and mentions(row.reply, cues)
        else:
            ok = mentions(row.reply, cues)
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


def _schema(model: type[BaseModel], name: str) -> JsonObject:
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


def transcript_text(transcript: Sequence[Sequence[str]]) -> str:
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

    def identity(self) -> JudgeIdentity:
        return JudgeIdentity("openai", MappingProxyType(self.chat.identity()), prompt_sha256())

    def judge(self, row: CaseRow) -> Verdict | None:
        if isinstance(row, ErrorRow) or not needs_judging(row):
            return None
        miu = row.family == "MiU"
        model: type[BaseModel] = _MiUReply if miu else _UiMReply
        payload = {
            "messages": [
                {"role": "system", "content": MIU_PROMPT if miu else UIM_PROMPT},
                {"role": "user", "content": transcript_text(row.transcript)},
            ],
            "temperature": 0,
            "response_format": _schema(model, "miu_verdict" if miu else "uim_verdict"),
        }
        ans = self.chat.ask(payload, lambda c: parse_json_reply(c, model), {"case": row.id, "use": "judge"})
        if ans.parsed is None:
            return Verdict(error=f"judge_error: {ans.error} after {ans.attempts} attempt(s)")
        p = ans.parsed
        if isinstance(p, _MiUReply):
            return Verdict(timing=p.timing, content=p.content, analysis=p.analysis)
        assert isinstance(p, _UiMReply)
        return Verdict(score=p.score, analysis=p.analysis)


JUDGES = ("expected", "openai")


@dataclass(frozen=True)
class JudgeSettings:
    """What a `--judge` spec sets (`openai:model=M,base_url=URL,...`); the rest keep these defaults."""

    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: Path | None = None
    max_attempts: int = DEFAULT_ATTEMPTS
    timeout_s: float = DEFAULT_TIMEOUT_S
    backoff_s: float = DEFAULT_BACKOFF_S

    def make(self, name: str, out_dir: Path) -> Judge:
        """The judge `name` with these settings (`make_judge`)."""
        return make_judge(name, out_dir, model=self.model, base_url=self.base_url, api_key_env=self.api_key_env,
                          cache_dir=self.cache_dir, timeout_s=self.timeout_s, max_attempts=self.max_attempts,
                          backoff_s=self.backoff_s)


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
