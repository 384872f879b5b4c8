"""Several jobs on one fabric: their traces expanded into one DAG of flows, replayed in one run.

A job is a trace, the hosts its ranks run on (``workload/placement.py``) and a start offset:
``--job TRACE[@PLACEMENT][+START]`` with PLACEMENT a host list (``0-63``, ``0-31,64-95``), a
policy (``packed``, ``spread``; default ``packed``), or a policy with a size for a trace that
leaves its size open (``spread:64``), and START a time (``500us``, ``2ms``).

Each job is expanded on its own (``expand.trace_to_flows`` with its ranks on its hosts), then the
flow sets are laid end to end: job k's flow ids, dependencies and collective units follow job
k-1's, and its flows start no earlier than its offset.  The jobs share nothing but the network
(``shared_links`` counts the links more than one job's flows cross):
no dependency crosses jobs, and since their hosts are disjoint no connection (source port) is
shared either.  Flow ids, units and ports are a function of the jobs in the order given, so the
same jobs give the same outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .flowfile import FlowSet
from .placement import POLICIES, parse_hosts, place
from .program import instantiate, job_size
from .trace import Trace, load_trace


@dataclass
class JobSpec:
    """One ``--job``: what to run, where and when, before any file is read."""

    source: str | Trace  # a native trace file, or a Trace
    placement: str | list[int] = "packed"  # a policy, or host indices
    size: int | None = None  # ranks, for a policy on a trace that leaves its size open
    start_ns: int = 0
    text: str = ""  # as given, for messages and the summary

    @property
    def name(self) -> str:
        return self.text or (Path(self.source).name if isinstance(self.source, (str, Path)) else "trace")


@dataclass
class Job:
    """A job ready to expand: its per-rank trace, its hosts (rank r on host index ``hosts[r]``)."""

    index: int
    name: str
    trace: Trace
    hosts: np.ndarray
    start_ns: int
    spec: JobSpec


def parse_job(text: str) -> JobSpec:
    """``TRACE[@PLACEMENT][+START]`` as a :class:`JobSpec` (see the module docstring)."""
    from ..topology.units import parse_time_ns

    where = f"--job {text}"
    path, at, rest = text.rpartition("@") if "@" in text else (text, "", "")
    if not at:
        return JobSpec(path, text=text)
    how, plus, start = rest.partition("+")
    start_ns = 0
    if plus:
        try:
            start_ns = parse_time_ns(start)
        except ValueError as e:
            raise InputError(f"{where}: bad start offset {start!r} ({e})") from None
        if start_ns < 0:
            raise InputError(f"{where}: the start offset must not be negative")
    if not path:
        raise InputError(f"{where}: expected TRACE@PLACEMENT[+START]")
    policy, colon, size = how.partition(":")
    if policy in POLICIES or (policy and not policy[0].isdigit()):
        n = None
        if colon:
            try:
                n = int(size)
            except ValueError:
                raise InputError(f"{where}: bad job size {size!r} (expected e.g. {policy}:64)") from None
            if n < 1:
                raise InputError(f"{where}: a job needs at least one GPU")
        if policy not in POLICIES:
            raise InputError(f"{where}: unknown placement {policy!r} (a host range like 0-63, or "
                             f"{' or '.join(POLICIES)})")
        return JobSpec(path, policy, n, start_ns, text)
    return JobSpec(path, parse_hosts(how, where), None, start_ns, text)


def resolve_jobs(specs: list[JobSpec], topo) -> list[Job]:
    """Read each job's trace, size it, make it per-rank and place it (every check before any run)."""
    if not specs:
        raise InputError("no jobs given")
    traces, sizes = [], []
    for s in specs:
        t = s.source if isinstance(s.source, Trace) else load_trace(s.source)
        hosts = None if isinstance(s.placement, str) else len(s.placement)
        n = job_size(t, s.size, hosts, where=f"job {s.name}") if t.is_program else t.ranks
        if s.size is not None and n != s.size:
            raise InputError(f"job {s.name}: a trace of {n} ranks, not {s.size}")
        traces.append(instantiate(t, n, where=f"job {s.name}") if t.is_program else t)
        sizes.append(n)
    placed = place([(s.name, s.placement, n) for s, n in zip(specs, sizes)], topo)
    return [Job(j, s.name, t, h, s.start_ns, s) for j, (s, t, h) in enumerate(zip(specs, traces, placed))]


