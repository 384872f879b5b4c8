"""The Python API: the same runs as the command line, returning DataFrames.

>>> from wormhole_replay import simulate
>>> r = simulate("leaf-spine:hosts=16,leaves=4,spines=2", "traces/examples/incast/flow.txt", cc="hpcc")
>>> r.flows[["flow_id", "fct_ns"]]                                        # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import SimConfig, read_config
from .engine.fastforward import FastForward
from .engine.monitor import MonitorSpec
from .engine.simulate import Result
from .engine.simulate import simulate as _simulate
from .errors import InputError
from .topology import build_topology, compute_routes
from .topology.model import Topology
from .topology.routing import apply_reference_order
from .workload.flowfile import FlowSet, read_flow_file, read_paths_file


@dataclass
class Run:
    """A fully resolved simulation request: what to simulate and where outputs go."""

    topo: Topology
    flows: FlowSet
    cfg: SimConfig
    pinned: tuple | None = None
    routes: object = None
    outputs: dict = field(default_factory=dict)  # name -> Path
    fast_forward: FastForward | None = None  # None: full packet-level simulation
    memo_db: str | None = None  # memo database (path or URL) used in wormhole mode; None: no memo
    memo_shared_prefixes: bool = False  # also memoize transients of flows sharing links up to a change
    memo_spot_check: int = 0  # check this many memo hits against packet-level simulation instead of applying them
    memo_episodes: list | None = None  # groups of flows (a replay's iterations) the memo may take whole (memo/episodes.py)
    memo_recurring: float = 0.0  # flows taken from their earlier copies that agree within it (memo/recurring.py; 0: off)
    iteration_of: np.ndarray | None = None  # per flow, the index of its replayed iteration (None: one iteration)
    journal: bool = False  # wormhole without a memo database: still keep the journal of jumps
    source_digest: str | None = None  # SHA-256 of the trace or flow file (recorded with the run)
    monitor: MonitorSpec | None = None  # link samples and / or the reference's qlen.txt (engine/monitor.py)

    def monitor_links(self, interval_ns: int | None) -> None:
        """Sample the links every ``interval_ns`` (0: the default interval; None: leave as is)."""
        if interval_ns is not None:
            self.monitor = MonitorSpec(interval_ns, self.monitor.qlen if self.monitor else None)


def _qlen_monitor(cfg: SimConfig, outputs: dict, where) -> MonitorSpec | None:
    """The reference's queue histogram, if the config names a QLEN_MON_FILE (``outputs["qlen"]``)."""
    if not cfg.qlen_mon_file:
        return None
    outputs["qlen"] = where(cfg.qlen_mon_file)
    return MonitorSpec(qlen=(cfg.qlen_mon_start, cfg.qlen_mon_end))


MODES = ("full", "wormhole")


