"""Per-collective bandwidths (as nccl-tests reports them) and the per-rank time breakdown of each
iteration (the analogue of SimAI's ``EndToEnd.csv``).

Bandwidths, after nccl-tests' ``PERFORMANCE.md``: ``algbw = S / t`` and ``busbw = algbw x factor``
with ``t`` the collective's duration (first flow's start to last flow's arrival) and

============== ============================================ ===========
collective     S (bytes)                                    factor
============== ============================================ ===========
all_reduce     the buffer (the trace's ``bytes``)           2(n-1)/n
all_gather     the gathered output: ``bytes`` (one rank's    (n-1)/n
               input) x n
reduce_scatter the input vector (``bytes``)                 (n-1)/n
all_to_all     what one rank sends in all (``bytes``)       (n-1)/n
p2p            the message                                  1
============== ============================================ ===========

``S`` in bytes over ``t`` in ns is GB/s (10^9 bytes per second), nccl-tests' unit.

Breakdown of rank r in iteration i, over the iteration's window (its first flow's start to its
last flow's arrival, the same window for every rank): ``compute`` is the union of r's compute
ops; ``communication`` the union of the transfers r sends or receives (network flows and copies
inside a server) from each one's start to its arrival; ``overlapped`` their intersection;
``exposed_communication = communication - overlapped``; ``idle`` the rest. So ``compute +
exposed_communication + idle = iteration`` exactly. A rank waiting for its peers before a
collective's first transfer reaches it counts as idle (as does a pipeline bubble): the flows
table says when data moved, not when a kernel was launched.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}


def collective_size(coll: str, trace_bytes: int, n: int) -> int:
    """nccl-tests' ``S`` of a collective whose trace op says ``trace_bytes`` (table above)."""
    return int(trace_bytes) * n if coll == "all_gather" else int(trace_bytes)


def add_bandwidths(coll: pd.DataFrame, ops: pd.DataFrame, groups: dict) -> pd.DataFrame:
    """``coll`` (one row per unit, with ``op_id`` of its first op and ``duration_ns``) with
    ``ranks, size_bytes, algbw_GBps, busbw_GBps`` added; ``ops`` is the trace's op table,
    ``groups`` its group name -> ranks."""
    first = ops.set_index("op_id").loc[coll["op_id"].to_numpy()]
    kinds = first["kind"].to_numpy()
    p2p = kinds != "coll"
    n = np.array([2 if k else len(groups.get(g, ())) for k, g in zip(p2p, first["group"])], dtype=np.int64)
    size = np.array([int(b) if k else collective_size(c, b, m) for k, c, b, m in
                     zip(p2p, first["coll"], first["bytes"], n)], dtype=np.int64)
    factor = np.array([1.0 if k else (BUS_FACTOR[c](m) if m > 0 else np.nan) for k, c, m in zip(p2p, first["coll"], n)])
    t = coll["duration_ns"].to_numpy(dtype=float)
    algbw = np.divide(size, t, out=np.full(len(t), np.nan), where=t > 0)
    out = coll.copy()
    out["ranks"] = n
    out["size_bytes"] = size
    out["algbw_GBps"] = algbw
    out["busbw_GBps"] = algbw * factor
    return out


# --- interval arithmetic -------------------------------------------------------------------------

def union(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals ``[starts, ends)`` as disjoint sorted segments."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if not len(s):
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last]


def covered(seg_s: np.ndarray, seg_e: np.ndarray, t) -> np.ndarray:
    """How much of the disjoint sorted segments lies before each time ``t`` (vectorised)."""
    t = np.asarray(t, dtype=np.int64)
    if not len(seg_s):
        return np.zeros(t.shape, dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(seg_e - seg_s)])
    k = np.searchsorted(seg_s, t, side="right") - 1
    inside = np.where(k >= 0, np.minimum(t, seg_e[np.maximum(k, 0)]) - seg_s[np.maximum(k, 0)], 0)
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)


# --- the breakdown ---------------------------------------------------------------------------------

BREAKDOWN_COLUMNS = ["iteration", "rank", "start_ns", "end_ns", "iteration_ns", "compute_ns", "communication_ns",
                     "overlapped_ns", "exposed_communication_ns", "idle_ns"]


