"""The behaviour judge over any OpenAI-compatible chat endpoint: bounded attempts, a journal, no second charge.

Attempt k of a sample sends seed `seed + k - 1` (the official loop's seeds, 1, 2, 3, ..., but at most
`max_attempts` of them, where the official loop retries forever). Every request and answer is appended to the
journal (`behavior-judge-log.jsonl` in the tree; the key is never written). A sample's accepted tags go to its
`content_tag.json` in the official shape plus a `duplexeval` block naming the request that made them; a rerun
reuses them, and also reuses an accepted answer found in the journal (a run killed between the answer and the
file), so nothing already paid for is asked again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duplexeval.chat_http import ChatClient, api_key_from_env, sanitize_url
from duplexeval.errors import InputError
from duplexeval.fdb.official.judge_config import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_TIMEOUT_S,
    MAX_ATTEMPTS,
    JudgeConfig,
)
from duplexeval.fdb.tasks.overlap.behavior import (
    OFFICIAL_FIRST_SEED,
    OFFICIAL_MODEL,
    TAG_FILE,
    BehaviorPrompt,
    parse_reply,
    payload,
    transcripts_sha256,
)
from duplexeval.jsonio import append_text, dumps_line, sha256_bytes, write_json
from duplexeval.jsontypes import JsonObject

JOURNAL = "behavior-judge-log.jsonl"


def behavior_config(*, model: str = OFFICIAL_MODEL, base_url: str = DEFAULT_BASE_URL,
                    api_key_env: str = DEFAULT_API_KEY_ENV, seed: int = OFFICIAL_FIRST_SEED,
                    timeout_s: float = DEFAULT_TIMEOUT_S, max_attempts: int = MAX_ATTEMPTS) -> JudgeConfig:
    """The v1.5 behaviour judge's settings: the interruption judge's `JudgeConfig` (one type for both FDB judges)
    with the v1.5 official model and first seed as defaults. `seed` is the first attempt's seed (attempt k sends
    `seed + k - 1`); `reference_source` is not read here (the stage loads the prompt and passes it)."""
    return JudgeConfig(model=model, base_url=base_url, api_key_env=api_key_env, seed=seed, timeout_s=timeout_s,
                       max_attempts=max_attempts)


@dataclass(frozen=True)
class Verdict:
    """One sample's outcome: the accepted tags (None: the judge failed), attempts used, and why it failed."""

    tags: list[str] | None
    attempts: int
    reused: bool = False
    error: str | None = None
    saved: JsonObject | None = None  # the object the official script would have saved

    def to_json(self) -> JsonObject:
        return {"tags": self.tags, "attempts": self.attempts, "reused": self.reused, "error": self.error}


def label(prompt: BehaviorPrompt, model: str, seed: int) -> str:
    """`official` for the official prompt (by SHA-256), model and first seed; else what differs."""
    if not prompt.official:
        return f"{model} (prompt sha256 {prompt.sha256[:12]}, not the official file)"
    return "official" if (model, seed) == (OFFICIAL_MODEL, OFFICIAL_FIRST_SEED) else f"{model} seed {seed}"


@dataclass(frozen=True)
class BehaviorSignature:
    """Everything that determines the tags (never the key)."""

    label: str
    model: str
    first_seed: int
    max_attempts: int
    base_url: str  # sanitized
    prompt: BehaviorPrompt

    def to_json(self) -> JsonObject:
        return {"label": self.label, "model": self.model, "first_seed": self.first_seed, "seeds": "seed + attempt - 1",
                "max_attempts": self.max_attempts, "base_url": self.base_url, "prompt": self.prompt.to_json()}


@dataclass(frozen=True)
class BehaviorBlock:
    """A judged v1.5 subset's judge block: the judge's signature, the option naming its model, request counts."""

    judge: BehaviorSignature
    stats: dict[str, int]
    model_option: str = "behavior_model"

    def to_json(self) -> JsonObject:
        return {"label": self.judge.label, "mode": "openai", **self.judge.to_json(), "model_option": self.model_option,
                "stats": dict(self.stats)}


@dataclass(frozen=True)
class Answer:
    """An accepted answer found again (content_tag.json or the journal): the saved object and attempts it took."""

    saved: JsonObject
    attempts: int


