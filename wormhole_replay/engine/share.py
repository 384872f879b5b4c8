"""A link shared between packets and fluid flows (wormhole mode, ``wormhole/fluid``).

A fluid flow sends no packets; it takes its steady rate of each link it crosses as a reservation
(``PT_FLUID``, ``reserve``), hop by hop as its last packet leaves each hop and until its first new
one arrives there.  Data packets then get the rest of the link (they serialise at ``rate -
PT_FLUID``); ACKs and other control packets get all of it.  The bytes the link reports to HPCC's
INT include the fluid ones (``carried_bytes``), so the live flows sharing it see it as loaded as it
is; those bytes are counted at every hop of the flow from the instant it went fluid to the instant
it thawed (``accrue``), so that its hops' counters advance by the same amount, as they would with
its packets.  HPCC's utilisation is the largest, over the hops, of quantised byte deltas (units of
512 B at 100 Gb/s), and counters advanced by different fractions of a unit raise that maximum: with
fluid bytes counted from each hop's own reservation, a flow thawed with its counters so shifted
settled 9% below its full-run rate (72 -> 66 Gb/s) for the rest of its life, and the mean FCT of a
flow file cut from the AICB fat-tree iteration moved +1.65%.  With no fluid flow, nothing changes.
"""

import numpy as np

from .kernel import kernel
from .layout import PT_FLUID, PT_FLUID_ACC, PT_FLUID_BYTES, PT_FLUID_T, PT_RATE, PT_TXBYTES


@kernel(inline="always")
def service_rate(net, p):
    """What port p's data packets get of its link (bps): all of it, unless fluid flows take a share.
    ACKs and other control packets always get all of it (``link.transmit_start``): a NIC serves its
    ACKs before its data, and a switch queue holds at most a packet of a flow's data before an ACK,
    so a fluid flow's data would have yielded to them.  Were they slowed by the reservation, the
    ACKs of a live flow received by a host whose own flows are fluid would be throttled by a share
    measured before that flow sped up (measured: an incast's two flows held at 35 Gb/s instead of
    40 behind their receiver's two fluid flows, 7.6-9.3% late)."""
    fluid = net.ports[p, PT_FLUID]
    rate = net.ports[p, PT_RATE]
    if fluid <= 0:
        return rate
    left = rate - fluid
    return left if left > rate // 100 else rate // 100


@kernel(inline="always")
def carried_bytes(net, cfg, p, now):
    """Bytes port p's link has carried by ``now``: its packets and its fluid flows' share, the
    latter a packet at a time (a data packet's wire size) as their packets would have added it."""
    ports = net.ports
    if ports[p, PT_FLUID_ACC] <= 0 and ports[p, PT_FLUID_BYTES] == 0:
        return ports[p, PT_TXBYTES]
    return ports[p, PT_TXBYTES] + ports[p, PT_FLUID_BYTES] + np.int64(
        np.round(ports[p, PT_FLUID_ACC] * ((now - ports[p, PT_FLUID_T]) / 8e9)))


@kernel
def reserve(net, p, bps):
    """Fluid flows take ``bps`` more (or, negative, give it back) of port p's link."""
    ports = net.ports
    ports[p, PT_FLUID] += bps
    if ports[p, PT_FLUID] < 0:
        ports[p, PT_FLUID] = 0


@kernel
def accrue(net, p, bps, now):
    """Fluid flows add ``bps`` more (or, negative, less) to port p's byte counter from ``now``."""
    ports = net.ports
    ports[p, PT_FLUID_BYTES] += np.int64(np.round(ports[p, PT_FLUID_ACC] * ((now - ports[p, PT_FLUID_T]) / 8e9)))
    ports[p, PT_FLUID_T] = now
    ports[p, PT_FLUID_ACC] += bps
    if ports[p, PT_FLUID_ACC] < 0:
        ports[p, PT_FLUID_ACC] = 0


@kernel
def skip_jump(net, p, t0, now):
    """Port p's partition was frozen from ``t0`` to ``now``: its flows' INT clocks skip that time
    (``jump._credit``), so its fluid flows must not count bytes over it either (a live flow's next
    INT would see the whole jump's fluid bytes in one RTT and cut its window to nothing: measured,
    a 5 MB flow beside a fluid one ended 12% late)."""
    ports = net.ports
    if ports[p, PT_FLUID_T] <= t0:
        ports[p, PT_FLUID_T] += now - t0
    else:  # its fluid flows changed during the jump: counted up to now, from now on as before
        accrue(net, p, 0, now)
