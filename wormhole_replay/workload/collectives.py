"""Collectives expanded into flows with a dependency DAG (NCCL's ring algorithms, direct
all-to-all).

Each function returns plain lists (``src, dst, size, deps``) so that callers can offset flow ids
and concatenate several collectives before building one :class:`FlowSet`.  ``deps[i]`` lists the
flow ids (within the returned block, before any offset) that must have been *received* in full
before flow ``i`` starts; a flow with no dependency starts at the collective's start.

Ring (NCCL ``ring``): with n ranks and S bytes per rank, the buffer is cut into n chunks; at each
step every rank sends one chunk (S/n, split over ``channels`` parallel rings) to its successor.
Reduce-scatter and all-gather take n-1 steps; all-reduce is the two back to back, 2(n-1) steps.
Step k of rank r waits for step k-1 from its predecessor (the data it forwards) and for its own
step k-1 (one send at a time per ring).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError


@dataclass
class FlowBlock:
    """Flows of one or more collectives, ids local to the block."""

    src: list = field(default_factory=list)
    dst: list = field(default_factory=list)
    size: list = field(default_factory=list)
    deps: list = field(default_factory=list)
    channel: list = field(default_factory=list)  # NCCL channel (ring, tree) carrying each flow

    def add(self, src: int, dst: int, size: int, deps, channel: int = 0) -> int:
        self.src.append(int(src))
        self.dst.append(int(dst))
        self.size.append(int(size))
        self.deps.append([int(d) for d in deps])
        self.channel.append(int(channel))
        return len(self.src) - 1

    def __len__(self) -> int:
        return len(self.src)


def _split(total: int, parts: int) -> list[int]:
    """``total`` bytes in ``parts`` near-equal pieces (the first ones one byte larger)."""
    q, r = divmod(int(total), parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


def _check(ranks, size_bytes, channels):
    if len(ranks) < 2:
        raise InputError(f"a collective needs at least 2 ranks, got {len(ranks)}")
    if len(set(ranks)) != len(ranks):
        raise InputError("a collective's ranks must be distinct hosts")
    if size_bytes <= 0:
        raise InputError("a collective's size must be positive")
    if channels < 1:
        raise InputError("channels must be >= 1")


def ring(ranks: list[int], size_bytes: int, steps: int, channels: int = 1, block: FlowBlock | None = None,
         after: list[int] | None = None) -> FlowBlock:
    """``steps`` ring steps over ``ranks`` (a chunk of ``size_bytes / n`` per rank and step); the
    first step waits for the flows ``after``."""
    _check(ranks, size_bytes, channels)
    n = len(ranks)
    if size_bytes < n * channels:
        raise InputError(f"{size_bytes} bytes cannot be cut into {n} chunks x {channels} channels")
    block = block if block is not None else FlowBlock()
    chunks = _split(size_bytes, n)
    for c in range(channels):
        prev = [None] * n  # the flow rank r sent at the previous step, in this channel
        for k in range(steps):
            cur = [None] * n
            for r in range(n):
                size = _split(chunks[(r - k) % n], channels)[c]
                deps = list(after or []) if k == 0 else [prev[(r - 1) % n], prev[r]]
                cur[r] = block.add(ranks[r], ranks[(r + 1) % n], size, deps, channel=c)
            prev = cur
    return block


def all_reduce_ring(ranks, size_bytes, channels=1, block=None, after=None) -> FlowBlock:
    """Ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps."""
    return ring(ranks, size_bytes, 2 * (len(ranks) - 1), channels, block, after)


def reduce_scatter_ring(ranks, size_bytes, channels=1, block=None, after=None) -> FlowBlock:
    """Ring reduce-scatter of ``size_bytes`` input per rank: n-1 steps."""
    return ring(ranks, size_bytes, len(ranks) - 1, channels, block, after)


def all_gather_ring(ranks, size_bytes, channels=1, block=None, after=None) -> FlowBlock:
    """Ring all-gather producing ``size_bytes`` per rank: n-1 steps."""
    return ring(ranks, size_bytes, len(ranks) - 1, channels, block, after)


def all_to_all(ranks, send_bytes, block=None, after=None) -> FlowBlock:
    """Direct all-to-all: every rank sends to every other rank at once.

    ``send_bytes`` is a number (the same to every peer) or an n x n matrix (uneven splits,
    ``send_bytes[i][j]`` from rank i to rank j; zero entries make no flow)."""
    n = len(ranks)
    if n < 2 or len(set(ranks)) != n:
        raise InputError("an all-to-all needs at least 2 distinct ranks")
    block = block if block is not None else FlowBlock()
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            b = send_bytes if isinstance(send_bytes, (int, float)) else send_bytes[i][j]
            if b < 0:
                raise InputError("all-to-all sizes must not be negative")
            if b > 0:
                block.add(ranks[i], ranks[j], int(b), list(after or []))
    return block


def all_reduce_tree(ranks, size_bytes, block=None, after=None) -> FlowBlock:
    """NCCL's double binary tree all-reduce: the buffer is halved over two trees (tree A over the
    ranks in order, parent of position i at (i-1)//2; tree B the same over the reversed order, so a
    leaf of one is inside the other).  In each tree the half is reduced up (a node sends to its
    parent once its children's halves have arrived) and broadcast down (a node forwards to its
    children once its parent's half has arrived; the root once the reduction is done).  Messages
    are not pipelined into chunks (NCCL's are), so this errs on the slow side for deep trees."""
    _check(ranks, size_bytes, 1)
    n = len(ranks)
    block = block if block is not None else FlowBlock()
    for tree, order in enumerate((list(range(n)), list(reversed(range(n))))):
        half = _split(size_bytes, 2)[tree]
        if half == 0:
            continue
        up = {}  # position -> flow to its parent
        for i in reversed(range(1, n)):  # leaves first
            kids = [up[c] for c in (2 * i + 1, 2 * i + 2) if c in up]
            up[i] = block.add(ranks[order[i]], ranks[order[(i - 1) // 2]], half,
                              kids + (list(after or []) if not kids else []), channel=tree)
        down = {}
        root_in = [up[c] for c in (1, 2) if c in up]
        for i in range(1, n):
            p = (i - 1) // 2
            deps = root_in if p == 0 else [down[p]]
            down[i] = block.add(ranks[order[p]], ranks[order[i]], half, deps, channel=tree)
    return block
