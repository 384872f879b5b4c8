"""Shortest-path ECMP routing, as the HPCC ns-3 reference computes and uses it.

Route computation follows ``CalculateRoute`` in HPCC's ``scratch/third.cc``: for every host
``h`` a BFS from ``h`` that expands only switches (hosts are never transit nodes); when the
BFS scans neighbour ``next`` of ``now`` with ``dis[next] == dis[now] + 1``, ``now`` becomes
an equal-cost next hop of ``next`` toward ``h``. The same BFS gives, along its tree (the
first discovery of each node), the propagation delay, the serialisation delay of one packet
and the bottleneck rate between every node and ``h``, from which the reference derives each
host pair's base RTT and BDP (:func:`pair_metrics`).

Forwarding follows ``SwitchNode::GetOutDev``: a switch picks next hop
``ecmp_hash(key, seed=switch_id) % len(candidates)``, with the 12-byte key built from the
packet's addresses and ports (:func:`flow_path`).

Next-hop order
--------------
The reference keeps each switch's equal-cost next hops in the order its BFS found them,
which follows ``std::map<Ptr<Node>, ...>`` iteration, i.e. the nodes' *memory addresses*;
that order cannot be derived from the inputs. We order next hops by node id instead (and
scan neighbours by node id in the BFS), so the ECMP choice, hence the exact switches a flow
crosses, may differ from the reference's while path lengths and end points agree. When a
reference ``routing.txt`` is at hand, :func:`apply_reference_order` restores its order and
then paths match hop for hop.

Parallel links between the same two nodes are legal in the topology, but, as in the
reference (whose neighbour table is keyed by node), routing only uses the last one.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from wormhole_replay.errors import InputError, read_input_text
from wormhole_replay.topology.model import Topology

_M32 = 0xFFFFFFFF


class NextHops(Mapping):
    """Read-only mapping ``(node, dst_host) -> ((next_node, port_id), ...)``.

    A dict-like view over compact CSR arrays (a real dict of tuples for a k=16 fat-tree
    would take hundreds of MB). Keys exist for every node, host or switch, that has a route
    toward host ``dst_host`` (a node id, not a host index); the tuples are in the order the
    ECMP hash indexes them (by node id unless :func:`apply_reference_order` was applied).
    """

    def __init__(self, ptr: np.ndarray, node: np.ndarray, port: np.ndarray, host_index: np.ndarray):
        self._ptr, self._node, self._port = ptr, node, port
        self._host_index = host_index
        self._n_hosts = int((host_index >= 0).sum())
        self._hosts = np.flatnonzero(host_index >= 0)

    def __getitem__(self, key) -> tuple:
        node, dst = key
        node, dst = int(node), int(dst)
        n_nodes = len(self._host_index)
        if not (0 <= node < n_nodes and 0 <= dst < n_nodes) or self._host_index[dst] < 0:
            raise KeyError(key)
        slot = node * self._n_hosts + int(self._host_index[dst])
        start, end = int(self._ptr[slot]), int(self._ptr[slot + 1])
        if start == end:
            raise KeyError(key)
        return tuple(zip(self._node[start:end].tolist(), self._port[start:end].tolist()))

    def __iter__(self):
        counts = np.diff(self._ptr)
        for slot in np.flatnonzero(counts).tolist():
            node, j = divmod(slot, self._n_hosts)
            yield (node, int(self._hosts[j]))

    def __len__(self) -> int:
        return int(np.count_nonzero(np.diff(self._ptr)))


@dataclass(frozen=True, eq=False)
class Routes:
    """Equal-cost routes from every node toward every host.

    Tables indexed ``[node, j]`` are toward host index ``j`` (node ``topo.hosts[j]``).

    Attributes
    ----------
    next_hops : NextHops
        ``(node, dst_host) -> tuple of (next_node, port_id)``; ``port_id`` is the egress
        port on ``node`` toward ``next_node``.
    dist : np.ndarray
        int32 [n_nodes, H]: hop count toward host j (-1: unreachable).
    parent, parent_port : np.ndarray
        int32 [n_nodes, H]: the BFS-tree next hop toward host j (the node through which the
        BFS from j first reached this node) and the port toward it; -1 at the host itself.
    hop_ptr, hop_node, hop_port : np.ndarray
        The CSR arrays behind ``next_hops``: the next hops of ``node`` toward host index
        ``j`` are ``hop_node[hop_ptr[node*H + j] : hop_ptr[node*H + j + 1]]``.
    """

    next_hops: NextHops
    dist: np.ndarray
    parent: np.ndarray
    parent_port: np.ndarray
    hop_ptr: np.ndarray
    hop_node: np.ndarray
    hop_port: np.ndarray

    def candidates(self, node: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Next-hop nodes and ports of ``node`` toward host *index* ``j`` (no copies)."""
        n_hosts = self.dist.shape[1]
        start, end = self.hop_ptr[node * n_hosts + j], self.hop_ptr[node * n_hosts + j + 1]
        return self.hop_node[start:end], self.hop_port[start:end]


