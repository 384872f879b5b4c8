"""Source ports of replayed flows: which connection (and so which ECMP path) a flow takes.

Switches hash a flow's 5-tuple to pick among equal-cost next hops, so the UDP source port decides
a flow's path.  Two models:

* ``connection`` (the default for ``replay``): NCCL opens its connections once per communicator,
  one queue pair per peer and channel, and reuses them for every collective; RoCEv2 derives the
  UDP source port from the queue pair, so on a real cluster every collective of a ring takes the
  same ECMP paths, layer after layer and iteration after iteration.  A replayed flow gets the port
  of its connection: (job, group, channel, source, destination) for a collective, (job, source,
  destination) for point-to-point sends.  Connections between one pair of hosts are numbered from
  10000 in the order they are first used (flow id order), so a pair that shares no group keeps the
  reference's first port.
* ``flow``: every flow is a new connection, numbered per (source, destination) pair from 10000 in
  flow id order, the way the reference's ``third.cc`` numbers a flow file's flows.  ECMP then
  re-draws every collective's paths, as ns-3 replays do.

Flow files (``simulate``) always take the reference's numbering (``engine.build.source_ports``).
"""

from __future__ import annotations

import numpy as np

SPORT_BASE = 10000
PORT_MODELS = ("connection", "flow")


def replay_source_ports(src, dst, connection, virtual, model: str = "connection") -> np.ndarray:
    """Source port per flow.  ``connection[f]`` is any hashable naming flow f's connection (its
    endpoints need not be part of it); ``virtual[f]`` flows cross no network and get port 0."""
    if model not in PORT_MODELS:
        raise ValueError(f"unknown port model {model!r}")
    sport = np.zeros(len(src), dtype=np.int64)
    next_port: dict[tuple[int, int], int] = {}
    port_of: dict[tuple, int] = {}
    for f in range(len(src)):
        if virtual[f]:
            continue
        pair = (int(src[f]), int(dst[f]))
        key = (pair, connection[f]) if model == "connection" else None
        if key is not None and key in port_of:
            sport[f] = port_of[key]
            continue
        sport[f] = next_port.get(pair, SPORT_BASE)
        next_port[pair] = sport[f] + 1
        if key is not None:
            port_of[key] = sport[f]
    return sport
