"""Command-line options shared by several commands (``simulate``, ``replay``, ``audit``): the
engine mode, the fast-forward knobs, the memo database, the replay's source-port model and its
jobs.
Here rather than in ``cli``, so that command modules (``audit.command``) and ``cli`` both
import them without importing each other."""

from __future__ import annotations

import argparse
from pathlib import Path

from .errors import InputError
from .workload.ports import PORT_MODELS


def add_mode_options(p) -> None:
    """``--mode``, the fast-forward knobs (defaults: ``engine/fastforward.py``) and the memo."""
    p.add_argument("--mode", choices=["wormhole", "full"], default="wormhole",
                   help="wormhole: fast-forward steady partitions (default); full: simulate every packet")
    add_wormhole_options(p)


def add_wormhole_options(p) -> None:
    """The fast-forward knobs and the memo options of a wormhole run (``simulate``, ``replay``,
    ``audit``)."""
    g = p.add_argument_group("fast-forward (wormhole mode)")
    g.add_argument("--ff-theta", type=float, metavar="X", help="steadiness threshold on (max-min)/mean of a flow's rate samples (0.03)")
    g.add_argument("--ff-samples", type=int, metavar="L", help="rate samples in the steadiness window (16; 32 for DCQCN)")
    g.add_argument("--ff-window", metavar="T", help="steadiness window, e.g. 1ms (default: 4 RP_TIMER periods "
                   "for DCQCN, at least 2; 128 base RTTs for HPCC and DCTCP)")
    g.add_argument("--ff-tail", metavar="T", help="end of a flow always simulated packet by packet, e.g. 16us (default 2 base RTTs)")
    g.add_argument("--ff-releaser-share", type=float, metavar="X", help="a contended jump of a flow that releases "
                   "others (a trace's DAG), or of any flow in a jump at mean shares, spans at most this share of its "
                   "FCT (1/16; 1: no cap, for a workload whose noise floor, audit --noise-floor, allows it)")
    g.add_argument("--ff-mean-jumps", action="store_true", default=None, help="also jump contended partitions "
                   "whose flows' shares wander sample by sample, at their window means, where each flow's and the "
                   "partition's means hold (opt-in: see the README, 'Mean jumps')")
    fluid = g.add_mutually_exclusive_group()
    fluid.add_argument("--ff-fluid", action="store_true", help="also fast-forward steady flows one by one inside a "
                       "partition that is not steady as a whole (fluid flows, engine/wormhole/fluid.py): faster where "
                       "flows contend, not yet within the accuracy bounds everywhere (README, 'Fluid flows')")
    fluid.add_argument("--ff-no-fluid", action="store_true", help="whole partitions only (the default)")
    m = p.add_argument_group("memo (wormhole mode)")
    m.add_argument("--memo-db", metavar="PATH|URL", help="memo database: a SQLite file or a postgresql+psycopg:// URL "
                   "(default: memo.sqlite in the output folder)")
    m.add_argument("--no-memo", action="store_true", help="no memo database: steady-state fast-forwarding only")
    m.add_argument("--memo-shared-prefixes", action="store_true",
                   help="also memoize transients of flows sharing links that end before a steady state "
                        "(faster, less exact: see README)")


def fraction(text: str) -> float:
    """A fraction (``0.01``) or a percentage (``1%``), at least 0 (an ``argparse`` type)."""
    t = str(text).strip()
    try:
        x = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.01 or a percentage like 1%, not {text!r}") from None
    if not x >= 0:
        raise argparse.ArgumentTypeError(f"a threshold must be >= 0, not {text!r}")
    return x


def add_episodes_option(p) -> None:
    """``--memo-episodes`` (replay and audit): whole iterations from the memo (``memo/episodes.py``);
    ``--memo-recurring``: flows from their earlier copies (``memo/recurring.py``)."""
    p.add_argument("--memo-episodes", action="store_true",
                   help="take whole iterations from the memo where one with the same flows and DAG ran alone on the "
                        "network before (in this run or an earlier one): much faster, at the full simulation's own "
                        "iteration-to-iteration variation (opt-in: see the README, 'Episodes')")
    p.add_argument("--memo-recurring", nargs="?", type=fraction, const=True, default=False, metavar="SPREAD",
                   help="once a flow (same hosts, ports and size) has been simulated 8 times in the run and those "
                        "copies' times agree within SPREAD (default 1%%; on a chaotic fabric, up to the per-flow "
                        "noise floor `audit --noise-floor` measured), take its later copies from those times instead "
                        "of simulating their packets; above 1%%, a flow whose copies disagree takes, in a later iteration "
                        "or run, the time of the copy at its place in an earlier iteration (opt-in: see the README, "
                        "'Recurring flows')")


