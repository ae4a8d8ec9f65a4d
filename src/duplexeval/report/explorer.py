"""The sample explorer every family's page ends with: one card per sample (or case, or clip) with each system's
outcome, a filter and search bar, and the evidence (timeline, audio, transcript, fields) drawn when a card opens.

The cards' headers are HTML (every outcome and every link works without the script); the evidence of all cards is
one gzip'd JSON blob, so the page stays small and paints at once, and `report.js` draws a card only when it is
opened. Inline audio goes in `<script type="text/plain">` elements that the page reads only when a card opens.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from duplexeval.report.page import esc

VERDICT_NAMES = {"bad": "problem", "warn": "worth a look", "ok": "as expected", "neutral": "not scored"}


@dataclass(frozen=True)
class Track:
    """One lane of a timeline: the user's input (`sys` -1) or a system's output, with its speech and words."""

    sys: int
    label: str
    color: str
    env: str | None = None  # base64 of uint8 peaks (audio.peaks_b64)
    vad: tuple[tuple[float, float], ...] = ()
    words: tuple[tuple[str, float, float | None], ...] = ()
    audio: str | None = None  # "#element-id" of inline audio, or a URL relative to the page
    note: str = ""
    curve: str | None = None  # base64 of uint8 values 0-255 (a probability per 80 ms frame), drawn as a line
    level: float | None = None  # the curve's threshold, drawn dashed
    ticks: tuple[float, ...] = ()  # event times (a controller's commits), drawn as marks on the lane

    def to_json(self) -> dict[str, object]:
        return {"sys": self.sys, "label": self.label, "color": self.color, "env": self.env,
                "vad": [list(v) for v in self.vad], "words": [list(w) for w in self.words],
                "audio": self.audio, "note": self.note, "curve": self.curve, "level": self.level,
                "ticks": list(self.ticks)}  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """One system's reading of one sample: the outcome (a filter value), its class, one phrase of why, its anchor."""

    sys: int
    outcome: str
    cls: str  # bad | warn | ok | neutral
    why: str
    anchor: str


@dataclass
class Item:
    """One card: a sample key with every system's verdict and the evidence drawn when it opens."""

    id: str
    group: str
    title: str
    verdicts: list[Verdict]
    T: float | None = None
    tracks: list[Track] = field(default_factory=list)
    marks: list[tuple[str, float]] = field(default_factory=list)
    spans: list[tuple[str, float, float]] = field(default_factory=list)
    said: list[tuple[str, str]] = field(default_factory=list)
    chats: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)  # (whose, [(role, text)])
    field_head: list[str] = field(default_factory=list)
    field_rows: list[tuple[str, list[str]]] = field(default_factory=list)
    text: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "T": self.T, "tracks": [t.to_json() for t in self.tracks], "marks": [list(m) for m in self.marks],
            "spans": [list(s) for s in self.spans], "said": [list(s) for s in self.said],
            "chats": [[who, [list(t) for t in turns]] for who, turns in self.chats],
            "fields": {"head": self.field_head, "rows": [[n, v] for n, v in self.field_rows]},
            "text": " ".join(
                [self.title, self.group, *(f"{v.outcome} {v.why}" for v in self.verdicts), self.text]).lower(),
        }  # fmt: skip


def humanize(outcome: str) -> str:
    return outcome.replace("_", " ")


