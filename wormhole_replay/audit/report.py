"""The audit report: one self-contained HTML file (inline CSS, no scripts, every plot a PNG made
by matplotlib's Agg backend and embedded as a ``data:image/png;base64`` URI), readable offline.

Plots (each an ``<img id="plot-...">``): the FCT error CDF (with the noise floor and the
thresholds), full-vs-accelerated FCT scatter, iteration-time bars, collective-time bars, a timeline
of fast-forwarded and simulated periods per partition, and, with spot checks, their errors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..htmlpage import esc as _e
from ..htmlpage import figure as _figure
from ..htmlpage import figure_html as _figure_html
from ..htmlpage import message as _message
from ..htmlpage import num as _num
from ..htmlpage import page
from ..htmlpage import png as _png
from ..htmlpage import table as _table
from ..htmlpage import us as _us
from .compare import DRAW_DELAYS_NS, delay_text, delays, draw_column, pct

SIDE_COLORS = {"full": "#4c72b0", "wormhole": "#dd8452", "perturbed": "#8c8c8c"}
JUMP_COLORS = {"steady": "#55a868", "memo": "#c44e52"}
TIMELINE_ROWS = 40  # partitions drawn at most (those with the most fast-forwarded time)
COLLECTIVE_BARS = 20  # collective names drawn at most (those with the most full-run time)


# --- plots -----------------------------------------------------------------------------------------

NOISE_DASHES = ("--", (0, (8, 3)), (0, (3, 2)), "-.")  # one per noise-floor draw (dotted: thresholds)


def _noise_columns(table: pd.DataFrame) -> list[str]:
    """The noise-floor error columns of a matched table, one per draw, in draw order."""
    cols = []
    while draw_column("noise_error", len(cols)) in table:
        cols.append(draw_column("noise_error", len(cols)))
    return cols


def plot_fct_cdf(flows: pd.DataFrame, audit: dict) -> str:
    """CDF of per-flow FCT errors (%), accelerated vs full, and the noise floor (each draw) if measured."""
    fig = _figure()
    ax = fig.subplots()
    curves = [("error", "accelerated vs full", SIDE_COLORS["wormhole"], "-")]
    draws = _noise_columns(flows)
    for k, col in enumerate(draws):
        label = f"noise floor: full vs full + {delay_text(DRAW_DELAYS_NS[k])}" + (f" (draw {k + 1})" if len(draws) > 1 else "")
        curves.append((col, label, SIDE_COLORS["perturbed"], NOISE_DASHES[k % len(NOISE_DASHES)]))
    drawn = False
    for col, label, color, style in curves:
        e = np.sort(flows[col].to_numpy(dtype=float))
        e = e[np.isfinite(e)] * 100
        if not e.size:
            continue
        y = np.arange(1, e.size + 1) / e.size
        ax.step(np.concatenate([[0.0], e]), np.concatenate([[0.0], y]), where="post", color=color, linestyle=style,
                label=f"{label} (mean {e.mean():.2f}%, p99 {np.percentile(e, 99):.2f}%)")
        drawn = True
    if not drawn:
        _message(ax, "no network flow has an FCT error (no completed network flows)")
        return _png(fig)
    for name, color in (("max_mean_error", "#937860"), ("max_p99_error", "#da8bc3")):
        limit = (audit.get("thresholds") or {}).get("limits", {}).get(name)
        if limit is not None:
            ax.axvline(limit * 100, color=color, linestyle=":", label=f"--{name.replace('_', '-')} {limit * 100:g}%")
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("per-flow FCT relative error (%; linear below 0.01%, log above)")
    ax.set_ylabel("fraction of network flows")
    ax.set_title("FCT error CDF")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def plot_fct_scatter(flows: pd.DataFrame) -> str:
    """Full vs accelerated FCT per network flow (log-log), flows touched by a memo hit marked."""
    fig = _figure(6.5, 5.5)
    ax = fig.subplots()
    f = flows[np.isfinite(flows["error"].to_numpy(dtype=float))]
    if not len(f):
        _message(ax, "no completed network flows to compare")
        return _png(fig)
    x, y = f["fct_full"].to_numpy(dtype=float) / 1e3, f["fct_wormhole"].to_numpy(dtype=float) / 1e3
    hit = f["memo_hits"].to_numpy() > 0 if "memo_hits" in f else np.zeros(len(f), bool)
    ax.scatter(x[~hit], y[~hit], s=8, alpha=0.6, color=SIDE_COLORS["full"], label="no memo hit applied")
    if hit.any():
        ax.scatter(x[hit], y[hit], s=14, alpha=0.8, color=JUMP_COLORS["memo"], marker="^", label="memo hit applied")
    lo, hi = max(min(x.min(), y.min()), 1e-3), max(x.max(), y.max())
    line = np.array([lo, hi])
    ax.plot(line, line, color="black", linewidth=0.8, label="equal")
    ax.plot(line, line * 1.1, color="grey", linewidth=0.6, linestyle="--", label="±10%")
    ax.plot(line, line / 1.1, color="grey", linewidth=0.6, linestyle="--")
    worst = f.sort_values("error", ascending=False).head(3)
    for r in worst.itertuples(index=False):
        ax.annotate(f"flow {r.flow_id}", (r.fct_full / 1e3, r.fct_wormhole / 1e3), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FCT, full simulation (µs)")
    ax.set_ylabel("FCT, accelerated (µs)")
    ax.set_title("Per-flow FCT: full vs accelerated")
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8)
    return _png(fig)


def _bars(ax, labels, series: dict, horizontal: bool = False) -> None:
    n = len(series)
    width = 0.8 / max(n, 1)
    pos = np.arange(len(labels))
    for k, (side, values) in enumerate(series.items()):
        off = pos - 0.4 + width * (k + 0.5)
        label = {"full": "full", "wormhole": "accelerated", "perturbed": "full + 1 ns (noise floor)"}[side]
        if horizontal:
            ax.barh(off, values, height=width, color=SIDE_COLORS[side], label=label)
        else:
            ax.bar(off, values, width=width, color=SIDE_COLORS[side], label=label)
    if horizontal:
        ax.set_yticks(pos, labels, fontsize=7)
        ax.invert_yaxis()
    else:
        ax.set_xticks(pos, labels)


def plot_iterations(its: pd.DataFrame) -> str:
    """Iteration times (ms), full vs accelerated (vs perturbed full), error written above."""
    fig = _figure()
    ax = fig.subplots()
    if not len(its):
        _message(ax, "no iterations")
        return _png(fig)
    series = {s: its[f"duration_{s}"].to_numpy(dtype=float) / 1e6 for s in ("full", "wormhole", "perturbed")
              if f"duration_{s}" in its}
    _bars(ax, [f"iteration {int(i)}" for i in its["index"]], series)
    top = max(v.max() for v in series.values())
    for i, e in enumerate(its["error"].to_numpy(dtype=float)):
        ax.text(i, top * 1.02, f"error {pct(e)}", ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("iteration time (ms)")
    ax.set_title("Iteration times")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=len(series))
    return _png(fig)


def plot_collectives(coll: pd.DataFrame) -> str:
    """Mean duration per collective name (µs), full vs accelerated (vs perturbed), the names with
    the most full-run time first."""
    fig = _figure(7.5, 6.0)
    ax = fig.subplots()
    if not len(coll):
        _message(ax, "no collectives or transfers")
        return _png(fig)
    sides = [s for s in ("full", "wormhole", "perturbed") if f"duration_{s}" in coll]
    c = coll.copy()
    c["label"] = [f"{n} ({k})" if k else str(n) for n, k in zip(c["name"], c["coll"])]
    g = c.groupby("label").agg(total=("duration_full", "sum"), **{s: (f"duration_{s}", "mean") for s in sides})
    err = c.groupby("label")["error"].mean()
    g = g.sort_values("total", ascending=False).head(COLLECTIVE_BARS)
    _bars(ax, list(g.index), {s: g[s].to_numpy(dtype=float) / 1e3 for s in sides}, horizontal=True)
    ax.set_xscale("log")
    right = float(np.nanmax(g[sides].to_numpy(dtype=float))) / 1e3
    ax.set_xlim(right=right * 4)
    for row, label in enumerate(g.index):
        ax.text(right * 1.3, row, f"err {pct(err.get(label))}", va="center", fontsize=7)
    ax.set_xlabel("mean duration per instance (µs, log scale); err: mean error of the accelerated run")
    shown = f" (the {len(g)} with the most time)" if len(g) < c["label"].nunique() else ""
    ax.set_title(f"Collective and transfer times by name{shown}", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncols=len(sides))
    return _png(fig)


def plot_timeline(jumps: pd.DataFrame | None, fast_flows: pd.DataFrame | None, simulated_ns: int | None) -> str:
    """Per partition: when it was simulated packet by packet (grey: its flows alive, not jumping)
    and when it was fast-forwarded (green: steady-state jump, red: memoized transient)."""
    from matplotlib.patches import Patch

    from .compare import by_flow

    fig = _figure(7.5, 5.0)
    ax = fig.subplots()
    if jumps is None:
        _message(ax, "the accelerated run recorded no jump journal")
        return _png(fig)
    if not len(jumps):
        _message(ax, "nothing was fast-forwarded: every partition was simulated packet by packet")
        return _png(fig)
    j = jumps.copy()
    j["span"] = j["end_ns"].astype(np.int64) - j["start_ns"].astype(np.int64)
    order = j.groupby("partition")["span"].sum().sort_values(ascending=False)
    parts = list(order.index[:TIMELINE_ROWS])
    life = None
    if fast_flows is not None and {"start_ns", "finish_ns"} <= set(fast_flows.columns):
        pf = by_flow(j[j["partition"].isin(parts)], ["partition"]).drop_duplicates()
        life = pf.merge(fast_flows[["flow_id", "start_ns", "finish_ns"]], on="flow_id")
    for row, p in enumerate(parts):
        if life is not None:
            lp = life[life["partition"] == p]
            ax.broken_barh([(s / 1e6, (e - s) / 1e6) for s, e in zip(lp["start_ns"], lp["finish_ns"]) if e > s],
                           (row - 0.4, 0.8), facecolors="#d0d0d0", edgecolor="none")
        for kind, color in JUMP_COLORS.items():
            jp = j[(j["partition"] == p) & (j["kind"] == kind)]
            ax.broken_barh([(s / 1e6, d / 1e6) for s, d in zip(jp["start_ns"], jp["span"]) if d > 0],
                           (row - 0.4, 0.8), facecolors=color, edgecolor="none")
    ax.set_yticks(range(len(parts)), [str(p) for p in parts], fontsize=7)
    ax.invert_yaxis()
    if simulated_ns:
        ax.set_xlim(0, simulated_ns / 1e6)
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("partition")
    more = f" ({len(parts)} of {len(order)} partitions: the most fast-forwarded)" if len(order) > len(parts) else ""
    ax.set_title(f"Fast-forwarded and simulated periods per partition{more}", fontsize=10)
    ax.legend(handles=[Patch(color="#d0d0d0", label="simulated (its flows alive)"),
                       Patch(color=JUMP_COLORS["steady"], label="fast-forward: steady state"),
                       Patch(color=JUMP_COLORS["memo"], label="fast-forward: memoized transient")],
              fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3)
    return _png(fig)


def plot_spot_checks(spot: pd.DataFrame) -> str:
    """Each spot-checked memo hit's relative byte error."""
    fig = _figure(7.5, 3.8)
    ax = fig.subplots()
    s = spot.sort_values("error", ascending=False, na_position="last").reset_index(drop=True)
    e = s["error"].to_numpy(dtype=float) * 100
    ok = np.isfinite(e)
    ax.bar(np.arange(len(s))[ok], np.maximum(e[ok], 1e-4), color=JUMP_COLORS["memo"])
    ax.set_yscale("log")
    for i in range(len(s)):
        text = pct(e[i] / 100) if ok[i] else "interrupted"
        ax.text(i, max(e[i], 1e-4) * 1.3 if ok[i] else 1.3e-4, text, rotation=90 if not ok[i] else 0, ha="center",
                va="bottom", fontsize=7, color="#555")
    ax.set_ylim(1e-4, max(float(np.nanmax(e)) if ok.any() else 1.0, 1.0) * 30)
    ax.set_xticks(np.arange(len(s)), [str(d)[:8] for d in s["digest"]], rotation=60, fontsize=7)
    ax.set_ylabel("|entry - simulated| / simulated bytes (%)")
    ax.set_xlabel("memo entry (digest prefix)")
    ax.set_title("Spot checks: memo hits re-simulated packet by packet")
    return _png(fig)


