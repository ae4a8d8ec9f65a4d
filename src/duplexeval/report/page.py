"""The page: one HTML document with its CSS and script inline, a header, a section menu, cards and plain tables."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.resources import files

ASSETS = files("duplexeval.report") / "assets"


@cache
def asset(name: str) -> str:
    """One of the page's inline files (report.css, report.js), read once."""
    return (ASSETS / name).read_text(encoding="utf-8")


def esc(x: object) -> str:
    """HTML-escape any value's text."""
    return html.escape("" if x is None else str(x), quote=True)


def link(anchor: str, text: str) -> str:
    return f'<a href="#{esc(anchor)}">{esc(text)}</a>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless `raw` (then they are trusted HTML built here)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for c in row:
            text = c if raw else esc(c)
            cls = ' class="num"' if _numeric(c) else ""
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _numeric(c: str) -> bool:
    s = str(c).strip().lstrip("+-")
    return bool(s) and (s[0].isdigit() or s.startswith("[")) and "<" not in s


def document(title: str, body: str, subtitle: str = "", nav: Sequence[tuple[str, str]] = (), tail: str = "") -> str:
    """The whole page: doctype, inline CSS, a header, the section menu, the body; `tail` (the explorer's data) and
    the script come last, so the page paints before they are read. No external resource of any kind."""
    sub = f'<div class="sub">{subtitle}</div>' if subtitle else ""
    menu = "".join(link(a, t) for a, t in nav)
    script = f"<script>{asset('report.js')}</script>" if tail else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head>"
        f'<body><main><header class="top"><h1>{esc(title)}</h1>{sub}</header>'
        + (f'<nav class="toc">{menu}</nav>' if menu else "")
        + f"{body}</main>{tail}{script}</body></html>\n"
    )


def signature_line(compact: str) -> str:
    return f'<p class="note">signature: <span class="sig">{esc(compact)}</span></p>'