def _timed(flows: pd.DataFrame) -> pd.DataFrame:
    """Flows that started and arrived (an unfinished run's others have no interval)."""
    return flows[(flows["start_ns"] >= 0) & (flows["received_ns"] >= flows["start_ns"])]


def _segments(flows: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """The union of the flows' ``[start_ns, received_ns)`` intervals (none for ``None``)."""
    if flows is None:
        return union([], [])
    return union(flows["start_ns"], flows["received_ns"])


def _rank_flows(flows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compute flows by rank, and communication flows once per rank they touch (sender, receiver)."""
    f = _timed(flows)
    compute = f[f["kind"] == "compute"]
    comm = f[f["kind"] != "compute"]
    dst_rank = comm["dst_rank"] if "dst_rank" in comm else comm["rank"]
    recv = comm[dst_rank != comm["rank"]].assign(rank=dst_rank[dst_rank != comm["rank"]])
    return compute, pd.concat([comm, recv], ignore_index=True)


def iteration_breakdown(flows: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """One row per iteration and rank (``BREAKDOWN_COLUMNS``, times in ns) from a replay's flows
    table (``kind, rank, dst_rank, iteration, start_ns, received_ns``) and iterations table."""
    compute, comm = _rank_flows(flows)
    by_c = {k: g for k, g in compute.groupby(["iteration", "rank"])}
    by_m = {k: g for k, g in comm.groupby(["iteration", "rank"])}
    ranks = np.unique(np.concatenate([flows["rank"].to_numpy(), flows.get("dst_rank", flows["rank"]).to_numpy()]))
    rows = []
    for it in iterations.itertuples(index=False):
        for r in ranks:
            c = by_c.get((it.index, r))
            m = by_m.get((it.index, r))
            cs, ce = _segments(c)
            ms, me = _segments(m)
            compute_ns = int((ce - cs).sum())
            comm_ns = int((me - ms).sum())
            overlap = int((covered(cs, ce, me) - covered(cs, ce, ms)).sum())
            total = int(it.end_ns - it.start_ns)
            exposed = comm_ns - overlap
            rows.append((int(it.index), int(r), int(it.start_ns), int(it.end_ns), total, compute_ns, comm_ns, overlap,
                         exposed, total - compute_ns - exposed))
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)


LAYER_COLUMNS = ["iteration", "name", "kind", "ranks", "compute_ns", "communication_ns", "exposed_communication_ns",
                 "exposed_communication_max_ns"]


def layer_breakdown(flows: pd.DataFrame) -> pd.DataFrame:
    """One row per iteration and op name (the generators name ops by phase and layer, e.g.
    ``F_attn_l3`` and its all-reduce ``F_attn_tp_l3``): over the ranks that run it, the mean time
    per rank in its compute ops, in its transfers, and in its transfers not hidden by that rank's
    compute (and the worst rank's), summed over the op's instances (microbatches)."""
    compute, comm = _rank_flows(flows)
    by_c = {k: g for k, g in compute.groupby(["iteration", "rank"])}
    rows = []
    for (it, r), m in comm.groupby(["iteration", "rank"]):
        cs, ce = _segments(by_c.get((it, r)))
        for name, g in m.groupby("name"):
            ms, me = _segments(g)
            total = int((me - ms).sum())
            hidden = int((covered(cs, ce, me) - covered(cs, ce, ms)).sum())
            rows.append((it, name, g["kind"].iloc[0], r, 0, total, total - hidden))
    for (it, r, name), c in compute.groupby(["iteration", "rank", "name"]):
        cs, ce = _segments(c)
        rows.append((it, name, "compute", r, int((ce - cs).sum()), 0, 0))
    t = pd.DataFrame(rows, columns=["iteration", "name", "kind", "rank", "compute_ns", "communication_ns",
                                    "exposed_communication_ns"])
    if not len(t):
        return pd.DataFrame(columns=LAYER_COLUMNS)
    g = t.groupby(["iteration", "name", "kind"], sort=True)
    out = g.agg(ranks=("rank", "nunique"), compute_ns=("compute_ns", "mean"), communication_ns=("communication_ns", "mean"),
                exposed_communication_ns=("exposed_communication_ns", "mean"),
                exposed_communication_max_ns=("exposed_communication_ns", "max")).reset_index()
    return out[LAYER_COLUMNS]
