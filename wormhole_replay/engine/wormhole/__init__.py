"""Wormhole fast-forwarding inside the event loop (Numba): port-level partitions, steady-state
detection and jumps.  Knows nothing of files, SQL or the command line.

* ``membership``: flows that share a link form a partition, kept as flows start (join, merge)
  and finish (split);
* ``steadiness``: every live partition's flows are sampled each ``tau``; a partition whose flows
  are all flat over the window (or a short one, when it has no shares to settle) is frozen;
* ``jump``: a frozen partition's events are parked and its ports stopped; at thaw (planned, or a
  skip-back when a flow arrives on its links) its flows are credited their steady rate times the
  jump and its clocks shift; a memoized transient is applied the same way (``memo_jump``);
* ``partitions``: the bookkeeping under all three, and the log the memo reads between kernel calls.

Wormhole events draw sequence numbers above all packet events (``slots.wh_seq``): until the first
jump a wormhole run is the full simulation, bit for bit.
"""
