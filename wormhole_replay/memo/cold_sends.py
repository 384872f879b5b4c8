"""The second iteration's pipeline sends from the first's, rescaled (issue 15; ``Recurring`` at a wide spread).

A pipeline send (a class too small to learn, ``Recurring.small``) recurs once per micro-batch; from
the third iteration on each copy takes the time of the copy at its place an iteration before
(``Recurring._sends``).  The second iteration cannot take the first's as they are: the first starts
every rank at once, its sends start together and contend less (each about 209 us on the two-stage
replay of ``tests/test_recurring.py``, 217-230 us from the second iteration on, when each rank
starts as its last all-reduce ends).  But that cold-start bias is even across a send's copies
(+3.5% to +6.1% by micro-batch and direction, +4.5% in total, where a ring's steps differ by place
from -2.2% to +5.6%), so one ratio per *family* of sends (one size, as many copies an iteration)
carries the first iteration's times over: its *probes*, the second iteration's copies at place 0
(the first micro-batch), are simulated; once ``PROBES`` of them (or all a family has) have finished
and none is running (the first to finish of sends started together are the fastest), the family's
copies at the later places of the second iteration, not started yet, take their first-iteration
copies' times times the probes' total over their own first-iteration copies' total.  They are
timers aside (``wormhole/timers.py``: each holds its time and reserves its mean rate of its links),
and give their times on to their places in later iterations as a simulated send does.

Only sends released by compute (no network flow among their predecessors): a small class's copy
waiting for a ring's step (a small ring's last bucket) starts where the ring ends, which the cold
start moves unevenly.  Measured in ``DEVELOPERS.md``, "The first iteration's sends, rescaled".
"""

from __future__ import annotations

import numpy as np

from ..workload.flowfile import FlowSet

PROBES = 8  # a family's ratio is read once this many of its probes have finished (or all it has), none running


class ColdSends:
    """The second iteration's sends, by family, and their ratios once read."""

    def __init__(self, flows: FlowSet, small: np.ndarray, iteration: np.ndarray, place: np.ndarray,
                 next_at_place: np.ndarray, class_of: np.ndarray, second: int = 1):
        self.families: list = []  # [probes, the probes' first-iteration copies, the rest, theirs]
        self.ratios: list = []  # per family read: (its probes' count, the ratio)
        its = np.unique(iteration[small])
        if not 1 <= second < len(its):  # ``second``: the iteration (0-based) rescaled from the one before
            return
        previous = np.full(len(flows), -1, np.int64)  # each copy's copy at its place an iteration before
        has = np.flatnonzero(next_at_place >= 0)
        previous[next_at_place[has]] = has
        sends = small[(iteration[small] == its[second]) & _released_by_compute(flows)[small] & (previous[small] >= 0)]
        sends = sends[iteration[previous[sends]] == its[second - 1]]
        per_class = np.bincount(class_of[sends])[class_of[sends]]  # copies of its class in the iteration
        family_of = np.stack([flows.size[sends], per_class], axis=1)
        for family in np.unique(family_of, axis=0):
            members = sends[(family_of == family).all(axis=1)]
            probe = place[members] == 0
            if probe.any() and (~probe).any():
                probes, rest = members[probe], members[~probe]
                self.families.append([probes, previous[probes], rest, previous[rest]])

    def step(self, engine):
        """The families whose probes are done: their other sends of the second iteration not started
        yet and not timers, and their times (per copy: rx_ns, fct_ns), to be taken aside."""
        took, times, left = [], [], []
        for probes, probes_before, rest, rest_before in self.families:
            if not (~engine.started(rest) & ~engine.timers(rest)).any():
                continue  # nothing left to take (started, or aside from the memo already): no more to read
            done = engine.finished(probes) & ~engine.timers(probes) & (engine.forwarded(probes) == 0)
            running = engine.started(probes) & ~engine.finished(probes)
            if running.any() or done.sum() < min(PROBES, len(probes)):
                left.append([probes, probes_before, rest, rest_before])
                continue
            ratio = _to_last_byte(engine, probes[done]).sum() / max(_to_last_byte(engine, probes_before[done]).sum(), 1)
            self.ratios.append((int(done.sum()), float(ratio)))
            ready = ~engine.started(rest) & ~engine.timers(rest) & engine.finished(rest_before)
            if ready.any():
                start, rx, fin = engine.flow_times(rest_before[ready])
                took.append(rest[ready])
                times.append(np.rint(np.stack([rx - start, fin - start], axis=1) * ratio).astype(np.int64))
        self.families = left
        if not took:
            return np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
        return np.concatenate(took), np.concatenate(times)


def _to_last_byte(engine, flows) -> np.ndarray:
    """Each flow's time from its start to its last byte received."""
    start, rx, _ = engine.flow_times(flows)
    return (rx - start).astype(np.float64)


def _released_by_compute(flows: FlowSet) -> np.ndarray:
    """Per flow, whether no network flow is among its predecessors (a compute op, or nothing, releases it)."""
    if flows.deps_ptr is None:
        return np.ones(len(flows), bool)
    owner = np.repeat(np.arange(len(flows)), np.diff(flows.deps_ptr))
    network = ~flows.is_virtual[flows.deps]
    return np.bincount(owner[network], minlength=len(flows)) == 0
