"""The reference simulator's ``flow.txt`` and the reference runs' ``paths.txt``.

``flow.txt``: first line the number of flows, then one line per flow
``src dst pg dport size_bytes start_seconds`` (HPCC ``traffic_gen`` format).

``paths.txt``: ``flow_idx src dst sport dport size start_ns data_path ack_path`` with paths as
dash-joined node ids (``3-16-20-17-4``); ``#`` starts a comment.  It pins each flow's route, since
the reference's ECMP order follows its memory layout and cannot be derived from the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from ..errors import InputError, read_input_text


@dataclass(frozen=True)
class FlowSet:
    """Flows to simulate, in input order (flow id = position), with an optional dependency DAG.

    A flow with predecessors starts once every predecessor has been received in full, plus its
    ``delay_ns`` (a compute gap), and never before its ``start_ns``; a flow without predecessors
    starts at ``start_ns``.  Predecessors of flow f: ``deps[deps_ptr[f]:deps_ptr[f + 1]]``.
    """

    src: np.ndarray  # int64 node ids
    dst: np.ndarray
    pg: np.ndarray
    dport: np.ndarray
    size: np.ndarray  # bytes
    start_ns: np.ndarray
    deps_ptr: np.ndarray | None = None  # int64[F + 1]
    deps: np.ndarray | None = None  # int64[E] predecessor flow ids
    delay_ns: np.ndarray | None = None  # int64[F]
    duration_ns: np.ndarray | None = None  # int64[F]: -1 a network flow; >= 0 a virtual one
    sport: np.ndarray | None = None  # int64[F] source ports; None: the reference's numbering (build)

    @property
    def is_virtual(self) -> np.ndarray:
        """Flows that do not cross the packet network: compute ops and copies inside a server,
        which take ``duration_ns`` and then release their successors like any flow."""
        if self.duration_ns is None:
            return np.zeros(len(self), dtype=bool)
        return self.duration_ns >= 0

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def from_columns(cls, src, dst, size, start_ns, pg=3, dport=100, deps=None, delay_ns=0, duration_ns=None,
                     sport=None) -> "FlowSet":
        """Build from columns; ``deps`` is a list (one entry per flow) of predecessor flow ids;
        ``duration_ns`` (-1 for network flows) makes virtual flows; ``sport`` fixes source ports
        (``workload.ports``)."""
        n = len(src)
        as64 = lambda x: np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=np.int64), (n,)))
        deps_ptr = dep_ids = None
        if deps is not None:
            counts = np.array([len(d) for d in deps], dtype=np.int64)
            deps_ptr = np.zeros(n + 1, dtype=np.int64)
            deps_ptr[1:] = np.cumsum(counts)
            dep_ids = np.array([x for d in deps for x in d], dtype=np.int64)
        return cls(as64(src), as64(dst), as64(pg), as64(dport), as64(size), as64(start_ns),
                   deps_ptr, dep_ids, as64(delay_ns), None if duration_ns is None else as64(duration_ns),
                   None if sport is None else as64(sport))

    def predecessors(self, f: int) -> np.ndarray:
        if self.deps_ptr is None:
            return np.zeros(0, dtype=np.int64)
        return self.deps[self.deps_ptr[f]:self.deps_ptr[f + 1]]

    def validate(self, topo, where: str = "flows") -> None:
        """Every flow between two distinct hosts of ``topo``, with a positive size.  Checked on the
        arrays at once, then flow by flow only for the first that fails, for its message (a loop over
        every flow took 0.8 s of a 128-GPU iteration's replay)."""
        n_nodes = topo.n_nodes
        virtual = self.is_virtual
        is_switch = np.asarray(topo.is_switch, bool)
        src, dst = self.src.astype(np.int64), self.dst.astype(np.int64)
        ok = (src >= 0) & (src < n_nodes) & (dst >= 0) & (dst < n_nodes)
        ok[ok] &= ~is_switch[src[ok]] & ~is_switch[dst[ok]]
        ok &= np.where(virtual, self.size >= 0, (src != dst) & (self.size > 0))
        ok &= (self.start_ns >= 0) & (self.pg > 0) & (self.pg < 8)
        for f in np.flatnonzero(~ok)[:1].tolist():
            s, d = int(self.src[f]), int(self.dst[f])
            line = f"{where}: flow {f}"
            for name, node in (("source", s), ("destination", d)):
                if not 0 <= node < n_nodes:
                    raise InputError(f"{line}: {name} node {node} does not exist (topology has {n_nodes} nodes)")
                if topo.is_switch[node]:
                    raise InputError(f"{line}: {name} node {node} is a switch, not a host")
            if virtual[f]:
                if self.size[f] < 0:
                    raise InputError(f"{line}: size must not be negative")
            elif s == d:
                raise InputError(f"{line}: source and destination are the same host ({s})")
            elif self.size[f] <= 0:
                raise InputError(f"{line}: size must be positive")
            if self.start_ns[f] < 0:
                raise InputError(f"{line}: start time must not be negative")
            if not 0 <= self.pg[f] < 8 or self.pg[f] == 0:
                raise InputError(f"{line}: priority group must be 1..7 (0 is the control queue)")
        if self.deps_ptr is not None:
            n = len(self)
            if len(self.deps_ptr) != n + 1 or self.deps_ptr[-1] != len(self.deps):
                raise InputError(f"{where}: malformed dependency table")
            if len(self.deps) and (self.deps.min() < 0 or self.deps.max() >= n):
                raise InputError(f"{where}: a dependency names a flow that does not exist")
            if self.delay_ns is not None and (self.delay_ns < 0).any():
                raise InputError(f"{where}: a compute delay is negative")
            cycle = find_cycle(self.deps_ptr, self.deps)
            if cycle is not None:
                raise InputError(f"{where}: the flow dependencies form a cycle (through flow {cycle})")


def find_cycle(deps_ptr: np.ndarray, deps: np.ndarray) -> int | None:
    """A flow on a dependency cycle, or None if the dependencies form a DAG (Kahn's algorithm;
    at once where every flow depends only on flows of lower ids, as an expanded trace's do: id
    order is then a topological order)."""
    n = len(deps_ptr) - 1
    indeg = np.diff(deps_ptr).copy()
    owner = np.repeat(np.arange(n), np.diff(deps_ptr))  # edge e: deps[e] -> owner[e]
    if (np.asarray(deps) < owner).all():
        return None
    order = np.argsort(deps, kind="stable")
    succ_of, succ_ptr = owner[order], np.searchsorted(deps[order], np.arange(n + 1))
    stack = list(np.flatnonzero(indeg == 0))
    seen = 0
    while stack:
        f = stack.pop()
        seen += 1
        for g in succ_of[succ_ptr[f]:succ_ptr[f + 1]]:
            indeg[g] -= 1
            if indeg[g] == 0:
                stack.append(g)
    if seen == n:
        return None
    return int(np.flatnonzero(indeg > 0)[0])


def _seconds_to_ns(tok: str) -> int:
    return int((Decimal(tok) * 1_000_000_000).to_integral_value())


def read_flow_file(path: str | Path, topo=None) -> FlowSet:
    """Read a ``flow.txt``; with ``topo``, also check every flow against the topology (the error
    then names the file and line)."""
    path = Path(path)
    lines = read_input_text(path, "flow file").splitlines()
    rows = [(i + 1, ln.split()) for i, ln in enumerate(lines) if ln.split()]
    if not rows:
        raise InputError(f"{path}: empty flow file (expected the number of flows on line 1)")
    lineno, head = rows[0]
    try:
        n = int(head[0])
        if n < 0 or len(head) != 1:
            raise ValueError
    except ValueError:
        raise InputError(f"{path}:{lineno}: expected the number of flows, got {' '.join(head)!r}") from None
    if len(rows) - 1 < n:
        raise InputError(f"{path}: header says {n} flows but the file has {len(rows) - 1}")
    cols = np.zeros((6, n), dtype=np.int64)
    linenos = []
    for f in range(n):
        lineno, toks = rows[1 + f]
        linenos.append(lineno)
        if len(toks) != 6:
            raise InputError(f"{path}:{lineno}: expected 6 fields 'src dst pg dport size start_s', got {len(toks)}")
        try:
            vals = [int(t) for t in toks[:5]] + [_seconds_to_ns(toks[5])]
        except (ValueError, InvalidOperation):
            raise InputError(f"{path}:{lineno}: bad number in {' '.join(toks)!r}") from None
        cols[:, f] = vals
    fs = FlowSet(*(np.ascontiguousarray(c) for c in (cols[0], cols[1], cols[2], cols[3], cols[4], cols[5])))
    if topo is not None:
        try:
            fs.validate(topo, str(path))
        except InputError as e:
            # name the line rather than the flow index
            msg = str(e)
            for f, lineno in enumerate(linenos):
                tag = f"{path}: flow {f}:"
                if msg.startswith(tag):
                    raise InputError(f"{path}:{lineno}:{msg[len(tag):]}") from None
            raise
    return fs


def read_paths_file(path: str | Path, n_flows: int) -> tuple[list[list[int]], list[list[int]]]:
    """Read ``paths.txt``: per flow, the node ids of its data path and of its ACK path."""
    path = Path(path)
    lines = read_input_text(path, "paths file").splitlines()
    data: list = [None] * n_flows
    ack: list = [None] * n_flows
    for lineno, ln in enumerate(lines, 1):
        toks = ln.split("#", 1)[0].split()
        if not toks:
            continue
        if len(toks) != 9:
            raise InputError(f"{path}:{lineno}: expected 9 fields 'flow_idx src dst sport dport size start_ns data_path ack_path'")
        try:
            f = int(toks[0])
            dp = [int(x) for x in toks[7].split("-")]
            ap = [int(x) for x in toks[8].split("-")]
        except ValueError:
            raise InputError(f"{path}:{lineno}: bad flow index or path") from None
        if not 0 <= f < n_flows:
            raise InputError(f"{path}:{lineno}: flow index {f} out of range (there are {n_flows} flows)")
        data[f], ack[f] = dp, ap
    missing = [f for f in range(n_flows) if data[f] is None]
    if missing:
        raise InputError(f"{path}: no path for flow {missing[0]} ({len(missing)} flows missing)")
    return data, ack
