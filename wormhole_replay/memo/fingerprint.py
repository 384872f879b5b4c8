"""The network fingerprint: everything that shapes a partition's dynamics, hashed.  A memo entry
is found only under the fingerprint of the network that produced it.

In it: the CC algorithm and every CC, ECN, PFC, buffer and packet setting of the configuration
(all ``SimConfig`` fields but file names, tracing and the RNG seed: the ECN draws' seed changes
which packets are marked, not the dynamics a memo entry summarises); the multiset of link rates
and delays (the FCG ignores where a link sits, so the fingerprint keeps what links exist, not the
wiring); the wormhole options that define when a transient ends (theta, window, samples, short
samples); and the FCG hashing scheme.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict

from .entry import canonical_json
from .fcg import SCHEME

_NOT_DYNAMICS = {"topology_file", "flow_file", "trace_file", "trace_output_file", "fct_output_file",
                 "pfc_output_file", "qlen_mon_file", "qlen_mon_start", "qlen_mon_end", "enable_trace",
                 "simulator_stop_time", "rng_seed", "ecn_rng", "ns3_rng_first_stream", "ns3_rng_run"}


def _plain(x):
    if isinstance(x, dict):
        return sorted([str(k), _plain(v)] for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, float):
        return repr(x)
    return x


def fingerprint(topo, cfg, fast_forward) -> str:
    """Hex SHA-256 of the dynamics-shaping settings of a run (``fast_forward`` resolved)."""
    settings = {k: _plain(v) for k, v in asdict(cfg).items() if k not in _NOT_DYNAMICS}
    links = Counter((int(r), int(d)) for r, d in zip(topo.link_rate_bps, topo.link_delay_ns))
    doc = {
        "config": settings,
        "links": sorted([r, d, n] for (r, d), n in links.items()),
        "wormhole": {"theta": repr(fast_forward.theta), "samples": fast_forward.samples,
                     "window_ns": fast_forward.window_ns, "short_samples": fast_forward.short_samples},
        "scheme": SCHEME,
    }
    return hashlib.sha256(canonical_json(doc).encode()).hexdigest()