# --- HTML ------------------------------------------------------------------------------------------


def _verdicts(audit: dict) -> str:
    out = []
    t = audit["thresholds"]
    limits = {k: v for k, v in t["limits"].items() if v is not None}
    if t["exceeded"]:
        items = "; ".join(f"{_e(x['metric'])} {pct(x['value'])} exceeds --{x['name'].replace('_', '-')} {pct(x['limit'])}"
                          for x in t["exceeded"])
        out.append(f'<div class="verdict fail"><b>Thresholds exceeded</b> (exit status 1): {items}.</div>')
    elif limits:
        items = ", ".join(f"--{k.replace('_', '-')} {pct(v)}" for k, v in limits.items())
        out.append(f'<div class="verdict pass"><b>Thresholds met</b>: {items}.</div>')
    nf = audit.get("noise_floor")
    if nf is not None:
        cls = "pass" if nf["all_within"] else "fail"
        out.append(f'<div class="verdict {cls}"><b>Noise floor.</b> {_e(nf["verdict"])}</div>')
    else:
        out.append('<div class="verdict info"><b>No noise floor measured</b> (run with <code>--noise-floor</code>). '
                   "On DAG workloads the full simulation is itself chaotic: delaying one flow by 1 ns was measured to "
                   "change per-flow FCTs by 7-19% on average (p99 80-250%) and iteration times by 1-4% on the bundled "
                   "16-GPU GPT sample, because contention order and ECN marking draws reorder. Per-flow errors of that "
                   "size may be chaos, not acceleration error.</div>")
    return "".join(out)


