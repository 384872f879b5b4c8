"""Flows over time: starting them, finishing them, and releasing the ones that depend on them.

A flow of the flow file starts at its start time: ``ScheduleFlowInputs`` (the ``FLOWS`` slot)
takes the flows due now in file order, and each one's QP is created two events later, as
``third.cc``'s client application is (``Application::Initialize``, then ``StartApplication``), so
that an event already pending at that nanosecond (a NIC's transmit-complete) runs first, as in the
reference.  A flow with predecessors (a trace's DAG) starts once every predecessor has been
received in full, plus its own compute gap (``FT_DELAY``), and never before its ``FT_START``.  A
virtual flow (a compute op, a copy inside a server) takes its duration, crosses no network, and
releases its successors like any flow.  All of it happens inside the kernel, without returning to
Python per flow.
"""


from .kernel import kernel
from .layout import (FT_BYTES_RX, FT_DELAY, FT_DONE_IDX, FT_FINISH, FT_LAUNCH_HOPS, FT_MEMO_TIMER, FT_PREDS_LEFT,
                     FT_READY, FT_RX_DONE, FT_SIZE, FT_START, FT_STATE, FT_SUCC, FT_VIRTUAL, ST_FINISHED, ST_NEXT_FLOW,
                     ST_NOW)
from .queue import q_set
from .slots import T_START, flows_slot, next_seq, qp_slot

WAITING = 0  # FT_STATE
ACTIVE = 1
FINISHED = 2


@kernel
def mark_done(flows, state, f):
    """Flow f is done now: its finish time and its place in the completion order."""
    ft = flows.table
    ft[f, FT_STATE] = FINISHED
    ft[f, FT_FINISH] = state[ST_NOW]
    ft[f, FT_DONE_IDX] = state[ST_FINISHED]
    state[ST_FINISHED] += 1


@kernel
def release_successors(flows, events, cfg, state, f):
    """Flow f has arrived in full: each successor whose predecessors have now all arrived starts
    at the latest predecessor arrival plus its compute gap (never before its own start time)."""
    ft, succ = flows.table, flows.successors
    now = state[ST_NOW]
    for j in range(ft[f, FT_SUCC], ft[f + 1, FT_SUCC] if f + 1 < ft.shape[0] else succ.shape[0]):
        g = succ[j]
        ready = now + ft[g, FT_DELAY]
        if ready > ft[g, FT_READY]:
            ft[g, FT_READY] = ready
        ft[g, FT_PREDS_LEFT] -= 1
        if ft[g, FT_PREDS_LEFT] == 0:
            t = ft[g, FT_READY] if ft[g, FT_READY] > ft[g, FT_START] else ft[g, FT_START]
            q_set(events, qp_slot(cfg, g, T_START), t, next_seq(state))


@kernel
def virtual_flow_event(flows, events, cfg, state, f):
    """A flow that does not cross the packet network (a compute op, a copy inside a server): it
    starts, then after its duration it is done and releases its successors."""
    ft = flows.table
    now = state[ST_NOW]
    if ft[f, FT_STATE] == WAITING:
        ft[f, FT_STATE] = ACTIVE
        ft[f, FT_START] = now
        q_set(events, qp_slot(cfg, f, T_START), now + ft[f, FT_VIRTUAL], next_seq(state))
        return
    mark_done(flows, state, f)
    ft[f, FT_RX_DONE] = now
    ft[f, FT_BYTES_RX] = ft[f, FT_SIZE]
    release_successors(flows, events, cfg, state, f)


@kernel
def schedule_flow_inputs(flows, events, cfg, state, t):
    """``ScheduleFlowInputs`` at time t: the flows of the file due now, in file order (virtual ones
    start at once), then the next call at the next start time."""
    ft, order = flows.table, flows.start_order
    n_roots = order.shape[0]
    while state[ST_NEXT_FLOW] < n_roots:
        f = order[state[ST_NEXT_FLOW]]
        if ft[f, FT_START] != t:
            break
        state[ST_NEXT_FLOW] += 1
        if ft[f, FT_VIRTUAL] >= 0 and ft[f, FT_MEMO_TIMER] == 0:  # the memo's timers start as flows do
            virtual_flow_event(flows, events, cfg, state, f)
            continue
        ft[f, FT_LAUNCH_HOPS] = 1  # Initialize, then StartApplication (see the module's docstring)
        q_set(events, qp_slot(cfg, f, T_START), t, next_seq(state))
    if state[ST_NEXT_FLOW] < n_roots:
        f = order[state[ST_NEXT_FLOW]]
        q_set(events, flows_slot(cfg), ft[f, FT_START], next_seq(state))


@kernel
def launch_step(flows, events, cfg, state, f):
    """The ``T_START`` slot of network flow f fired: True if its QP is to be created now, False if
    this was its application's ``Initialize`` (``StartApplication`` is then scheduled)."""
    ft = flows.table
    if ft[f, FT_LAUNCH_HOPS] > 0:
        ft[f, FT_LAUNCH_HOPS] -= 1
        q_set(events, qp_slot(cfg, f, T_START), state[ST_NOW], next_seq(state))
        return False
    return True
