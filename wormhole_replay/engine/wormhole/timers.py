"""Network flows the memo turned into timers (``EngineView.make_timers``: an episode's, a recurring
flow's copies, marked ``FT_MEMO_TIMER``), and the live flows beside them.

A timer crosses no link: beside a flow its copies never met it would neither slow that flow nor be
slowed by it (measured on a 128-GPU DDP iteration on a rail fabric, 2026-12-03: ring steps taken as
timers while a pipeline send crossed their rail link ended 42% early, and the send, alone on the
link, 49% early).  So where a *foreign* flow (one the memo did not make a timer) is live on one of
a timer's ports (data or ACK path, either direction, as partitions are made), the timer is simulated
packet by packet:

* a timer due while a foreign flow is live there starts as a packet flow (``start``);
* a foreign flow that starts where timers run makes them packet flows from there on
  (``thaw_beside``): each is credited the bytes its timer had covered, in proportion to the time
  it ran, and goes on from line rate, as a new flow would;
* two timers of different groups (``FT_MEMO_TIMER``: what they were learned with, an episode's
  iteration or a recurring flow's class) whose data would cross one link at once are both
  simulated: the later one starts as a packet flow and the running one is thawed.  Each was learned
  on what its own group met, which need not have been the other (two classes that never overlapped
  while learned, and do later, as a pipeline's sends and a ring's steps can once both recur); an
  episode's flows were learned together, and their overlaps are in its times (the rule applied
  within an episode put a fat-tree iteration's mean FCT 1.6% short).  Copies of one class never
  overlap as timers: a ring step waits for the previous one to be received, when its timer ends.

The memo's own timers simulated after all are not foreign: they are the pattern the timers were
learned in (a ring's steps share their hosts' ports through their ACKs), and counting them made
every later step of that ring simulated too (all 107,008 copies of the iteration above).  Ports
count the foreign flows live on them (``PT_FOREIGN``, ``membership``), the timers running
(``PT_TIMERS``) and those of them whose data crosses them (``PT_TIMERS_DATA``); the timers running
are listed in ``parts.timers``.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CI_PAYLOAD, FT_APATH, FT_BYTES_RX, FT_DPATH, FT_MEMO_TIMER, FT_PKTS_SENT, FT_RX_EXPECTED,
                      FT_RX_LAST_NACK, FT_SIZE, FT_SKIPPED, FT_SND_NXT, FT_SND_UNA, FT_START, FT_STATE, FT_TIMER_AT,
                      FT_VIRTUAL, PT_FOREIGN, PT_PEER, PT_TIMERS, PT_TIMERS_DATA, PT_TIMERS_GROUP, ST_NOW,
                      ST_WH_EV_SKIPPED, ST_WH_TIMERS, ST_WH_TIMERS_THAWED)
from ..nic import start_flow
from ..queue import q_remove
from ..slots import T_START, qp_slot
from .membership import flow_started
from .partitions import ports_end


@kernel(inline="always")
def _count(net, flows, f, column, by):
    """Every port flow f's data and ACKs cross (either direction) counts ``by`` more in ``column``."""
    paths, ports = flows.paths, net.ports
    for j in range(flows.table[f, FT_DPATH], ports_end(flows, f)):
        ports[paths[j], column] += by
        ports[ports[paths[j], PT_PEER], column] += by


@kernel(inline="always")
def _count_data(net, flows, f, by):
    """Every port flow f's data leaves from counts ``by`` more running timers' data, and which group
    they are of (``PT_TIMERS_GROUP``: 0 once two groups meet there, until the port has none)."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    group = ft[f, FT_MEMO_TIMER]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        if by > 0:
            alone = ports[p, PT_TIMERS_DATA] == 0 or ports[p, PT_TIMERS_GROUP] == group
            ports[p, PT_TIMERS_GROUP] = group if alone else 0
        ports[p, PT_TIMERS_DATA] += by
        if ports[p, PT_TIMERS_DATA] == 0:
            ports[p, PT_TIMERS_GROUP] = 0


@kernel(inline="always")
def _data_meets_timers(net, flows, f):
    """Flow f's data would leave a port some running timer of another group's data leaves."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    group = ft[f, FT_MEMO_TIMER]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        if ports[p, PT_TIMERS_DATA] > 0 and ports[p, PT_TIMERS_GROUP] != group:
            return True
    return False


@kernel(inline="always")
def _crosses(net, flows, f, column):
    """Some port flow f's data or ACKs cross (either direction) counts something in ``column``."""
    paths, ports = flows.paths, net.ports
    for j in range(flows.table[f, FT_DPATH], ports_end(flows, f)):
        if ports[paths[j], column] > 0 or ports[ports[paths[j], PT_PEER], column] > 0:
            return True
    return False