def _headline(audit: dict) -> str:
    f, i, c = audit["fct_error"], audit["iteration_error"], audit["collective_error"]
    nf = audit.get("noise_floor")
    n = len(nf["draws"]) if nf else 0
    floor = f"noise floor (full vs full + {delays(n)}, widest of {n} draws)" if n > 1 else "noise floor (full vs full + 1 ns)"
    cols = ["metric", "accelerated vs full"] + ([floor] if nf else [])
    rows = []
    for key, what in (("mean", "mean"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("max", "max")):
        r = [f"FCT error {what}", pct(f[key])]
        if nf:
            r.append(pct(nf["fct_error"][key]))
        rows.append(r)
    r = ["FCT bias (mean signed error; + = slower)", pct(f.get("bias"))]
    rows.append(r + (["" ] if nf else []))
    for key in ("mean", "max"):
        r = [f"iteration-time error {key}", pct(i[key])]
        if nf:
            r.append(pct(nf["iteration_error"][key]))
        rows.append(r)
    for key in ("mean", "p99", "max"):
        r = [f"collective-time error {key}", pct(c[key])]
        if nf:
            r.append(pct(nf["collective_error"][key]))
        rows.append(r)
    for key, label in (("rank_end", "worst rank's timeline end (of its iteration)"),
                       ("ring_spread", "rings' spread (slowest ring's collectives' error less the fastest's)")):
        if key in audit:  # audits before 2026-12-05 (rank_end) and 2026-12-07 (ring_spread) have none
            r = [label, pct(audit[key]["max"])]
            if nf:
                r.append(pct(nf.get(key, {}).get("max")))
            rows.append(r)
    return _table(cols, [[_e(x) for x in r] for r in rows], left=(0,))


def _speed(audit: dict) -> str:
    w, ff, fl = audit["wall_seconds"], audit["fast_forward"], audit["flows"]
    rows = [
        ["speedup (full wall time / accelerated wall time)", f"{audit['speedup']:.2f}x" if audit["speedup"] else "n/a"],
        ["wall time: full / accelerated (s)", f"{_num(w['full'], 2)} / {_num(w['wormhole'], 2)}"
         + (" (full from the baseline)" if str(audit["runs"].get("full", "")).startswith("baseline") else "")],
        ["simulated time fast-forwarded (some partition jumping)", pct(ff["time_fraction"], 1)],
        ["network flow-time fast-forwarded", pct(ff["flow_time_fraction"], 1)],
        ["events: full / accelerated", f"{_num(ff['events_full'])} / {_num(ff['events_wormhole'])}"],
        ["events avoided", pct(ff["events_avoided"], 1)],
        ["fast-forwards: steady / memo / skip-backs",
         f"{_num(ff['steady_jumps'])} / {_num(ff['memo_jumps'])} / {_num(ff['skip_backs'])}"],
        ["partition-time skipped (sum over partitions, ms)",
         _num(ff["skipped_partition_ns"] / 1e6 if ff["skipped_partition_ns"] is not None else None, 3)],
        ["flows: network / virtual / with an FCT error", f"{fl['network']} / {fl['virtual']} / {fl['measured']}"],
        ["network flows not completed: full / accelerated", f"{fl['incomplete_full']} / {fl['incomplete_wormhole']}"],
    ]
    m = audit.get("memo")
    if m:
        rows += [["memo hits / misses / refused", f"{_num(m['hits'])} / {_num(m['misses'])} / {_num(m['refused'])}"],
                 ["memo inserts / entries at start", f"{_num(m['inserts'])} / {_num(m['entries_at_start'])}"],
                 ["memo database", f"<code>{_e(m['db'])}</code>"]]
    return _table(["", ""], [[_e(a), b if "<code>" in b else _e(b)] for a, b in rows], left=(0,))


def _short(d, n: int = 12) -> str:
    return f'<code title="{_e(d)}">{_e(str(d)[:n])}</code>'


def _worst_flows(audit: dict, flows: pd.DataFrame) -> str:
    draws = _noise_columns(flows)
    noise = flows.set_index("flow_id")[draws].max(axis=1) if draws else None  # the widest draw, per flow
    rows = []
    for w in audit["worst_flows"]:
        hits = "<br>".join(f"{_short(h['digest'])} at {_us(h['time_ns'])} µs" for h in w["memo_hits"]) or "none"
        jumps = "<br>".join(f"partition {_e(j['partition'])}: {_e(j['kind'])} {_us(j['start_ns'])}-{_us(j['end_ns'])} µs"
                            for j in w["jumps"][:6]) or "none"
        if len(w["jumps"]) > 6:
            jumps += f"<br>... {len(w['jumps']) - 6} more"
        r = [_e(w["flow_id"]), _e(w.get("iteration")), _e(f"{w.get('name', '')} {w.get('coll', '')}".strip()),
             _e(f"{w.get('src')}→{w.get('dst')}"), _num(w.get("size_bytes")), _us(w["fct_full_ns"]),
             _us(w["fct_wormhole_ns"]), pct(w["error"])]
        if noise is not None:
            r.append(pct(noise.get(w["flow_id"])))
        rows.append(r + [hits, jumps])
    header = ["flow", "iter.", "op", "src→dst", "bytes", "FCT full (µs)", "FCT accel. (µs)", "error"] \
        + ([f"noise-floor error{' (widest draw)' if len(draws) > 1 else ''}"] if noise is not None else []) \
        + ["memo hits applied (digest, time)", "jumps (partition)"]
    n = len(header)
    return _table(header, rows, left=(2, n - 2, n - 1))


def _entries(audit: dict) -> str:
    rows = [[f"<code>{_e(e['digest'])}</code>", _num(e["hits"]), _num(e["flows"]), pct(e["mean_error"]),
             pct(e["max_error"]), _e(e["worst_flow"]), _us(e["first_time_ns"])] for e in audit["worst_entries"]]
    if not rows:
        return '<p class="small">No memo hit was applied (or none was recorded).</p>'
    return _table(["entry digest", "hits", "flows", "mean error of its flows", "max error", "worst flow",
                   "first hit (µs)"], rows, left=(0,))


def _partitions(audit: dict) -> str:
    rows = [[_e(p["partition"]), _num(p["jumps"]), _num(p["steady_jumps"]), _num(p["memo_jumps"]),
             _us(p["jumped_ns"]), _num(p["flows"]), pct(p["mean_error"]), pct(p["max_error"])]
            for p in audit["worst_partitions"]]
    if not rows:
        return '<p class="small">No jump was recorded.</p>'
    return _table(["partition", "jumps", "steady", "memo", "time jumped (µs)", "flows", "mean error of its flows",
                   "max error"], rows)


def _spot(audit: dict) -> str:
    sc = audit.get("spot_check")
    if sc is None:
        return ('<p class="small">Not run (<code>--spot-check N</code> re-simulates N memo hits packet by packet and '
                "compares each with its entry).</p>")
    head = (f"<p>{sc['count']} of {sc['requested']} requested memo hit(s) were simulated packet by packet instead of "
            f"applied (in a separate accelerated run) and compared with what the entry said its flows would deliver "
            f"during the transient, |entry - simulated| / simulated bytes: mean {pct(sc['error']['mean'])}, max "
            f"{pct(sc['error']['max'])}"
            + (f"; {sc['interrupted']} interrupted (the partition changed before the transient ended: not comparable)"
               if sc.get("interrupted") else "") + ".</p>")

    def b(x):
        return _e(" ".join(f"{v:,}" for v in x)) if isinstance(x, list) else _num(x)

    rows = [[f"<code>{_e(c.get('digest'))}</code>", _us(c.get("time_ns")), _us(c.get("t_conv_ns")),
             b(c.get("expected_bytes")), b(c.get("actual_bytes")),
             "interrupted" if c.get("interrupted") else pct(c.get("error"))] for c in sc["checks"]]
    return head + (_table(["entry digest", "hit at (µs)", "transient (µs)", "entry bytes", "simulated bytes",
                           "error"], rows, left=(0,)) if rows else "")


def _iterations(its: pd.DataFrame) -> str:
    draws = _noise_columns(its)
    rows = []
    for r in its.to_dict("records"):
        row = [_e(r["index"]), _num(r["duration_full"] / 1e6, 3), _num(r["duration_wormhole"] / 1e6, 3), pct(r["error"])]
        for k, col in enumerate(draws):
            row += [_num(r[draw_column("duration_perturbed", k)] / 1e6, 3), pct(r[col])]
        rows.append(row + [_num(r.get("memo_hits"))])
    header = ["iteration", "full (ms)", "accelerated (ms)", "error"]
    for k in range(len(draws)):
        d = f", draw {k + 1}" if len(draws) > 1 else ""
        header += [f"full + {delay_text(DRAW_DELAYS_NS[k])} (ms)", f"noise-floor error{d}"]
    return _table(header + ["memo hits"], rows)


def _collectives(audit: dict) -> str:
    rows = [[_e(c["unit"]), _e(c["iteration"]), _e(c["name"]), _e(c["coll"]), _us(c["duration_full"]),
             _us(c["duration_wormhole"]), pct(c["error"])] for c in audit["worst_collectives"]]
    return _table(["unit", "iter.", "name", "collective", "full (µs)", "accelerated (µs)", "error"], rows,
                  left=(2, 3)) if rows else '<p class="small">No collectives.</p>'


def _inputs(audit: dict) -> str:
    i = audit["inputs"]
    rows = [["trace", f"<code>{_e(i['trace'])}</code> (sha256 <code>{_e(i['trace_sha256'][:16])}</code>...)"],
            ["topology", f"<code>{_e(i['topology'])}</code>"],
            ["congestion control", _e(i["cc"])], ["iterations", _e(i["iterations"])],
            ["config overrides", f"<code>{_e(i['config'])}</code>" if i.get("config") else "none"],
            ["fast-forward options", f"<code>{_e(i.get('fast_forward'))}</code>"],
            ["runs", _e(", ".join(f"{k}: {v}" for k, v in audit["runs"].items()))],
            ["wormhole-replay", _e(audit["tool_version"])]]
    nf = audit.get("noise_floor")
    if nf:
        for k, d in enumerate(nf["draws"]):
            p = d["perturbation"]
            rows.append([f"noise-floor perturbation{f', draw {k + 1}' if len(nf['draws']) > 1 else ''}",
                         _e(f"op {p['op_id']} ({p['name']}, rank {p['rank']}, iteration {p['iteration']}): "
                            f"{p['duration_ns']} ns + {p['delta_ns']} ns"
                            + (f", and ops {', '.join(map(str, p['later_op_ids']))} of the later iterations as much"
                               if p.get("later_op_ids") else ""))])
    return _table(["", ""], rows, left=(0, 1))


def render(audit: dict, tables: dict) -> str:
    """The report as one HTML string (``tables`` as returned by ``command.build_audit``)."""
    flows, coll, its = tables["flows"], tables["collectives"], tables["iterations"]
    spot = tables.get("spot_checks")
    figs = [
        ("plot-fct-cdf", plot_fct_cdf(flows, audit), "FCT error CDF",
         "Cumulative distribution of the per-flow FCT relative error |accelerated - full| / full over network flows"
         + (" (dashed: the same for the full simulation against itself with one compute op 1 ns longer: its noise "
            "floor, one curve per draw)" if "noise_error" in flows else "") + ". Dotted lines: thresholds."),
        ("plot-fct-scatter", plot_fct_scatter(flows), "FCT scatter: full vs accelerated",
         "Each network flow's FCT in both runs; triangles: flows a memoized transient was applied to. The three "
         "worst flows are labelled."),
        ("plot-iterations", plot_iterations(its), "Iteration time bars", "Iteration times of each run."),
        ("plot-collectives", plot_collectives(coll), "Collective time bars",
         "Mean duration of each collective (or transfer) name per instance, over iterations."),
        ("plot-timeline", plot_timeline(tables.get("jumps"), tables.get("fast_flows"),
                                        audit["fast_forward"].get("simulated_ns")),
         "Timeline of fast-forwarded and simulated periods per partition",
         "Grey: a partition's flows were alive and simulated packet by packet; green: fast-forwarded through a "
         "steady state; red: a memoized transient applied."),
    ]
    if spot is not None and len(spot):
        figs.append(("plot-spot-checks", plot_spot_checks(spot), "Spot-check errors",
                     "Relative error of each spot-checked entry's bytes against the bytes its flows delivered when "
                     "simulated packet by packet."))
    notes = "".join(f"<li>{_e(n)}</li>" for n in audit.get("notes") or [])
    i = audit["inputs"]
    parts = [
        "<h1>Audit: accelerated vs full simulation</h1>",
        f'<p class="small"><code>{_e(i["trace"])}</code> on <code>{_e(i["topology"])}</code>, {_e(i["cc"])}, '
        f"{_e(i['iterations'])} iteration(s)</p>",
        _verdicts(audit),
        "<h2>Errors</h2>", _headline(audit),
        '<p class="small">Relative errors against the full packet-level run, per network flow (virtual flows, i.e. '
        "compute and copies inside a server, excluded), per iteration and per collective instance; percentiles "
        "interpolate linearly.</p>",
        "<h2>Speed and what was skipped</h2>", _speed(audit),
        "<h2>Plots</h2>", "".join(_figure_html(*f) for f in figs),
        f"<h2>Worst flows ({len(audit['worst_flows'])}) and where they came from</h2>",
        '<p class="small">The memo hits applied to each flow and the jumps that moved it. On a DAG workload a flow '
        "can also inherit an error from an earlier flow it waited for.</p>",
        _worst_flows(audit, flows),
        "<h2>Memo entries by the error of the flows they were applied to</h2>", _entries(audit),
        "<h2>Partitions by the error of the flows they fast-forwarded</h2>", _partitions(audit),
        "<h2>Spot checks</h2>", _spot(audit),
        "<h2>Iterations</h2>", _iterations(its),
        "<h2>Worst collectives</h2>", _collectives(audit),
        "<h2>Inputs</h2>", _inputs(audit),
    ]
    if notes:
        parts += ["<h2>Notes</h2>", f"<ul>{notes}</ul>"]
    parts += ['<p class="small">Tables beside this file: <code>flows.parquet</code> (per flow: fct_full, fct_wormhole, '
              "error, ...), <code>collectives.csv</code>, <code>iterations.csv</code>, <code>audit.json</code>; the "
              "full run in <code>full/</code> (reuse it with <code>--baseline</code>).</p>"]
    return page(f"wormhole-replay audit: {i['trace']}", parts)
