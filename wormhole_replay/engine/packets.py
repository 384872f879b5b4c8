"""Packets: the pool (a free list in ``net.packets``) and the FIFO lists of an egress queue.

A packet is a row of ``net.packets`` (columns ``PK_*``); it moves between a port's queues
(``net.queues``, one list per priority) and the link out of a port (``PT_LN_HEAD``/``TAIL``) by
relinking ``PK_NEXT``, never by copying.  The pool never grows inside a kernel: the loop returns
``RUN_GROW`` when fewer than ``FREE_MARGIN`` packets are left, and ``build.grow_packets`` doubles it.
"""

from .kernel import kernel
from .layout import (NQ, PK_FLAGS, PK_HOP, PK_NEXT, PK_NHOP, PK_SIZE, PT_QBYTES, PT_QPKTS, QT_HEAD, QT_TAIL,
                     ST_FREE, ST_NFREE, ST_PEAK_PKTS, ST_PKTS_ALIVE)

NONE = -1
FREE_MARGIN = 256  # packets one event may need at most (ACK, PFC frames); below it: grow first


@kernel(inline="always")
def tx_ns(size, bps):
    """Serialisation time, truncated to whole ns like the reference."""
    return (size * 8 * 1_000_000_000) // bps


@kernel
def alloc(net, state):
    """A fresh packet from the pool."""
    pk = net.packets
    i = state[ST_FREE]
    state[ST_FREE] = pk[i, PK_NEXT]
    state[ST_NFREE] -= 1
    pk[i, PK_NEXT] = NONE
    pk[i, PK_FLAGS] = 0
    pk[i, PK_NHOP] = 0
    pk[i, PK_HOP] = 0
    state[ST_PKTS_ALIVE] += 1
    if state[ST_PKTS_ALIVE] > state[ST_PEAK_PKTS]:
        state[ST_PEAK_PKTS] = state[ST_PKTS_ALIVE]
    return i


@kernel
def free(net, state, i):
    """Return packet i to the pool."""
    net.packets[i, PK_NEXT] = state[ST_FREE]
    state[ST_FREE] = i
    state[ST_NFREE] += 1
    state[ST_PKTS_ALIVE] -= 1


@kernel
def enqueue(net, p, q, i):
    """Append packet i to egress queue q of port p."""
    ports, queues, pk = net.ports, net.queues, net.packets
    k = p * NQ + q
    pk[i, PK_NEXT] = NONE
    if queues[k, QT_HEAD] == NONE:
        queues[k, QT_HEAD] = i
    else:
        pk[queues[k, QT_TAIL], PK_NEXT] = i
    queues[k, QT_TAIL] = i
    ports[p, PT_QBYTES] += pk[i, PK_SIZE]
    ports[p, PT_QPKTS] += 1


@kernel
def dequeue(net, p, q):
    """Take the head packet of egress queue q of port p (it must not be empty)."""
    ports, queues, pk = net.ports, net.queues, net.packets
    k = p * NQ + q
    i = queues[k, QT_HEAD]
    queues[k, QT_HEAD] = pk[i, PK_NEXT]
    if queues[k, QT_HEAD] == NONE:
        queues[k, QT_TAIL] = NONE
    pk[i, PK_NEXT] = NONE
    ports[p, PT_QBYTES] -= pk[i, PK_SIZE]
    ports[p, PT_QPKTS] -= 1
    return i
