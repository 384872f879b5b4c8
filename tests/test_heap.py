"""The indexed event heap pops in (time, seq) order, like heapq, under sets, moves and removals."""

import heapq

import numpy as np

from wormhole_replay.engine.heap import heap_pop, heap_remove, heap_set, new_heap


def test_matches_heapq_with_updates_and_removals():
    rng = np.random.default_rng(3)
    n_slots = 64
    hs, pos, size = new_heap(n_slots)
    live = {}  # slot -> (t, s)
    seq = 0
    for step in range(4000):
        op = rng.integers(0, 4)
        slot = int(rng.integers(0, n_slots))
        if op <= 1:
            t = int(rng.integers(0, 50))  # many ties: the seq decides
            heap_set(hs, pos, size, slot, t, seq)
            live[slot] = (t, seq)
            seq += 1
        elif op == 2 and slot in live:
            heap_remove(hs, pos, size, slot)
            del live[slot]
        elif size[0] > 0:
            want = min((t, s, sl) for sl, (t, s) in live.items())
            got = heap_pop(hs, pos, size)
            assert (got[1], got[2], got[0]) == want
            del live[got[0]]
        assert size[0] == len(live)
    ref = [(t, s, sl) for sl, (t, s) in live.items()]
    heapq.heapify(ref)
    while size[0]:
        sl, t, s = heap_pop(hs, pos, size)
        assert (t, s, sl) == heapq.heappop(ref)


def test_event_queue_matches_reference_order_near_and_far():
    """The timing wheel + heap pops in (time, seq) order, with events both within the wheel's
    span and far beyond it, and with moves and cancellations."""
    from wormhole_replay.engine.queue import WHEEL, new_queue, q_pop, q_remove, q_set

    rng = np.random.default_rng(5)
    n_slots = 200
    q = new_queue(n_slots)
    live = {}
    now, seq = 0, 0
    for step in range(20000):
        op = rng.integers(0, 5)
        slot = int(rng.integers(0, n_slots))
        if op <= 2:
            horizon = [3, 50, WHEEL - 1, WHEEL, 5 * WHEEL][rng.integers(0, 5)]
            t = now + int(rng.integers(0, horizon + 1))
            s = seq if rng.random() < 0.9 else int(rng.integers(0, seq + 1))  # some reserved (older) seqs
            if (t, s) in {v for v in live.values()}:
                continue
            q_set(q, slot, t, s)
            live[slot] = (t, s)
            seq += 1
        elif op == 3 and slot in live:
            q_remove(q, slot)
            del live[slot]
        else:
            got = q_pop(q)
            if not live:
                assert got[0] == -1
                continue
            want = min((t, s, sl) for sl, (t, s) in live.items())
            assert (got[1], got[2], got[0]) == want
            del live[got[0]]
            now = got[1]
    while live:
        got = q_pop(q)
        want = min((t, s, sl) for sl, (t, s) in live.items())
        assert (got[1], got[2], got[0]) == want
        del live[got[0]]
    assert q_pop(q)[0] == -1
