"""Flow Conflict Graphs: the canonical keys of memo entries.

The FCG of a partition has a vertex per flow, weighted by its rate, and an edge between two flows
that share links of their data paths, weighted by the number of links shared (the paper's
definition; where on the path a link sits is deliberately ignored).  Rates are quantised before
they become weights: ``round(rate / line_rate * RATE_LEVELS)``, steps of 5% of the flow's NIC rate,
the steadiness threshold's own resolution (two rates within one step may still fall into adjacent
steps: such a pair misses, it never matches wrongly).

Lookup is in two stages, as the paper's |V|, |E| pre-filter but sharper: the Weisfeiler-Lehman
hash of the weighted graph (networkx) picks a bucket; an exact weighted isomorphism test (VF2,
networkx) then confirms each candidate and yields the vertex mapping through which the entry's
per-flow values are applied.  The WL hash is only a bucket key: non-isomorphic graphs may share it
(a 6-cycle and two triangles do) and are told apart by the isomorphism test.  ``SCHEME`` names the
hashing scheme (networkx changed its WL hashes in 3.5): entries of another scheme are never read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

RATE_LEVELS = 20  # vertex weight quantum: 1/20 of the flow's line rate
WL_ITERATIONS = 3
LINKS_MAX = 16  # edge weights: shared links (fewer than this) + LINKS_MAX x level
COURSE_BASE = 10_000  # above every start-FCG weight (memo/session.py: _start_fcg)
CC_LEVELS = (RATE_LEVELS + 1) * 41 * 8  # course keys: HPCC's reference rate, utilisation, stage
MAX_VERTICES = 48  # larger partitions are not memoized: their isomorphism tests could explode
SCHEME = f"fcg1-wl{WL_ITERATIONS}-q{RATE_LEVELS}-nx{'.'.join(nx.__version__.split('.')[:2])}"


def quantise(rate: float, line_rate: float) -> int:
    return int(round(rate / line_rate * RATE_LEVELS)) if line_rate > 0 else 0


@dataclass
class FCG:
    """A partition's FCG: ``flows`` (engine flow ids) in vertex order, quantised vertex weights
    ``v``, edges ``e`` as ``[i, j, shared_links]`` with ``i < j``, sorted."""

    flows: list
    v: list
    e: list
    _graph: nx.Graph | None = field(default=None, repr=False)
    _hash: str | None = field(default=None, repr=False)

    @property
    def key(self) -> dict:
        return {"v": list(self.v), "e": [list(x) for x in self.e]}

    @property
    def graph(self) -> nx.Graph:
        if self._graph is None:
            self._graph = graph_of(self.key)
        return self._graph

    @property
    def wl_hash(self) -> str:
        if self._hash is None:
            self._hash = wl_hash(self.graph)
        return self._hash


def build(flows, links, weights, link_level=None) -> FCG:
    """The FCG of ``flows`` (sorted ids), ``links[i]`` the data-path links of flow ``flows[i]``,
    ``weights[i]`` its vertex weight.  With ``link_level`` (link -> small int, e.g. a queue
    level), an edge's weight also says the highest level among the links its flows share:
    ``shared + LINKS_MAX * level``."""
    by_link: dict = {}
    for i, ls in enumerate(links):
        for x in ls:
            by_link.setdefault(x, []).append(i)
    shared: dict = {}
    level: dict = {}
    for x, users in by_link.items():
        for a in range(len(users)):
            for b in range(a + 1, len(users)):
                pair = (users[a], users[b])
                shared[pair] = shared.get(pair, 0) + 1
                if link_level is not None:
                    level[pair] = max(level.get(pair, 0), link_level(x))
    edges = sorted([i, j, w + LINKS_MAX * level.get((i, j), 0)] for (i, j), w in shared.items())
    return FCG(list(flows), [int(w) for w in weights], edges)


def size_level(left_bytes: int, packet: int) -> int:
    """Bytes a flow has left, in quarter octaves of packets: a course entry learned on one flow
    applies to another of the same level (up to 19% shorter: if its tail would come inside the
    entry, the hit is refused)."""
    return int(4 * math.log2(max(left_bytes, packet) / packet))


def flight_level(in_flight_bytes: int, packet: int) -> int:
    """Packets in flight in half octaves (1, 2, 3, 4-5, 6-7, 8-11, ...; 0 for none, at most 63):
    where in its first round trip a flow is, or how full its pipe."""
    n = -(-in_flight_bytes // packet)
    if n <= 0:
        return 0
    b = n.bit_length()
    half = (n >> (b - 2)) & 1 if b >= 2 else 0
    return min(2 * b - 1 + half, 63)


def hpcc_level(reference_rate: float, line_rate: float, utilisation: float, stage: int) -> int:
    """HPCC's state beyond its rate, for course keys (below ``CC_LEVELS``): its reference rate,
    utilisation estimate (1/20 steps, at most 2) and additive-increase stage (at most 7); a flow
    recovering from contention and a lone one at the same rate differ there."""
    return quantise(reference_rate, line_rate) + (RATE_LEVELS + 1) * (
        min(int(round(utilisation * 20)), 40) + 41 * min(int(stage), 7))


def course_weight(start_weight: int, base_rtt_ns: int, size: int, flight: int, cc: int) -> int:
    """A course key's vertex weight: the start FCG's weight, the flow's base RTT (exact: a
    fabric's RTTs are few), its ``size_level`` (below 256), ``flight_level`` (below 64) and the
    level of the CC state the start FCG leaves out (``cc``, memo/session.py)."""
    return start_weight + COURSE_BASE * (size + 256 * (flight + 64 * (cc + CC_LEVELS * base_rtt_ns)))


def queue_level(qbytes: int, packet: int) -> int:
    """A queue's level: 0 below one packet, then one level per doubling, at most 15."""
    return 0 if qbytes < packet else min(1 + (qbytes // packet).bit_length(), 15)


def graph_of(key: dict) -> nx.Graph:
    g = nx.Graph()
    for i, w in enumerate(key["v"]):
        g.add_node(i, w=w)
    for i, j, w in key["e"]:
        g.add_edge(i, j, w=w)
    return g


def wl_hash(g: nx.Graph) -> str:
    return nx.weisfeiler_lehman_graph_hash(g, node_attr="w", edge_attr="w", iterations=WL_ITERATIONS)


def _same_weight(a, b) -> bool:
    return a["w"] == b["w"]


def mapping(stored: nx.Graph, current: nx.Graph) -> dict | None:
    """A weight-preserving isomorphism from ``stored``'s vertices to ``current``'s, or None."""
    if stored.number_of_nodes() != current.number_of_nodes() or stored.number_of_edges() != current.number_of_edges():
        return None
    gm = GraphMatcher(current, stored, node_match=_same_weight, edge_match=_same_weight)
    for m in gm.isomorphisms_iter():  # current -> stored; the first one, deterministically
        return {s: c for c, s in m.items()}
    return None


def same_entry(a, b) -> bool:
    """Two memo entries (``memo.entry.MemoEntry``) have isomorphic keys of the same kind, scheme
    and network: the store keeps only the first."""
    if (a.kind, a.fingerprint, a.scheme, a.n_vertices, a.n_edges) != (b.kind, b.fingerprint, b.scheme, b.n_vertices, b.n_edges):
        return False
    if a.kind in ("episode", "recurring"):  # keys in a canonical order: equal or not, no isomorphism
        return a.key == b.key
    return mapping(graph_of(b.key), graph_of(a.key)) is not None
