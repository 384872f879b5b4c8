"""A link shared between packets and fluid flows (wormhole mode, ``wormhole/fluid``).

A fluid flow sends no packets; it takes its steady rate of each link it crosses as a reservation
(``PT_FLUID``).  Packets then get the rest of the link (they serialise at ``rate - PT_FLUID``), and
the bytes the link reports to HPCC's INT include the fluid ones (``carried_bytes``), so the live
flows sharing it see it as loaded as it is.  With no fluid flow, nothing changes.
"""

import numpy as np

from .kernel import kernel
from .layout import PT_FLUID, PT_FLUID_BYTES, PT_FLUID_T, PT_RATE, PT_TXBYTES


@kernel(inline="always")
def service_rate(net, p):
    """What port p's packets get of its link (bps): all of it, unless fluid flows take a share."""
    fluid = net.ports[p, PT_FLUID]
    rate = net.ports[p, PT_RATE]
    if fluid <= 0:
        return rate
    left = rate - fluid
    return left if left > rate // 100 else rate // 100


@kernel(inline="always")
def carried_bytes(net, p, now):
    """Bytes port p's link has carried by ``now``: its packets and its fluid flows' share."""
    ports = net.ports
    if ports[p, PT_FLUID] <= 0 and ports[p, PT_FLUID_BYTES] == 0:
        return ports[p, PT_TXBYTES]
    return ports[p, PT_TXBYTES] + ports[p, PT_FLUID_BYTES] + np.int64(ports[p, PT_FLUID] * ((now - ports[p, PT_FLUID_T]) / 8e9))


@kernel
def reserve(net, p, bps, now):
    """Fluid flows take ``bps`` more (or, negative, give it back) of port p's link from ``now``."""
    ports = net.ports
    ports[p, PT_FLUID_BYTES] += np.int64(ports[p, PT_FLUID] * ((now - ports[p, PT_FLUID_T]) / 8e9))
    ports[p, PT_FLUID_T] = now
    ports[p, PT_FLUID] += bps
    if ports[p, PT_FLUID] < 0:
        ports[p, PT_FLUID] = 0


@kernel
def skip_jump(net, p, t0, now):
    """Port p's partition was frozen from ``t0`` to ``now``: its flows' INT clocks skip that time
    (``jump._credit``), so its fluid share must not count bytes over it either (a live flow's next
    INT would see the whole jump's fluid bytes in one RTT and cut its window to nothing: measured,
    a 5 MB flow beside a fluid one ended 12% late)."""
    ports = net.ports
    if ports[p, PT_FLUID_T] <= t0:
        ports[p, PT_FLUID_T] += now - t0
    else:  # its share changed during the jump: counted up to now, from now on as before
        reserve(net, p, 0, now)
