"""From a trace to flows: every operation becomes flows of one dependency DAG.

Units, expanded in dependency order:

* a ``compute`` op: one virtual flow of its duration on its rank;
* a matched ``send``/``recv`` pair: one flow, started when the send's dependencies are done (the
  data is ready; p2p is posted as non-blocking isend/irecv, as Megatron batches them); ops after
  the ``recv`` wait for the data;
* a collective instance (the k-th op of every member of a group): the flows of its algorithm
  (``workload.collectives``: ring, or the double binary tree for an all-reduce whose ``algo`` is
  ``tree``, direct all-to-all); rank r's first send waits for rank r's own dependencies and for its
  receiver's.  Rank r's op is done when r has received its last chunk and its last send arrived.
  Collectives of one group run one at a time, in the order each rank issues them: NCCL runs a
  communicator's operations on one stream, so a rank's next collective on a group waits for its
  previous one there (DDP's gradient buckets, for instance, are reduced one after another).

A transfer between two GPUs of one server becomes a virtual flow over the intra-server link
(``meta['intra_server']``: ``bw_bps``, ``latency_ns``; default 2880 Gb/s and 25 ns, the NVLink
figures of SimAI's topology templates); only traffic between servers crosses the packet network.

Each network flow runs on a connection of its communicator (group, algorithm, channel, peers),
whose source port, and so ECMP path, it keeps from one collective to the next
(``workload.ports``; ``ports="flow"`` gives every flow a new port instead).
"""

from __future__ import annotations

from collections import defaultdict, namedtuple
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from . import collectives as C
from .flowfile import FlowSet, find_cycle
from .ports import replay_source_ports
from .program import instantiate
from .trace import Trace, repeat_iterations

INTRA_BW_BPS = 2_880_000_000_000
INTRA_LATENCY_NS = 25


