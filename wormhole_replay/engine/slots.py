"""What the packet loop (``core``) and the fast-forward machinery (``wormhole``) both need:
event sequence numbers, the slot numbering of the event queue, and the kick FIFO.

Slots, in order: ``TXDONE[p]`` and ``ARRIVE[p]`` per port, ``WAKE[h]`` per host, ``FLOWS``,
``QP[f, k]`` (``FLOW_SLOTS`` per flow), then the wormhole's ``SAMPLE`` and ``THAW[k]`` per partition.
"""

from numba import njit

from .layout import CI_N_HOSTS, CI_N_PORTS, FLOW_SLOTS, PT_KICKED, ST_KICK_HEAD, ST_KICK_N, ST_SEQ, ST_WH_SEQ, WH_SEQ_BASE


@njit(cache=True, inline="always", _nrt=False)
def next_seq(st):
    s = st[ST_SEQ]
    st[ST_SEQ] = s + 1
    return s


@njit(cache=True, inline="always", _nrt=False)
def wh_seq(st):
    """A sequence number for a wormhole event: above every packet event's, and drawn from its own
    counter, so sampling and thawing never change the order of the packet simulation's events."""
    s = st[ST_WH_SEQ]
    st[ST_WH_SEQ] = s + 1
    return WH_SEQ_BASE + s


@njit(cache=True, inline="always", _nrt=False)
def qp_slot(ci, f, k):
    return 2 * ci[CI_N_PORTS] + ci[CI_N_HOSTS] + 1 + FLOW_SLOTS * f + k


@njit(cache=True, inline="always", _nrt=False)
def wake_slot(ci, h):
    return 2 * ci[CI_N_PORTS] + h


@njit(cache=True, inline="always", _nrt=False)
def sample_slot(ci, n_flows):
    return 2 * ci[CI_N_PORTS] + ci[CI_N_HOSTS] + 1 + FLOW_SLOTS * n_flows


def n_slots(n_ports, n_hosts, n_flows):
    """Queue slots for a run: the packet engine's, then SAMPLE and one THAW per possible partition."""
    return 2 * n_ports + n_hosts + 1 + FLOW_SLOTS * n_flows + 1 + max(n_flows, 1)


@njit(cache=True, _nrt=False)
def kick(pt, kick_fifo, st, p):
    """Ask port p to try to transmit once the current handler is done (the reference calls
    DequeueAndTransmit synchronously; a FIFO keeps that order without recursion)."""
    if pt[p, PT_KICKED] != 0:
        return
    pt[p, PT_KICKED] = 1
    n = kick_fifo.shape[0]
    kick_fifo[(st[ST_KICK_HEAD] + st[ST_KICK_N]) % n] = p
    st[ST_KICK_N] += 1
