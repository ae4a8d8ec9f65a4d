"""The official v1.5 behaviour judge's request, reply rule and ratios (the prompt itself is never shipped).

The prompt is the official `instruction/behavior.txt` (CC BY-NC, so not copied into duplexeval): it is read at
run time from a local checkout of the official repository or from a file the user gives, and it is the
official prompt only if its SHA-256 is `OFFICIAL_PROMPT_SHA256`. The request is the script's: the prompt as the
system message; as the user message, the four whole transcripts (`input_clean`, `input_noisy`, `output_clean`,
`output_noisy`, each dumped compactly) inside the script's JSON-like frame; model `gpt-4o-2024-08-06`; the seed;
the server's default temperature. The reply rule is the script's: the first `{` that decodes to an object
holding `behaviour`. Our additional rule: the tag list must be a list of the four labels (the script crashes on
a tag not starting with "C" and iterates a string by character).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject

OFFICIAL_PROMPT_SHA256 = "19e5477dac9a9a1e11de126783a0b820b3ecb70db5e91181824fa944e1947977"
OFFICIAL_PROMPT_PATHS = ("v1_v1.5/evaluation/instruction/behavior.txt", "evaluation/instruction/behavior.txt")
OFFICIAL_MODEL = "gpt-4o-2024-08-06"
OFFICIAL_FIRST_SEED = 1
LABELS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")
TAG_FILE = "content_tag.json"
TRANSCRIPTS = (("input_clean", "clean_input.json"), ("input_noisy", "input.json"),
               ("output_clean", "clean_output.json"), ("output_noisy", "output.json"))


@dataclass(frozen=True)
class BehaviorPrompt:
    """The system prompt's text, where it came from, and whether it is the official file (by SHA-256)."""

    text: str
    path: str
    sha256: str

    @property
    def official(self) -> bool:
        return self.sha256 == OFFICIAL_PROMPT_SHA256

    def to_json(self) -> JsonObject:
        return {"path": self.path, "sha256": self.sha256, "official": self.official}


def load_prompt(path: str | os.PathLike[str]) -> BehaviorPrompt:
    """The prompt from a file, or from a checkout of the official repository (its `behavior.txt`)."""
    p = Path(path)
    if p.is_dir():
        found = next((p / rel for rel in OFFICIAL_PROMPT_PATHS if (p / rel).is_file()), None)
        if found is None:
            raise InputError(f"{p}: no {OFFICIAL_PROMPT_PATHS[0]} in this folder (give a checkout of the official "
                             "Full-Duplex-Bench repository, or the prompt file itself)")
        p = found
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read the behaviour prompt ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{p}: the behaviour prompt is not UTF-8 text") from None
    if not text.strip():
        raise InputError(f"{p}: the behaviour prompt is empty")
    return BehaviorPrompt(text, str(p), sha256_bytes(raw))


def compact(obj: Any) -> str:
    """A transcript dumped as the script dumps it: no spaces, non-ASCII kept."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def user_message(transcripts: Mapping[str, JsonObject]) -> str:
    """The script's user message: its frame (newlines and indentation included) around the four transcripts."""
    ic, inn, oc, on = (compact(transcripts[k]) for k, _ in TRANSCRIPTS)
    return (f'\n        {{\n            "input_clean": {ic},\n            "input_noisy": {inn},\n'
            f'            "output_clean": {oc},\n            "output_noisy": {on}\n        }}\n        ')


def transcripts_sha256(transcripts: Mapping[str, JsonObject]) -> str:
    """What identifies the four transcripts a tag was made from (the SHA-256 of the user message they make)."""
    return sha256_bytes(user_message(transcripts).encode("utf-8"))


def payload(prompt: BehaviorPrompt, transcripts: Mapping[str, JsonObject], model: str, seed: int) -> JsonObject:
    """One request body: model, system and user message, seed (no temperature: the server's default)."""
    return {"model": model, "messages": [{"role": "system", "content": prompt.text},
                                         {"role": "user", "content": user_message(transcripts)}], "seed": seed}


def extract(text: str, key: str = "behaviour") -> JsonObject | None:
    """The script's rule: the first `{` that decodes to a JSON object holding `key`; None when there is none."""
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict) and key in obj:
            return obj
        pos = text.find("{", end)
    return None


def parse_reply(text: str) -> tuple[JsonObject | None, list[str] | None, str | None]:
    """(the object the script would save, its tags, why it is refused): tags must be a list of known labels."""
    obj = extract(text)
    if obj is None:
        return None, None, "no JSON object with 'behaviour' in the reply"
    tags = obj["behaviour"]
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        return obj, None, f"'behaviour' must be a non-empty list of labels, got {tags!r}"[:300]
    unknown = [t for t in tags if t not in LABELS]
    if unknown:
        return obj, None, f"unknown label {unknown[0]!r} (expected one of {', '.join(LABELS)})"[:300]
    return obj, list(tags), None


def official_ratios(tag_lists: Sequence[Sequence[str]]) -> dict[str, float]:
    """The script's log: each tag's count over all tags (not samples), keys sorted, unrounded."""
    counts: Counter[str] = Counter(t for tags in tag_lists for t in tags)
    total = sum(counts.values())
    return {t: counts[t] / total for t in sorted(counts)} if total else {}


def rounded(ratios: Mapping[str, float]) -> dict[str, float]:
    """As the log prints them: rounded to 2 places."""
    return {k: round(v, 2) for k, v in sorted(ratios.items())}
