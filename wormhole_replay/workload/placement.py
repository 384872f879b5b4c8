"""Where the jobs of a shared fabric run: each job's ranks on a set of hosts.

A placement is a host list (``0-63``, ``0-31,64-95``: host indices, in the topology's host order,
rank r on the r-th host listed) or a policy, applied to the jobs in the order given:

* ``packed``: the lowest free hosts, starting on a server boundary (whole servers first, so a TP
  group inside a server stays inside one);
* ``spread``: servers dealt round-robin over the pods, the lowest free server of each pod in
  turn, so that a job's ranks reach every pod (its rings then cross the core links).

A pod is what hangs below the top switch tier: the hosts still connected to each other once the
switches farthest from the hosts are removed (a fat-tree's pods; the leaves of a leaf-spine; the
rails of a rail network, where every server's first GPU is on rail 0, so ``spread`` there is
``packed``).  Overlapping placements are an error.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

POLICIES = ("packed", "spread")


def parse_hosts(text: str, where: str) -> list[int]:
    """``0-63,128-191`` (or single indices) as the list of host indices it names, in order."""
    out = []
    for part in text.split(","):
        a, dash, b = part.strip().partition("-")
        try:
            lo, hi = int(a), int(b) if dash else int(a)
        except ValueError:
            raise InputError(f"{where}: bad host range {part.strip()!r} (expected e.g. 0-63 or 0-31,64-95)") from None
        if lo < 0 or hi < lo:
            raise InputError(f"{where}: bad host range {part.strip()!r}")
        out.extend(range(lo, hi + 1))
    if len(set(out)) != len(out):
        raise InputError(f"{where}: a host is listed twice")
    return out


def host_pods(topo) -> np.ndarray:
    """int64 [n_hosts]: the pod of each host (see the module docstring), pods numbered by their
    lowest host."""
    from ..topology.tiers import node_distances

    dist = node_distances(topo)
    top = int(dist.max(initial=0))
    keep = dist < top if top >= 2 else np.ones(topo.n_nodes, dtype=bool)
    parent = np.arange(topo.n_nodes)

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(np.asarray(topo.link_a), np.asarray(topo.link_b)):
        if keep[a] and keep[b]:
            ra, rb = find(int(a)), find(int(b))
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    hosts = np.asarray(topo.hosts)
    roots = np.array([find(int(h)) for h in hosts])
    _, pod = np.unique(roots, return_inverse=True)  # roots are lowest node ids: pods in host order
    return pod.astype(np.int64)


def place(requests: list[tuple[str, str | list[int], int]], topo) -> list[np.ndarray]:
    """Host indices per job.  ``requests``: ``(name, placement, ranks)`` with placement a host list
    or a policy (``POLICIES``), in the order jobs claim hosts: explicit lists first (so a policy
    never takes a host a later job names), then policies in the order given."""
    n_hosts = len(topo.hosts)
    gps = max(1, int(getattr(topo, "gpus_per_server", 1)))
    owner = np.full(n_hosts, -1, dtype=np.int64)
    out: list[np.ndarray | None] = [None] * len(requests)
    for j, (name, how, ranks) in enumerate(requests):
        if isinstance(how, str):
            continue
        hosts = np.asarray(how, dtype=np.int64)
        if len(hosts) != ranks:
            raise InputError(f"job {name}: {len(hosts)} hosts listed for {ranks} ranks")
        if hosts.max(initial=-1) >= n_hosts:
            raise InputError(f"job {name}: host {int(hosts.max())} does not exist (the topology has {n_hosts} hosts)")
        _claim(owner, hosts, j, requests)
        out[j] = hosts
    pods = host_pods(topo) if any(how == "spread" for _, how, _ in requests) else None
    for j, (name, how, ranks) in enumerate(requests):
        if not isinstance(how, str):
            continue
        if how not in POLICIES:
            raise InputError(f"job {name}: unknown placement {how!r} (a host range like 0-63, or {' or '.join(POLICIES)})")
        hosts = _packed(owner, ranks, gps) if how == "packed" else _spread(owner, ranks, gps, pods)
        if hosts is None:
            free = int((owner < 0).sum())
            raise InputError(f"job {name}: {ranks} ranks do not fit {how} on the {free} free hosts of {n_hosts}")
        _claim(owner, hosts, j, requests)
        out[j] = hosts
    return out


def _claim(owner, hosts, j, requests):
    taken = owner[hosts] >= 0
    if taken.any():
        h = int(hosts[np.flatnonzero(taken)[0]])
        raise InputError(f"jobs {requests[int(owner[h])][0]} and {requests[j][0]} overlap (both placed on host {h})")
    owner[hosts] = j


def _packed(owner, ranks, gps):
    free = owner < 0
    n = len(owner)
    for align in (gps, 1):  # whole servers first, then any run of free hosts
        for start in range(0, n - ranks + 1, align):
            if free[start:start + ranks].all():
                return np.arange(start, start + ranks, dtype=np.int64)
    idx = np.flatnonzero(free)  # no contiguous run: the lowest free hosts
    return idx[:ranks] if len(idx) >= ranks else None


def _spread(owner, ranks, gps, pods):
    n_servers = len(owner) // gps
    servers = [s for s in range(n_servers) if (owner[s * gps:(s + 1) * gps] < 0).all()]
    by_pod = {}
    for s in servers:
        by_pod.setdefault(int(pods[s * gps]), []).append(s)
    queues = [by_pod[p] for p in sorted(by_pod)]
    chosen = []
    while len(chosen) * gps < ranks and any(queues):
        for q in queues:
            if q and len(chosen) * gps < ranks:
                chosen.append(q.pop(0))
    hosts = np.array([s * gps + g for s in chosen for g in range(gps)], dtype=np.int64)[:ranks]
    return hosts if len(hosts) == ranks else None