@dataclass
class BehaviorJudge:
    """Tags samples with up to `max_attempts` requests each, journaling every exchange under `tree`."""

    settings: JudgeConfig
    prompt: BehaviorPrompt
    client: ChatClient
    journal: Path
    stats: dict[str, int] = field(default_factory=lambda: {"requests": 0, "retries": 0, "failed": 0, "reused": 0})
    _answers: dict[str, Answer] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: JudgeConfig, prompt: BehaviorPrompt, tree: Path) -> BehaviorJudge:
        if settings.max_attempts < 1:
            raise InputError(f"judge attempts must be at least 1, got {settings.max_attempts}")
        key = api_key_from_env(settings.api_key_env, "--judge openai", "name another with --api-key-env")
        judge = cls(settings, prompt, ChatClient(settings.base_url, key, settings.timeout_s), Path(tree) / JOURNAL)
        judge._answers = _journal_answers(judge.journal)
        return judge

    @property
    def label(self) -> str:
        return label(self.prompt, self.settings.model, self.settings.seed)

    def signature(self) -> BehaviorSignature:
        s = self.settings
        return BehaviorSignature(self.label, s.model, s.seed, s.max_attempts, sanitize_url(s.base_url), self.prompt)

    def block(self) -> BehaviorBlock:
        """The subset's judge block (summary.json) after the judge ran."""
        return BehaviorBlock(self.signature(), dict(self.stats))

    def _log(self, record: JsonObject) -> None:
        append_text(self.journal, self.client.redact(dumps_line(record)), private=True)  # a remote service's answers

    def request_sha(self, transcripts: Mapping[str, JsonObject]) -> str:
        """What identifies a sample's request (first attempt's body, base URL and attempt bound)."""
        first = payload(self.prompt, transcripts, self.settings.model, self.settings.seed)
        key = {"request": first, "base_url": sanitize_url(self.settings.base_url),
               "max_attempts": self.settings.max_attempts}
        return sha256_bytes(json.dumps(key, ensure_ascii=False, sort_keys=True).encode("utf-8"))

    def judge(self, sample: str, sample_dir: Path, transcripts: Mapping[str, JsonObject]) -> Verdict:
        """Tag one sample; reuse its content_tag.json or a journaled answer made from the same request."""
        rsha = self.request_sha(transcripts)
        cached = _read_tag(sample_dir / TAG_FILE, rsha) or self._answers.get(rsha)
        if cached is not None:
            self.stats["reused"] += 1
            obj, tags, _ = parse_reply(json.dumps(cached.saved))
            v = Verdict(tags, cached.attempts, True, None, obj)
            _write_tag(sample_dir / TAG_FILE, v, rsha, self.label, transcripts_sha256(transcripts))
            self._log({"event": "reused", "sample": sample, "request_sha256": rsha, "tags": tags})
            return v
        error: str | None = None
        s = self.settings
        for attempt in range(1, s.max_attempts + 1):
            body = payload(self.prompt, transcripts, s.model, s.seed + attempt - 1)
            self.stats["requests"] += 1
            if attempt > 1:
                self.stats["retries"] += 1
            ex = self.client.complete(body)
            obj = tags = None
            if ex.content is not None:
                obj, tags, error = parse_reply(ex.content)
            else:
                error = ex.error
            self._log({"event": "exchange", "sample": sample, "request_sha256": rsha, "attempt": attempt,
                       "request": body, "status": ex.status, "reply": ex.content, "error": None if tags else error,
                       "saved": obj if tags else None, "tags": tags})
            if tags is not None:
                v = Verdict(tags, attempt, False, None, obj)
                _write_tag(sample_dir / TAG_FILE, v, rsha, self.label, transcripts_sha256(transcripts))
                return v
        self.stats["failed"] += 1
        return Verdict(None, s.max_attempts, False, error)


def _journal_answers(path: Path) -> dict[str, Answer]:
    """Accepted answers already in the journal, by request: what a killed run paid for."""
    out: dict[str, Answer] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill: that exchange is asked again
        if (isinstance(rec, dict) and rec.get("event") == "exchange" and rec.get("tags")
            and isinstance(rec.get("saved"), dict)):
            out.setdefault(str(rec.get("request_sha256")), Answer(rec["saved"], int(rec.get("attempt", 1))))
    return out


def _read_tag(path: Path, request_sha: str) -> Answer | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    meta = obj.get("duplexeval") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or meta.get("request_sha256") != request_sha:
        return None
    saved = {k: v for k, v in obj.items() if k != "duplexeval"}
    if parse_reply(json.dumps(saved))[1] is None:
        return None
    return Answer(saved, int(meta.get("attempts", 1)))


def _write_tag(path: Path, v: Verdict, request_sha: str, judge_label: str, transcripts_sha: str) -> None:
    """content_tag.json: the object the official script saves, plus which request (and transcripts) made it."""
    assert v.saved is not None
    meta = {"judge": judge_label, "request_sha256": request_sha, "transcripts_sha256": transcripts_sha,
            "attempts": v.attempts}
    # a cache of a remote service's answer, like the journal
    write_json(path, {**v.saved, "duplexeval": meta}, private=True)