def fast_forward_for(mode: str, options: FastForward | None = None) -> FastForward | None:
    """The engine setting for ``mode``: ``None`` (full) or the wormhole options (defaults if unset)."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r} (expected full or wormhole)")
    return None if mode == "full" else (options or FastForward())


def _routes(topo: Topology, routing: str | Path | None):
    if routing is None:
        return None
    path = Path(routing)
    if not path.is_file():
        raise InputError(f"{path}: no such routing file")
    return apply_reference_order(topo, compute_routes(topo), path)


def prepare_config_run(config: str | Path, paths: str | Path | None = None, routing: str | Path | None = None,
                       out: str | Path | None = None, seq_num_bytes: int | None = None) -> Run:
    """Resolve a reference-style ``config.txt`` (its file names relative to its folder)."""
    config = Path(config)
    cfg = read_config(config)
    if seq_num_bytes is not None:
        cfg.seq_num_bytes = seq_num_bytes
    base = config.parent
    if not cfg.topology_file:
        raise InputError(f"{config}: TOPOLOGY_FILE is not set")
    if not cfg.flow_file:
        raise InputError(f"{config}: FLOW_FILE is not set")
    topo = build_topology(str(base / cfg.topology_file))
    flows = read_flow_file(base / cfg.flow_file, topo)
    pinned = read_paths_file(paths, len(flows)) if paths else None
    out_dir = Path(out) if out is not None else None
    where = (lambda name: out_dir / Path(name).name) if out_dir else (lambda name: base / name)
    outputs = {"fct": where(cfg.fct_output_file or "fct.txt"), "pfc": where(cfg.pfc_output_file or "pfc.txt")}
    outputs["flows"] = outputs["fct"].parent / "flows.parquet"
    monitor = _qlen_monitor(cfg, outputs, where)
    return Run(topo, flows, cfg, pinned, _routes(topo, routing), outputs, monitor=monitor)


def prepare_direct_run(topology: str | Topology, flows: str | Path | FlowSet | None, cc: str, config: str | Path | None = None,
                       paths: str | Path | None = None, routing: str | Path | None = None,
                       out: str | Path | None = "out", seq_num_bytes: int | None = None) -> Run:
    """Resolve ``--topology/--flows/--cc``: the ``run.py`` preset for ``cc`` at the NIC rate,
    overlaid with ``config`` if given."""
    topo = topology if isinstance(topology, Topology) else build_topology(str(topology))
    nic_bps = int(topo.link_rate_bps[0]) if topo.n_links else 100_000_000_000
    hosts = set(int(h) for h in topo.hosts)
    for i in range(topo.n_links):  # the NIC rate is the rate of a host link
        if int(topo.link_a[i]) in hosts or int(topo.link_b[i]) in hosts:
            nic_bps = int(topo.link_rate_bps[i])
            break
    cfg = SimConfig.direct(cc, nic_bps)
    if config is not None:
        cfg = read_config(config, base=cfg)
        if cfg.cc_name != cc:
            raise InputError(f"{config}: CC_MODE {cfg.cc_mode} contradicts --cc {cc}")
    if seq_num_bytes is not None:
        cfg.seq_num_bytes = seq_num_bytes
    if flows is None:  # filled in later (trace replay)
        fs = FlowSet.from_columns([], [], [], [])
    else:
        fs = flows if isinstance(flows, FlowSet) else read_flow_file(flows, topo)
    pinned = read_paths_file(paths, len(fs)) if paths else None
    out_dir = Path(out) if out is not None else Path(".")
    outputs = {"fct": out_dir / "fct.txt", "pfc": out_dir / "pfc.txt", "flows": out_dir / "flows.parquet"}
    monitor = _qlen_monitor(cfg, outputs, lambda name: out_dir / Path(name).name)
    return Run(topo, fs, cfg, pinned, _routes(topo, routing), outputs, monitor=monitor)


def execute(run: Run, progress: bool = False, on_slice=None) -> Result:
    """Simulate a prepared run (no outputs written; in wormhole mode with ``run.memo_db`` the memo
    database is read before and written after); ``progress`` shows a bar of the bytes still to
    deliver (``observe/progress.py``) on stderr."""
    if not progress:
        return _execute(run, on_slice)
    from .observe.progress import ByteProgress

    bar = ByteProgress(run.flows)

    def each_slice(state):
        bar(state)
        if on_slice is not None:
            on_slice(state)

    try:
        return _execute(run, each_slice)
    finally:
        bar.close()


def _execute(run: Run, on_slice) -> Result:
    if run.fast_forward is None or run.memo_db is None:
        journal = None
        if run.fast_forward is not None and run.journal:
            from .memo.session import journal_only

            journal = journal_only
        return _simulate(run.topo, run.flows, run.cfg, pinned=run.pinned, routes=run.routes,
                         on_slice=on_slice, fast_forward=run.fast_forward, memo=journal, monitor=run.monitor)
    from .memo.memoize import Memoizer

    memo = Memoizer(run.memo_db, shared_prefixes=run.memo_shared_prefixes, spot_check=run.memo_spot_check)
    try:
        result = _simulate(run.topo, run.flows, run.cfg, pinned=run.pinned, routes=run.routes,
                           on_slice=on_slice, fast_forward=run.fast_forward,
                           memo=memo.session_for(run.topo, run.cfg, run.flows, run.memo_episodes,
                                                 run.memo_recurring, run.iteration_of),
                           monitor=run.monitor)
        result.counters["wormhole"].update(memo.finish(result.counters, run.source_digest))
    finally:
        memo.close()
    return result


def simulate(topology, flows, cc: str = "dcqcn", config=None, paths=None, routing=None, seq_num_bytes=None,
             mode: str = "wormhole", fast_forward: FastForward | None = None, memo_db=None) -> Result:
    """Packet-level simulation; returns a :class:`Result` with ``flows`` and ``pfc`` DataFrames.

    Parameters
    ----------
    topology : str or Topology
        A spec (``fat-tree:k=4``, ``leaf-spine:hosts=16,leaves=4,spines=2``,
        ``rail:servers=4,gpus_per_server=8``, each with optional ``bw=``/``delay=``) or a
        reference ``topology.txt``.
    flows : str, Path or FlowSet
        A reference ``flow.txt`` or a :class:`FlowSet`.
    cc : {"dcqcn", "hpcc", "dctcp"}
    config : path, optional
        A ``config.txt`` whose keys override the ``run.py`` preset of ``cc``.
    paths, routing : path, optional
        Pin routes (reference ``paths.txt``) or restore the reference's ECMP order (``routing.txt``).
    mode : {"wormhole", "full"}
        Fast-forward steady partitions (``fast_forward`` options, defaults derived from the network),
        or simulate every packet.
    memo_db : path or URL, optional
        Wormhole mode: the memo database to take transients from and add to (none by default).
    """
    run = prepare_direct_run(topology, flows, cc, config, paths, routing, out=None, seq_num_bytes=seq_num_bytes)
    run.fast_forward = fast_forward_for(mode, fast_forward)
    run.memo_db = None if memo_db is None else str(memo_db)
    return execute(run)


def run_config(config, paths=None, routing=None, seq_num_bytes=None, mode: str = "wormhole",
               fast_forward: FastForward | None = None, memo_db=None) -> Result:
    """Simulate a reference-style ``config.txt`` (no files written); ``mode="full"`` as the reference would."""
    run = prepare_config_run(config, paths, routing, seq_num_bytes=seq_num_bytes)
    run.fast_forward = fast_forward_for(mode, fast_forward)
    run.memo_db = None if memo_db is None else str(memo_db)
    return execute(run)