@kernel
def _unskip(flows, cfg, state, f, credited):
    """Flow f is simulated after all, ``credited`` bytes of it as the timer ran: its packets' events
    are no longer counted as avoided."""
    ft = flows.table
    payload = cfg.ints[CI_PAYLOAD]
    hops = ports_end(flows, f) - ft[f, FT_DPATH]
    left = ft[f, FT_SIZE] - credited
    state[ST_WH_EV_SKIPPED] -= (left + payload - 1) // payload * 2 * hops
    ft[f, FT_SKIPPED] = credited
    ft[f, FT_VIRTUAL] = -1


@kernel
def _stop_running(net, flows, parts, state, f):
    """Timer f is no longer running: off its ports' counts and out of the list."""
    ft = flows.table
    _count(net, flows, f, PT_TIMERS, -1)
    _count_data(net, flows, f, -1)
    i = ft[f, FT_TIMER_AT]
    n = state[ST_WH_TIMERS] - 1
    last = parts.timers[n]
    parts.timers[i] = last
    ft[last, FT_TIMER_AT] = i
    ft[f, FT_TIMER_AT] = -1
    state[ST_WH_TIMERS] = n


@kernel
def start(net, flows, cfg, state, parts, f):
    """Flow f's timer slot fired (``FT_VIRTUAL`` >= 0): if it is one of the memo's timers, it
    starts running, or, a foreign flow being live on its ports, becomes a packet flow; or it ends."""
    ft = flows.table
    if ft[f, FT_MEMO_TIMER] == 0:  # a compute op or an intra-server copy
        return
    if ft[f, FT_STATE] != 0:  # its end
        _stop_running(net, flows, parts, state, f)
        return
    if _crosses(net, flows, f, PT_FOREIGN) or _data_meets_timers(net, flows, f):
        _unskip(flows, cfg, state, f, 0)
        return
    _count(net, flows, f, PT_TIMERS, 1)
    _count_data(net, flows, f, 1)
    n = state[ST_WH_TIMERS]
    parts.timers[n] = f
    ft[f, FT_TIMER_AT] = n
    state[ST_WH_TIMERS] = n + 1


@kernel
def running_beside(net, flows, g):
    """Flow g, starting as a packet flow, meets running timers it must not run beside: on any port
    if it is foreign, on its data's ports if it is one of the memo's (a timer simulated after all)."""
    if flows.table[g, FT_MEMO_TIMER] == 0:
        return _crosses(net, flows, g, PT_TIMERS)
    return _data_meets_timers(net, flows, g)


@kernel
def _share_a_port(net, flows, f, g, data_only):
    """Flows f and g cross a common port: their data leaves from one port (``data_only``), or any
    port of their data and ACK paths, either direction."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    f_end = ft[f, FT_APATH] if data_only else ports_end(flows, f)
    g_end = ft[g, FT_APATH] if data_only else ports_end(flows, g)
    for i in range(ft[f, FT_DPATH], f_end):
        p = paths[i]
        q = p if data_only else ports[p, PT_PEER]
        for j in range(ft[g, FT_DPATH], g_end):
            r = paths[j]
            if r == p or r == q:
                return True
    return False


@kernel
def _to_packets(net, flows, events, cfg, state, parts, f):
    """Running timer f becomes a packet flow now, keeping its start, credited the bytes its timer
    has covered (its size times the share of its time to the last byte received that has passed, in
    whole packets, at least one packet left), from line rate as a new flow."""
    ft = flows.table
    begun = ft[f, FT_START]
    payload = cfg.ints[CI_PAYLOAD]
    b = np.int64(ft[f, FT_SIZE] * ((state[ST_NOW] - begun) / max(ft[f, FT_VIRTUAL], 1))) // payload * payload
    if b > ft[f, FT_SIZE] - payload:
        b = max(ft[f, FT_SIZE] - payload, 0) // payload * payload
    _stop_running(net, flows, parts, state, f)
    q_remove(events, qp_slot(cfg, f, T_START))
    _unskip(flows, cfg, state, f, b)
    ft[f, FT_STATE] = 0
    state[ST_WH_TIMERS_THAWED] += 1
    flow_started(net, flows, events, cfg, state, parts, f)
    start_flow(net, flows, cfg, state, f)
    ft[f, FT_START] = begun
    for col in (FT_SND_NXT, FT_SND_UNA, FT_RX_EXPECTED, FT_BYTES_RX, FT_RX_LAST_NACK):
        ft[f, col] += b
    ft[f, FT_PKTS_SENT] += b // payload


@kernel
def thaw_beside(net, flows, events, cfg, state, parts, g):
    """Flow g has just started (``running_beside``): the memo's timers running beside it become
    packet flows."""
    group = flows.table[g, FT_MEMO_TIMER]
    data_only = group != 0
    for i in range(state[ST_WH_TIMERS] - 1, -1, -1):  # a timer taken out is replaced by the last one
        f = parts.timers[i]
        if (not data_only or flows.table[f, FT_MEMO_TIMER] != group) and _share_a_port(net, flows, f, g, data_only):
            _to_packets(net, flows, events, cfg, state, parts, f)
