"""PFC pauses as intervals (``pfc_intervals.parquet``) from the log of PFC frames received
(``pfc.txt``: ``time_ns node node_type ifindex type``, 1 PAUSE, 0 RESUME).

An interval is a span during which egress port ``ifindex`` of ``node`` (the device that received
the frames) was paused: ``node, ifindex, queue, start_ns, end_ns``, ``end_ns`` -1 if it was still
paused when the run ended.

``pfc.txt`` does not say which queue a frame paused (the reference's format; the engine logs what
the reference logs, ``engine/pfc.py: pfc_received``). A switch pauses an ingress queue of its
own (never queue 0), and it pauses and resumes each (port, queue) strictly alternately, so:

* when the run has one pausable queue (every data flow in one priority group and the ACKs either
  in queue 0, ``ACK_HIGH_PRIO 1``, or in that same group: the usual case, replays included), the
  frames pair up exactly and ``queue`` is that queue;
* otherwise frames of several queues may interleave on one port: an interval then runs from a
  PAUSE on a port with nothing paused to the RESUME that leaves nothing paused (the port had some
  queue paused), and ``queue`` is -1 (unknown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["node", "ifindex", "queue", "start_ns", "end_ns"]


def pausable_queues(pgs, ack_high_prio: bool) -> set[int]:
    """The queues a switch may pause: the data flows' priority groups, and queue 3 for ACKs unless
    they travel in queue 0 (``engine/build.py``: ``CI_ACK_Q_IDX``); never queue 0."""
    queues = {int(q) for q in np.unique(np.asarray(pgs))}
    if not ack_high_prio:
        queues.add(3)
    return queues - {0}


def pfc_intervals(pfc: pd.DataFrame, queues: set[int] | None = None) -> pd.DataFrame:
    """The pause intervals of a PFC frame log (``time_ns, node, ifindex, type``), sorted by
    ``start_ns, node, ifindex``; ``queues`` the run's pausable queues (None: unknown)."""
    queue = next(iter(queues)) if queues is not None and len(queues) == 1 else -1
    rows = []
    depth: dict[tuple[int, int], int] = {}
    opened: dict[tuple[int, int], int] = {}
    for t, node, ifindex, kind in pfc[["time_ns", "node", "ifindex", "type"]].itertuples(index=False):
        key = (int(node), int(ifindex))
        n = depth.get(key, 0)
        if int(kind) == 1:
            if n == 0:
                opened[key] = int(t)
            depth[key] = n + 1
        elif n > 0:  # a RESUME with nothing paused (a log cut at its start) is ignored
            depth[key] = n - 1
            if n == 1:
                rows.append((*key, queue, opened.pop(key), int(t)))
    rows += [(*key, queue, start, -1) for key, start in opened.items()]
    out = pd.DataFrame(rows, columns=COLUMNS).astype("int64")
    return out.sort_values(["start_ns", "node", "ifindex"], kind="stable", ignore_index=True)


def read_pfc_txt(path) -> pd.DataFrame:
    """``pfc.txt`` as a table (``time_ns, node, node_type, ifindex, type``)."""
    cols = ["time_ns", "node", "node_type", "ifindex", "type"]
    try:
        return pd.read_csv(path, sep=r"\s+", header=None, names=cols, dtype="int64")
    except pd.errors.EmptyDataError:  # no PFC frame in the run
        return pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
