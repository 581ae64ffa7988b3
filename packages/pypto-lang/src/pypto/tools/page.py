"""One self-contained HTML page: inline CSS and script, nothing fetched, so a page written on a
machine without network opens the same anywhere (``file://`` included)."""

from __future__ import annotations

import html

# Shared by every view: a plain, readable page in the browser's own fonts (no web fonts to fetch).
BASE_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --paper: #ffffff; --wash: #f6f8fa;
        --accent: #0969da; --hot: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; color: var(--ink); background: var(--paper);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 6px; }
p.lede { margin: 0 0 16px; color: var(--muted); }
code, .mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace;
              font-size: 12px; }
table.grid { border-collapse: collapse; margin: 8px 0 0; }
table.grid th, table.grid td { border-bottom: 1px solid var(--line); padding: 3px 12px 3px 0;
                               text-align: left; vertical-align: top; white-space: nowrap; }
table.grid th { color: var(--muted); font-weight: 600; font-size: 12px; }
table.grid td.num, table.grid th.num { text-align: right; padding-right: 16px;
                                       font-variant-numeric: tabular-nums; }
table.grid tr.hot td { background: #fff8c5; }
.note { color: var(--muted); font-size: 12px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; background: var(--paper);
          padding: 12px; }
"""


def esc(text: object) -> str:
    """``text`` escaped for an HTML or SVG element or a quoted attribute: ``esc("a<b") == "a&lt;b"``."""
    return html.escape(str(text), quote=True)


def page(title: str, body: str, css: str = "", script: str = "") -> str:
    """A whole HTML document: ``page("memory map", "<h1>...</h1>", css=..., script=...)``; the
    script runs once the page has loaded."""
    run = f"<script>\n{script}\n</script>\n" if script else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{BASE_CSS}{css}</style>\n</head>\n"
        f"<body>\n{body}\n{run}</body>\n</html>\n"
    )


def fmt_bytes(n: int) -> str:
    """``65536`` -> ``64 KiB``; sizes that are not whole KiB stay in bytes."""
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"
