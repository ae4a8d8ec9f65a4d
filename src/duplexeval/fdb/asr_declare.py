"""`fdb asr --backend import --declare ...`: which ASR made the imported transcripts, per subset, and the
signature asr.json records for them (the user's declaration, never guessed)."""

from __future__ import annotations

from duplexeval import __version__
from duplexeval.errors import InputError
from duplexeval.fdb.tree import SUBSETS
from duplexeval.jsontypes import JsonObject


def parse_declare(declare: str | list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """`--declare NAME` (every subset) and/or `--declare SUBSET=NAME` (repeatable) -> {subset or "*": name}."""
    items = [declare] if isinstance(declare, str) else list(declare or [])
    out: dict[str, str] = {}
    for item in items:
        subset, sep, name = item.partition("=") if "=" in item else ("*", "", item)
        name, subset = name.strip(), subset.strip()
        if sep and subset not in SUBSETS:
            raise InputError(f"--declare {item!r}: unknown subset {subset!r}; subsets: {', '.join(SUBSETS)}")
        if not name:
            raise InputError(f"--declare {item!r}: give the ASR's name, e.g. parakeet-tdt-0.6b-v2")
        if subset in out and out[subset] != name:
            what = "every subset" if subset == "*" else subset
            raise InputError(f"--declare: two names for {what} ({out[subset]!r}, {name!r})")
        out[subset] = name
    return out


def declared_per_subset(declared: dict[str, str], subsets: list[str]) -> dict[str, str]:
    """The declared ASR of each subset in the tree; refuses a subset that no --declare covers."""
    per = {}
    for subset in subsets:
        name = declared.get(subset, declared.get("*"))
        if name is None:
            raise InputError(f"--declare: no ASR named for subset {subset}; add --declare {subset}=NAME "
                             "(or --declare NAME for every subset)")
        per[subset] = name
    return per


def import_signature(per_subset: dict[str, str]) -> JsonObject:
    """The backend signature of imported transcripts (asr.json's `backend`, as written): the declared name(s), the
    source, the checks applied."""
    names = sorted(set(per_subset.values()))
    sig: JsonObject = {
        "name": names[0] if len(names) == 1 else "; ".join(f"{s}={n}" for s, n in per_subset.items()),
        "source": "import",
        "declared_by": "user (--declare)",
        "packages": {"duplexeval": __version__},
        "options": {"validation": "finite starts, null or finite ends, start <= end, inside [0, T]"},
    }
    if len(names) > 1:
        sig["per_subset"] = dict(per_subset)
    return sig
