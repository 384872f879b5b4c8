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


def _rank_flows(flows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compute flows by rank, and communication flows once per rank they touch (sender, receiver)."""
    f = _timed(flows)
    compute = f[f["kind"] == "compute"]
    comm = f[f["kind"] != "compute"]
    dst_rank = comm["dst_rank"] if "dst_rank" in comm else comm["rank"]
    recv = comm[dst_rank != comm["rank"]].assign(rank=dst_rank[dst_rank != comm["rank"]])
    return compute, pd.concat([comm, recv], ignore_index=True)


class _Groups:
    """Unions of intervals for many groups at once: group g's times are shifted onto its own stretch
    ``[g * width, (g + 1) * width)`` of one time line, so one sort serves every group and the
    coverage of one group's segments by another's (same group id) is :func:`covered` on the line."""

    def __init__(self, t0: int, t1: int, groups: int):
        self.t0, self.width = t0, t1 - t0 + 1
        if groups * self.width >= 2 ** 62:
            raise ValueError(f"breakdown: {groups} groups over {self.width} ns overflow int64 time")

    def union(self, gid, s, e) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per group, the union of ``[s, e)``: (group ids, shifted starts, shifted ends) of its segments."""
        base = np.asarray(gid, dtype=np.int64) * self.width - self.t0
        us, ue = union(np.asarray(s, dtype=np.int64) + base, np.asarray(e, dtype=np.int64) + base)
        return us // self.width, us, ue

    def move(self, gid, t) -> np.ndarray:
        """Times ``t`` on the line (of any group) moved to group ``gid``'s stretch."""
        return np.asarray(gid, dtype=np.int64) * self.width + np.asarray(t, dtype=np.int64) % self.width


def _total(gid, s, e, groups: int) -> np.ndarray:
    out = np.zeros(groups, dtype=np.int64)
    np.add.at(out, gid, e - s)
    return out


def iteration_breakdown(flows: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """One row per iteration and rank (``BREAKDOWN_COLUMNS``, times in ns) from a replay's flows
    table (``kind, rank, dst_rank, iteration, start_ns, received_ns``) and iterations table."""
    compute, comm = _rank_flows(flows)
    ranks = np.unique(np.concatenate([flows["rank"].to_numpy(), flows.get("dst_rank", flows["rank"]).to_numpy()]))
    its = iterations["index"].to_numpy()
    n = len(its) * len(ranks)
    if not n:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    timed = pd.concat([compute, comm])
    line = _Groups(int(timed["start_ns"].min()) if len(timed) else 0, int(timed["received_ns"].max()) if len(timed) else 0, n)

    def gid(t):  # iteration-major, then rank
        return np.searchsorted(its, t["iteration"].to_numpy()) * len(ranks) + np.searchsorted(ranks, t["rank"].to_numpy())

    cg, cs, ce = line.union(gid(compute), compute["start_ns"], compute["received_ns"])
    mg, ms, me = line.union(gid(comm), comm["start_ns"], comm["received_ns"])
    compute_ns = _total(cg, cs, ce, n)
    comm_ns = _total(mg, ms, me, n)
    overlap = _total(mg, covered(cs, ce, ms), covered(cs, ce, me), n)  # each comm segment's part under compute
    exposed = comm_ns - overlap
    it = iterations.set_index("index").loc[np.repeat(its, len(ranks))]
    total = (it["end_ns"] - it["start_ns"]).to_numpy(dtype=np.int64)
    return pd.DataFrame({"iteration": np.repeat(its, len(ranks)), "rank": np.tile(ranks, len(its)),
                         "start_ns": it["start_ns"].to_numpy(), "end_ns": it["end_ns"].to_numpy(), "iteration_ns": total,
                         "compute_ns": compute_ns, "communication_ns": comm_ns, "overlapped_ns": overlap,
                         "exposed_communication_ns": exposed, "idle_ns": total - compute_ns - exposed})[BREAKDOWN_COLUMNS]


LAYER_COLUMNS = ["iteration", "name", "kind", "ranks", "compute_ns", "communication_ns", "exposed_communication_ns",
                 "exposed_communication_max_ns"]


def layer_breakdown(flows: pd.DataFrame) -> pd.DataFrame:
    """One row per iteration and op name (the generators name ops by phase and layer, e.g.
    ``F_attn_l3`` and its all-reduce ``F_attn_tp_l3``): over the ranks that run it, the mean time
    per rank in its compute ops, in its transfers, and in its transfers not hidden by that rank's
    compute (and the worst rank's), summed over the op's instances (microbatches)."""
    compute, comm = _rank_flows(flows)
    both = pd.concat([compute, comm], ignore_index=True)
    if not len(both):
        return pd.DataFrame(columns=LAYER_COLUMNS)
    rank_id = both.groupby(["iteration", "rank"], sort=True).ngroup().to_numpy()  # compute's rows come first
    op_id = both.groupby(["iteration", "rank", "name", "kind"], sort=True).ngroup().to_numpy()
    n_rank, n_op = int(rank_id.max()) + 1, int(op_id.max()) + 1
    line = _Groups(int(both["start_ns"].min()), int(both["received_ns"].max()), max(n_rank, n_op))
    c = len(compute)
    # per rank: the union of its compute; per (rank, op name): the union of that op's intervals
    _, cs, ce = line.union(rank_id[:c], compute["start_ns"], compute["received_ns"])
    og, os_, oe = line.union(op_id, both["start_ns"], both["received_ns"])
    ops = both.assign(op=op_id, rank_id=rank_id).drop_duplicates("op").set_index("op").loc[np.arange(n_op)]
    busy = _total(og, os_, oe, n_op)
    r = ops["rank_id"].to_numpy()[og]  # the rank of each op segment, to read that rank's compute
    hidden = _total(og, covered(cs, ce, line.move(r, os_)), covered(cs, ce, line.move(r, oe)), n_op)
    is_compute = (ops["kind"] == "compute").to_numpy()
    t = pd.DataFrame({"iteration": ops["iteration"].to_numpy(), "name": ops["name"].to_numpy(),
                      "kind": ops["kind"].to_numpy(), "rank": ops["rank"].to_numpy(),
                      "compute_ns": np.where(is_compute, busy, 0), "communication_ns": np.where(is_compute, 0, busy),
                      "exposed_communication_ns": np.where(is_compute, 0, busy - hidden)})
    if not len(t):
        return pd.DataFrame(columns=LAYER_COLUMNS)
    g = t.groupby(["iteration", "name", "kind"], sort=True)
    out = g.agg(ranks=("rank", "nunique"), compute_ns=("compute_ns", "mean"), communication_ns=("communication_ns", "mean"),
                exposed_communication_ns=("exposed_communication_ns", "mean"),
                exposed_communication_max_ns=("exposed_communication_ns", "max")).reset_index()
    return out[LAYER_COLUMNS]
