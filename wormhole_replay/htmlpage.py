"""Self-contained HTML pages with embedded plots, shared by the audit report and the run report:
inline CSS, no scripts, every plot a PNG drawn on matplotlib's Agg canvas (no pyplot state, so
nothing global and nothing that needs a display) and embedded as a ``data:image/png;base64`` URI,
so a page opens offline and can be mailed as one file."""

from __future__ import annotations

import base64
import html
import io

import numpy as np

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .88em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
code { font-size: .9em; word-break: break-all; }
.verdict { padding: .7em 1em; border-radius: 4px; margin: .6em 0; }
.pass { background: #e8f5e9; border-left: 5px solid #2e7d32; }
.fail { background: #fdecea; border-left: 5px solid #c62828; }
.info { background: #eef3fb; border-left: 5px solid #4c72b0; }
figure { margin: 1em 0; } figcaption { font-size: .85em; color: #555; max-width: 900px; }
img { max-width: 100%; }
.small { font-size: .85em; color: #555; }
"""


def figure(w: float = 7.5, h: float = 4.2, layout: str | None = "constrained"):
    """A matplotlib figure on its own Agg canvas (``layout=None``: margins set by the caller)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def png(fig) -> str:
    """The figure as base64 PNG text (for a data URI)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def message(ax, text: str) -> None:
    """An empty plot that says why it is empty."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, wrap=True, color="#555")
    ax.set_xticks([])
    ax.set_yticks([])


def esc(x) -> str:
    """HTML-escaped text (``None`` is empty)."""
    return html.escape("" if x is None else str(x))


def num(x, digits: int = 0) -> str:
    """A number with thousands separators, ``n/a`` for None and non-finite values."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def us(ns) -> str:
    """Nanoseconds as microseconds with two decimals."""
    return "n/a" if ns is None or (isinstance(ns, float) and not np.isfinite(ns)) else f"{ns / 1e3:,.2f}"


def table(header: list, rows: list, left=()) -> str:
    """An HTML table; cells are already-escaped HTML; ``left`` are column indexes aligned left."""
    h = "".join(f'<th class="{"l" if i in left else ""}">{c}</th>' for i, c in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i in left else ""}">{c}</td>' for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def figure_html(ident: str, png_b64: str, alt: str, caption: str) -> str:
    """A ``<figure>`` with the PNG embedded (``ident`` is the ``<img>``'s id, which tests look for)."""
    return (f'<figure><img id="{ident}" alt="{esc(alt)}" src="data:image/png;base64,{png_b64}">'
            f"<figcaption>{caption}</figcaption></figure>")


def page(title: str, body: list[str]) -> str:
    """A whole HTML document: ``title`` (plain text) and ``body`` (HTML fragments)."""
    return "\n".join(['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{esc(title)}</title>", f"<style>{CSS}</style></head><body>", *body, "</body></html>"])
