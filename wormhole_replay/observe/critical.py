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
    received = pd.Series(flows["received_ns"].to_numpy(), index=flows["flow_id"].to_numpy())
    inside = flows if iteration is None else flows[flows["iteration"] == iteration]
    inside = inside[inside["received_ns"] >= 0]
    if not len(inside):
        return []
    members = set(inside["flow_id"].tolist())
    d = deps.sort_values(["flow_id", "dep"], kind="stable")
    preds = {k: g.to_numpy() for k, g in d.groupby("flow_id")["dep"]}
    last = inside.sort_values(["received_ns", "flow_id"], ascending=[False, True], kind="stable")["flow_id"].iloc[0]
    path = [int(last)]
    while True:
        cand = [p for p in preds.get(path[-1], ()) if p in members and received[p] >= 0]
        if not cand:
            break
        times = received[cand].to_numpy()
        path.append(int(np.asarray(cand)[times == times.max()].min()))
    return path[::-1]
