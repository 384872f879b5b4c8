"""The engine's state: a few named structures of NumPy tables, the kernels' arguments.

Each structure holds what one part of the model owns, so that a handler takes the parts it touches
by name and reads them by name (``net.ports[p, PT_RATE]``, ``flows.table[f, FT_SIZE]``).  The
columns of every 2-D table, and the indices into ``cfg.ints``, ``cfg.floats`` and the ``state``
scalars, are the constants of ``layout``.

Why NumPy tables and not one array per field: a row keeps one port's (or flow's, or packet's)
fields in a cache line or two, and every array a kernel takes costs it a few words of arguments at
each call (Numba passes an array as a struct of pointer, sizes and strides).  The structures are
``NamedTuple`` s, which Numba compiles to plain structs: reading a field is a load, and with
``_nrt=False`` nothing is reference-counted.  ``build`` allocates them; the kernels never do.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Network(NamedTuple):
    """Ports, their queues and buffers, nodes, NICs, and the packets among them."""

    ports: np.ndarray  # int64[P, PT_LEN]: egress ports (link, busy time, queue totals, ECN/PFC settings, INT counters)
    port_probs: np.ndarray  # float64[P, PTF_LEN]: loss on arrival, ECN's Pmax
    queues: np.ndarray  # int64[P * NQ, QT_LEN]: per port and priority: its packet list, PFC state, buffer bytes
    nodes: np.ndarray  # int64[N, NT_LEN]: switch flag, host index, shared-buffer totals
    hosts: np.ndarray  # int64[H, HT_LEN]: NIC port, its QP list, round-robin pointer
    qp_order: np.ndarray  # int64[F]: each host's QPs in the reference's round-robin order (a region per host)
    packets: np.ndarray  # int64[C, PK_LEN or PK_LEN_INT]: packets in queues and on links, and the free list
    kicks: np.ndarray  # int64[P]: FIFO of ports asked to transmit once the current handler is done
    pfc_log: np.ndarray  # int64[M, 5]: PFC frames received (time, node, node type, ifindex, pause)


class Flows(NamedTuple):
    """The flows: transport and CC state, paths, and the dependency DAG."""

    table: np.ndarray  # int64[F, FT_LEN]: endpoints, sequence numbers, timers' flags, DAG counters, ...
    rates: np.ndarray  # float64[F, FF_LEN]: line, current and target rates, alpha, U, steady and memo rates
    hops: np.ndarray  # int64[F or 1, FH_LEN]: HPCC's last INT per hop and per-hop stage
    hop_rates: np.ndarray  # float64[F or 1, FHF_LEN]: HPCC's per-hop utilisation and rate (MULTI_RATE)
    paths: np.ndarray  # int64[...]: egress ports of each flow's data path, then of its ACK path
    successors: np.ndarray  # int64[E]: flows released by each flow (CSR; FT_SUCC is the offset)
    start_order: np.ndarray  # int64[R]: flows without predecessors, by start time
    scratch: np.ndarray  # float64[16]: HPCC's per-hop update (flag, rate, stage)


class Events(NamedTuple):
    """The event queue (``queue``): one slot per component, a timing wheel and a heap."""

    slots: np.ndarray  # int64[S, QN_LEN]: next, prev, time, seq, where
    wheel: np.ndarray  # int64[WHEEL, 2]: head and tail of each 1 ns bucket
    meta: np.ndarray  # int64[3]: base time, events on the wheel, heap size
    heap: np.ndarray  # int64[S, 3]: slot, time, seq
    heap_pos: np.ndarray  # int64[S]: each slot's heap index or -1


class Config(NamedTuple):
    """What a run was configured with (never written by the kernels)."""

    ints: np.ndarray  # int64[CI_LEN]
    floats: np.ndarray  # float64[CF_LEN]


class Partitions(NamedTuple):
    """Wormhole mode: partitions, their rate samples, and the memo's log."""

    table: np.ndarray  # int64[K, WP_LEN]
    live: np.ndarray  # int64[K]: the partitions simulated packet by packet
    samples: np.ndarray  # float64[F, l]: each flow's ring of rate samples
    scratch_ints: np.ndarray  # int64[2P + 1]: union-find when a partition splits; per port elsewhere
    scratch_floats: np.ndarray  # float64[P]: per-port loads
    memo_log: np.ndarray  # int64[M, ML_LEN]: records for the memo (handled in Python between kernel calls)
    watch: np.ndarray  # float64[F, W]: a fluid flow's data-path link loads when it became fluid (wormhole/fluid)
    port_scratch: np.ndarray  # float64[P, 3]: per-port load, marks and counts of the fluid pass
    timers: np.ndarray  # int64[K, TM_LEN]: the memo's timers running (wormhole/timers.py), ST_WH_TIMERS of them


class Monitor(NamedTuple):
    """The link monitor (``monitor``): its schedule, what it samples, and the samples so far."""

    ints: np.ndarray  # int64[MN_LEN]: interval, next sample times, rows written, qlen.txt window, requests to Python
    ports: np.ndarray  # int64[M]: the egress ports sampled (switch ports, by node then ifindex)
    classes: np.ndarray  # int64[C]: the queue classes sampled one by one
    log: np.ndarray  # int64[S, 1 + M * (MV_CLASS0 + C)]: a row per sample: its time, then per port its values
    hist: np.ndarray  # int64[M, B]: qlen.txt: per port, samples per KB of egress bytes
    est: np.ndarray  # int64[P]: scratch: bytes of the jumps under way, per port
    seen: np.ndarray  # int64[K]: scratch: the sample at which a frozen partition was last estimated
