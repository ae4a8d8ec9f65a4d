"""`dict[str, Any]` is spelled once: internal rows are typed records, and a dict of values of any type is named by
what it is (`jsontypes.JsonObject` where JSON is read or written, `jsontypes.Kwargs` for a plugin's arguments)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "duplexeval"
SPELLING = re.compile(r"dict\[\s*str\s*,\s*(typing\.)?Any\s*\]")


def test_dict_of_any_is_spelled_only_in_jsontypes() -> None:
    found = [f"{p.relative_to(SRC)}:{n}" for p in sorted(SRC.rglob("*.py")) if p.name != "jsontypes.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if SPELLING.search(line)]
    assert found == []


def test_the_check_sees_the_spellings_it_forbids() -> None:
    for text in ("x: dict[str, Any]", "dict[str,Any]", "-> dict[ str , typing.Any ]:"):
        assert SPELLING.search(text)
    assert not SPELLING.search("dict[str, int]")
