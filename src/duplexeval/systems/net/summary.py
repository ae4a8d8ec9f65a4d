"""The lines `fdb export` prints at the end about a network run: each network reason's first problem, and
the messages that were discarded as their protocol says (read from the samples' own records)."""

from __future__ import annotations

from pathlib import Path

from duplexeval.errors import InputError
from duplexeval.fdb.sample_trace import read_trace
from duplexeval.fdb.tree import SampleEntry
from duplexeval.jsontypes import JsonObject
from duplexeval.systems.net.trace import SESSION_REASONS, how_it_ended, load_trace

MAX_WHAT = 240


def _network(entry: SampleEntry) -> JsonObject:
    export = entry.extra.get("export") if isinstance(entry.extra, dict) else None
    net = export.get("network") if isinstance(export, dict) else None
    return net if isinstance(net, dict) else {}


def network_lines(tree: Path, entries: list[SampleEntry]) -> list[str]:
    """One line per network reason naming a sample and what went wrong there, and one about discarded messages."""
    lines = []
    for reason in SESSION_REASONS:
        failed = [e for e in entries if reason in e.reasons and _network(e)]
        if not failed:
            continue
        first = failed[0]
        what = None
        sdir = tree / first.subset / first.id
        try:
            detail = read_trace(sdir).details.get("network", {})
            problem = detail.get("first_problem") if isinstance(detail, dict) else None
            what = problem.get("what") if isinstance(problem, dict) else None
            if what is None:
                what = how_it_ended(load_trace(sdir).records)
        except InputError:
            pass
        if what:
            lines.append(f"  first {reason}: {first.subset}/{first.id}: {' '.join(str(what).split())[:MAX_WHAT]}")
    discarded: dict[str, int] = {}
    samples = 0
    for e in entries:
        counts = _network(e).get("discarded")
        if isinstance(counts, dict) and counts:
            samples += 1
            for kind, n in counts.items():
                discarded[kind] = discarded.get(kind, 0) + int(n)
    if discarded:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(discarded.items()))
        lines.append(f"  discarded as the protocol says (recorded, not disqualifying): {kinds} in {samples} samples")
    return lines
