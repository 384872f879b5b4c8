"""The network topology: nodes, links and the ports (egress interfaces) they give.

A :class:`Topology` is a plain table of links between numbered nodes, each node a host or a
switch, as in HPCC's ``topology.txt``. Every link ``i`` gives two *ports*, directed egress
interfaces: port ``2*i`` on ``link_a[i]`` toward ``link_b[i]`` and port ``2*i+1`` on
``link_b[i]`` toward ``link_a[i]``. The ns-3 interface index of a port (``ifindex``) is its
position, counted from 1, among the links that touch its node in file order (index 0 is the
loopback device), which is what the reference prints in ``pfc.txt`` and ``routing.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wormhole_replay.errors import InputError


@dataclass(frozen=True, eq=False)
class Ports:
    """The directed egress interfaces of a topology, indexed by port id.

    Attributes
    ----------
    node, peer_node : np.ndarray
        int64 [2*n_links]: the node the port belongs to, and the node at the other end.
    peer_port : np.ndarray
        int64 [2*n_links]: the port at the other end of the same link (``p ^ 1``).
    rate_bps, delay_ns : np.ndarray
        int64 [2*n_links]: the rate and propagation delay of the port's link.
    ifindex : np.ndarray
        int64 [2*n_links]: the ns-3 interface index of the port on its node (1-based).
    node_ptr, by_node : np.ndarray
        int64: ``by_node[node_ptr[n]:node_ptr[n+1]]`` are the ports of node ``n`` in
        ifindex order (use :meth:`node_ports`).
    """

    node: np.ndarray
    peer_port: np.ndarray
    peer_node: np.ndarray
    rate_bps: np.ndarray
    delay_ns: np.ndarray
    ifindex: np.ndarray
    node_ptr: np.ndarray
    by_node: np.ndarray

    @property
    def n_ports(self) -> int:
        """Number of ports (twice the number of links)."""
        return len(self.node)

    def node_ports(self, node: int) -> np.ndarray:
        """Port ids of ``node`` in ifindex order (int64)."""
        return self.by_node[self.node_ptr[node] : self.node_ptr[node + 1]]


@dataclass(frozen=True, eq=False)
class Topology:
    """A network of hosts and switches joined by bidirectional links.

    Construct it through :func:`~wormhole_replay.topology.build_topology` or
    :func:`~wormhole_replay.topology.read_topology_file`; constructing it directly also
    normalises the array dtypes and runs :meth:`validate`.

    Equality is identity (``eq=False``): comparing arrays field by field is rarely what is
    meant, and it keeps topologies hashable so derived tables can be cached per topology.

    Attributes
    ----------
    n_nodes : int
        Number of nodes; ids are ``0 .. n_nodes-1``.
    is_switch : np.ndarray
        bool [n_nodes]: True for switches, False for hosts.
    link_a, link_b : np.ndarray
        int64 [n_links]: the two ends of each link, in file/creation order.
    link_rate_bps, link_delay_ns : np.ndarray
        int64 [n_links]: rate in bit/s and propagation delay in ns.
    link_error_rate : np.ndarray
        float64 [n_links]: the ns-3 receive error rate (kept, not modelled).
    gpus_per_server : int
        Host *indices* (positions in :attr:`hosts`) ``s*G .. s*G+G-1`` share server ``s``.
    name : str
        The spec or file the topology came from.
    """

    n_nodes: int
    is_switch: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_rate_bps: np.ndarray
    link_delay_ns: np.ndarray
    link_error_rate: np.ndarray
    gpus_per_server: int = 1
    name: str = ""
    # Derived tables computed on first use (ports, ...); not part of the value.
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        # Normalise dtypes and freeze the arrays: a Topology is shared by many modules.
        def frozen(values, dtype):
            arr = np.array(values, dtype=dtype).reshape(-1)
            arr.setflags(write=False)
            return arr

        object.__setattr__(self, "n_nodes", int(self.n_nodes))
        object.__setattr__(self, "gpus_per_server", int(self.gpus_per_server))
        object.__setattr__(self, "is_switch", frozen(self.is_switch, bool))
        for name in ("link_a", "link_b", "link_rate_bps", "link_delay_ns"):
            object.__setattr__(self, name, frozen(getattr(self, name), np.int64))
        object.__setattr__(self, "link_error_rate", frozen(self.link_error_rate, np.float64))
        self.validate()

    # ----------------------------------------------------------------- basic views

    @property
    def n_links(self) -> int:
        """Number of (bidirectional) links."""
        return len(self.link_a)

    @property
    def hosts(self) -> np.ndarray:
        """Host node ids, ascending (int64). A host's *index* is its position here."""
        if "hosts" not in self._cache:
            self._cache["hosts"] = _readonly(np.flatnonzero(~self.is_switch).astype(np.int64))
        return self._cache["hosts"]

    @property
    def switches(self) -> np.ndarray:
        """Switch node ids, ascending (int64)."""
        return np.flatnonzero(self.is_switch).astype(np.int64)

    @property
    def n_hosts(self) -> int:
        """Number of hosts."""
        return len(self.hosts)

    def host_index(self) -> np.ndarray:
        """int64 [n_nodes]: each node's position in :attr:`hosts`, or -1 for switches."""
        if "host_index" not in self._cache:
            index = np.full(self.n_nodes, -1, dtype=np.int64)
            index[self.hosts] = np.arange(len(self.hosts))
            self._cache["host_index"] = _readonly(index)
        return self._cache["host_index"]

    def ports(self) -> Ports:
        """The :class:`Ports` table (computed once per topology)."""
        if "ports" not in self._cache:
            self._cache["ports"] = _make_ports(self)
        return self._cache["ports"]

    def node_ports(self, node: int) -> np.ndarray:
        """Port ids of ``node`` in ifindex order (int64)."""
        return self.ports().node_ports(node)

    def degree(self) -> np.ndarray:
        """int64 [n_nodes]: number of links touching each node."""
        return np.bincount(np.concatenate([self.link_a, self.link_b]), minlength=self.n_nodes)

    # ----------------------------------------------------------------- validation

    def validate(self) -> None:
        """Check that the topology is one we can simulate.

        Raises
        ------
        InputError
            On node ids out of range, self-links, non-positive rates, negative delays,
            error rates outside [0, 1], a host without exactly one link (we model one NIC per
            host), hosts that cannot reach each other through switches, or a host count that
            is not a multiple of ``gpus_per_server``.
        """
        n, n_links = self.n_nodes, len(self.link_a)
        if n < 1:
            raise InputError(f"topology has {n} nodes")
        if len(self.is_switch) != n:
            raise InputError(f"is_switch has {len(self.is_switch)} entries for {n} nodes")
        for name in ("link_b", "link_rate_bps", "link_delay_ns", "link_error_rate"):
            if len(getattr(self, name)) != n_links:
                raise InputError(f"{name} has {len(getattr(self, name))} entries for {n_links} links")

        def first_bad(mask) -> int | None:
            bad = np.flatnonzero(mask)
            return int(bad[0]) if len(bad) else None

        a, b = self.link_a, self.link_b
        if (i := first_bad((a < 0) | (a >= n) | (b < 0) | (b >= n))) is not None:
            raise InputError(f"link {i} ({a[i]}-{b[i]}): node id out of range 0..{n - 1}")
        if (i := first_bad(a == b)) is not None:
            raise InputError(f"link {i}: self-link on node {a[i]}")
        if (i := first_bad(self.link_rate_bps <= 0)) is not None:
            raise InputError(f"link {i} ({a[i]}-{b[i]}): rate must be > 0, got {self.link_rate_bps[i]} bps")
        if (i := first_bad(self.link_delay_ns < 0)) is not None:
            raise InputError(f"link {i} ({a[i]}-{b[i]}): delay must be >= 0, got {self.link_delay_ns[i]} ns")
        err = self.link_error_rate
        if (i := first_bad(~((err >= 0) & (err <= 1)))) is not None:
            raise InputError(f"link {i} ({a[i]}-{b[i]}): error rate must be in [0, 1], got {err[i]}")

        hosts = self.hosts
        if len(hosts) == 0:
            raise InputError("topology has no hosts")
        degree = self.degree()
        bad = hosts[degree[hosts] != 1]
        if len(bad):
            h = int(bad[0])
            raise InputError(f"host {h} has {degree[h]} links; a host must have exactly one NIC link")
        if self.gpus_per_server < 1:
            raise InputError(f"gpus_per_server must be >= 1, got {self.gpus_per_server}")
        if len(hosts) % self.gpus_per_server:
            raise InputError(
                f"{len(hosts)} hosts is not a multiple of gpus_per_server={self.gpus_per_server}"
            )
        _check_connected(self)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _make_ports(topo: Topology) -> Ports:
    """Build the port table: port 2i on link_a[i], port 2i+1 on link_b[i]."""
    n_ports = 2 * topo.n_links
    node = np.empty(n_ports, dtype=np.int64)
    node[0::2], node[1::2] = topo.link_a, topo.link_b
    peer_node = np.empty(n_ports, dtype=np.int64)
    peer_node[0::2], peer_node[1::2] = topo.link_b, topo.link_a
    port_ids = np.arange(n_ports, dtype=np.int64)
    # Ports sorted by node, and within a node by port id == link order == ns-3 device order.
    by_node = np.argsort(node, kind="stable").astype(np.int64)
    node_ptr = np.zeros(topo.n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(node, minlength=topo.n_nodes), out=node_ptr[1:])
    ifindex = np.empty(n_ports, dtype=np.int64)
    ifindex[by_node] = np.arange(n_ports) - node_ptr[node[by_node]] + 1
    link = port_ids // 2
    return Ports(
        node=_readonly(node),
        peer_port=_readonly(port_ids ^ 1),
        peer_node=_readonly(peer_node),
        rate_bps=_readonly(topo.link_rate_bps[link]),
        delay_ns=_readonly(topo.link_delay_ns[link]),
        ifindex=_readonly(ifindex),
        node_ptr=_readonly(node_ptr),
        by_node=_readonly(by_node),
    )


def _check_connected(topo: Topology) -> None:
    """Raise InputError unless every host reaches every other host through switches.

    Hosts are never transit nodes, so reachability is a BFS from one host that only expands
    switches; reachability is then symmetric and transitive, so one BFS decides all pairs.
    """
    hosts = topo.hosts
    if len(hosts) < 2:
        return
    neighbours = [[] for _ in range(topo.n_nodes)]
    for a, b in zip(topo.link_a.tolist(), topo.link_b.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    start = int(hosts[0])
    seen = np.zeros(topo.n_nodes, dtype=bool)
    seen[start] = True
    queue = [start]
    is_switch = topo.is_switch
    for now in queue:
        if now != start and not is_switch[now]:
            continue  # a host is an end point, never a transit node
        for nxt in neighbours[now]:
            if not seen[nxt]:
                seen[nxt] = True
                queue.append(nxt)
    unreached = hosts[~seen[hosts]]
    if len(unreached):
        raise InputError(
            f"host {start} cannot reach host {int(unreached[0])} through switches "
            f"({len(unreached)} hosts unreachable; hosts are never transit nodes)"
        )
