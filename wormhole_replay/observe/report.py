"""The report of a run folder: one self-contained HTML file (``htmlpage``: inline CSS, no scripts,
plots as embedded PNGs drawn with matplotlib's Agg canvas), for the output of ``replay`` or
``simulate``.

Why static matplotlib and not plotly or bokeh: an interactive page that opens offline has to carry
its library inline (plotly.js alone is ~3.5 MB per file), it needs JavaScript to show anything,
and it would be a second plotting stack beside the audit's. PNGs keep the file small, render in any
browser or mail client, and need nothing to run.

Plots (each an ``<img id="plot-...">``, all always present; one that has no data says why):
``plot-timeline`` (Gantt of one iteration, critical path marked), ``plot-breakdown`` (stacked
compute / overlapped / exposed communication / idle per rank), ``plot-fct-size``,
``plot-slowdown``, ``plot-link-utilisation`` (heat map of the hottest links per tier),
``plot-queue-lengths`` (queue-length distributions per tier) and ``plot-pfc`` (pause intervals,
on the heat map's time axis). What each reads is in :func:`load_run`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..htmlpage import esc, figure, figure_html, message, num, page, png, table, us
from ..topology.tiers import TIERS
from .breakdown import union
from .critical import critical_path
from .pfc import pfc_intervals, read_pfc_txt

GANTT_ROWS = 32  # ranks drawn at most in the timeline (those on the critical path first)
HOT_LINKS = 12  # links per tier in the heat map
HEAT_COLUMNS = 300  # time bins of the heat map at most
PFC_ROWS = 40  # paused ports drawn at most (the longest paused)
COLL_COLORS = {"all_reduce": "#dd8452", "all_gather": "#55a868", "reduce_scatter": "#8172b3",
               "all_to_all": "#c44e52", "p2p": "#937860", "": "#937860"}
COMPUTE_COLOR = "#4c72b0"
TIER_COLORS = {"host": "#4c72b0", "edge": "#55a868", "aggregation": "#dd8452", "core": "#c44e52", "": "#8c8c8c"}
BREAKDOWN_PARTS = [("compute only", "#4c72b0"), ("compute overlapped by communication", "#8fb0de"),
                   ("exposed communication", "#dd8452"), ("idle", "#d0d0d0")]
NOT_MONITORED = "the run was not monitored: links.parquet is absent (run with --monitor)"


@dataclass
class Run:
    """The tables of a run folder (``None`` where a file is absent)."""

    path: Path
    flows: pd.DataFrame
    summary: dict
    iterations: pd.DataFrame | None = None
    collectives: pd.DataFrame | None = None
    breakdown: pd.DataFrame | None = None
    deps: pd.DataFrame | None = None
    ports: pd.DataFrame | None = None
    links: pd.DataFrame | None = None
    pfc: pd.DataFrame | None = None  # pause intervals

    @property
    def is_replay(self) -> bool:
        return "iteration" in self.flows

    @property
    def end_ns(self) -> int:
        ends = [int(self.summary.get("simulated_ns") or 0), int(self.flows["finish_ns"].max()) if len(self.flows) else 0]
        if self.links is not None and len(self.links):
            ends.append(int(self.links["time_ns"].max()))
        return max(ends)


def _read(path: Path, reader):
    if not path.is_file():
        return None
    try:
        return reader(path)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable ({str(e).splitlines()[0][:120]})") from None


def load_run(d: str | Path) -> Run:
    """Read a run folder: ``flows.parquet`` (required), ``summary.json``, ``iterations.csv``,
    ``collectives.csv``, ``iteration_breakdown.csv``, ``deps.parquet``, ``ports.csv``,
    ``links.parquet`` and ``pfc_intervals.parquet`` (else ``pfc.txt``), each where present."""
    d = Path(d)
    if not d.is_dir():
        raise InputError(f"{d}: no such folder")
    flows = _read(d / "flows.parquet", pd.read_parquet)
    if flows is None:
        raise InputError(f"{d}: not a replay or simulate output folder (no flows.parquet)")
    csv = lambda p: pd.read_csv(p, keep_default_na=False)  # noqa: E731  (collective names may be empty)
    summary = _read(d / "summary.json", lambda p: json.loads(p.read_text())) or {}
    pfc = _read(d / "pfc_intervals.parquet", pd.read_parquet)
    if pfc is None:
        log = _read(d / "pfc.txt", read_pfc_txt)
        pfc = None if log is None else pfc_intervals(log)
    links = _read(d / "links.parquet", pd.read_parquet)
    if links is not None:
        links = _per_port(links)
    return Run(d, flows, summary, _read(d / "iterations.csv", csv), _read(d / "collectives.csv", csv),
               _read(d / "iteration_breakdown.csv", csv), _read(d / "deps.parquet", pd.read_parquet),
               _read(d / "ports.csv", csv), links, pfc)


def _per_port(links: pd.DataFrame) -> pd.DataFrame:
    """One row per sample and port; rows per queue class (a ``queue`` column) are summed."""
    need = {"time_ns", "node", "port", "queue_bytes", "tx_bytes", "utilisation", "paused", "fast_forwarded"}
    missing = need - set(links.columns)
    if missing:
        raise InputError(f"links.parquet: missing columns {', '.join(sorted(missing))}")
    if "queue" not in links:
        return links
    return (links.groupby(["time_ns", "node", "port"], sort=True)
            .agg(queue_bytes=("queue_bytes", "sum"), tx_bytes=("tx_bytes", "sum"), utilisation=("utilisation", "sum"),
                 paused=("paused", "max"), fast_forwarded=("fast_forwarded", "max")).reset_index())


def _tiers(run: Run, nodes) -> np.ndarray:
    """The tier of each node (``""`` where ``ports.csv`` is absent)."""
    if run.ports is None:
        return np.full(len(nodes), "", dtype=object)
    tier = run.ports.drop_duplicates("node").set_index("node")["tier"]
    return tier.reindex(np.asarray(nodes)).fillna("").to_numpy(dtype=object)


def _link_labels(run: Run, nodes, ports) -> list[str]:
    peer = {}
    if run.ports is not None:
        peer = {(int(a), int(b)): int(c) for a, b, c in run.ports[["node", "ifindex", "peer"]].itertuples(index=False)}
    return [f"{n}:{p}" + (f"→{peer[(int(n), int(p))]}" if (int(n), int(p)) in peer else "") for n, p in zip(nodes, ports)]


# --- iteration timeline ----------------------------------------------------------------------------

def chosen_iteration(run: Run, iteration: int | None) -> int | None:
    """The iteration the timeline and the breakdown bars show: ``iteration``, else the last."""
    if not run.is_replay or not len(run.flows):
        return None
    its = sorted(int(i) for i in run.flows["iteration"].unique())
    if iteration is None:
        return its[-1]
    if iteration not in its:
        raise InputError(f"report: no iteration {iteration} in {run.path} (it has {its[0]}..{its[-1]})")
    return iteration


def _rank_rows(flows: pd.DataFrame, path: list[int]) -> list[int]:
    ranks = sorted(set(flows["rank"]) | set(flows["dst_rank"] if "dst_rank" in flows else ()))
    if len(ranks) <= GANTT_ROWS:
        return ranks
    on_path = sorted(set(flows.set_index("flow_id").loc[path, "rank"])) if path else []
    rest = [r for r in ranks if r not in on_path]
    return sorted(on_path[:GANTT_ROWS] + rest[: max(GANTT_ROWS - len(on_path), 0)])


def plot_timeline(run: Run, iteration: int | None, path: list[int]) -> str:
    """Each rank's compute (upper half of its row) and transfers by collective (lower half) in one
    iteration; the critical path in black, joined across ranks by dashed lines."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = figure(9.5, 6.0)
    ax = fig.subplots()
    if iteration is None:
        message(ax, "a flow-level run (simulate): no ranks or iterations to draw")
        return png(fig)
    f = run.flows[(run.flows["iteration"] == iteration) & (run.flows["start_ns"] >= 0)]
    rows = _rank_rows(f, path)
    row_of = {r: k for k, r in enumerate(rows)}
    t0 = int(f["start_ns"].min())
    ms = lambda t: (np.asarray(t, dtype=np.int64) - t0) / 1e6  # noqa: E731
    compute = f[f["kind"] == "compute"]
    for r, g in compute.groupby("rank"):
        if r in row_of:
            s, e = union(g["start_ns"], g["received_ns"])
            ax.broken_barh(list(zip(ms(s), ms(e) - ms(s))), (row_of[r] - 0.45, 0.45), facecolors=COMPUTE_COLOR)
    comm = f[f["kind"] != "compute"]
    sides = [comm[["rank", "coll", "start_ns", "received_ns"]]]
    if "dst_rank" in comm:
        sides.append(comm[["dst_rank", "coll", "start_ns", "received_ns"]].rename(columns={"dst_rank": "rank"}))
    both = pd.concat(sides, ignore_index=True)
    for (r, c), g in both.groupby(["rank", "coll"]):
        if r in row_of:
            s, e = union(g["start_ns"], g["received_ns"])
            ax.broken_barh(list(zip(ms(s), ms(e) - ms(s))), (row_of[r], 0.45), facecolors=COLL_COLORS.get(c, "#937860"))
    by_id = f.set_index("flow_id")
    prev = None
    for fid in path:
        x = by_id.loc[fid]
        r = int(x["rank"])
        if r not in row_of:
            continue
        y = row_of[r]
        a, b = ms(x["start_ns"]), ms(x["received_ns"])
        ax.plot([a, b], [y, y], color="black", linewidth=2.2, solid_capstyle="butt")
        if prev is not None:
            ax.plot([prev[0], a], [prev[1], y], color="black", linewidth=0.8, linestyle="--")
        prev = (b, y)
    ax.set_yticks(range(len(rows)), [f"rank {r}" for r in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"time since the iteration's start (ms; it starts at {t0 / 1e6:.3f} ms)")
    n = f["rank"].nunique()
    shown = f" ({len(rows)} of {n} ranks: those on the critical path first)" if len(rows) < n else ""
    ax.set_title(f"Iteration {iteration}: compute and communication per rank{shown}", fontsize=10)
    colls = [c for c in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all") if c in set(comm["coll"])]
    handles = [Patch(color=COMPUTE_COLOR, label="compute")] + [Patch(color=COLL_COLORS[c], label=c) for c in colls]
    if (comm["kind"] == "p2p").any():
        handles.append(Patch(color=COLL_COLORS["p2p"], label="send/recv"))
    handles.append(Line2D([], [], color="black", linewidth=2.2, label="critical path"))
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncols=min(len(handles), 6))
    ax.grid(True, axis="x", alpha=0.3)
    return png(fig)


def path_table(run: Run, path: list[int]) -> str:
    """The critical path as consecutive steps (flows of one op on one rank merged)."""
    if not path:
        return '<p class="small">No critical path (no dependency edges: <code>deps.parquet</code> is absent, or no flow arrived).</p>'
    f = run.flows.set_index("flow_id").loc[path].reset_index()
    step = ((f["unit"] != f["unit"].shift()) | (f["rank"] != f["rank"].shift())).cumsum()
    steps = f.groupby(step).agg(kind=("kind", "first"), name=("name", "first"), coll=("coll", "first"),
                                rank=("rank", "first"), flows=("flow_id", "count"), start=("start_ns", "min"),
                                end=("received_ns", "max"))
    total = int(f["received_ns"].max() - f["start_ns"].min())
    busy = {k: int((g["received_ns"] - g["start_ns"]).sum()) for k, g in f.groupby(f["kind"] == "compute")}
    head = (f"<p>{len(f)} flows in {len(steps)} steps over {us(total)} µs: compute {us(busy.get(True, 0))} µs, "
            f"transfers {us(busy.get(False, 0))} µs, waiting between them (release and queue-pair start-up) "
            f"{us(total - sum(busy.values()))} µs.</p>")
    rows = [[esc(k + 1), esc(s.kind), esc(s.name), esc(s.coll), esc(s.rank), num(s.flows), us(s.start), us(s.end),
             us(s.end - s.start)] for k, s in enumerate(steps.head(60).itertuples(index=False))]
    more = f'<p class="small">... {len(steps) - 60} more steps.</p>' if len(steps) > 60 else ""
    return head + table(["step", "kind", "op", "collective", "rank", "flows", "start (µs)", "end (µs)",
                         "duration (µs)"], rows, left=(1, 2, 3)) + more


# --- breakdown -------------------------------------------------------------------------------------

def plot_breakdown(run: Run, iteration: int | None) -> str:
    """Stacked bars per rank: compute only, compute overlapped by communication, exposed
    communication and idle, which add up to the iteration time."""
    fig = figure(9.5, 4.2)
    ax = fig.subplots()
    if run.breakdown is None or iteration is None:
        message(ax, "no iteration_breakdown.csv (a flow-level run, or one written before the breakdown existed)")
        return png(fig)
    b = run.breakdown[run.breakdown["iteration"] == iteration].sort_values("rank")
    parts = [b["compute_ns"] - b["overlapped_ns"], b["overlapped_ns"], b["exposed_communication_ns"], b["idle_ns"]]
    x = np.arange(len(b))
    bottom = np.zeros(len(b))
    for (label, color), v in zip(BREAKDOWN_PARTS, parts):
        v = v.to_numpy(dtype=float) / 1e6
        ax.bar(x, v, bottom=bottom, color=color, label=label, width=0.85)
        bottom += v
    step = max(1, len(b) // 32)
    ax.set_xticks(x[::step], [str(r) for r in b["rank"].to_numpy()[::step]], fontsize=7)
    ax.set_xlabel("rank")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"Iteration {iteration}: where each rank's time went (bars add up to the iteration time)", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncols=4)
    return png(fig)


def breakdown_table(run: Run) -> str:
    """Per iteration: the mean over ranks of each part, and the worst rank's exposed communication."""
    if run.breakdown is None:
        return ""
    rows = []
    for it, g in run.breakdown.groupby("iteration"):
        t = float(g["iteration_ns"].iloc[0])
        share = lambda c: f"{us(g[c].mean())} ({g[c].mean() / t * 100:.1f}%)" if t > 0 else us(g[c].mean())  # noqa: E731
        worst = g.sort_values(["exposed_communication_ns", "rank"], ascending=[False, True]).iloc[0]
        rows.append([esc(it), us(t), share("compute_ns"), share("communication_ns"), share("exposed_communication_ns"),
                     share("idle_ns"), f"{us(worst.exposed_communication_ns)} (rank {int(worst['rank'])})"])
    return table(["iteration", "time (µs)", "compute", "communication", "exposed communication", "idle",
                  "most exposed communication"], rows)


def collectives_table(run: Run) -> str:
    """Collectives by name: instances, size, mean time and bandwidths (nccl-tests' definitions)."""
    c = run.collectives
    if c is None or not len(c):
        return '<p class="small">No collectives (a flow-level run).</p>'
    if "busbw_GBps" not in c:
        return '<p class="small">collectives.csv has no bandwidth columns (written by an older version).</p>'
    g = (c.groupby(["name", "coll"], sort=False)
         .agg(n=("unit", "count"), ranks=("ranks", "max"), size=("size_bytes", "mean"), time=("duration_ns", "mean"),
              total=("duration_ns", "sum"), algbw=("algbw_GBps", "mean"), busbw=("busbw_GBps", "mean"))
         .reset_index().sort_values(["total", "name"], ascending=[False, True]).head(25))
    rows = [[esc(r.name), esc(r.coll or "send/recv"), num(r.n), num(r.ranks), num(r.size), us(r.time), num(r.algbw, 2),
             num(r.busbw, 2)] for r in g.itertuples(index=False)]
    return table(["op", "collective", "instances", "ranks", "size S (bytes)", "mean time (µs)", "algbw (GB/s)",
                  "busbw (GB/s)"], rows, left=(0, 1))


# --- flows -----------------------------------------------------------------------------------------

def _network(run: Run) -> pd.DataFrame:
    f = run.flows
    ok = f["completed"].to_numpy(dtype=bool) & (f["fct_ns"] > 0)
    if "virtual" in f:
        ok &= ~f["virtual"].to_numpy(dtype=bool)
    return f[ok]


def plot_fct_size(run: Run) -> str:
    """FCT against flow size (log-log), with the standalone FCT (an idle network's) beside it."""
    fig = figure(7.5, 4.6)
    ax = fig.subplots()
    f = _network(run)
    if not len(f):
        message(ax, "no completed network flows")
        return png(fig)
    ax.scatter(f["size_bytes"], f["fct_ns"] / 1e3, s=8, alpha=0.5, color="#4c72b0", label="FCT")
    s = f.sort_values("size_bytes")
    ax.plot(s["size_bytes"], s["standalone_fct_ns"] / 1e3, color="black", linewidth=0.8, label="standalone FCT (idle network)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("FCT (µs)")
    ax.set_title(f"Flow completion time against size ({len(f):,} network flows)", fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8)
    return png(fig)


def plot_slowdown(run: Run) -> str:
    """Slowdown (FCT / standalone FCT) against size, with the median and p99 per size bin."""
    fig = figure(7.5, 4.6)
    ax = fig.subplots()
    f = _network(run)
    f = f[f["standalone_fct_ns"] > 0]
    if not len(f):
        message(ax, "no completed network flows")
        return png(fig)
    size = f["size_bytes"].to_numpy(dtype=float)
    slow = f["fct_ns"].to_numpy(dtype=float) / f["standalone_fct_ns"].to_numpy(dtype=float)
    ax.scatter(size, slow, s=8, alpha=0.4, color="#8c8c8c", label="flow")
    edges = np.unique(np.geomspace(size.min(), size.max() * 1.000001, 13))
    which = np.clip(np.searchsorted(edges, size, side="right") - 1, 0, max(len(edges) - 2, 0))
    mid, p50, p99 = [], [], []
    for k in np.unique(which):
        v = slow[which == k]
        mid.append(np.sqrt(edges[k] * edges[min(k + 1, len(edges) - 1)]))
        p50.append(np.median(v))
        p99.append(np.percentile(v, 99))
    ax.plot(mid, p50, color="#4c72b0", marker="o", label="median per size bin")
    ax.plot(mid, p99, color="#c44e52", marker="^", label="p99 per size bin")
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("slowdown: FCT / standalone FCT")
    ax.set_title(f"Slowdown against an idle network (median {np.median(slow):.2f}, p99 {np.percentile(slow, 99):.2f})",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=8)
    return png(fig)


# --- the network -----------------------------------------------------------------------------------

def _time_figure(h: float):
    """A figure for a plot on the run's time axis: the same width and margins for each, so that
    their time axes line up on the page."""
    fig = figure(9.5, h, layout=None)
    fig.subplots_adjust(left=0.16, right=0.9, top=1 - 0.45 / h, bottom=0.55 / h, hspace=0.45)
    return fig


def hottest_links(run: Run) -> dict[str, pd.DataFrame]:
    """Per tier, the ``HOT_LINKS`` links with the highest mean utilisation: ``node, port, mean``."""
    links = run.links
    means = links.groupby(["node", "port"], sort=True)["utilisation"].mean().rename("mean").reset_index()
    means["tier"] = _tiers(run, means["node"])
    out = {}
    for tier in [*TIERS, ""]:
        m = means[means["tier"] == tier]
        if len(m):
            out[tier] = m.sort_values(["mean", "node", "port"], ascending=[False, True, True]).head(HOT_LINKS)
    return out


def plot_link_utilisation(run: Run) -> str:
    """Per tier, a heat map of the utilisation of its hottest links over time; a grey band above a
    panel marks the time bins in which some sample was fast-forwarded (wormhole mode)."""
    if run.links is None or not len(run.links):
        fig = figure(9.5, 2.5)
        message(fig.subplots(), NOT_MONITORED)
        return png(fig)
    hot = hottest_links(run)
    end = run.end_ns
    fig = _time_figure(1.2 + 1.9 * len(hot))
    axes = np.atleast_1d(fig.subplots(len(hot), 1, sharex=True))
    bins = np.linspace(0, end, min(HEAT_COLUMNS, max(int(run.links["time_ns"].nunique()), 1)) + 1)
    image = None
    for ax, (tier, m) in zip(axes, hot.items()):
        rows = []
        ff = np.zeros(len(bins) - 1, dtype=bool)
        for n, p in zip(m["node"], m["port"]):
            s = run.links[(run.links["node"] == n) & (run.links["port"] == p)]
            k = np.clip(np.searchsorted(bins, s["time_ns"].to_numpy(), side="right") - 1, 0, len(bins) - 2)
            total = np.bincount(k, weights=s["utilisation"].to_numpy(dtype=float), minlength=len(bins) - 1)
            count = np.bincount(k, minlength=len(bins) - 1)
            rows.append(np.divide(total, count, out=np.full(len(total), np.nan), where=count > 0))
            ff |= np.bincount(k, weights=s["fast_forwarded"].to_numpy(dtype=float), minlength=len(bins) - 1) > 0
        image = ax.imshow(np.array(rows), aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=1,
                          extent=(0, end / 1e6, len(rows) - 0.5, -0.5))
        ax.set_yticks(range(len(rows)), _link_labels(run, m["node"], m["port"]), fontsize=6)
        ax.set_ylabel(tier or "tier unknown", fontsize=8)
        if ff.any():
            left = bins[:-1][ff] / 1e6
            ax.broken_barh(list(zip(left, np.diff(bins)[ff] / 1e6)), (-0.5, -0.35), facecolors="#9e9e9e",
                           clip_on=False)
    axes[0].set_title("Link utilisation over time: the hottest links of each tier (node:port→peer; grey band "
                      "above: fast-forwarded)", fontsize=9)
    axes[-1].set_xlabel("simulated time (ms)")
    axes[-1].set_xlim(0, end / 1e6)
    bar = fig.add_axes((0.92, 0.55 / fig.get_figheight(), 0.015, 1 - 1.0 / fig.get_figheight()))
    fig.colorbar(image, cax=bar, label="utilisation")
    return png(fig)


def plot_queue_lengths(run: Run) -> str:
    """The distribution (CDF) of the sampled queue lengths of every port, per tier."""
    fig = figure(7.5, 4.2)
    ax = fig.subplots()
    if run.links is None or not len(run.links):
        message(ax, NOT_MONITORED)
        return png(fig)
    q = run.links[["node", "queue_bytes"]].copy()
    q["tier"] = _tiers(run, q["node"])
    for tier in [*TIERS, ""]:
        v = np.sort(q.loc[q["tier"] == tier, "queue_bytes"].to_numpy(dtype=float)) / 1e3
        if not len(v):
            continue
        y = np.arange(1, len(v) + 1) / len(v)
        ax.step(v, y, where="post", color=TIER_COLORS[tier], label=f"{tier or 'tier unknown'} (p99 {np.percentile(v, 99):,.1f} KB, "
                f"max {v[-1]:,.1f} KB)")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("queue length at a sample (KB; linear below 1 KB, log above)")
    ax.set_ylabel("fraction of samples")
    ax.set_title("Queue lengths per tier (every sample of every port)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return png(fig)


def plot_pfc(run: Run) -> str:
    """PFC pause intervals per paused port (the longest paused first), on the run's time axis."""
    fig = figure(9.5, 3.6)
    if run.pfc is None:
        message(fig.subplots(), "no PFC log in this folder (neither pfc_intervals.parquet nor pfc.txt)")
        return png(fig)
    if not len(run.pfc):
        message(fig.subplots(), "no PFC pause in this run")
        return png(fig)
    end = run.end_ns
    p = run.pfc.copy()
    p["stop"] = np.where(p["end_ns"] < 0, end, p["end_ns"])
    p["span"] = p["stop"] - p["start_ns"]
    order = p.groupby(["node", "ifindex"])["span"].sum().sort_values(ascending=False, kind="stable")
    keys = list(order.index[:PFC_ROWS])
    fig = _time_figure(1.4 + 0.16 * len(keys))
    ax = fig.subplots()
    tiers = _tiers(run, [k[0] for k in keys])
    for row, ((n, i), tier) in enumerate(zip(keys, tiers)):
        g = p[(p["node"] == n) & (p["ifindex"] == i)]
        ax.broken_barh(list(zip(g["start_ns"] / 1e6, g["span"] / 1e6)), (row - 0.4, 0.8),
                       facecolors=TIER_COLORS.get(tier, "#8c8c8c"))
    ax.set_yticks(range(len(keys)), _link_labels(run, [k[0] for k in keys], [k[1] for k in keys]), fontsize=6)
    ax.set_ylim(len(keys) - 0.5, -0.5)
    ax.set_xlim(0, end / 1e6)
    ax.set_xlabel("simulated time (ms)")
    more = f" ({len(keys)} of {len(order)}: the longest paused)" if len(order) > len(keys) else ""
    ax.set_title(f"PFC pauses per paused port (node:port→peer, colour: the node's tier){more}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    return png(fig)


def _pfc_text(run: Run) -> str:
    if run.pfc is None or not len(run.pfc):
        return ""
    p = run.pfc
    queue = sorted(set(p["queue"]))
    which = "queue unknown (pfc.txt does not say; several queues were pausable)" if queue == [-1] else \
        f"queue {', '.join(str(q) for q in queue)}"
    still = int((p["end_ns"] < 0).sum())
    return (f"<p>{len(p):,} pause intervals on {p.groupby(['node', 'ifindex']).ngroups} ports ({which}); "
            f"{us(float((p['end_ns'] - p['start_ns'])[p['end_ns'] >= 0].sum()))} µs paused in all"
            + (f"; {still} still paused at the end" if still else "") + ".</p>")


# --- the page --------------------------------------------------------------------------------------

def _summary(run: Run) -> str:
    s = run.summary
    f = run.flows
    virtual = f["virtual"].to_numpy(dtype=bool) if "virtual" in f else np.zeros(len(f), bool)
    given = {k: v for k, v in (s.get("inputs") or {}).items() if v is not None and k != "command"}
    rows = [["run", "trace replay" if run.is_replay else "flow-level simulation"],
            *([esc(k), f"<code>{esc(v)}</code>"] for k, v in given.items() if k != "cc"),
            ["mode", esc(s.get("mode", "?"))], ["congestion control", esc(s.get("cc", "?"))],
            ["simulated time (ms)", num(run.end_ns / 1e6, 3)],
            ["flows: network / virtual (compute, copies inside a server)", f"{int((~virtual).sum()):,} / {int(virtual.sum()):,}"],
            ["flows completed", f"{int(f['completed'].sum()):,} of {len(f):,}"]]
    for key, what in (("events", "packet events"), ("wall_seconds", "wall time (s)"), ("drops", "drops"),
                      ("pfc_pauses", "PFC pauses")):
        if key in s:
            rows.append([what, num(s[key], 2 if key == "wall_seconds" else 0)])
    if s.get("mode") == "wormhole" and "fast_forwarded_bytes" in f:  # (from the flows: older folders too)
        net = f[~virtual]
        rows.append(["network bytes not simulated (jumps, fluid flows, the memo)",
                     f"{net['fast_forwarded_bytes'].sum() / max(int(net['size_bytes'].sum()), 1):.1%}"])
    if run.iterations is not None:
        rows += [[f"iteration {int(r.index)} (ms)", num(r.duration_ns / 1e6, 3)] for r in run.iterations.itertuples()]
    return table(["", ""], rows, left=(0, 1))


def render(run: Run, iteration: int | None = None) -> str:
    """The report of ``run`` as one HTML string; ``iteration`` for the timeline and the bars (the
    last by default)."""
    it = chosen_iteration(run, iteration)
    path = critical_path(run.flows, run.deps, it) if it is not None and run.deps is not None else []
    monitored = run.links is not None
    figs_iter = [
        ("plot-timeline", plot_timeline(run, it, path), "Timeline of an iteration with the critical path",
         "Per rank: compute ops (upper half of the row) and the transfers it sends or receives, by collective (lower "
         "half). Black: the critical path, the chain of flows whose arrivals determined when the iteration ended "
         "(from its last flow back through, at each step, the predecessor that arrived last); dashed lines join its "
         "steps across ranks."),
        ("plot-breakdown", plot_breakdown(run, it), "Time breakdown per rank",
         "Compute, compute overlapped by communication, exposed communication (transfers the rank's compute did not "
         "hide) and idle (waiting: pipeline bubbles, peers not yet ready), adding up to the iteration time "
         "(<code>iteration_breakdown.csv</code>)."),
    ]
    figs_flows = [
        ("plot-fct-size", plot_fct_size(run), "FCT against flow size",
         "Each completed network flow; the line is its standalone FCT (the same flow alone on an idle network)."),
        ("plot-slowdown", plot_slowdown(run), "Slowdown against the standalone FCT",
         "FCT / standalone FCT per network flow, with the median and p99 per logarithmic size bin."),
    ]
    figs_net = [
        ("plot-link-utilisation", plot_link_utilisation(run), "Link utilisation heat map by tier",
         "Utilisation of each tier's hottest links (highest mean utilisation) over time, from "
         "<code>links.parquet</code>; tiers from the topology (hosts, then switches by their distance from hosts)."),
        ("plot-queue-lengths", plot_queue_lengths(run), "Queue-length distributions per tier",
         "Cumulative distribution of the sampled egress queue lengths, every port of a tier together."),
        ("plot-pfc", plot_pfc(run), "PFC pause intervals",
         "When each port was paused by PFC (from <code>pfc_intervals.parquet</code>, or <code>pfc.txt</code>), on the "
         "heat map's time axis."),
    ]
    title = (run.summary.get("inputs") or {}).get("trace") or str(run.path)
    body = [f"<h1>Run report: {esc(run.path.name or run.path)}</h1>",
            f'<p class="small"><code>{esc(run.path)}</code></p>', _summary(run)]
    if run.is_replay:
        body += [f"<h2>Iteration {it}: timeline and critical path</h2>", figure_html(*figs_iter[0]),
                 path_table(run, path), "<h2>Where the time went</h2>", figure_html(*figs_iter[1]),
                 breakdown_table(run),
                 "<h2>Collectives</h2>",
                 '<p class="small">Bandwidths as nccl-tests defines them: algbw = S / t, busbw = algbw x 2(n-1)/n '
                 "(all-reduce), (n-1)/n (all-gather, reduce-scatter, all-to-all), 1 (send/recv); S is the buffer for an "
                 "all-reduce, the gathered output for an all-gather, the input for a reduce-scatter and what one rank "
                 "sends for an all-to-all; t from the collective's first flow's start to its last arrival.</p>",
                 collectives_table(run)]
    else:
        body += ['<div class="verdict info">A flow-level run: no iterations, ranks or collectives to break down.</div>']
        body += [figure_html(*figs_iter[0]), figure_html(*figs_iter[1])]  # every plot present, each saying why
    body += ["<h2>Flows</h2>", *(figure_html(*x) for x in figs_flows), "<h2>The network</h2>"]
    if not monitored:
        body.append(f'<div class="verdict info">The links were not sampled: {esc(NOT_MONITORED)}. PFC pauses are '
                    "logged in every run.</div>")
    body += [figure_html(*figs_net[0]), figure_html(*figs_net[1]), _pfc_text(run), figure_html(*figs_net[2])]
    body.append('<p class="small">Tables beside this file: <code>flows.parquet</code>'
                + (", <code>collectives.csv</code>, <code>iterations.csv</code>, <code>iteration_breakdown.csv</code>, "
                   "<code>layer_breakdown.csv</code>, <code>deps.parquet</code>" if run.is_replay else "")
                + ", <code>ports.csv</code>, <code>pfc.txt</code>, <code>pfc_intervals.parquet</code>"
                + (", <code>links.parquet</code>" if monitored else "") + ".</p>")
    return page(f"wormhole-replay report: {title}", body)
