"""What each command reads and writes, so that `overwrite.check_outputs` runs before any command's work.

A command's `Path` parameters are its inputs, except its outputs: a parameter named `out` (or ending
in `_out`) or spelled `--out`, `--json`, `--rows`; a value `-` is standard output. The tables below say
only what that rule cannot see: which outputs are folders (and which names a command writes in one),
which inputs a command also writes into (the tree a stage adds its files to), and files written beside
an output. Text parameters named `dataset` or `script`, in any command, are inputs when they name an
existing path (`--dataset` is a folder or `demo`).
tests/test_overwrite_cli.py tries every output of every command against every input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from duplexeval.overwrite import Input, Output

Command = tuple[str, str]  # (group, command); root commands are in the group "duplexeval"

OUTPUT_FLAGS = ("--out", "--json", "--rows", "-o")

# Output folders, with the names the command writes in each (None: the command owns the whole folder).
FOLDER_OUTPUTS: dict[Command, dict[str, tuple[str, ...] | None]] = {
    ("duplexeval", "demo"): {"out": None},
    ("fdb", "synth"): {"out": None},
    ("fdb", "export"): {"out": None},
    ("fdb", "reference-export"): {"out": None},
    ("fdb", "import"): {"out": None},
    # = duplexeval.eot.kinds.SWEEP_FILES (a test keeps them equal): importing it loads duplexeval.eot's API, ~150 ms
    ("eot", "sweep"): {"out": ("summary.json", "sweep.parquet", "pareto.png", "operating_points.png")},
    ("eot", "demo"): {"out": None},
    ("controller", "label"): {"out": None},
    ("controller", "run"): {"out": None},
    ("controller", "demo"): {"out": None},
    ("dialogue", "run"): {"out": None},
    ("dialogue", "demo"): {"out": None},
}

# Inputs the command also writes into, with the names it writes there (an output may lie inside, elsewhere).
_TREE_ASR = ("asr.json", ".asr-progress", "*/*/output.json")
_TREE_EVALUATE = ("summary.json", "judge-log.jsonl", "behavior-judge-log.jsonl", "*/*/rating.json",
                  "*/*/content_tag.json")
OWNED_INPUTS: dict[Command, dict[str, tuple[str, ...]]] = {
    ("fdb", "asr"): {"tree": _TREE_ASR},
    ("fdb", "reference-asr"): {"tree": _TREE_ASR},
    ("fdb", "score"): {"tree": ("unified.json", "unified-samples.jsonl", "unified-sensitivity.json")},
    ("fdb", "unified-score"): {"tree": ("unified.json", "unified-samples.jsonl", "unified-sensitivity.json")},
    ("fdb", "evaluate"): {"tree": _TREE_EVALUATE},
    ("fdb", "reference-evaluate"): {"tree": _TREE_EVALUATE},
    ("fdb", "replay"): {"tree": ("manifest.json", "*/*/output.wav", "*/*/trace.json")},
    ("dialogue", "score"): {"run": ("dialogue.json", "judgements.jsonl", "judge-log.jsonl")},
}

# Text parameters, in any command, that name an input path when a file or folder of that name exists
# (`--dataset` is a folder or `demo`, a synth script a file or `demo`).
PATH_TEXT_INPUTS: tuple[str, ...] = ("dataset", "script")

# Files a command writes beside an output.
COMPANIONS: dict[Command, dict[str, Callable[[Path], list[Path]]]] = {
    ("eot", "predict"): {"out": lambda p: [p.with_suffix(".jsonl"), p.with_name(p.name + ".journal.jsonl")]},
}

# An option that, when set, means the outputs are not written.
NO_WRITE = "no_write"


def is_output(param: Any) -> bool:
    """The naming rule above: an output parameter (when it is a path)."""
    name = param.name or ""
    return name == "out" or name.endswith("_out") or any(o in OUTPUT_FLAGS for o in param.opts)


def option_label(param: Any) -> str:
    """How the user spelled the parameter: its long flag, or its name in capitals for an argument."""
    flags = [o for o in param.opts if o.startswith("--")] or [o for o in param.opts if o.startswith("-")]
    return flags[0] if flags else (param.name or "").upper()


def _paths(value: object) -> list[Path]:
    if value is None or isinstance(value, bool):
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    return [Path(str(v)) for v in values if str(v) not in ("", "-")]


def roles(command: Command, params: list[Any], values: Mapping[str, object], is_path: Callable[[Any], bool]
          ) -> tuple[list[Output], list[Input]]:
    """The outputs and inputs of one invocation of `command` (its click parameters and parsed values)."""
    folders = FOLDER_OUTPUTS.get(command, {})
    owned = OWNED_INPUTS.get(command, {})
    companions = COMPANIONS.get(command, {})
    outputs: list[Output] = []
    inputs: list[Input] = []
    skip_outputs = bool(values.get(NO_WRITE))
    for param in params:
        name = param.name or ""
        label = option_label(param)
        if name in PATH_TEXT_INPUTS:
            inputs += [Input(label, p) for p in _paths(values.get(name)) if p.exists()]
            continue
        if not is_path(param):
            continue
        paths = _paths(values.get(name))
        if is_output(param) or name in folders:
            if skip_outputs:
                continue
            for p in paths:
                folder = name in folders
                outputs.append(Output(label, p, folder, folders.get(name)))
                outputs += [Output(label, c, beside=p) for c in (companions[name](p) if name in companions else [])]
        else:
            inputs += [Input(label, p, owned.get(name)) for p in paths]
    return outputs, inputs
