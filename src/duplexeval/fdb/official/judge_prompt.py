"""The interruption judge's prompt: ours, or the official one read from a local checkout, and the reply format.

The official prompt is never shipped: it is parsed (never executed) out of the official evaluator
in a checkout given with `--reference-source`.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from duplexeval.errors import InputError
from duplexeval.jsonio import sha256_bytes
from duplexeval.jsontypes import JsonObject

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

    def to_json(self) -> JsonObject:
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
    user_parts=("User's first turn: ", 0, "\nUser's interrupting turn: ", 1, "\nAI's reply after the interruption: ", 2,
                "\n"),
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
    func = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "eval_user_interruption"),
                None)
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
