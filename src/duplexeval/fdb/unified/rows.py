"""One line of unified-samples.jsonl as a typed record: the sample, its eligibility and its task's own row.

`SampleRow.to_json()` is the line (the sample's five fields, then the task row's `to_json()`); `from_json` reads one
back, parsing the task's fields with the task's `UnifiedRules.row_from_json`. unified-samples.jsonl is parsed once,
where it is read (`fdb.results`); `fdb compare` and the report get these records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from duplexeval.errors import InputError
from duplexeval.jsontypes import JsonObject


class TaskRow(Protocol):
    """What every task's per-sample row has: its fields of the unified-samples.jsonl line."""

    def to_json(self) -> JsonObject: ...


RowT = TypeVar("RowT", bound=TaskRow)

HEAD = ("subset", "sample_id", "task", "eligible", "reasons")  # the fields every line starts with, in order


@dataclass(frozen=True)
class SampleRow(Generic[RowT]):
    """One selected sample of a scored subset: `row` is its task's row (`UnifiedRules.score`'s record), None for a
    sample not scored (ineligible)."""

    subset: str
    sample_id: str
    task: str
    eligible: bool
    reasons: tuple[str, ...]
    row: RowT | None = None

    def to_json(self) -> JsonObject:
        """The unified-samples.jsonl line: the sample's fields, then the task row's."""
        out: JsonObject = {
            "subset": self.subset,
            "sample_id": self.sample_id,
            "task": self.task,
            "eligible": self.eligible,
            "reasons": list(self.reasons),
        }
        if self.row is not None:
            out.update(self.row.to_json())
        return out

    @classmethod
    def from_json(cls, js: JsonObject, path: str | Path, lineno: int) -> SampleRow[Any]:
        """A line read back (its task's fields parsed by the task's `row_from_json`); one line naming the file and
        line when it is not a row this duplexeval wrote."""
        from duplexeval.fdb.tasks import get_task

        where = f"{path}: line {lineno}"
        if not isinstance(js.get("subset"), str) or not isinstance(js.get("sample_id"), str):
            raise InputError(f"{where}: expected an object with 'subset' and 'sample_id'")
        try:
            task = get_task(str(js["task"]))
            row = None
            if task.unified is not None and any(k not in HEAD for k in js):
                row = task.unified.row_from_json(js)
            return cls(js["subset"], js["sample_id"], task.name, bool(js["eligible"]),
                       tuple(str(r) for r in js["reasons"]), row)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"{type(exc).__name__}: {exc}"
            raise InputError(f"{where}: not a unified row this duplexeval reads ({why})") from None


__all__ = ["HEAD", "SampleRow", "TaskRow"]
