"""Build a :class:`Topology` from a short spec string (or a ``topology.txt`` path).

Specs, with comma-separated ``key=value`` parameters after the colon::

    fat-tree:k=K
    leaf-spine:hosts=H,leaves=L,spines=S
    rail:servers=S,gpus_per_server=G[,spines=N]

Every spec also takes ``bw=`` (default ``100G``) and ``delay=`` (default ``1us``) for all
links, and ``gpus_per_server=`` (default 1; required for ``rail``). Hosts are always
numbered first (``0 .. H-1``), then switches, so that node ids and link order match the
reference scenarios' ``topology.txt`` files exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wormhole_replay.errors import InputError
from wormhole_replay.topology.hpcc_file import read_topology_file
from wormhole_replay.topology.model import Topology
from wormhole_replay.topology.units import parse_rate_bps, parse_time_ns

SPEC_HELP = (
    "fat-tree:k=K, leaf-spine:hosts=H,leaves=L,spines=S, "
    "rail:servers=S,gpus_per_server=G, or a topology.txt file"
)

_COMMON_KEYS = ("bw", "delay", "gpus_per_server")
_KIND_KEYS = {
    "fat-tree": ("k",),
    "leaf-spine": ("hosts", "leaves", "spines"),
    "rail": ("servers", "spines"),
}


def build_topology(spec: str, gpus_per_server: int | None = None) -> Topology:
    """Build a topology from a spec string, or read it from a ``topology.txt`` path.

    Parameters
    ----------
    spec : str
        A spec (see the module docstring) or the path of an HPCC ``topology.txt``.
    gpus_per_server : int, optional
        Hosts per server, if the spec or file does not say. Giving it as well as a different
        ``gpus_per_server=`` in the spec is an error.

    Returns
    -------
    Topology
        With ``name`` set to ``spec``.

    Raises
    ------
    InputError
        Unknown kind, unknown/missing/duplicate/non-integer parameter, impossible sizes
        (odd ``k``, zero counts, hosts not divisible by leaves), or a missing file.
    """
    spec = str(spec).strip()
    if ":" not in spec and Path(spec).is_file():
        return read_topology_file(spec, gpus_per_server=gpus_per_server)
    kind, _, params_text = spec.partition(":")
    kind = kind.strip()
    if kind not in _KIND_KEYS:
        if "/" in spec or spec.endswith(".txt"):
            raise InputError(f"{spec}: no such topology file")
        raise InputError(f"unknown topology spec {spec!r} (expected {SPEC_HELP})")

    params = _parse_params(spec, params_text, _KIND_KEYS[kind] + _COMMON_KEYS)

    def integer(key: str, default: int | None = None, minimum: int = 1) -> int:
        if key not in params:
            if default is None:
                raise InputError(f"topology spec {spec!r}: missing parameter {key}")
            return default
        try:
            value = int(params[key])
        except ValueError:
            raise InputError(
                f"topology spec {spec!r}: {key} must be an integer, got {params[key]!r}"
            ) from None
        if value < minimum:
            raise InputError(f"topology spec {spec!r}: {key} must be >= {minimum}, got {value}")
        return value

    try:
        rate = parse_rate_bps(params.get("bw", "100G"))
    except ValueError as exc:
        raise InputError(f"topology spec {spec!r}: bad bw: {exc}") from None
    try:
        delay = parse_time_ns(params.get("delay", "1us"))
    except ValueError as exc:
        raise InputError(f"topology spec {spec!r}: bad delay: {exc}") from None
    if rate <= 0:
        raise InputError(f"topology spec {spec!r}: bw must be > 0")
    if delay < 0:
        raise InputError(f"topology spec {spec!r}: delay must be >= 0")

    spec_gpus = integer("gpus_per_server", default=0) if "gpus_per_server" in params else None
    if spec_gpus is not None and gpus_per_server is not None and spec_gpus != gpus_per_server:
        raise InputError(
            f"topology spec {spec!r} says gpus_per_server={spec_gpus}, "
            f"but gpus_per_server={gpus_per_server} was requested"
        )
    gpus = spec_gpus if spec_gpus is not None else gpus_per_server

    if kind == "fat-tree":
        k = integer("k", minimum=2)
        if k % 2:
            raise InputError(f"topology spec {spec!r}: k must be even, got {k}")
        n_nodes, n_hosts, links = _fat_tree_links(k)
    elif kind == "leaf-spine":
        hosts, leaves = integer("hosts"), integer("leaves")
        spines = integer("spines", minimum=0)
        if hosts % leaves:
            raise InputError(
                f"topology spec {spec!r}: hosts={hosts} is not a multiple of leaves={leaves}"
            )
        if spines == 0 and leaves > 1:
            raise InputError(f"topology spec {spec!r}: {leaves} leaves need at least one spine")
        n_nodes, n_hosts, links = _leaf_spine_links(hosts, leaves, spines)
    else:  # rail
        if gpus is None:
            raise InputError(f"topology spec {spec!r}: missing parameter gpus_per_server")
        servers = integer("servers")
        spines = integer("spines", default=gpus, minimum=0)
        if spines == 0 and gpus > 1:
            raise InputError(f"topology spec {spec!r}: {gpus} rails need at least one spine")
        n_nodes, n_hosts, links = _rail_links(servers, gpus, spines)

    links = np.asarray(links, dtype=np.int64).reshape(-1, 2)
    is_switch = np.arange(n_nodes) >= n_hosts
    try:
        return Topology(
            n_nodes=n_nodes,
            is_switch=is_switch,
            link_a=links[:, 0],
            link_b=links[:, 1],
            link_rate_bps=np.full(len(links), rate, dtype=np.int64),
            link_delay_ns=np.full(len(links), delay, dtype=np.int64),
            link_error_rate=np.zeros(len(links)),
            gpus_per_server=1 if gpus is None else gpus,
            name=spec,
        )
    except InputError as exc:
        raise InputError(f"topology spec {spec!r}: {exc}") from None


def _parse_params(spec: str, text: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """Split ``a=1,b=2`` into a dict, rejecting unknown, duplicate or malformed entries."""
    params: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise InputError(f"topology spec {spec!r}: expected key=value, got {item!r}")
        if key not in allowed:
            raise InputError(
                f"topology spec {spec!r}: unknown parameter {key!r} (allowed: {', '.join(allowed)})"
            )
        if key in params:
            raise InputError(f"topology spec {spec!r}: parameter {key} given twice")
        params[key] = value
    return params


def _fat_tree_links(k: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Node count, host count and links of a k-ary fat-tree in the reference S4 layout.

    Hosts ``0..H-1``; edge switch (pod p, index e) ``H + h*p + e``; aggregation switch
    ``H + k*h + h*p + a``; core ``H + k*k + h*a + j`` (h = k/2), joined to aggregation switch
    ``a`` of every pod. Links: host-edge by host, edge-aggregation (p, e, a), then
    aggregation-core (p, a, j).
    """
    half = k // 2
    n_hosts = k**3 // 4
    edge0, agg0, core0 = n_hosts, n_hosts + k * half, n_hosts + k * k
    n_nodes = core0 + half * half
    links = []
    for host in range(n_hosts):
        pod, e = divmod(host // half, half)
        links.append((host, edge0 + half * pod + e))
    for p in range(k):
        for e in range(half):
            for a in range(half):
                links.append((edge0 + half * p + e, agg0 + half * p + a))
    for p in range(k):
        for a in range(half):
            for j in range(half):
                links.append((agg0 + half * p + a, core0 + half * a + j))
    return n_nodes, n_hosts, links


def _leaf_spine_links(hosts: int, leaves: int, spines: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Leaves ``H..H+L-1``, spines ``H+L..``; host h on leaf ``h // (H/L)``."""
    per_leaf = hosts // leaves
    links = [(h, hosts + h // per_leaf) for h in range(hosts)]
    links += [(hosts + leaf, hosts + leaves + s) for leaf in range(leaves) for s in range(spines)]
    return hosts + leaves + spines, hosts, links


def _rail_links(servers: int, gpus: int, spines: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Host ``s*G+g`` is GPU g of server s, on rail switch ``H+g``; spines ``H+G..``."""
    hosts = servers * gpus
    links = [(h, hosts + h % gpus) for h in range(hosts)]
    links += [(hosts + g, hosts + gpus + s) for g in range(gpus) for s in range(spines)]
    return hosts + gpus + spines, hosts, links
