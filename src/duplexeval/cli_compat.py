"""Old spellings of the command line, kept working for one release: rewritten to the new grammar before parsing.

docs/cli.md is the grammar; `DEPRECATED` lists every spelling it replaced and what each became. `rewrite`
turns a command line that uses one into the new spelling and returns a note per old spelling used, which
`cli.main` prints on stderr (`duplexeval: note: OLD is deprecated; use NEW`). The commands themselves only
know the new grammar. The whole table goes in the next release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from duplexeval.specs import with_params

Kind = Literal["to_positional", "bare_json", "into_spec", "rename", "positional_to_option", "drop"]


@dataclass(frozen=True)
class Old:
    """One old spelling: `old` on `commands` becomes what `kind` says (`use` is the note's wording)."""

    commands: tuple[str, ...]
    old: str  # an option ("--tree") or, for positional_to_option, the positional's name ("CONTROLLER")
    kind: Kind
    use: str
    target: str = ""  # the new option (into_spec, rename, positional_to_option); "@0": the first positional
    key: str = ""  # into_spec: the parameter the value becomes ("" when the value is key=value already)
    default: str | None = None  # into_spec: the target's value when the line has none (None: drop the old option)
    index: int = 0  # positional_to_option: which positional argument of the old grammar


TREE_STAGES = ("fdb asr", "fdb reference-asr", "fdb evaluate", "fdb reference-evaluate", "fdb score",
               "fdb unified-score", "fdb replay")

ASR = ("fdb asr", "fdb reference-asr")
EVALUATE = ("fdb evaluate", "fdb reference-evaluate")
_FDB_JUDGE = (("--judge-model", "model"), ("--base-url", "base_url"), ("--api-key-env", "api_key_env"),
              ("--judge-seed", "seed"), ("--judge-timeout", "timeout_s"))
_DIALOGUE_JUDGE = (("--judge-model", "model"), ("--judge-base-url", "base_url"), ("--api-key-env", "api_key_env"),
                   ("--cache-dir", "cache_dir"), ("--attempts", "attempts"), ("--timeout-s", "timeout_s"))

DEPRECATED: tuple[Old, ...] = (
    Old(TREE_STAGES, "--tree", "to_positional", "the positional TREE, e.g. `duplexeval fdb score TREE`"),
    Old(ASR, "--model", "into_spec", "--backend NAME:model=PATH", "--backend", "model", "whisper-align"),
    Old(ASR, "--device", "into_spec", "--backend NAME:device=DEVICE", "--backend", "device", "whisper-align"),
    Old(ASR, "--no-progress", "rename", "-q / --quiet", "--quiet"),
    *(Old(EVALUATE, old, "into_spec", f"--judge openai:{key}=...", "--judge", key) for old, key in _FDB_JUDGE),
    Old(("fdb score", "fdb unified-score", "fdb compare", "fdb asr-compare"), "--json", "bare_json", "--json -"),
    Old(("fdb asr-compare",), "--out", "rename", "--json PATH", "--json"),
    Old(("dialogue run",), "--param", "into_spec", "--system NAME:key=value,...", "--system"),
    *(Old(("dialogue score",), old, "into_spec", f"--judge openai:{key}=...", "--judge", key)
      for old, key in _DIALOGUE_JUDGE),
    Old(("eot predict",), "SPANS", "positional_to_option", "--spans SPANS", "--spans"),
    Old(("eot predict",), "--option", "into_spec", "--detector NAME:key=value,...", "--detector"),
    Old(("controller run",), "CONTROLLER", "positional_to_option", "--controller SPEC", "--controller"),
    Old(("controller run",), "OUT", "positional_to_option", "--out DIR", "--out", index=1),
    Old(("controller label", "controller demo"), "OUT", "positional_to_option", "--out DIR", "--out"),
    Old(("controller run",), "--option", "into_spec", "--controller NAME:key=value,...", "--controller"),
    Old(("controller bench",), "--option", "into_spec", "SPEC as NAME:key=value,...", "@0"),
    Old(("eot demo",), "--no-force", "drop", "nothing (a rerun reuses its own files; --force redoes them)"),
)


@dataclass
class _Item:
    flag: str | None  # None: a positional argument
    value: str | None = None
    position: int | None = None  # a positional's index on the original command line


def _command_path(args: list[str], tree: Any) -> tuple[str, Any, int] | None:
    """("group command", the click command, index of its first own argument), or None at the root."""
    node, words, i = tree, list[str](), 0
    while i < len(args):
        tok = args[i]
        i += 1
        if tok.startswith("-"):
            continue
        subs = getattr(node, "commands", None)
        if not isinstance(subs, dict) or tok not in subs:
            return None
        node, words = subs[tok], [*words, tok]
        if not isinstance(getattr(node, "commands", None), dict):
            return " ".join(words), node, i
    return None


def _value_options(cmd: Any, old: tuple[Old, ...]) -> set[str]:
    """The options of `cmd` (new and old spellings) that take a value."""
    takes = {o for p in cmd.params if getattr(p, "param_type_name", "") == "option"
             and not p.is_flag and not getattr(p, "count", False) for o in p.opts}
    takes |= {e.old for e in old if e.kind in ("to_positional", "into_spec", "rename")}
    return takes


def _long_names(cmd: Any) -> dict[str, str]:
    """Every option spelling of `cmd` -> its first long name (so `-d` and `--detector` are one option)."""
    out: dict[str, str] = {}
    for p in cmd.params:
        if getattr(p, "param_type_name", "") != "option":
            continue
        long = next((o for o in p.opts if o.startswith("--")), p.opts[0])
        out.update({o: long for o in p.opts})
    return out


def _legacy_bare_json(nxt: str | None) -> bool:
    """`--json` used as the old flag: nothing follows, another option follows, or a folder (a tree) follows."""
    return nxt is None or (nxt.startswith("-") and nxt != "-") or Path(nxt).is_dir()


def _items(rest: list[str], takes: set[str], bare_json: bool) -> list[_Item]:
    items: list[_Item] = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if tok == "--":
            for t in rest[i:]:
                items.append(_Item(None, t, sum(it.position is not None for it in items)))
            break
        if not tok.startswith("-") or tok == "-":
            items.append(_Item(None, tok, sum(it.position is not None for it in items)))
            continue
        flag, eq, value = tok.partition("=")
        if eq and flag.startswith("--"):
            items.append(_Item(flag, value))
        elif flag == "--json" and bare_json and _legacy_bare_json(rest[i] if i < len(rest) else None):
            items.append(_Item("--json", None))  # marked: the old flag form
        elif flag in takes and i < len(rest):
            items.append(_Item(flag, rest[i]))
            i += 1
        else:
            items.append(_Item(tok))
    return items


def _serialize(items: list[_Item]) -> list[str]:
    opts = [t for it in items if it.flag is not None for t in ((it.flag,) if it.value is None else (it.flag, it.value))]
    pos = [str(it.value) for it in items if it.flag is None]
    return [*opts, *(["--"] if any(p.startswith("-") and p != "-" for p in pos) else []), *pos]


def _apply(e: Old, items: list[_Item], notes: list[str]) -> list[_Item]:
    used = [it for it in items if it.flag == e.old] if e.kind != "positional_to_option" else []
    if e.kind == "positional_to_option":
        it = next((it for it in items if it.flag is None and it.position == e.index), None)
        if it is None or any(other.flag == e.target for other in items):
            return items  # given both ways: the positional stays, and the parser says it is one too many
        it.flag, it.position = e.target, None
        notes.append(f"a positional {e.old} is deprecated; use {e.use}")
        return items
    if e.kind == "bare_json":
        legacy = [it for it in used if it.value is None]
        for it in legacy:
            it.value = "-"
        if legacy:
            notes.append(f"--json without a value is deprecated; use {e.use}")
        return items
    if not used:
        return items
    notes.append(f"{e.old} is deprecated; use {e.use}")
    if e.kind == "drop":
        return [it for it in items if it not in used]
    if e.kind == "rename":
        for it in used:
            it.flag = e.target
        return items
    if e.kind == "to_positional":
        return [*(it for it in items if it not in used), *(_Item(None, it.value) for it in used)]
    # into_spec: the old values become parameters of the target's spec
    kept = [it for it in items if it not in used]
    params = [str(it.value) if not e.key else f"{e.key}={it.value}" for it in used]
    if e.target.startswith("@"):
        pos = [it for it in kept if it.flag is None]
        target = pos[int(e.target[1:])] if len(pos) > int(e.target[1:]) else None
    else:
        target = next((it for it in reversed(kept) if it.flag == e.target), None)
    if target is None:
        if e.default is None:
            notes[-1] += f" (ignored: it had no effect without {e.target})"
            return kept
        target = _Item(e.target, e.default)
        kept.append(target)
    target.value = with_params(str(target.value), params)
    return kept


def rewrite(args: list[str], tree: Any) -> tuple[list[str], list[str]]:
    """`args` in the new grammar, and one note per old spelling it used (empty when it used none)."""
    found = _command_path(args, tree)
    if found is None:
        return args, []
    name, cmd, start = found
    old = tuple(e for e in DEPRECATED if name in e.commands)
    if not old:
        return args, []
    bare_json = any(e.kind == "bare_json" for e in old)
    items = _items(args[start:], _value_options(cmd, old), bare_json)
    names = _long_names(cmd)
    for it in items:
        if it.flag is not None:
            it.flag = names.get(it.flag, it.flag)
    notes: list[str] = []
    for e in old:
        items = _apply(e, items, notes)
    if not notes:
        return args, []
    return [*args[:start], *_serialize(items)], notes
