"""Links: serialising a packet onto the wire out of a port and delivering it, in order, to the
port at the other end (``QbbNetDevice::TransmitStart``, ``QbbChannel::TransmitStart``,
``QbbNetDevice::TransmitComplete``).

Store-and-forward: a packet of ``size`` bytes keeps the port busy for ``size x 8 / rate`` (whole
ns, truncated as the reference does) and reaches the far end one propagation delay after its last
bit.  The packets in flight on a link sit in a FIFO (``PT_LN_HEAD``/``TAIL``), and only the head's
arrival is pending (the ``ARRIVE[p]`` slot): a link delivers in order, so one event per link, not
per packet, is on the queue.

Wormhole mode may make a flow *fluid* (``wormhole/fluid``): it stops sending packets and takes its
steady rate of each link it crosses as a reservation (``PT_FLUID``).  Packets then get the rest of
the link (they serialise at ``rate - PT_FLUID``), and the bytes the link reports to HPCC's INT
include the fluid ones (``carried_bytes``), so the live flows sharing it see it as loaded as it is.
"""

import numpy as np
from numba import njit

from .layout import (PK_ARRIVE, PK_EVSEQ, PK_NEXT, PK_SIZE, PT_BUSY_UNTIL, PT_DELAY, PT_FLUID, PT_FLUID_BYTES,
                     PT_FLUID_T, PT_IS_HOST, PT_LN_HEAD, PT_LN_TAIL, PT_QPKTS, PT_RATE, PT_TXBYTES, PT_TXDONE_SEQ,
                     ST_CUR_SEQ, ST_NOW)
from .packets import NONE, tx_ns
from .queue import pending, q_set
from .slots import arrive_slot, next_seq


@njit(cache=True, _nrt=False)
def port_ready(net, events, state, p):
    """``QbbNetDevice::m_txMachineState == READY`` at this instant: no transmit-complete pending,
    and the last serialisation ended before now (or at now, in an event already handled)."""
    if pending(events, p):
        return False
    bu = net.ports[p, PT_BUSY_UNTIL]
    now = state[ST_NOW]
    return bu < now or (bu == now and net.ports[p, PT_TXDONE_SEQ] < state[ST_CUR_SEQ])


@njit(cache=True, inline="always", _nrt=False)
def service_rate(net, p):
    """What port p's packets get of its link (bps): all of it, unless fluid flows take a share."""
    fluid = net.ports[p, PT_FLUID]
    rate = net.ports[p, PT_RATE]
    if fluid <= 0:
        return rate
    left = rate - fluid
    return left if left > rate // 100 else rate // 100


@njit(cache=True, inline="always", _nrt=False)
def carried_bytes(net, p, now):
    """Bytes port p's link has carried by ``now``: its packets and its fluid flows' share."""
    ports = net.ports
    if ports[p, PT_FLUID] <= 0 and ports[p, PT_FLUID_BYTES] == 0:
        return ports[p, PT_TXBYTES]
    return ports[p, PT_TXBYTES] + ports[p, PT_FLUID_BYTES] + np.int64(ports[p, PT_FLUID] * ((now - ports[p, PT_FLUID_T]) / 8e9))


@njit(cache=True, _nrt=False)
def reserve(net, p, bps, now):
    """Fluid flows take ``bps`` more (or, negative, give it back) of port p's link from ``now``."""
    ports = net.ports
    ports[p, PT_FLUID_BYTES] += np.int64(ports[p, PT_FLUID] * ((now - ports[p, PT_FLUID_T]) / 8e9))
    ports[p, PT_FLUID_T] = now
    ports[p, PT_FLUID] += bps
    if ports[p, PT_FLUID] < 0:
        ports[p, PT_FLUID] = 0


@njit(cache=True, _nrt=False)
def transmit_start(net, events, cfg, state, p, i):
    """Put packet i on the wire out of port p: busy until its last bit, arriving a delay later."""
    ports, pk = net.ports, net.packets
    now = state[ST_NOW]
    tx = tx_ns(pk[i, PK_SIZE], service_rate(net, p))
    ports[p, PT_BUSY_UNTIL] = now + tx
    ports[p, PT_TXDONE_SEQ] = next_seq(state)  # the reference schedules TransmitComplete first,
    ev = next_seq(state)  # then the peer's Receive
    pk[i, PK_ARRIVE] = now + tx + ports[p, PT_DELAY]
    pk[i, PK_EVSEQ] = ev
    pk[i, PK_NEXT] = NONE
    if ports[p, PT_LN_HEAD] == NONE:
        ports[p, PT_LN_HEAD] = i
        q_set(events, arrive_slot(cfg, p), pk[i, PK_ARRIVE], ev)
    else:
        pk[ports[p, PT_LN_TAIL], PK_NEXT] = i
    ports[p, PT_LN_TAIL] = i
    # A host NIC always needs its transmit-complete (it pulls from QPs); a switch port only when
    # something is already waiting (otherwise an enqueue schedules it late, with the same seq).
    if ports[p, PT_IS_HOST] != 0 or ports[p, PT_QPKTS] > 0:
        q_set(events, p, now + tx, ports[p, PT_TXDONE_SEQ])


@njit(cache=True, _nrt=False)
def arrive(net, events, cfg, p):
    """The head packet in flight on the link out of port p reaches the far end: take it off the
    link (the next one's arrival becomes pending) and return it."""
    ports, pk = net.ports, net.packets
    i = ports[p, PT_LN_HEAD]
    j = pk[i, PK_NEXT]
    ports[p, PT_LN_HEAD] = j
    if j == NONE:
        ports[p, PT_LN_TAIL] = NONE
    else:
        q_set(events, arrive_slot(cfg, p), pk[j, PK_ARRIVE], pk[j, PK_EVSEQ])
    return i
