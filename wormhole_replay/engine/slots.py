"""What every part of the engine needs to schedule: event sequence numbers, the slot numbering of
the event queue, and the kick FIFO.

Slots, in order: ``TXDONE[p]`` and ``ARRIVE[p]`` per port, ``WAKE[h]`` per host, ``FLOWS``,
``QP[f, k]`` (``FLOW_SLOTS`` per flow: the slots ``T_*``), then the wormhole's ``SAMPLE`` and
``THAW[k]`` per partition, and last the link monitor's ``MONITOR`` (``monitor``).
"""

from .kernel import kernel
from .layout import CI_N_HOSTS, CI_N_PORTS, FLOW_SLOTS, PT_KICKED, ST_KICK_HEAD, ST_KICK_N, ST_SEQ, ST_WH_SEQ, WH_SEQ_BASE

# a flow's QP slots
T_ALPHA = 0  # DCQCN: alpha update
T_DEC = 1  # DCQCN: rate decrease
T_RP = 2  # DCQCN: rate increase
T_RTO = 3  # retransmission timeout
T_START = 4  # the flow starts (its QP is created)
T_FLUID = 5  # wormhole: the flow's fluid jump ends as planned
CC_TIMERS = 3  # slots 0..2 are its CC timers
T_TIMERS = 4  # ... 0..3 its CC and retransmission timers


@kernel(inline="always")
def next_seq(state):
    s = state[ST_SEQ]
    state[ST_SEQ] = s + 1
    return s


@kernel(inline="always")
def wh_seq(state):
    """A sequence number for a wormhole event: above every packet event's, and drawn from its own
    counter, so sampling and thawing never change the order of the packet simulation's events."""
    s = state[ST_WH_SEQ]
    state[ST_WH_SEQ] = s + 1
    return WH_SEQ_BASE + s


@kernel(inline="always")
def flow_slots_base(cfg):
    return 2 * cfg.ints[CI_N_PORTS] + cfg.ints[CI_N_HOSTS] + 1


@kernel(inline="always")
def qp_slot(cfg, f, k):
    return flow_slots_base(cfg) + FLOW_SLOTS * f + k


@kernel(inline="always")
def arrive_slot(cfg, p):
    return cfg.ints[CI_N_PORTS] + p


@kernel(inline="always")
def wake_slot(cfg, h):
    return 2 * cfg.ints[CI_N_PORTS] + h


@kernel(inline="always")
def flows_slot(cfg):
    return 2 * cfg.ints[CI_N_PORTS] + cfg.ints[CI_N_HOSTS]


@kernel(inline="always")
def sample_slot(cfg, n_flows):
    return flow_slots_base(cfg) + FLOW_SLOTS * n_flows


@kernel(inline="always")
def thaw_slot(cfg, n_flows, k):
    return sample_slot(cfg, n_flows) + 1 + k


@kernel(inline="always")
def monitor_slot(cfg, n_flows):
    return thaw_slot(cfg, n_flows, max(n_flows, 1))


def n_slots(n_ports, n_hosts, n_flows):
    """Queue slots for a run: the packet engine's, then SAMPLE, one THAW per possible partition, MONITOR."""
    return 2 * n_ports + n_hosts + 1 + FLOW_SLOTS * n_flows + 1 + max(n_flows, 1) + 1


@kernel
def kick(net, state, p):
    """Ask port p to try to transmit once the current handler is done (the reference calls
    DequeueAndTransmit synchronously; a FIFO keeps that order without recursion)."""
    ports = net.ports
    if ports[p, PT_KICKED] != 0:
        return
    ports[p, PT_KICKED] = 1
    n = net.kicks.shape[0]
    net.kicks[(state[ST_KICK_HEAD] + state[ST_KICK_N]) % n] = p
    state[ST_KICK_N] += 1