def add_port_option(p) -> None:
    """``--ports``: which source port (and so which ECMP path) a replayed flow takes."""
    p.add_argument("--ports", choices=PORT_MODELS, default="connection",
                   help="connection: a flow keeps the port of its NCCL connection (group, channel, peers), so "
                        "collectives keep their ECMP paths (default); flow: a new port per flow, as ns-3 numbers them")


def fast_forward_options(args):
    """The ``FastForward`` options from ``--ff-*`` (unset ones keep their defaults)."""
    from .engine.fastforward import FastForward
    from .topology.units import parse_time_ns

    try:
        window = parse_time_ns(args.ff_window) if args.ff_window else None
        tail = parse_time_ns(args.ff_tail) if args.ff_tail else None
    except ValueError as e:
        raise InputError(f"bad --ff-window / --ff-tail ({e})") from None
    given = {"theta": args.ff_theta, "samples": args.ff_samples, "window_ns": window, "tail_ns": tail,
             "releaser_share": args.ff_releaser_share, "mean_jumps": getattr(args, "ff_mean_jumps", None),
             "fluid": False if getattr(args, "ff_no_fluid", False) else True if getattr(args, "ff_fluid", False) else None}
    return FastForward(**{k: v for k, v in given.items() if v is not None})


def fast_forward_from_args(args):
    """The engine setting from ``--mode`` and ``--ff-*``: ``None`` for a full simulation."""
    from .api import fast_forward_for

    return fast_forward_for(args.mode, fast_forward_options(args))


def memo_db_from_args(args, out_dir) -> str | None:
    """The memo database a run uses: ``--memo-db``, else ``memo.sqlite`` beside the outputs."""
    if getattr(args, "memo_episodes", False) and args.no_memo:
        raise InputError("--memo-episodes takes iterations from the memo database: drop --no-memo")
    if getattr(args, "memo_recurring", False) is not False:
        from .memo.recurring import tolerance_of

        tolerance_of(args.memo_recurring)  # a spread out of range: one line, before anything is written
        if args.no_memo:
            raise InputError("--memo-recurring is the memo's (its session reads the finished copies): drop --no-memo")
    if args.mode == "full" or args.no_memo:
        if args.memo_db and args.no_memo:
            raise InputError("give --memo-db or --no-memo, not both")
        return None
    return args.memo_db or str(Path(out_dir) / "memo.sqlite")


def add_job_option(p) -> None:
    """``--job TRACE[@PLACEMENT][+START]`` (repeatable): several jobs on one fabric."""
    p.add_argument("--job", action="append", metavar="TRACE[@HOSTS][+START]",
                   help="replay several traces together on one fabric, each on its hosts: a range like 0-63 or "
                        "0-31,64-95, or packed (default) or spread (servers dealt over the pods), with :N for a trace "
                        "whose size is open (spread:64); +START delays the job, e.g. +2ms. Repeat per job; instead "
                        "of TRACE. Overlapping placements are an error")


def jobs_or_trace(args, command: str):
    """What to replay: the ``TRACE`` argument, or the ``--job`` list."""
    if args.job and args.trace:
        raise InputError(f"{command}: give a TRACE or --job options, not both")
    if not args.job and not args.trace:
        raise InputError(f"{command}: give a TRACE (or --job TRACE@HOSTS for several jobs)")
    return list(args.job) if args.job else args.trace


def add_monitor_option(p) -> None:
    """``--monitor [INTERVAL]``: sample every switch egress port (``links.parquet``)."""
    p.add_argument("--monitor", nargs="?", const="default", metavar="INTERVAL",
                   help="sample every switch egress port's queue, bytes sent and PFC state every INTERVAL "
                        "(e.g. 10us; default 4 base RTTs, to the nearest us) into links.parquet")


def monitor_interval_from_args(args) -> int | None:
    """``--monitor``'s interval in ns: None without it, 0 for the default interval."""
    from .topology.units import parse_time_ns

    text = getattr(args, "monitor", None)
    if text is None:
        return None
    if text == "default":
        return 0
    if not any(ch.isalpha() for ch in text):
        raise InputError(f"--monitor: {text!r} has no unit (give e.g. 10us or 2000ns)")
    try:
        ns = parse_time_ns(text)
    except ValueError as e:
        raise InputError(f"--monitor: {e}") from None
    if ns <= 0:
        raise InputError(f"--monitor: the interval must be at least 1 ns, not {text!r}")
    return ns
