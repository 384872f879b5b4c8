"""Importers: other projects' workload files into the native trace.

* ``hpcc-flow``: the reference simulator's ``flow.txt``.  Each flow becomes a send/recv pair
  between ranks (the flow file's node ids, renumbered densely; ``rank_to_node`` keeps the map, so
  a replay uses the same hosts), its start time a compute op before the send.
* ``aicb``: SimAI / AICB workload text, in :mod:`.aicb` (re-exported here).
* ``kineto``: PyTorch profiler JSON, one file per rank, in :mod:`.kineto` (re-exported here).

Chakra ET is in :mod:`.chakra`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .aicb import import_aicb  # noqa: F401  (part of this module's API)
from .flowfile import read_flow_file
from .kineto import import_kineto  # noqa: F401  (part of this module's API)
from .trace import Trace, new_ops


def import_hpcc_flow(path: str | Path) -> Trace:
    """A reference ``flow.txt`` as a trace: flow i is ``compute(start) -> send`` on its source
    rank and a ``recv`` on its destination rank."""
    fs = read_flow_file(path)
    nodes = sorted(set(fs.src.tolist()) | set(fs.dst.tolist()))
    rank_of = {n: r for r, n in enumerate(nodes)}
    t0 = int(fs.start_ns.min()) if len(fs) else 0
    rows = []
    for f in range(len(fs)):
        s, d = rank_of[int(fs.src[f])], rank_of[int(fs.dst[f])]
        if s == d:
            raise InputError(f"{path}: flow {f} goes from node {fs.src[f]} to itself")
        wait = len(rows)
        rows.append(dict(op_id=wait, rank=s, kind="compute", name=f"start_flow{f}", duration_ns=int(fs.start_ns[f]) - t0))
        rows.append(dict(op_id=wait + 1, rank=s, kind="send", name=f"flow{f}", peer=d, bytes=int(fs.size[f]), deps=[wait]))
        rows.append(dict(op_id=wait + 2, rank=d, kind="recv", name=f"flow{f}", peer=s, bytes=int(fs.size[f])))
    meta = dict(ranks=len(nodes), groups={}, iterations=1, rank_to_node=nodes,
                provenance=dict(importer="hpcc-flow", source=str(path), start_offset_ns=t0))
    return Trace(new_ops(rows), meta)