def _scan_edges(topo: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Directed neighbour edges ``u -> v``, sorted by (u, v), with the port on ``u``.

    Parallel links collapse to the last one in link order, as the reference's
    ``nbr2if[u][v]`` does.
    """
    ports = topo.ports()
    key = ports.node * topo.n_nodes + ports.peer_node
    # np.unique sorts the keys; on the reversed array it reports the first occurrence
    # there, i.e. the last port of each (u, v).
    _, first_reversed = np.unique(key[::-1], return_index=True)
    keep = len(key) - 1 - first_reversed
    return ports.node[keep], ports.peer_node[keep], keep.astype(np.int64)


def compute_routes(topo: Topology) -> Routes:
    """Compute every node's equal-cost next hops toward every host.

    One BFS per host, all run side by side level by level with numpy (a k=16 fat-tree
    takes a fraction of a second). Each BFS scans neighbours by node id, where the
    reference's follow memory addresses; so its queue order, and with it the first
    discoverer of each node (the BFS-tree parent that :func:`pair_metrics` walks), is the
    reference's as if its nodes had ascending addresses. Only links of unequal delay or
    rate can make that choice matter.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    Routes
    """
    hosts = topo.hosts
    n_nodes, n_hosts = topo.n_nodes, len(hosts)
    eu, ev, eport = _scan_edges(topo)  # sorted by (u, v): a CSR adjacency over u
    adj_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(eu, minlength=n_nodes), out=adj_ptr[1:])
    is_switch = topo.is_switch

    # Flat [node * H + j] tables, reshaped at the end.
    size = n_nodes * n_hosts
    dist = np.full(size, -1, dtype=np.int32)
    parent = np.full(size, -1, dtype=np.int32)
    parent_port = np.full(size, -1, dtype=np.int32)
    first_scan = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    host_col = np.arange(n_hosts, dtype=np.int64)
    dist[hosts * n_hosts + host_col] = 0

    # The frontier: (node, host index) pairs to expand at this level, in queue order
    # (host index first, then the order of discovery), as all BFS run side by side.
    # Each BFS starts at its host; afterwards only switches are expanded.
    front_u, front_j = hosts.copy(), host_col
    found_flat, found_u, found_port = [], [], []
    level = 0
    while len(front_u):
        # Scan every neighbour of every frontier node, in queue order and, per node, by
        # neighbour id: the order in which the BFS would scan them.
        degree = adj_ptr[front_u + 1] - adj_ptr[front_u]
        which = np.repeat(np.arange(len(front_u)), degree)
        edge = np.arange(len(which)) - np.repeat(np.cumsum(degree) - degree - adj_ptr[front_u], degree)
        flat = ev[edge] * n_hosts + front_j[which]
        # Every node at level+1 is discovered while scanning this level, so a node's
        # equal-cost candidates are exactly the scans that find it still unvisited.
        new = dist[flat] == -1
        flat, edge, u = flat[new], edge[new], front_u[which[new]]
        port_v = eport[edge] ^ 1  # the port on v toward u (other end of the same link)
        found_flat.append(flat), found_u.append(u), found_port.append(port_v)
        dist[flat] = level + 1

        # The first scan to reach a node discovers it: that is its BFS-tree parent, and
        # the discoveries, in scan order, are the next level's queue.
        scan = np.arange(len(flat))
        np.minimum.at(first_scan, flat, scan)
        first = first_scan[flat] == scan
        flat, u, port_v = flat[first], u[first], port_v[first]
        parent[flat] = u
        parent_port[flat] = port_v
        v = flat // n_hosts
        expand = is_switch[v]
        front_u, front_j = v[expand], flat[expand] - v[expand] * n_hosts
        level += 1

    # CSR of next hops, sorted by (node, host index, next node).
    if found_flat:
        slot, u, port = np.concatenate(found_flat), np.concatenate(found_u), np.concatenate(found_port)
    else:
        slot = u = port = np.zeros(0, dtype=np.int64)
    order = np.argsort(slot * n_nodes + u)
    hop_node = u[order].astype(np.int32)
    hop_port = port[order].astype(np.int32)
    hop_ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(slot, minlength=size), out=hop_ptr[1:])
    dist = dist.reshape(n_nodes, n_hosts)
    parent = parent.reshape(n_nodes, n_hosts)
    parent_port = parent_port.reshape(n_nodes, n_hosts)

    for arr in (dist, parent, parent_port, hop_ptr, hop_node, hop_port):
        arr.setflags(write=False)
    return Routes(
        next_hops=NextHops(hop_ptr, hop_node, hop_port, topo.host_index()),
        dist=dist,
        parent=parent,
        parent_port=parent_port,
        hop_ptr=hop_ptr,
        hop_node=hop_node,
        hop_port=hop_port,
    )


def pair_metrics(
    topo: Topology, routes: Routes, payload_bytes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base RTT, bottleneck rate and BDP of every host pair, as the reference computes them.

    Along the BFS tree toward the destination: ``delay`` sums link delays, ``tx_delay`` sums
    ``payload_bytes * 8 * 10**9 // rate`` per hop (integer division per hop), ``bw`` is the
    smallest link rate. Then ``rtt = 2*delay + tx_delay`` and
    ``bdp = rtt * bw // 10**9 // 8``.

    Parameters
    ----------
    topo : Topology
    routes : Routes
        From :func:`compute_routes` on ``topo``.
    payload_bytes : int
        ``PACKET_PAYLOAD_SIZE`` of the config.

    Returns
    -------
    rtt_ns, bw_bps, bdp_bytes : np.ndarray
        int64 [H, H], indexed ``[src host index, dst host index]``; the diagonal is 0.
    """
    n_nodes, n_hosts = routes.dist.shape
    ports = topo.ports()
    port_tx = (int(payload_bytes) * 8 * 10**9) // ports.rate_bps
    delay = np.zeros((n_nodes, n_hosts), dtype=np.int64)
    tx = np.zeros((n_nodes, n_hosts), dtype=np.int64)
    bw = np.full((n_nodes, n_hosts), np.iinfo(np.int64).max, dtype=np.int64)
    # Levels in increasing order, so a node's parent is always done before the node.
    for level in range(1, int(routes.dist.max(initial=0)) + 1):
        v, j = np.nonzero(routes.dist == level)
        p = routes.parent[v, j]
        port = routes.parent_port[v, j]
        delay[v, j] = delay[p, j] + ports.delay_ns[port]
        tx[v, j] = tx[p, j] + port_tx[port]
        bw[v, j] = np.minimum(bw[p, j], ports.rate_bps[port])

    hosts = topo.hosts
    rtt = 2 * delay[hosts] + tx[hosts]
    bw_h = bw[hosts]
    np.fill_diagonal(rtt, 0)
    np.fill_diagonal(bw_h, 0)
    bdp = rtt * bw_h // 10**9 // 8
    return rtt, bw_h, bdp


def _ip(node):
    """The reference's IPv4 address of a node id (an int, or an int64 array of them):
    ``0x0b000001 + (id//256)*0x10000 + (id%256)*0x100``."""
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


def node_to_ip(node_id: int) -> int:
    """The reference's IPv4 address of a node (``_ip``)."""
    return _ip(int(node_id))


def nodes_to_ips(node_ids: np.ndarray) -> np.ndarray:
    """``node_to_ip`` of each of ``node_ids`` (int64)."""
    return _ip(np.asarray(node_ids, np.int64))


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def ecmp_hash(key12: bytes, seed: int) -> int:
    """MurmurHash3 (x86, 32-bit), as ``SwitchNode::EcmpHash`` computes it.

    Parameters
    ----------
    key12 : bytes
        The key; the reference always passes 12 bytes (see :func:`ecmp_key`). Other lengths
        are hashed as MurmurHash3 does.
    seed : int
        The switch's node id.

    Returns
    -------
    int
        An unsigned 32-bit hash.
    """
    data = bytes(key12)
    h = int(seed) & _M32
    n_blocks = len(data) // 4
    for (k,) in struct.iter_unpack("<I", data[: 4 * n_blocks]):
        k = (k * 0xCC9E2D51) & _M32
        k = _rotl32(k, 15)
        k = (k * 0x1B873593) & _M32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _M32
    tail = data[4 * n_blocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * 0xCC9E2D51) & _M32
        k = _rotl32(k, 15)
        k = (k * 0x1B873593) & _M32
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def ecmp_key(sip: int, dip: int, sport: int, dport: int) -> bytes:
    """The 12-byte ECMP key: little-endian u32 ``sip``, ``dip``, ``sport | dport << 16``."""
    return struct.pack("<III", sip & _M32, dip & _M32, (sport | (dport << 16)) & _M32)


def flow_path(
    topo: Topology, routes: Routes, src: int, dst: int, sport: int, dport: int, ack: bool = False
) -> list[int]:
    """The nodes a flow's data packets (or, with ``ack=True``, its ACKs) cross.

    Parameters
    ----------
    topo, routes : Topology, Routes
    src, dst : int
        The flow's source and destination host node ids.
    sport, dport : int
        The flow's (data) UDP ports.
    ack : bool
        If True, the path of the flow's ACKs, which travel ``dst -> src`` with addresses and
        ports swapped.

    Returns
    -------
    list of int
        Node ids from where the packet starts (``src``, or ``dst`` for ACKs) to where it
        ends, both included.

    Raises
    ------
    InputError
        If ``src`` or ``dst`` is not a host.
    """
    host_index = topo.host_index()
    for node in (src, dst):
        if not 0 <= node < topo.n_nodes or host_index[node] < 0:
            raise InputError(f"flow {src}->{dst}: node {node} is not a host")
    if ack:
        start, end = int(dst), int(src)
        key = ecmp_key(node_to_ip(dst), node_to_ip(src), dport, sport)
    else:
        start, end = int(src), int(dst)
        key = ecmp_key(node_to_ip(src), node_to_ip(dst), sport, dport)
    j = int(host_index[end])
    n_hosts = routes.dist.shape[1]
    path, node = [start], start
    while node != end:
        slot = node * n_hosts + j
        first, stop = int(routes.hop_ptr[slot]), int(routes.hop_ptr[slot + 1])
        if first == stop:  # validate() guarantees connectivity; keep a clear message anyway
            raise InputError(f"no route from node {node} to host {end}")
        idx = 0
        if stop - first > 1:  # only switches ever have several next hops
            idx = ecmp_hash(key, node) % (stop - first)
        node = int(routes.hop_node[first + idx])
        path.append(node)
    return path


def node_path_to_ports(topo: Topology, nodes: list[int]) -> list[int]:
    """The egress port at each node of a path but the last.

    Parameters
    ----------
    topo : Topology
    nodes : list of int
        Consecutive nodes of a path, e.g. from :func:`flow_path` or a reference ``paths.txt``.

    Returns
    -------
    list of int
        ``len(nodes) - 1`` port ids; with parallel links, the last one (as routing uses).

    Raises
    ------
    InputError
        If two consecutive nodes are not linked.
    """
    ports = topo.ports()
    result = []
    for u, v in zip(nodes[:-1], nodes[1:]):
        if not (0 <= u < topo.n_nodes and 0 <= v < topo.n_nodes):
            raise InputError(f"path {'-'.join(map(str, nodes))}: node id out of range")
        own = ports.node_ports(u)
        match = own[ports.peer_node[own] == v]
        if len(match) == 0:
            raise InputError(
                f"path {'-'.join(map(str, nodes))}: nodes {u} and {v} are not linked"
            )
        result.append(int(match[-1]))
    return result


def apply_reference_order(topo: Topology, routes: Routes, path) -> Routes:
    """Reorder next hops as a reference ``routing.txt`` lists them.

    The file has lines ``switch_id dst_host_id : next/ifindex next/ifindex ...`` in the
    reference's vector order (``#`` starts a comment). With that order, :func:`flow_path`
    reproduces the reference's paths hop for hop. Pairs the file does not mention keep
    their order.

    Parameters
    ----------
    topo, routes : Topology, Routes
    path : str or os.PathLike
        The ``routing.txt``.

    Returns
    -------
    Routes
        A new Routes (``routes`` is left unchanged).

    Raises
    ------
    InputError
        Missing file, malformed line, or a line whose next-hop set differs from ours.
    """
    name = str(path)
    text = read_input_text(path, "routing file")
    host_index = topo.host_index()
    n_hosts = routes.dist.shape[1]
    hop_node = routes.hop_node.copy()
    hop_port = routes.hop_port.copy()
    for no, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{name}:{no}"
        head, colon, tail = line.partition(":")
        try:
            node, dst = (int(tok) for tok in head.split())
            order = [int(item.split("/")[0]) for item in tail.split()]
        except ValueError:
            raise InputError(
                f"{where}: expected 'switch_id dst_host_id : next/ifindex ...'"
            ) from None
        if not colon or not (0 <= node < topo.n_nodes and 0 <= dst < topo.n_nodes) or host_index[dst] < 0:
            raise InputError(f"{where}: expected 'switch_id dst_host_id : next/ifindex ...' with a host as dst")
        slot = node * n_hosts + int(host_index[dst])
        first, stop = int(routes.hop_ptr[slot]), int(routes.hop_ptr[slot + 1])
        ours = routes.hop_node[first:stop].tolist()
        if sorted(ours) != sorted(order):
            raise InputError(f"{where}: next hops {order} of node {node} toward {dst} differ from ours {ours}")
        position = {n: i for i, n in enumerate(ours)}
        pick = [first + position[n] for n in order]
        hop_node[first:stop] = routes.hop_node[pick]
        hop_port[first:stop] = routes.hop_port[pick]
    hop_node.setflags(write=False)
    hop_port.setflags(write=False)
    return replace(
        routes,
        next_hops=NextHops(routes.hop_ptr, hop_node, hop_port, host_index),
        hop_node=hop_node,
        hop_port=hop_port,
    )
