"""Indexed 4-ary min-heap over NumPy arrays, for the Numba event loop.

Every schedulable thing in the engine (a port's transmit-complete, a link's next arrival, a NIC
wake-up, a QP timer) owns one *slot*; a slot is in the heap at most once, so the heap stays as small
as the number of busy components (htsim's design), never as large as the packets in flight.
Entries are ordered by ``(time, seq)``: ``seq`` is the order in which the reference simulator would
have scheduled the event, which makes ties resolve the way ns-3 resolves them (FIFO by insertion).

``set`` inserts a slot or moves it to a new key; ``remove`` cancels it.  ``pos[slot]`` is the slot's
index in the heap or -1.  Four children per node: half the levels of a binary heap, and the
children of a node sit together in memory (measured 10-15% faster on the S4 fat-tree run, where
the event loop spends a third of its time here).
"""

import numpy as np

from .kernel import entry, kernel


def new_heap(n_slots):
    """An empty heap with room for every slot: ``hs[i] = (slot, time, seq)`` for heap index i,
    ``pos[slot]`` its heap index or -1, ``size[0]`` the number of entries."""
    return (
        np.zeros((max(n_slots, 1), 3), dtype=np.int64),
        np.full(max(n_slots, 1), -1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
    )


@kernel(inline="always")
def _less(t1, s1, t2, s2):
    return t1 < t2 or (t1 == t2 and s1 < s2)


@kernel
def _sift_up(hs, pos, i):
    slot = hs[i, 0]
    t = hs[i, 1]
    s = hs[i, 2]
    while i > 0:
        parent = (i - 1) >> 2
        if _less(t, s, hs[parent, 1], hs[parent, 2]):
            hs[i, 0] = hs[parent, 0]
            hs[i, 1] = hs[parent, 1]
            hs[i, 2] = hs[parent, 2]
            pos[hs[i, 0]] = i
            i = parent
        else:
            break
    hs[i, 0] = slot
    hs[i, 1] = t
    hs[i, 2] = s
    pos[slot] = i


@kernel
def _sift_down(hs, pos, i, n):
    slot = hs[i, 0]
    t = hs[i, 1]
    s = hs[i, 2]
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        c = first
        last = first + 4 if first + 4 < n else n
        for k in range(first + 1, last):
            if _less(hs[k, 1], hs[k, 2], hs[c, 1], hs[c, 2]):
                c = k
        if _less(hs[c, 1], hs[c, 2], t, s):
            hs[i, 0] = hs[c, 0]
            hs[i, 1] = hs[c, 1]
            hs[i, 2] = hs[c, 2]
            pos[hs[i, 0]] = i
            i = c
        else:
            break
    hs[i, 0] = slot
    hs[i, 1] = t
    hs[i, 2] = s
    pos[slot] = i


@entry
def heap_set(hs, pos, size, slot, t, s):
    """Schedule ``slot`` at ``(t, s)``, replacing any pending key it had."""
    i = pos[slot]
    if i < 0:
        i = size[0]
        size[0] += 1
        hs[i, 0] = slot
        hs[i, 1] = t
        hs[i, 2] = s
        pos[slot] = i
        _sift_up(hs, pos, i)
    else:
        old_t = hs[i, 1]
        old_s = hs[i, 2]
        hs[i, 1] = t
        hs[i, 2] = s
        if _less(t, s, old_t, old_s):
            _sift_up(hs, pos, i)
        else:
            _sift_down(hs, pos, i, size[0])


@entry
def heap_remove(hs, pos, size, slot):
    """Cancel ``slot`` if it is pending."""
    i = pos[slot]
    if i < 0:
        return
    pos[slot] = -1
    n = size[0] - 1
    size[0] = n
    if i == n:
        return
    hs[i, 0] = hs[n, 0]
    hs[i, 1] = hs[n, 1]
    hs[i, 2] = hs[n, 2]
    pos[hs[i, 0]] = i
    if i > 0 and _less(hs[i, 1], hs[i, 2], hs[(i - 1) >> 2, 1], hs[(i - 1) >> 2, 2]):
        _sift_up(hs, pos, i)
    else:
        _sift_down(hs, pos, i, n)


@entry
def heap_pop(hs, pos, size):
    """Remove the earliest entry; return ``(slot, time, seq)``.  The heap must not be empty."""
    slot = hs[0, 0]
    t = hs[0, 1]
    s = hs[0, 2]
    heap_remove(hs, pos, size, slot)
    return slot, t, s
