"""The event loop: pop the next event, hand it to its component, let kicked ports transmit.

Scheduling follows htsim: a slot per component, each pending at most once (``slots``):

* ``TXDONE[p]``  egress port p finishes serialising a packet (skipped at a switch port whose
  queues are empty, and scheduled late if a packet arrives before it would have fired);
* ``ARRIVE[p]``  the head packet in flight on the link out of port p reaches the far end;
* ``WAKE[h]``    host h's NIC wakes up when a paced QP becomes eligible (``m_nextSend``);
* ``FLOWS``      the flow file's next start time (``ScheduleFlowInputs``);
* ``QP[f, k]``   a flow's DCQCN timers, its retransmission timer, its start (``T_START``) and,
  in wormhole mode, the planned end of its jump while it is fluid (``T_FLUID``);
* ``SAMPLE``, ``THAW[k]``  wormhole mode: rate sampling, and the end of partition k's jump;
* ``MONITOR``    the link monitor's samples (``monitor``: it changes nothing, not even the clock).

Every event carries the sequence number the reference would have given it (reserved when the
reference schedules it: a packet's arrival is numbered when its transmission starts), so
same-nanosecond events run in the reference's order.  Time is integer nanoseconds, as in ns-3.
How the kernels are compiled is in ``kernel``.  The handlers a packet meets at every hop
(``switch.receive``, ``switch.dequeue_and_transmit``, ``transport.receive_*``,
``link.transmit_start``) are inlined (``inline="always"``): a call passes every array of the
structures it takes, flattened (pointer, sizes and strides each: some 200 words), and Numba does
not inline across kernels by itself.  Measured (``tools/compare_builds.py``, S4 HPCC, CPU time
against 9871f67, before the tables had names): 1.46x with those calls, 0.90x inlined.

This loop's machine code is sensitive to its shape: leaving the optional machinery out of it when
a run does not use it (``parts`` / ``mon`` / a ``fluid`` flag passed as ``None``, which Numba prunes
before typing) cut the first compile by up to 40% but made S4 1.2-2.3x slower in CPU time (even
pruning the monitor's one branch cost 20%), so every branch stays and is decided at run time.
Time any change here with ``tools/compare_builds.py``.
"""

from . import cc, dag, monitor, nic, switch, transport
from .kernel import entry, kernel
from .layout import (CI_STOP, CI_WH, FT_PART, FT_STATE, FT_VIRTUAL, KIND_DATA, KIND_PFC, PK_FLOW, PK_KIND,
                     PT_BUSY_UNTIL, PT_FROZEN, PT_IS_HOST, PT_KICKED, PT_NODE, PT_PEER, PT_QPKTS, PT_TXDONE_SEQ,
                     PTF_ERROR, RUN_BUDGET, RUN_DONE, RUN_GROW, RUN_MEMO, ST_CUR_SEQ, ST_DROPS, ST_EVENTS,
                     ST_KICK_HEAD, ST_KICK_N, ST_ML_N, ST_NFREE, ST_NOW, ST_NPFC, ST_WH_EVENTS, ST_WH_TIMERS, FLOW_SLOTS,
                     NT_HOST, HT_PORT, WP_STATE)
from .link import arrive, port_ready
from .packets import FREE_MARGIN, free
from .pfc import pfc_received
from .queue import pending, q_pop, q_set
from .rng import uniform
from .slots import T_FLUID, T_RTO, T_START, flow_slots_base, flows_slot, monitor_slot, sample_slot
from .wormhole import timers
from .wormhole.fluid_groups import thaw_group
from .wormhole.jump import thaw
from .wormhole.membership import flow_finished, flow_started
from .wormhole.partitions import FROZEN
from .wormhole.steadiness import sample


@kernel(inline="always")
def _transmit(net, flows, events, cfg, state, p):
    """Port p is ready to send: its NIC or switch picks what."""
    if net.ports[p, PT_IS_HOST] != 0:
        nic.dequeue_and_transmit(net, flows, events, cfg, state, net.nodes[net.ports[p, PT_NODE], NT_HOST])
    else:
        switch.dequeue_and_transmit(net, flows, events, cfg, state, p)


@kernel(inline="always")
def _drain_kicks(net, flows, events, cfg, state):
    """Ports kicked by the last handler transmit now, in the order they were kicked."""
    ports, kicks = net.ports, net.kicks
    nk = kicks.shape[0]
    while state[ST_KICK_N] > 0:
        p = kicks[state[ST_KICK_HEAD]]
        state[ST_KICK_HEAD] = (state[ST_KICK_HEAD] + 1) % nk
        state[ST_KICK_N] -= 1
        ports[p, PT_KICKED] = 0
        if ports[p, PT_FROZEN] != 0:  # its partition is being fast-forwarded; it is kicked at thaw
            continue
        if not port_ready(net, events, state, p):
            # busy: make sure its transmit-complete fires (switch ports skip it when idle)
            if not pending(events, p) and ports[p, PT_QPKTS] > 0:
                q_set(events, p, ports[p, PT_BUSY_UNTIL], ports[p, PT_TXDONE_SEQ])
            continue
        _transmit(net, flows, events, cfg, state, p)