def _card(item: Item, systems: Sequence[str], colors: Sequence[str]) -> str:
    """The card's header: the key, then each system's dot, outcome and why (with more than two systems the why shows
    only in the tooltip until the card is opened)."""
    heads = []
    for v in item.verdicts:
        c = colors[v.sys % len(colors)] if v.sys >= 0 else "#7a869a"
        who = esc(systems[v.sys]) if v.sys >= 0 and len(systems) > 1 else ""
        heads.append(
            f'<span class="v" id="{esc(v.anchor)}" data-sys="{v.sys}" data-outcome="{esc(v.outcome)}" '
            f'data-verdict="{esc(v.cls)}" title="{esc(v.why)}">'
            f'<i class="dot" style="background:{c}" title="{esc(systems[v.sys] if v.sys >= 0 else "")}"></i>'
            + (f'<span class="who">{who}</span>' if who else "")
            + f'<span class="pill v-{esc(v.cls)}">{esc(humanize(v.outcome))}</span><span '
              f'class="why">{esc(v.why)}</span></span>'
        )
    t = f'<span class="T">{item.T:.1f} s</span>' if item.T is not None else ""
    compact = " compact" if len(systems) > 2 else ""
    return (f'<article class="smp{compact}" id="{esc(item.id)}" data-group="{esc(item.group)}"><h4><span '
            f'class="kt"><span class="key">{esc(item.title)}</span>{t}</span>'
            + "".join(heads) + '</h4><div class="body"></div></article>')


def _options(name: str, everything: str, values: Iterable[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in values)
    return (f'<select data-filter="{name}" aria-label="{esc(everything)}"><option '
            f'value="">{esc(everything)}</option>{opts}</select>')


def explorer_html(items: Sequence[Item], systems: Sequence[str], colors: Sequence[str], group_name: str,
                  note: str = "") -> str:
    """The filter bar and the cards, in the given order (worst first is the caller's order)."""
    groups = list(dict.fromkeys(i.group for i in items))
    outcomes = sorted({v.outcome for i in items for v in i.verdicts})
    verdicts = [c for c in VERDICT_NAMES if any(v.cls == c for i in items for v in i.verdicts)]
    tools = [_options("group", f"every {group_name}", [(g, g) for g in groups]),
             _options("outcome", "every outcome", [(o, humanize(o)) for o in outcomes]),
             _options("verdict", "every verdict", [(c, VERDICT_NAMES[c]) for c in verdicts])]
    if len(systems) > 1:
        tools.append(_options("system", "every system", [(str(k), s) for k, s in enumerate(systems)]))
    tools.append('<input type="search" placeholder="search: id, words, outcome, why" aria-label="search">')
    tools.append('<button type="button" data-act="open">open all shown</button><button type="button" '
                 'data-act="close">close all</button>')
    tools.append('<span class="count"></span>')
    columns = ""
    if len(systems) > 2:  # closed cards show one column per system: name the columns once, above them
        columns = ('<div class="colhead"><span class="kt"></span>' + "".join(
            f'<span class="c"><i class="dot" style="background:{colors[k % len(colors)]}"></i> {esc(s)}</span>'
            for k, s in enumerate(systems)) + "</div>")
    return ('<div class="explorer card"><div class="tools">' + "".join(tools) + "</div>"
            + (f'<p class="note">{esc(note)}</p>' if note else "") + columns
            + '<p class="note loading">Reading the per-sample data…</p>'
            + '<noscript><p class="note">The timelines, audio and filters need JavaScript; every outcome is listed '
              'below.</p></noscript>'
            + "".join(_card(i, systems, colors) for i in items) + "</div>")


@dataclass
class PageData:
    """Everything the script reads: the cards' evidence, the timeline legend, and the inline audio elements."""

    items: dict[str, dict[str, object]] = field(default_factory=dict)
    legend: list[tuple[str, str]] = field(default_factory=list)
    audio: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # element id -> (MIME type, bytes)

    def add(self, items: Iterable[Item]) -> None:
        for i in items:
            self.items[i.id] = i.to_json()

    def html(self) -> str:
        """The blob (gzip, fixed mtime, base64) and the audio elements; nothing when there are no cards."""
        if not self.items:
            return ""
        raw = json.dumps({"items": self.items, "legend": self.legend}, separators=(",", ":"),
                         sort_keys=True).encode("utf-8")
        blob = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
        audio = "".join(f'<script type="text/plain" id="{esc(k)}" '
                        f'data-type="{esc(t)}">{base64.b64encode(b).decode("ascii")}</script>'
                        for k, (t, b) in sorted(self.audio.items()))
        return f'<script type="application/octet-stream" id="dx-data">{blob}</script>{audio}'
