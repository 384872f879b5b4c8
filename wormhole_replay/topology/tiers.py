"""Tiers of a network: hosts, and switches by their distance (in hops) from the nearest host.

Distance 1 is the ``edge`` tier (ToR, leaf, rail switch), 2 ``aggregation`` (a fat-tree's
aggregation switches; the spines of a two-tier leaf-spine or rail network, its top tier), 3 and
beyond ``core``. Derived from the links alone, so it holds for any ``topology.txt`` as well as the
built-in specs. A link is reported in the tier of the node that transmits on it (an egress port):
``host`` links are NIC uplinks, ``edge`` links leave an edge switch (down to hosts or up), and so on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .model import Topology

TIERS = ("host", "edge", "aggregation", "core")


def node_distances(topo: Topology) -> np.ndarray:
    """int64 [n_nodes]: hops from each node to the nearest host (0 for hosts; -1 if unreachable)."""
    ports = topo.ports()
    dist = np.full(topo.n_nodes, -1, dtype=np.int64)
    frontier = np.asarray(topo.hosts, dtype=np.int64)
    dist[frontier] = 0
    d = 0
    while len(frontier):  # breadth-first, all hosts at once
        d += 1
        nxt = np.concatenate([ports.peer_node[topo.node_ports(int(n))] for n in frontier])
        nxt = np.unique(nxt[dist[nxt] < 0])
        dist[nxt] = d
        frontier = nxt
    return dist


def node_tiers(topo: Topology) -> np.ndarray:
    """object [n_nodes]: each node's tier name (``TIERS``)."""
    dist = node_distances(topo)
    return np.array([TIERS[min(max(int(x), 0), len(TIERS) - 1)] for x in dist], dtype=object)


def ports_table(topo: Topology) -> pd.DataFrame:
    """One row per egress port: ``node, ifindex, tier, peer, peer_ifindex, peer_tier, rate_bps,
    delay_ns`` (``ifindex`` is ns-3's interface index, as in ``pfc.txt``)."""
    p = topo.ports()
    tiers = node_tiers(topo)
    return pd.DataFrame({
        "node": p.node, "ifindex": p.ifindex, "tier": tiers[p.node],
        "peer": p.peer_node, "peer_ifindex": p.ifindex[p.peer_port], "peer_tier": tiers[p.peer_node],
        "rate_bps": p.rate_bps, "delay_ns": p.delay_ns,
    })