def trace_to_flows(trace: Trace, topo, iterations: int | None = None, ports: str = "connection",
                   host_of_rank=None, job: int = 0) -> tuple[FlowSet, pd.DataFrame]:
    """The flows of ``trace`` (its first ``iterations`` iterations; more than it has repeat its
    last one) on ``topo``; ``ports`` is the source-port model (``workload.ports``);
    ``host_of_rank`` places rank r on host index ``host_of_rank[r]`` (a job's placement, over the
    trace's own map); ``job`` names the job in its connections (``workload.jobs``).

    Returns the :class:`FlowSet` and a table, one row per flow: ``flow_id, op_id, unit, kind,
    name, coll, iteration, rank, dst_rank`` (``rank`` sends, ``dst_rank`` receives; both are the
    op's rank for a compute op).
    """
    if trace.is_program:  # one program per stage (AICB): per-rank now, on every host unless sized
        trace = instantiate(trace, hosts=len(topo.hosts) if host_of_rank is None else len(host_of_rank))
    if iterations is not None:
        if iterations < 1:
            raise InputError(f"--iterations {iterations}: give at least one")
        trace = repeat_iterations(trace, iterations)  # beyond the trace's own, its last one repeats
    ops = trace.ops
    if iterations is not None:
        ops = ops[ops["iteration"] < iterations]
    n_ranks = trace.ranks
    hosts = np.asarray(topo.hosts)
    if host_of_rank is not None:  # a job's placement
        host_of_rank = np.asarray(host_of_rank, dtype=np.int64)
        node_of_rank = hosts[host_of_rank]
    elif trace.meta.get("rank_to_node"):  # node ids of the topology (an imported flow.txt keeps its hosts)
        node_of_rank = np.asarray(trace.meta["rank_to_node"], dtype=np.int64)
        bad = [int(x) for x in node_of_rank if not 0 <= x < topo.n_nodes or topo.is_switch[x]]
        if bad:
            raise InputError(f"trace: rank_to_node names node {bad[0]}, which is not a host of the topology")
        host_of_rank = np.asarray(topo.host_index(), dtype=np.int64)[node_of_rank]
    else:
        host_of_rank = np.asarray(trace.meta.get("rank_to_host") or list(range(n_ranks)), dtype=np.int64)
        if host_of_rank.max(initial=-1) >= len(hosts):
            raise InputError(f"the trace needs {int(host_of_rank.max()) + 1} GPUs (hosts); the topology has {len(hosts)}")
        node_of_rank = hosts[host_of_rank]
    if len(host_of_rank) != n_ranks:
        raise InputError(f"trace: the rank map lists {len(host_of_rank)} hosts for {n_ranks} ranks")
    gps = max(1, int(getattr(topo, "gpus_per_server", 1)))
    server_of_rank = host_of_rank // gps
    intra = trace.meta.get("intra_server") or {}
    intra_bw = float(intra.get("bw_bps", INTRA_BW_BPS))
    intra_lat = int(intra.get("latency_ns", INTRA_LATENCY_NS))

    # --- units: which ops expand together ------------------------------------------------------
    unit_of = {}
    units = []  # (kind, [op ids])
    idx = {int(o): i for i, o in enumerate(ops["op_id"].to_numpy())}
    rows = ops.reset_index(drop=True)
    # one record per op, by position (idx); built from the columns' lists, 3x faster than itertuples
    # over the trace's Arrow-backed strings (0.6 s for the 91 k ops of a 128-GPU iteration)
    record = namedtuple("Op", rows.columns)
    recs = [record._make(values) for values in zip(*(rows[c].tolist() for c in rows.columns))]

    def new_unit(kind, members):
        for m in members:
            unit_of[m] = len(units)
        units.append((kind, members))

    per_group = defaultdict(lambda: defaultdict(list))
    sends = defaultdict(list)
    recvs = defaultdict(list)
    for r in recs:
        if r.kind == "compute":
            new_unit("compute", [r.op_id])
        elif r.kind == "coll":
            per_group[r.group][r.rank].append(r.op_id)
        elif r.kind == "send":
            sends[(r.rank, r.peer)].append(r.op_id)
        else:
            recvs[(r.peer, r.rank)].append(r.op_id)
    # stream order: a rank's collective on a group also waits for its previous one on that group
    stream_prev = {}
    for by_rank in per_group.values():
        for seq in by_rank.values():
            for prev, op_id in zip(seq, seq[1:]):
                stream_prev[op_id] = prev

    def deps_of(op_id):
        d = list(recs[idx[op_id]].deps)
        prev = stream_prev.get(op_id)
        return d + [prev] if prev is not None and prev not in d else d

    groups = trace.meta.get("groups", {})
    for g, by_rank in per_group.items():
        members = groups[g]
        counts = {m: len(by_rank.get(m, [])) for m in members}
        if len(set(counts.values())) != 1:
            raise InputError(f"trace: group {g!r}: members issue different numbers of collectives {counts}")
        for k in range(next(iter(counts.values()))):
            inst = [by_rank[m][k] for m in members]
            first = recs[idx[inst[0]]]
            for o in inst[1:]:
                r = recs[idx[o]]
                if r.coll != first.coll or r.bytes != first.bytes:
                    raise InputError(f"trace: group {g!r}, collective #{k}: ops {inst[0]} and {o} disagree "
                                     f"({first.coll} {first.bytes} B vs {r.coll} {r.bytes} B)")
            new_unit("coll", inst)
    for key, s_ops in sends.items():
        r_ops = recvs.get(key, [])
        if len(r_ops) != len(s_ops):
            raise InputError(f"trace: rank {key[0]} sends {len(s_ops)} message(s) to rank {key[1]}, which posts {len(r_ops)} recv(s)")
        for s_op, r_op in zip(s_ops, r_ops):
            new_unit("p2p", [s_op, r_op])
    for key, r_ops in recvs.items():
        if key not in sends:
            raise InputError(f"trace: rank {key[1]} receives from rank {key[0]}, which sends nothing")

    # --- order units by their dependencies -----------------------------------------------------
    deps_of_unit = []
    for kind, members in units:
        d = set()
        for m in members:
            for x in deps_of(m):
                if x not in unit_of:
                    raise InputError(f"trace: op {m} depends on op {x}, which is outside the replayed iterations")
                if unit_of[x] != unit_of[m]:
                    d.add(unit_of[x])
        deps_of_unit.append(sorted(d))
    ptr = np.zeros(len(units) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(d) for d in deps_of_unit])
    flat = np.array([x for d in deps_of_unit for x in d], dtype=np.int64)
    if find_cycle(ptr, flat) is not None:
        raise InputError("trace: the operations' dependencies form a cycle")
    order = _topological(deps_of_unit)

    # --- expand -------------------------------------------------------------------------------
    block = C.FlowBlock()
    info = []  # (op_id, unit, kind, name, coll, iteration, rank, dst_rank) per flow
    exits = {}  # op id -> flow ids that finish it

    def after(op_id):
        return [f for x in deps_of(op_id) for f in exits[x]]

    def add_transfer(ra, rb, size, deps, meta_row, connection):
        a, b = int(node_of_rank[ra]), int(node_of_rank[rb])
        f = block.add(a, b, size, deps)
        connections.append(connection)
        same_server = server_of_rank[ra] == server_of_rank[rb]
        durations.append(int(np.ceil(size * 8e9 / intra_bw)) + intra_lat if same_server else -1)
        info.append(meta_row + (int(ra), int(rb)))
        return f

    durations = []
    connections = []  # per flow: the connection it runs on, within its host pair (workload.ports)
    shapes = {}  # a collective over rank positions, once per kind, algorithm, size and rank count
    for u in order:
        kind, members = units[u]
        first = recs[idx[members[0]]]
        meta_row = (int(first.op_id), u, kind, str(first.name), str(first.coll), int(first.iteration))
        if kind == "compute":
            node = int(node_of_rank[first.rank])
            f = block.add(node, node, 0, after(first.op_id))
            connections.append(None)
            durations.append(int(first.duration_ns))
            info.append(meta_row + (int(first.rank), int(first.rank)))
            exits[int(first.op_id)] = [f]
        elif kind == "p2p":
            s_op, r_op = members
            f = add_transfer(int(first.rank), int(first.peer), max(int(first.bytes), 1), after(s_op), meta_row,
                             ("p2p", job, 0))
            exits[s_op] = exits[r_op] = [f]
        else:
            ranks = [int(recs[idx[m]].rank) for m in members]
            n = len(ranks)
            before = [after(m) for m in members]
            start = len(block)
            size = int(first.bytes)
            shape = _over_positions(str(first.coll), str(first.algo), n, size, shapes)
            sub = shape.block
            # NCCL's all-to-all runs over the communicator's point-to-point connections
            algo = "p2p" if first.coll == "all_to_all" else ("tree" if first.algo == "tree" else "ring")
            if len(sub):  # its flows at once (as add_transfer would add them one by one)
                ra, rb = np.asarray(ranks, dtype=np.int64)[shape.src], np.asarray(ranks, dtype=np.int64)[shape.dst]
                block.src.extend(node_of_rank[ra].tolist())
                block.dst.extend(node_of_rank[rb].tolist())
                block.size.extend(sub.size)
                block.channel.extend([0] * len(sub))
                # a first send waits for both sides to be ready
                block.deps.extend([[start + d for d in dj] if dj else before[a] + before[b]
                                   for dj, a, b in zip(sub.deps, sub.src, sub.dst)])
                connections.extend([(job, str(first.group), algo, c) for c in sub.channel])
                intra_ns = np.ceil(shape.size * 8e9 / intra_bw).astype(np.int64) + intra_lat
                durations.extend(np.where(server_of_rank[ra] == server_of_rank[rb], intra_ns, -1).tolist())
                info.extend([meta_row + ab for ab in zip(ra.tolist(), rb.tolist())])
            last_out = {p: [start + j for j in js] for p, js in shape.out_of.items()}
            last_in = {p: [start + j for j in js] for p, js in shape.into.items()}
            for p, m in enumerate(members):
                if len(sub) == 0:  # nothing to move: done when its dependencies are
                    node = int(node_of_rank[ranks[p]])
                    f = block.add(node, node, 0, before[p])
                    connections.append(None)
                    durations.append(0)
                    info.append(meta_row + (ranks[p], ranks[p]))
                    exits[m] = [f]
                elif first.coll == "all_to_all" or first.algo == "tree":
                    exits[m] = last_in.get(p, []) + last_out.get(p, [])
                else:  # a ring: the last step in and out of the rank
                    exits[m] = last_in.get(p, [])[-1:] + last_out.get(p, [])[-1:]
    sport = replay_source_ports(block.src, block.dst, connections, np.asarray(durations) >= 0, ports)
    fs = FlowSet.from_columns(block.src, block.dst, block.size, 0, deps=block.deps, duration_ns=durations, sport=sport)
    table = pd.DataFrame(info, columns=["op_id", "unit", "kind", "name", "coll", "iteration", "rank", "dst_rank"])
    table.insert(0, "flow_id", np.arange(len(table), dtype=np.int64))
    return fs, table


