"""Links: serialising a packet onto the wire out of a port and delivering it, in order, to the
port at the other end (``QbbNetDevice::TransmitStart``, ``QbbChannel::TransmitStart``,
``QbbNetDevice::TransmitComplete``).

Store-and-forward: a packet of ``size`` bytes keeps the port busy for ``size x 8 / rate`` (whole
ns, truncated as the reference does) and reaches the far end one propagation delay after its last
bit.  The packets in flight on a link sit in a FIFO (``PT_LN_HEAD``/``TAIL``), and only the head's
arrival is pending (the ``ARRIVE[p]`` slot): a link delivers in order, so one event per link, not
per packet, is on the queue.

Wormhole mode may make a flow *fluid* (``wormhole/fluid``): its share of the link then serialises
no packets (``share``), and each transmission tells the fluid machinery where a fluid flow's last
packet, or a thawed flow's first, has got to (``fluid.on_transmit``).
"""

from .kernel import kernel
from .layout import (CI_WH_FLUID, KIND_DATA, PK_ARRIVE, PK_EVSEQ, PK_KIND, PK_NEXT, PK_SIZE, PT_BUSY_UNTIL, PT_DELAY,
                     PT_IS_HOST, PT_LN_HEAD, PT_LN_TAIL, PT_QPKTS, PT_RATE, PT_TXDONE_SEQ, ST_CUR_SEQ, ST_NOW)
from .packets import NONE, tx_ns
from .share import service_rate
from .wormhole.fluid import on_transmit
from .queue import pending, q_set
from .slots import arrive_slot, next_seq


@kernel
def port_ready(net, events, state, p):
    """``QbbNetDevice::m_txMachineState == READY`` at this instant: no transmit-complete pending,
    and the last serialisation ended before now (or at now, in an event already handled)."""
    if pending(events, p):
        return False
    bu = net.ports[p, PT_BUSY_UNTIL]
    now = state[ST_NOW]
    return bu < now or (bu == now and net.ports[p, PT_TXDONE_SEQ] < state[ST_CUR_SEQ])


@kernel(inline="always")
def transmit_start(net, flows, events, cfg, state, p, i):
    """Put packet i on the wire out of port p: busy until its last bit, arriving a delay later."""
    ports, pk = net.ports, net.packets
    now = state[ST_NOW]
    fluid = cfg.ints[CI_WH_FLUID] != 0
    if fluid:  # a thawed flow's first packet gives back its share first: it is not slowed by itself
        on_transmit(net, flows, cfg, state, p, i, False)
    tx = tx_ns(pk[i, PK_SIZE], service_rate(net, p) if pk[i, PK_KIND] == KIND_DATA else ports[p, PT_RATE])
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
    if fluid:  # a fluid flow's last packet takes its share once on the wire: nor is it
        on_transmit(net, flows, cfg, state, p, i, True)


@kernel
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