def hosts_text(hosts) -> str:
    """Host indices as ranges: ``0-7,16-23``."""
    h = np.asarray(hosts)
    if not len(h):
        return ""
    parts, start = [], 0
    for i in range(1, len(h) + 1):
        if i == len(h) or h[i] != h[i - 1] + 1:
            parts.append(f"{h[start]}" if i - 1 == start else f"{h[start]}-{h[i - 1]}")
            start = i
    return ",".join(parts)


def concat_flows(sets: list[FlowSet], starts: list[int]) -> FlowSet:
    """Flow sets end to end: ids and dependencies of set k shifted past set k-1's; every flow of
    set k starts no earlier than ``starts[k]``."""
    offsets = np.cumsum([0] + [len(s) for s in sets[:-1]])
    col = lambda name: np.concatenate([getattr(s, name) for s in sets])
    ptr = [np.zeros(1, dtype=np.int64)]
    edges = 0
    for s in sets:
        ptr.append(s.deps_ptr[1:] + edges)
        edges += len(s.deps)
    deps = np.concatenate([s.deps + off for s, off in zip(sets, offsets)])
    start = np.concatenate([np.maximum(s.start_ns, t) for s, t in zip(sets, starts)])
    return FlowSet(col("src"), col("dst"), col("pg"), col("dport"), col("size"), start.astype(np.int64),
                   np.concatenate(ptr).astype(np.int64), deps.astype(np.int64), col("delay_ns"), col("duration_ns"),
                   col("sport"))


def jobs_to_flows(jobs: list[Job], topo, iterations: int | None, ports: str) -> tuple[FlowSet, pd.DataFrame]:
    """One flow set for all jobs and the per-flow table of :func:`expand.trace_to_flows` with a
    ``job`` column (units numbered across jobs)."""
    from .expand import trace_to_flows

    sets, tables, units, first = [], [], 0, 0
    for job in jobs:
        fs, info = trace_to_flows(job.trace, topo, iterations, ports, host_of_rank=job.hosts, job=job.index)
        info["flow_id"] += first
        info["unit"] += units
        info.insert(1, "job", job.index)
        units = int(info["unit"].max()) + 1 if len(info) else units
        first += len(fs)
        sets.append(fs)
        tables.append(info)
    return concat_flows(sets, [j.start_ns for j in jobs]), pd.concat(tables, ignore_index=True)


def job_links(flows: pd.DataFrame, topo, routes=None) -> pd.DataFrame:
    """The directed links each job's network flows cross: one row per (job, link) with
    ``job, node, next_node, tier, connections`` (how many of the job's distinct connections, source
    and destination host and ports, cross it: flows of one connection take one path).  ``flows``
    needs ``job, src, dst, sport, dport`` and ``virtual`` (the replay's flows table has them);
    ``routes``: the topology's (``routing.compute_routes``), if already computed."""
    from ..topology.routing import compute_routes, flow_path
    from ..topology.tiers import node_tiers

    net = flows[~flows["virtual"].astype(bool)] if "virtual" in flows else flows
    conns = net[["job", "src", "dst", "sport", "dport"]].drop_duplicates()
    routes = compute_routes(topo) if routes is None else routes
    tiers = node_tiers(topo)
    rows = []
    for job, s, d, sp, dp in conns.itertuples(index=False):
        path = flow_path(topo, routes, int(s), int(d), int(sp), int(dp))
        rows += [(int(job), a, b) for a, b in zip(path, path[1:])]
    links = pd.DataFrame(rows, columns=["job", "node", "next_node"])
    out = links.groupby(["job", "node", "next_node"]).size().rename("connections").reset_index()
    # a link's tier: the higher of its two ends (a core link touches a core switch)
    rank = {t: i for i, t in enumerate(("host", "edge", "aggregation", "core"))}
    a, b = tiers[out["node"].to_numpy()], tiers[out["next_node"].to_numpy()]
    out.insert(3, "tier", [x if rank[x] >= rank[y] else y for x, y in zip(a, b)])
    return out


def shared_links(flows: pd.DataFrame, topo, routes=None) -> dict:
    """How many directed links more than one job crosses, by tier (``job_links``)."""
    links = job_links(flows, topo, routes)
    jobs = links.groupby(["node", "next_node", "tier"])["job"].nunique().reset_index()
    shared = jobs[jobs["job"] > 1]
    return {t: int(n) for t, n in shared.groupby("tier").size().items()}
