"""The critical path of an iteration: the chain of flows (compute ops, transfers) whose
dependencies determined when it ended.

Walk back from the flow that arrived last through, at each step, the predecessor that arrived
last (ties: the lowest flow id), until a flow has no predecessor in the iteration. Every flow of a
replay waits for all its predecessors (``FlowSet.deps``), so the one that arrived last is the one
it waited for: shortening any flow off this chain cannot end the iteration sooner.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def deps_table(flows) -> pd.DataFrame:
    """A :class:`FlowSet`'s dependency edges as a table: ``flow_id, dep`` (dep before flow_id)."""
    if flows.deps_ptr is None:
        return pd.DataFrame({"flow_id": np.zeros(0, np.int64), "dep": np.zeros(0, np.int64)})
    counts = np.diff(flows.deps_ptr)
    return pd.DataFrame({"flow_id": np.repeat(np.arange(len(counts), dtype=np.int64), counts),
                         "dep": np.asarray(flows.deps, dtype=np.int64)})


def critical_path(flows: pd.DataFrame, deps: pd.DataFrame, iteration: int | None = None) -> list[int]:
    """Flow ids of the critical path, first to last (``flows``: ``flow_id, received_ns`` and, to
    restrict it to one iteration, ``iteration``); empty when no flow arrived."""
    ids = flows["flow_id"].to_numpy(dtype=np.int64)
    if not len(ids):
        return []
    n = int(ids.max()) + 1
    received = np.full(n, -1, dtype=np.int64)
    received[ids] = flows["received_ns"].to_numpy(dtype=np.int64)
    member = np.zeros(n, dtype=bool)
    member[ids if iteration is None else ids[flows["iteration"].to_numpy() == iteration]] = True
    member &= received >= 0
    if not member.any():
        return []
    d = deps[(deps["flow_id"] < n) & (deps["dep"] < n)].sort_values(["flow_id", "dep"], kind="stable")
    succ, pred = d["flow_id"].to_numpy(dtype=np.int64), d["dep"].to_numpy(dtype=np.int64)
    ptr = np.searchsorted(succ, np.arange(n + 1))  # preds of f: pred[ptr[f]:ptr[f + 1]]
    inside = np.flatnonzero(member)
    last = inside[received[inside] == received[inside].max()].min()
    path = [int(last)]
    while True:
        cand = pred[ptr[path[-1]]:ptr[path[-1] + 1]]
        cand = cand[member[cand]]
        if not len(cand):
            break
        path.append(int(cand[received[cand] == received[cand].max()].min()))
    return path[::-1]
