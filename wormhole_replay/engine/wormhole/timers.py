"""Network flows the memo turned into timers (``EngineView.make_timers``: an episode's, a recurring
flow's copies, marked ``FT_MEMO_TIMER``): such a flow, once due, starts as a timer only where no
*foreign* live flow crosses any of its ports (data or ACK path, either direction, as partitions are
made: ``PT_FOREIGN``), a foreign flow being one the memo did not make a timer; else it starts as a
packet flow after all.  A timer crosses no link: beside a flow its copies never met it would neither
slow that flow nor be slowed by it (measured on a 128-GPU DDP iteration on a rail fabric,
2026-12-03: ring steps taken as timers while a pipeline send crossed their rail link ended 42%
early, and the send, alone on the link, 49% early).  The memo's own timers simulated after all are
not foreign: they are the pattern the timers were learned in (a ring's steps share their hosts'
ports through their ACKs), and counting them made every later step of the ring simulated too (all
107,008 copies of that iteration)."""

from ..kernel import kernel
from ..layout import (CI_PAYLOAD, FT_DPATH, FT_SIZE, FT_SKIPPED, FT_STATE, FT_VIRTUAL, PT_FOREIGN, PT_PEER,
                      ST_WH_EV_SKIPPED)
from .partitions import ports_end


@kernel
def start_as_timer_or_packets(net, flows, cfg, state, f):
    """Flow f (a timer, ``FT_VIRTUAL`` >= 0) is due: if it is a network flow turned into a timer
    and a foreign live flow crosses one of its ports, it becomes a packet flow again."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    first, end = ft[f, FT_DPATH], ports_end(flows, f)
    if ft[f, FT_STATE] != 0 or end == first:  # running (this is its end), or a compute op: no ports
        return
    for j in range(first, end):
        p = paths[j]
        if ports[p, PT_FOREIGN] > 0 or ports[ports[p, PT_PEER], PT_FOREIGN] > 0:
            payload = cfg.ints[CI_PAYLOAD]
            ft[f, FT_VIRTUAL] = -1
            ft[f, FT_SKIPPED] = 0
            state[ST_WH_EV_SKIPPED] -= (ft[f, FT_SIZE] + payload - 1) // payload * 2 * (end - first)
            return
