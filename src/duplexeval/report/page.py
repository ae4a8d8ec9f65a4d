"""The page: one HTML document with inline CSS, section headings with anchors, and plain tables."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1180px;margin:0 auto;padding:16px 24px 64px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:15px;margin:18px 0 4px}h4{font-size:14px;margin:12px 0 2px}
p.note,.note{color:#555;font-size:12.5px}code,.sig{font:12px ui-monospace,Menlo,Consolas,monospace}
.sig{color:#444;background:#f0f0f0;padding:2px 6px;border-radius:3px;display:inline-block;word-break:break-all}
table{border-collapse:collapse;margin:6px 0 10px;font-size:12.5px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
nav.toc{font-size:13px;margin:8px 0}nav.toc a{margin-right:12px}
section.sample{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:6px 12px;margin:10px 0}
section.sample h4{margin-top:4px}.bad{color:#b00020;font-weight:600}.ok{color:#1b7f3b}
figure{margin:6px 0}figure svg{max-width:100%;height:auto}
details summary{cursor:pointer;color:#1f6fb4}
.fields{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:4px 0}.fields b{color:#555;font-weight:600}
td .note{font-size:11.5px}
"""


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


def document(title: str, body: str, subtitle: str = "") -> str:
    """The whole page: doctype, inline CSS, no scripts, no external resources."""
    sub = f'<p class="note">{esc(subtitle)}</p>' if subtitle else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main><h1>{esc(title)}</h1>{sub}{body}</main></body></html>\n"
    )


def signature_line(compact: str) -> str:
    return f'<p class="note">signature: <span class="sig">{esc(compact)}</span></p>'
