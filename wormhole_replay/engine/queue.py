"""The event queue: a timing wheel of 1 ns buckets for the near future, with the indexed heap
(``heap``) behind it for events further ahead.

Almost every event of a packet simulation lands within a few microseconds of now (a link's
serialisation plus propagation, a 1 us DCQCN timer), so the wheel takes them in O(1) and finds the
next one by stepping over a few empty nanoseconds; only long timers (the 300 us rate-increase timer,
flow starts, the retransmission timeout) go to the heap.  On the S4 fat-tree the binary heap's
sift-down alone was a third of the run time.

Order is exactly the heap's: by ``(time, seq)``.  A wheel bucket holds the events of one
nanosecond, kept sorted by ``seq`` in a doubly linked list of slots.  As with the heap, every slot
is pending at most once; ``q_set`` moves it, ``q_remove`` cancels it.

State (``tables.Events``): ``slots[slot] = (next, prev, time, seq, where)`` with ``where`` -1 (not
pending), 0 (wheel) or 1 (heap); ``wheel[bucket] = (head, tail)``; ``meta = (base, wheel_count,
heap_size)``, where ``base`` is the time of the last event popped (no event is ever scheduled before
it) and the wheel holds only events earlier than ``base + WHEEL``; ``heap`` and ``heap_pos`` are the
heap's (``heap``).
"""

import numpy as np

from .heap import heap_pop, heap_remove, heap_set
from .kernel import entry, kernel
from .tables import Events

WHEEL = 1 << 13  # 8.192 us of 1 ns buckets
MASK = WHEEL - 1

QN_NEXT = 0
QN_PREV = 1
QN_TIME = 2
QN_SEQ = 3
QN_WHERE = 4
QN_LEN = 5

QM_BASE = 0
QM_COUNT = 1
QM_HEAP_N = 2  # qm[2:3] is the heap's size array


def new_queue(n_slots) -> Events:
    """An empty queue for ``n_slots`` slots."""
    n = max(n_slots, 1)
    return Events(slots=np.full((n, QN_LEN), -1, dtype=np.int64), wheel=np.full((WHEEL, 2), -1, dtype=np.int64),
                  meta=np.zeros(3, dtype=np.int64), heap=np.zeros((n, 3), dtype=np.int64),
                  heap_pos=np.full(n, -1, dtype=np.int64))


@kernel
def _wheel_unlink(events, slot):
    qn, qw, qm = events.slots, events.wheel, events.meta
    b = qn[slot, QN_TIME] & MASK
    nx = qn[slot, QN_NEXT]
    pv = qn[slot, QN_PREV]
    if pv >= 0:
        qn[pv, QN_NEXT] = nx
    else:
        qw[b, 0] = nx
    if nx >= 0:
        qn[nx, QN_PREV] = pv
    else:
        qw[b, 1] = pv
    qm[QM_COUNT] -= 1


@entry
def q_remove(events, slot):
    """Cancel ``slot`` if it is pending."""
    qn = events.slots
    w = qn[slot, QN_WHERE]
    if w == 0:
        _wheel_unlink(events, slot)
    elif w == 1:
        heap_remove(events.heap, events.heap_pos, events.meta[QM_HEAP_N:QM_HEAP_N + 1], slot)
    qn[slot, QN_WHERE] = -1


@entry
def q_set(events, slot, t, s):
    """Schedule ``slot`` at ``(t, s)`` (``t`` >= the last popped time), replacing any pending key."""
    qn, qw, qm = events.slots, events.wheel, events.meta
    if qn[slot, QN_WHERE] >= 0:
        q_remove(events, slot)
    qn[slot, QN_TIME] = t
    qn[slot, QN_SEQ] = s
    if t - qm[QM_BASE] >= WHEEL:
        qn[slot, QN_WHERE] = 1
        heap_set(events.heap, events.heap_pos, qm[QM_HEAP_N:QM_HEAP_N + 1], slot, t, s)
        return
    qn[slot, QN_WHERE] = 0
    b = t & MASK
    # keep the bucket sorted by seq; a new event almost always has the largest seq
    after = qw[b, 1]
    while after >= 0 and qn[after, QN_SEQ] > s:
        after = qn[after, QN_PREV]
    qn[slot, QN_PREV] = after
    if after >= 0:
        nx = qn[after, QN_NEXT]
        qn[after, QN_NEXT] = slot
    else:
        nx = qw[b, 0]
        qw[b, 0] = slot
    qn[slot, QN_NEXT] = nx
    if nx >= 0:
        qn[nx, QN_PREV] = slot
    else:
        qw[b, 1] = slot
    qm[QM_COUNT] += 1


@kernel(inline="always")
def pending(events, slot):
    """Whether ``slot`` has an event scheduled (on the wheel or the heap)."""
    return events.slots[slot, QN_WHERE] >= 0


@entry
def q_pop(events):
    """Remove the earliest event; return ``(slot, time, seq)``, or ``(-1, -1, -1)`` if empty."""
    qn, qw, qm, hs = events.slots, events.wheel, events.meta, events.heap
    wslot = -1
    if qm[QM_COUNT] > 0:
        t = qm[QM_BASE]
        while qw[t & MASK, 0] < 0:
            t += 1
        wslot = qw[t & MASK, 0]
    hslot = hs[0, 0] if qm[QM_HEAP_N] > 0 else -1
    if wslot < 0 and hslot < 0:
        return -1, -1, -1
    take_heap = wslot < 0 or (hslot >= 0 and (hs[0, 1] < qn[wslot, QN_TIME] or (
        hs[0, 1] == qn[wslot, QN_TIME] and hs[0, 2] < qn[wslot, QN_SEQ])))
    if take_heap:
        slot, t, s = heap_pop(hs, events.heap_pos, qm[QM_HEAP_N:QM_HEAP_N + 1])
    else:
        slot = wslot
        t = qn[slot, QN_TIME]
        s = qn[slot, QN_SEQ]
        _wheel_unlink(events, slot)
    qn[slot, QN_WHERE] = -1
    qm[QM_BASE] = t
    return slot, t, s
