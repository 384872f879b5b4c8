"""The sweep report, ``DIR/sweep.html``: one self-contained file (inline CSS, plots as embedded PNG
made by matplotlib's Agg backend, as the audit report's, whose page primitives it shares) comparing
the points: the time per point grouped by each varied field, the best point per metric, the
failed points and the whole table.

The time plotted is the mean iteration time for ``replay`` sweeps and the makespan (first flow
start to last byte received) for ``simulate`` sweeps.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..htmlpage import esc as _e
from ..htmlpage import figure as _figure
from ..htmlpage import figure_html as _figure_html
from ..htmlpage import message as _message
from ..htmlpage import page
from ..htmlpage import png as _png
from ..htmlpage import table as _table

MAX_PLOTS = 12  # varied fields drawn at most
BEST = (  # (column, what it is, unit scale, unit) minimised over the points that ran
    ("iteration_mean_ns", "mean iteration time", 1e6, "ms"),
    ("makespan_ns", "makespan", 1e6, "ms"),
    ("fct_mean_ns", "mean FCT", 1e3, "us"),
    ("fct_p99_ns", "p99 FCT", 1e3, "us"),
    ("slowdown_p99", "p99 slowdown", 1, ""),
    ("wall_seconds", "wall time", 1, "s"),
)
TABLE = (  # (column, header, scale, digits)
    ("iteration_mean_ns", "iteration mean (ms)", 1e6, 3), ("makespan_ns", "makespan (ms)", 1e6, 3),
    ("fct_mean_ns", "FCT mean (us)", 1e3, 1), ("fct_p99_ns", "FCT p99 (us)", 1e3, 1),
    ("events", "events", 1, 0), ("wall_seconds", "wall (s)", 1, 1), ("memo_hits", "memo hits", 1, 0),
    ("memo_hits_earlier", "hits on earlier entries", 1, 0), ("memo_inserts", "memo inserts", 1, 0),
)


def _time_column(df: pd.DataFrame) -> tuple[str, str]:
    if "iteration_mean_ns" in df and df["iteration_mean_ns"].notna().any():
        return "iteration_mean_ns", "mean iteration time (ms)"
    return "makespan_ns", "makespan (ms)"


def _fmt(x, scale: float = 1, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)) or x is pd.NA:
        return ""
    if isinstance(x, (int, float, np.number)) and not isinstance(x, bool):
        return f"{x / scale:,.{digits}f}"
    return _e(x)


def plot_by_field(df: pd.DataFrame, name: str, column: str, ylabel: str) -> str:
    """Each finished point's time against its value of ``name`` (a dot per point, a bar at each
    value's mean), values in the order the spec gives them."""
    fig = _figure(7.0, 3.6)
    ax = fig.subplots()
    ok = df[(df["status"] == "ok") & df[column].notna()] if column in df else df.iloc[:0]
    if ok.empty:
        _message(ax, "no point has finished yet")
        return _png(fig)
    labels = list(dict.fromkeys(_value(v) for v in df[name]))
    shown = ok[name].map(_value)
    rng = np.random.default_rng(0)  # the same jitter every time: the report is deterministic
    for x, text in enumerate(labels):
        y = ok.loc[shown == text, column].to_numpy(float) / 1e6
        if not y.size:
            continue
        ax.bar(x, y.mean(), width=0.6, color="#c6d4ea", zorder=1)
        ax.scatter(x + rng.uniform(-0.15, 0.15, y.size), y, s=18, color="#4c72b0", zorder=2)
    long = max(map(len, labels)) > 8
    ax.set_xticks(range(len(labels)), labels, rotation=30 if long else 0, ha="right" if long else "center")
    ax.set_xlabel(name)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def _value(v) -> str:
    """A parameter's value for people: floats short, a point that left it unset ``(preset)``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "(preset)"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _params(row, varied: list[str]) -> str:
    return ", ".join(f"{k}={_value(row[k])}" for k in varied) or "base"


def _best(df: pd.DataFrame, varied: list[str]) -> str:
    ok = df[df["status"] == "ok"]
    rows = []
    for col, what, scale, unit in BEST:
        if col not in ok or not ok[col].notna().any():
            continue
        i = ok[col].astype(float).idxmin()
        r = ok.loc[i]
        rows.append([_e(what), f"{_fmt(r[col], scale, 3)} {unit}".strip(), str(r["index"]),
                     f"<code>{_e(r['id'])}</code>", _e(_params(r, varied))])
    if not rows:
        return '<p class="small">No point has finished yet.</p>'
    return _table(["metric (lowest)", "value", "point", "id", "parameters"], rows, left=(0, 4))


def _failed(df: pd.DataFrame, varied: list[str]) -> str:
    bad = df[df["status"] == "failed"]
    if bad.empty:
        return '<p class="small">None.</p>'
    return _table(["point", "id", "parameters", "error"],
                  [[str(r["index"]), f"<code>{_e(r['id'])}</code>", _e(_params(r, varied)), _e(r["error"])]
                   for _, r in bad.iterrows()], left=(2, 3))


def _points_table(df: pd.DataFrame, varied: list[str]) -> str:
    cols = [c for c in TABLE if c[0] in df]
    header = ["point", "id", *map(_e, varied), "status", *[h for _, h, _, _ in cols]]
    rows = [[str(r["index"]), f"<code>{_e(r['id'])}</code>", *[_e(_value(r[k])) for k in varied],
             _e(r["status"]), *[_fmt(r[c], s, d) for c, _, s, d in cols]] for _, r in df.iterrows()]
    return _table(header, rows, left=(1, len(varied) + 2))


def render(spec, df: pd.DataFrame, summary: dict) -> str:
    """The report as one HTML string (``df``: the results table, ``summary``: ``run.summary``)."""
    column, ylabel = _time_column(df)
    figs = [(f"plot-{i}", plot_by_field(df, name, column, ylabel), f"{ylabel} by {name}",
             f"{ylabel[0].upper() + ylabel[1:]} of each finished point (dots) and their mean (bars), by its value of "
             f"<code>{_e(name)}</code>.") for i, name in enumerate(spec.varied[:MAX_PLOTS])]
    s = summary
    return page(f"wormhole-replay sweep: {spec.path.name}", [
        f"<h1>Sweep: {_e(spec.path.name)}</h1>",
        f'<p class="small">{s["points"]} points of <code>{_e(spec.run)}</code>: {s["ok"]} ok, {s["failed"]} failed, '
        f'{s["pending"]} not run; this run: {s["ran"]} point(s) in {s["wall_seconds"]:,.1f} s, {s["skipped"]} '
        "finished before. Varied: " + (", ".join(f"<code>{_e(v)}</code>" for v in spec.varied) or "nothing") + "</p>",
        "<h2>Best point per metric</h2>", _best(df, spec.varied),
        "<h2>Plots</h2>", "".join(_figure_html(*f) for f in figs) or '<p class="small">No field varies.</p>',
        "<h2>Failed points</h2>", _failed(df, spec.varied),
        "<h2>All points</h2>", _points_table(df, spec.varied),
        f"<h2>Spec</h2><pre>{_e(spec.text)}</pre>",
        '<p class="small">Beside this file: <code>sweep.parquet</code> (every metric of every point), '
        "<code>points/ID/</code> (each point's inputs, outputs and record).</p>",
    ])