@kernel(inline="always")
def _deliver(net, flows, events, cfg, state, parts, lp):
    """The head packet on the link out of port ``lp`` arrives at the port at the other end: lost
    (a link error rate), a PFC frame, a packet for a switch, or data / an ACK for a host."""
    i = arrive(net, events, cfg, lp)
    ip = net.ports[lp, PT_PEER]
    pk = net.packets
    if net.port_probs[lp, PTF_ERROR] > 0.0 and uniform(state) < net.port_probs[lp, PTF_ERROR]:
        state[ST_DROPS] += 1
        free(net, state, i)
    elif pk[i, PK_KIND] == KIND_PFC:
        pfc_received(net, state, ip, i)
        free(net, state, i)
    elif net.ports[ip, PT_IS_HOST] == 0:
        switch.receive(net, flows, cfg, state, ip, i)
    elif pk[i, PK_KIND] == KIND_DATA:
        transport.receive_data(net, flows, events, cfg, state, i)
    else:
        f = pk[i, PK_FLOW]
        transport.receive_ack(net, flows, events, cfg, state, i)
        if cfg.ints[CI_WH] != 0 and flows.table[f, FT_STATE] == dag.FINISHED and flows.table[f, FT_PART] >= 0:
            flow_finished(net, flows, events, cfg, state, parts, f)
            if state[ST_WH_TIMERS] > 0:  # paced timers where it ran go faster (wormhole/timers)
                timers.repace_beside(net, flows, events, cfg, state, parts)


@kernel(inline="always")
def _qp_event(net, flows, events, cfg, state, parts, f, timer):
    """One of flow f's slots fired: its start, its retransmission timer, or a CC timer."""
    if timer == T_START:
        if cfg.ints[CI_WH] != 0 and flows.table[f, FT_VIRTUAL] >= 0:  # the memo's timers (wormhole/timers)
            timers.start(net, flows, events, cfg, state, parts, f)
        if flows.table[f, FT_VIRTUAL] >= 0:
            dag.virtual_flow_event(flows, events, cfg, state, f)
        elif dag.launch_step(flows, events, cfg, state, f):
            if cfg.ints[CI_WH] != 0:
                flow_started(net, flows, events, cfg, state, parts, f)
            nic.start_flow(net, flows, cfg, state, f)
            if cfg.ints[CI_WH] != 0 and timers.running_beside(net, flows, f):
                timers.thaw_beside(net, flows, events, cfg, state, parts, f)
            if cfg.ints[CI_WH] != 0 and state[ST_WH_TIMERS] > 0:  # paced timers where it runs go slower
                timers.yield_to(net, flows, events, cfg, state, parts, f)
                timers.repace_beside(net, flows, events, cfg, state, parts)
    elif timer == T_RTO:
        transport.retransmission_timeout(net, flows, events, cfg, state, f)
    elif timer == T_FLUID:  # a fluid group's jump ends as planned (its partition first, if frozen)
        k = flows.table[f, FT_PART]
        if parts.table[k, WP_STATE] == FROZEN:
            thaw(net, flows, events, cfg, state, parts, k)
        thaw_group(net, flows, events, cfg, state, parts, f, False, False)
    else:
        cc.on_timer(flows, events, cfg, state, f, timer)


@entry
def run(net, flows, events, cfg, state, parts, mon, max_events):
    """Process events until none is left, the stop time passes, ``max_events`` have run, or the
    packet pool / PFC log / monitor must grow (``RUN_GROW``), or the memo has records to read
    (``RUN_MEMO``).  All state stays in the tables, so a call can be resumed."""
    n_ports = net.ports.shape[0]
    n_flows = flows.table.shape[0]
    flow_start = flows_slot(cfg)
    qp_base = flow_slots_base(cfg)
    wh_sample = sample_slot(cfg, n_flows)
    mon_slot = monitor_slot(cfg, n_flows)
    stop = cfg.ints[CI_STOP]
    done = 0
    while True:
        if done >= max_events:
            return RUN_BUDGET
        if state[ST_NFREE] < FREE_MARGIN or state[ST_NPFC] + 64 > net.pfc_log.shape[0]:
            return RUN_GROW
        slot, t, s = q_pop(events)
        if state[ST_ML_N] > 0 and (slot < 0 or t > state[ST_NOW]):
            # the memo log has records and this instant is complete: the memo looks at its
            # partitions before time moves on (after every flow starting at this ns has joined)
            if slot >= 0:
                q_set(events, slot, t, s)
            return RUN_MEMO
        if slot < 0:
            return RUN_DONE
        if t > stop:  # leave it pending: a later call with a later stop time resumes here
            q_set(events, slot, t, s)
            return RUN_DONE
        if slot == mon_slot:  # reads the network only: no clock, sequence or event count of its own
            if monitor.on_event(net, flows, events, cfg, parts, mon, slot, t):
                return RUN_GROW
            continue
        state[ST_NOW] = t
        state[ST_CUR_SEQ] = s
        done += 1
        state[ST_EVENTS] += 1
        if slot < n_ports:  # transmit complete
            _transmit(net, flows, events, cfg, state, slot)
        elif slot < 2 * n_ports:  # the head packet of a link arrives
            _deliver(net, flows, events, cfg, state, parts, slot - n_ports)
        elif slot < flow_start:  # a NIC wakes up
            h = slot - 2 * n_ports
            if port_ready(net, events, state, net.hosts[h, HT_PORT]):
                nic.dequeue_and_transmit(net, flows, events, cfg, state, h)
        elif slot == flow_start:
            dag.schedule_flow_inputs(flows, events, cfg, state, t)
        elif slot < wh_sample:  # a flow's timer or start
            _qp_event(net, flows, events, cfg, state, parts, (slot - qp_base) // FLOW_SLOTS,
                      (slot - qp_base) % FLOW_SLOTS)
        elif slot == wh_sample:  # wormhole: sample rates, freeze steady partitions
            state[ST_WH_EVENTS] += 1
            sample(net, flows, events, cfg, state, parts)
        else:  # wormhole: a frozen partition's jump ends as planned
            state[ST_WH_EVENTS] += 1
            thaw(net, flows, events, cfg, state, parts, slot - wh_sample - 1)
        if state[ST_KICK_N] > 0:
            _drain_kicks(net, flows, events, cfg, state)
