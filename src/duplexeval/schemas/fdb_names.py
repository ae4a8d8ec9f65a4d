"""The FDB tree's names: its file names and kinds, and the subset table (which task owns which subset).

The table holds the built-in subsets; a task package registered from outside (`duplexeval.fdb.tasks`) adds
its own rows when it registers. The task registry installs itself as the table's loader, so a lookup of a
name the built-in rows do not have (or a walk over every subset) first registers the installed plugin tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

MANIFEST_FILE = "manifest.json"
MANIFEST_KIND = "duplexeval.fdb.tree"
MANIFEST_SCHEMA_VERSION = 1
ASR_FILE = "asr.json"
SUMMARY_FILE = "summary.json"
UNIFIED_FILE = "unified.json"
UNIFIED_SAMPLES_FILE = "unified-samples.jsonl"
INPUT_WAV = "input.wav"
OUTPUT_WAV = "output.wav"
OUTPUT_JSON = "output.json"


@dataclass(frozen=True)
class SubsetInfo:
    """One FDB subset: its task, its annotation file (None when it has none), declared size, and its names for
    readers: `title` (the report's headings) and `short` (narrow tables: the demo's); the subset's name when empty."""

    name: str
    task: str
    annotation: str | None
    declared: int
    short: str = ""
    title: str = ""

    @property
    def label(self) -> str:
        return self.short or self.name

    @property
    def heading(self) -> str:
        return self.title or self.name


class SubsetTable(Mapping[str, SubsetInfo]):
    """Subset name -> SubsetInfo in canonical order: the built-in rows, then those of registered plugin tasks."""

    def __init__(self, rows: tuple[SubsetInfo, ...]) -> None:
        self._rows: dict[str, SubsetInfo] = {r.name: r for r in rows}
        self._loader: Callable[[], None] | None = None
        self._loading = False

    def set_loader(self, loader: Callable[[], None]) -> None:
        """`loader()` registers the plugin tasks (and so their rows); it runs before the first miss or walk."""
        self._loader = loader

    def _load(self) -> None:
        loader, self._loader = self._loader, None
        if loader is not None:
            self._loading = True
            try:
                loader()
            finally:
                self._loading = False

    def add(self, info: SubsetInfo) -> None:
        """Add a plugin task's subset; the same row again is a no-op, another row under a taken name an error."""
        old = self._rows.get(info.name)
        if old is not None and old != info:
            raise ValueError(f"FDB subset {info.name!r} is already defined (task {old.task!r})")
        self._rows[info.name] = info

    def __getitem__(self, name: str) -> SubsetInfo:
        if name not in self._rows:
            self._load()
        return self._rows[name]

    def __contains__(self, name: object) -> bool:
        if name in self._rows:
            return True
        self._load()
        return name in self._rows

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._rows))

    def __len__(self) -> int:
        self._load()
        return len(self._rows)

    def order(self) -> tuple[str, ...]:
        """Every subset name, in canonical order."""
        return tuple(self)

    def of_task(self, task: str) -> tuple[SubsetInfo, ...]:
        """The rows of one task known now, in canonical order (no plugin is loaded: a task package reads its own
        rows while the registry may be loading it)."""
        return tuple(r for r in list(self._rows.values()) if r.task == task)


# The built-in rows: Full-Duplex-Bench v1.0's five subsets and their published sizes, then v1.5's four.
SUBSETS = SubsetTable((
    SubsetInfo("candor_pause_handling", "pause_handling", "pause.json", 216, "pause (candor)",
               "pause handling, candor"),
    SubsetInfo("synthetic_pause_handling", "pause_handling", "pause.json", 137, "pause (synthetic)",
               "pause handling, synthetic"),
    SubsetInfo("candor_turn_taking", "smooth_turn_taking", "turn_taking.json", 119, "turn-taking",
               "turn-taking, candor"),
    SubsetInfo("synthetic_user_interruption", "user_interruption", "interrupt.json", 200, "interruption",
               "user interruption, synthetic"),
    SubsetInfo("icc_backchannel", "backchannel", None, 55, "backchannel", "backchannel, icc"),
    # Full-Duplex-Bench v1.5's four overlap scenarios (one task, `overlap`) and their published sizes.
    SubsetInfo("user_interruption", "overlap", "metadata.json", 200, "v1.5 interruption",
               "v1.5 overlap: user interruption"),
    SubsetInfo("user_backchannel", "overlap", "metadata.json", 99, "v1.5 backchannel",
               "v1.5 overlap: user backchannel"),
    SubsetInfo("talking_to_other", "overlap", "metadata.json", 100, "v1.5 aside",
               "v1.5 overlap: talking to another person"),
    SubsetInfo("background_speech", "overlap", "metadata.json", 100, "v1.5 background",
               "v1.5 overlap: background speech"),
))


def subset_order() -> tuple[str, ...]:
    """Every known subset, in canonical order (built-in rows first)."""
    return SUBSETS.order()


__all__ = [
    "ASR_FILE", "INPUT_WAV", "MANIFEST_FILE", "MANIFEST_KIND", "MANIFEST_SCHEMA_VERSION", "OUTPUT_JSON", "OUTPUT_WAV",
    "SUBSETS", "SUMMARY_FILE", "UNIFIED_FILE", "UNIFIED_SAMPLES_FILE", "SubsetInfo", "SubsetTable", "subset_order",
]