@dataclass
class _Shape:
    """A collective over rank positions: its flows (``block``), each one's sender and receiver
    position and size as arrays, and per position the flows out of it and into it, in order."""

    block: C.FlowBlock
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    out_of: dict
    into: dict


def _over_positions(coll: str, algo: str, n: int, size: int, shapes: dict) -> _Shape:
    """A collective of ``size`` bytes over rank positions 0..n-1, expanded once per shape (a DDP
    iteration at 128 GPUs repeats a few bucket sizes thousands of times: expanding each anew, flow
    by flow, took a quarter of its replay's wall time); read only."""
    key = (coll, algo, n, size)
    got = shapes.get(key)
    if got is not None:
        return got
    sub = C.FlowBlock()
    rk = list(range(n))
    if n == 1 or size == 0:
        pass
    elif coll == "all_to_all":
        C.all_to_all(rk, max(size // n, 1), block=sub)
    elif coll == "all_reduce" and algo == "tree":
        C.all_reduce_tree(rk, max(size, 2), block=sub)
    elif coll == "all_reduce":
        C.all_reduce_ring(rk, max(size, n), block=sub)
    elif coll == "reduce_scatter":
        C.reduce_scatter_ring(rk, max(size, n), block=sub)
    else:  # all_gather: bytes is each rank's input, the output is n times that
        C.all_gather_ring(rk, max(size * n, n), block=sub)
    out_of, into = defaultdict(list), defaultdict(list)
    for j, (a, b) in enumerate(zip(sub.src, sub.dst)):
        out_of[a].append(j)
        into[b].append(j)
    shape = shapes[key] = _Shape(sub, np.asarray(sub.src, dtype=np.int64), np.asarray(sub.dst, dtype=np.int64),
                                 np.asarray(sub.size, dtype=np.float64), dict(out_of), dict(into))
    return shape


def _topological(deps: list[list[int]]) -> list[int]:
    """Units in an order where every unit comes after its dependencies (Kahn, smallest first)."""
    import heapq

    n = len(deps)
    indeg = [len(d) for d in deps]
    succ = [[] for _ in range(n)]
    for u, d in enumerate(deps):
        for x in d:
            succ[x].append(u)
    ready = [u for u in range(n) if indeg[u] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        u = heapq.heappop(ready)
        out.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    return out
