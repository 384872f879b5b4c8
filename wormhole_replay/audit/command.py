"""``wormhole-replay audit``: the accelerated simulation of a trace against the full one.

    wormhole-replay audit TRACE|--job TRACE@HOSTS ... --topology SPEC|FILE --cc dcqcn|hpcc|dctcp --out DIR
        [--iterations N] [--gpus N] [--config FILE] [--memo-db PATH|URL | --no-memo] [--baseline DIR]
        [--spot-check N] [--noise-floor [N]] [--max-mean-error X] [--max-p99-error X]
        [--max-iteration-error X] [--worst K] [--json] [--quiet] [--ff-* ...]

Runs, in this order (so that a bad memo database is found before the long full run, and so that
a cold Numba cache slows the accelerated run, never flatters it):

1. the accelerated (wormhole) run, with the memo database (``--memo-db``, default
   ``DIR/memo.sqlite``; ``--no-memo``: steady-state fast-forwarding only);
2. the full packet-level run, unless ``--baseline DIR`` names a previous audit (its folder or its
   ``full/``) made from the same trace, topology, CC, iterations, config and tool version;
3. with ``--noise-floor [N]``, the full run again N times (1 by default, at most 4), with one compute
   op 1 ns, 10 ns, 100 ns or 1 us longer in every iteration (``compare.perturb_ops``): how far
   the full simulation moves from itself, which on DAG workloads is far from zero (contention order
   and ECN draws reorder) and varies from draw to draw; the floor is each statistic's largest over
   the draws (``compare.widest``);
4. with ``--spot-check N``, the accelerated run again, simulating N memo hits (of distinct
   entries) packet by packet instead of applying them, each compared with what the entry said.
   This run is separate, so the audited accelerated run is exactly the one a user gets.

Outputs in DIR (all atomic; nothing is written on bad input): ``report.html``, ``audit.json``,
``flows.parquet``, ``collectives.csv``, ``iterations.csv``, ``spot_checks.csv`` (with
``--spot-check``), and ``full/`` (the full run, reusable with ``--baseline``: ``flows.parquet``,
``collectives.csv``, ``iterations.csv``, ``baseline.json``, and ``noise/``, ``noise-2/``, ... with
the perturbed runs).

Several jobs (``--job``, as ``replay`` takes them, ``workload/jobs.py``) are audited as one run;
their iterations are then numbered across jobs in ``iterations.csv`` (``index``, with the job's
own ``job`` and ``iteration``), so that each is matched once; the noise floor perturbs the first
job's trace.

Exit status: 0, or 1 when a ``--max-*`` threshold is exceeded (outputs are still written and
``audit.json`` names the threshold), or 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..files import sha256_file
from ..memo.recurring import tolerance_of
from ..options import (add_episodes_option, add_job_option, add_port_option, add_wormhole_options,
                       fast_forward_options, fraction, jobs_or_trace)

BASELINE_SCHEMA = "wormhole-replay-audit-baseline"
AUDIT_SCHEMA = "wormhole-replay-audit"
VERSION = 1


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text!r}")
    return n


def add_parser(subparsers, parser_class=None):
    """Register ``audit`` on ``subparsers`` (an argparse ``add_subparsers`` result).
    ``parser_class`` is accepted for symmetry with the other commands (audit has no sub-actions)."""
    a = subparsers.add_parser(
        "audit", help="accelerated vs full simulation of a trace: errors, speedup, report",
        description="Replay TRACE accelerated (wormhole) and fully (packet by packet), match the flows one to "
                    "one and report FCT, collective and iteration-time errors, speedup, what was fast-forwarded "
                    "and which memo entries the largest errors came from: DIR/report.html, DIR/audit.json and "
                    "the tables. Exit status 1 when a --max-* threshold is exceeded, 2 on bad input.")
    a.add_argument("trace", nargs="?", help="native trace file (.parquet); or several --job")
    add_job_option(a)
    a.add_argument("--topology", required=True, help="topology spec or topology.txt (hosts are the GPUs)")
    a.add_argument("--cc", required=True, choices=["dcqcn", "hpcc", "dctcp"], help="congestion control preset")
    a.add_argument("--config", dest="overrides", metavar="FILE", help="config.txt keys overriding the preset")
    a.add_argument("--iterations", type=int, metavar="N", help="audit only the first N iterations of the trace")
    a.add_argument("--gpus", type=int, metavar="N", help="job size of a trace that leaves it open (default: every host)")
    a.add_argument("--out", required=True, metavar="DIR", help="output folder (report.html, audit.json, tables, full/)")
    a.add_argument("--baseline", metavar="DIR", help="reuse the full run saved by an earlier audit (its --out folder "
                   "or its full/) instead of simulating it again; refused if made with other inputs")
    a.add_argument("--noise-floor", type=_count, nargs="?", const=1, default=0, metavar="N",
                   help="also run the full simulation N times (default 1, at most 4) with one compute op 1 ns, "
                        "10 ns, 100 ns or 1 us longer, and report how far the full simulation moves from itself (the "
                        "widest of the draws) beside the accelerated run's errors (N more full runs, saved with the "
                        "baseline and reused from it)")
    a.add_argument("--spot-check", type=_count, default=0, metavar="N",
                   help="re-simulate N memo hits (distinct entries) packet by packet and report each one's error "
                        "(one more accelerated run)")
    a.add_argument("--worst", type=_count, default=10, metavar="K", help="how many worst flows, collectives and "
                   "memo entries to list (default 10)")
    t = a.add_argument_group("thresholds (exit status 1 when exceeded; X is a fraction, 0.01, or a percentage, 1%%)")
    t.add_argument("--max-mean-error", type=fraction, metavar="X", help="mean per-flow FCT error")
    t.add_argument("--max-p99-error", type=fraction, metavar="X", help="p99 per-flow FCT error")
    t.add_argument("--max-iteration-error", type=fraction, metavar="X", help="largest iteration-time error")
    a.add_argument("--json", action="store_true", help="print audit.json on stdout")
    a.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_port_option(a)
    add_wormhole_options(a)  # the accelerated run: the same knobs as replay's
    add_episodes_option(a)
    return a


# --- the plan: every input checked before anything runs or is written ------------------------------

@dataclass
class Plan:
    trace_path: Path | None  # None with several jobs
    trace: object  # workload.trace.Trace, per-rank (the first job's with several jobs: the one perturbed)
    topology: str
    cc: str
    iterations: int  # effective: the trace's count when --iterations is not given
    iterations_arg: int | None
    overrides: str | None
    fast_forward: object
    memo_db: str | None
    out: Path
    identity: dict
    baseline_dir: Path | None = None
    baseline: dict | None = None
    notes: list = field(default_factory=list)
    source: object = None  # what the accelerated run replays: the trace file, or the --job texts
    jobs: list | None = None  # several jobs: workload.jobs.Job, resolved (traces read, hosts placed)
    gpus: int | None = None

    def full_source(self, trace=None):
        """What the full (and perturbed) runs replay: the per-rank trace, or the resolved jobs with
        ``trace`` in place of the first job's."""
        from ..workload.jobs import JobSpec

        if self.jobs is None:
            return trace if trace is not None else self.trace
        return [JobSpec(trace if (trace is not None and j.index == 0) else j.trace, [int(h) for h in j.hosts], None,
                        j.start_ns, j.name) for j in self.jobs]


def _topology_file(spec: str) -> Path | None:
    p = Path(spec)
    return p if ":" not in spec and p.is_file() else None


def _plan(args) -> Plan:
    import inspect

    from .. import __version__
    from ..api import fast_forward_for, prepare_direct_run
    from ..replay import replay
    from ..workload.trace import load_trace
    from .compare import DRAW_DELAYS_NS, delays

    source = jobs_or_trace(args, "audit")
    topo = prepare_direct_run(args.topology, None, args.cc, config=args.overrides, out=None).topo  # topology, cc, config
    if isinstance(source, list):
        from ..workload.jobs import parse_job, resolve_jobs

        if args.gpus is not None:
            raise InputError("audit: --gpus sizes a single trace; with --job give each job's size in its placement")
        jobs = resolve_jobs([parse_job(j) for j in source], topo)  # every job read and placed before any run
        trace_path, trace = None, jobs[0].trace
        n_iter = min(j.trace.iterations for j in jobs)
    else:
        from ..workload.program import instantiate

        jobs, trace_path = None, Path(source)
        trace = instantiate(load_trace(trace_path), args.gpus, hosts=len(topo.hosts))  # InputError: not a trace
        n_iter = trace.iterations
    if args.iterations is not None and not 1 <= args.iterations <= n_iter:
        raise InputError(f"audit: --iterations {args.iterations}: the trace has {n_iter} iteration(s)")
    ff = fast_forward_for("wormhole", fast_forward_options(args))
    if args.memo_db and args.no_memo:
        raise InputError("audit: give --memo-db or --no-memo, not both")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder (--out)")
    existing = next((p for p in (out, *out.absolute().parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{out}: cannot write there (--out)")
    memo_db = None if args.no_memo else (args.memo_db or str(out / "memo.sqlite"))
    if args.noise_floor > len(DRAW_DELAYS_NS):
        raise InputError(f"audit: --noise-floor {args.noise_floor}: at most {len(DRAW_DELAYS_NS)} draws "
                         f"(one op {delays(len(DRAW_DELAYS_NS))} longer)")
    if args.memo_episodes and memo_db is None:
        raise InputError("audit: --memo-episodes takes iterations from the memo database: drop --no-memo")
    if args.memo_recurring is not False:
        tolerance_of(args.memo_recurring)  # a spread out of range: one line
        if memo_db is None:
            raise InputError("audit: --memo-recurring is the memo's (its session reads the finished copies): drop --no-memo")
    if args.spot_check:
        if memo_db is None:
            raise InputError("audit: --spot-check checks memo hits; it needs a memo database (drop --no-memo)")
        if "memo_spot_check" not in inspect.signature(replay).parameters:
            raise InputError("audit: --spot-check: this build's replay() cannot spot-check memo hits")
    topo_file = _topology_file(args.topology)
    identity = {
        "trace_sha256": sha256_file(trace_path) if jobs is None else _jobs_digest(jobs),
        "topology": args.topology.strip(),
        "topology_sha256": sha256_file(topo_file) if topo_file else None,
        "cc": args.cc,
        "iterations": args.iterations or n_iter,
        "config_sha256": sha256_file(args.overrides) if args.overrides else None,
        "ports": args.ports,
        "tool_version": __version__,
    }
    if args.gpus is not None:
        identity["gpus"] = args.gpus
    plan = Plan(trace_path, trace, args.topology, args.cc, args.iterations or n_iter, args.iterations,
                args.overrides, ff, memo_db, out, identity, source=source if jobs is not None else str(trace_path),
                jobs=jobs, gpus=args.gpus)
    if args.baseline:
        plan.baseline_dir, plan.baseline = _load_baseline(Path(args.baseline), identity, args.noise_floor)
    return plan


# --- baselines -----------------------------------------------------------------------------------

def _differences(saved: dict, now: dict) -> list[str]:
    """What makes a saved baseline unusable for this audit, in words."""
    out = []
    if saved.get("trace_sha256") != now["trace_sha256"]:
        out.append(f"baseline was made from another trace (sha256 {str(saved.get('trace_sha256'))[:12]}..., "
                   f"this one is {now['trace_sha256'][:12]}...)")
    if saved.get("topology") != now["topology"]:
        out.append(f"baseline was made with --topology {saved.get('topology')}, not {now['topology']}")
    elif saved.get("topology_sha256") != now["topology_sha256"]:
        out.append(f"baseline was made with another version of the topology file {now['topology']}")
    if saved.get("cc") != now["cc"]:
        out.append(f"baseline was made with --cc {saved.get('cc')}, not {now['cc']}")
    if saved.get("iterations") != now["iterations"]:
        out.append(f"baseline covers {saved.get('iterations')} iteration(s), not {now['iterations']}")
    if saved.get("config_sha256") != now["config_sha256"]:
        said = "no --config" if saved.get("config_sha256") is None else "another --config"
        nowc = "this --config" if now["config_sha256"] else "none"
        out.append(f"baseline was made with {said} (now: {nowc})")
    if saved.get("gpus") != now.get("gpus"):
        out.append(f"baseline was made with --gpus {saved.get('gpus')}, not {now.get('gpus')}")
    if saved.get("ports") != now["ports"]:
        out.append(f"baseline was made with --ports {saved.get('ports')}, not {now['ports']}")
    if saved.get("tool_version") != now["tool_version"]:
        out.append(f"baseline was made by wormhole-replay {saved.get('tool_version')}, this is {now['tool_version']}")
    return out


def _read_tables(d: Path, where: str) -> dict:
    import pandas as pd

    try:
        flows = pd.read_parquet(d / "flows.parquet")
        coll = pd.read_csv(d / "collectives.csv", keep_default_na=False)
        its = pd.read_csv(d / "iterations.csv", keep_default_na=False)
    except FileNotFoundError as e:
        raise InputError(f"{where}: incomplete baseline ({Path(e.filename).name} is missing)") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{where}: unreadable baseline table ({str(e).splitlines()[0][:120]})") from None
    extra = {k: pd.read_csv(d / f, keep_default_na=False) if (d / f).is_file() else None  # older baselines lack them
             for k, f in (("breakdown", "iteration_breakdown.csv"), ("layers", "layer_breakdown.csv"))}
    return {"flows": flows, "collectives": coll, "iterations": its, **extra}


def _noise_dir(full: Path, draw: int) -> Path:
    """Where a baseline keeps its noise-floor draw ``draw`` (0-based)."""
    return full / ("noise" if draw == 0 else f"noise-{draw + 1}")


def _saved_draws(meta: dict) -> list[dict]:
    """The noise-floor draws a baseline.json lists: [{``perturbation``, ``counters``}]."""
    if meta.get("noise_draws"):
        return list(meta["noise_draws"])
    if meta.get("noise_floor"):  # written before draws: one
        return [{"perturbation": meta["noise_floor"], "counters": meta.get("noise_counters")}]
    return []


def _load_baseline(given: Path, identity: dict, draws: int) -> tuple[Path, dict]:
    """The saved full run at ``given`` (an audit folder or its ``full/``), checked against this
    audit's ``identity``: {``meta``, ``tables``, ``noise``: its first ``draws`` noise-floor draws,
    each {``perturbation``, ``counters``, ``tables``}}."""
    d = given if (given / "baseline.json").is_file() else given / "full"
    if not (d / "baseline.json").is_file():
        if not given.exists():
            raise InputError(f"{given}: no such baseline folder (--baseline)")
        raise InputError(f"{given}: not an audit baseline (no baseline.json in it or in its full/)")
    try:
        meta = json.loads((d / "baseline.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{d / 'baseline.json'}: unreadable ({e})") from None
    if not isinstance(meta, dict) or meta.get("schema") != BASELINE_SCHEMA:
        raise InputError(f"{d / 'baseline.json'}: not an audit baseline")
    if int(meta.get("version", 0)) > VERSION:
        raise InputError(f"{d / 'baseline.json'}: baseline format version {meta['version']} is newer than this program reads")
    diffs = _differences(meta.get("identity") or {}, identity)
    if diffs:
        raise InputError(f"{given}: " + "; ".join(diffs) + " (run the audit without --baseline to make a new one)")
    tables = _read_tables(d, str(d))
    noise = []
    for k, draw in enumerate(_saved_draws(meta)[:draws]):
        nd = _noise_dir(d, k)
        if not (nd / "baseline.json").is_file():
            break
        noise.append({**draw, "tables": _read_tables(nd, str(nd))})
    return d, {"meta": meta, "tables": tables, "noise": noise}


# --- running ---------------------------------------------------------------------------------------

def _say(args, text: str) -> None:
    if not args.quiet:
        print(f"audit: {text}", file=sys.stderr, flush=True)


WARMUP_BYTES = 40_000_000  # one flow long enough to be fast-forwarded under the default windows


def _warm_up(plan: Plan) -> float:
    """Compile (or load from Numba's cache) the engine's kernels before anything is timed, with one
    flow across the topology in both modes; its seconds.  Without it the first run timed pays for
    the compilation (tens of seconds after an engine change) and the speedup is meaningless."""
    import tempfile

    import numpy as np

    from ..api import simulate
    from ..topology import build_topology
    from ..workload.flowfile import FlowSet

    t0 = time.perf_counter()
    topo = build_topology(plan.topology)
    hosts = np.asarray(topo.hosts)
    if len(hosts) >= 2:
        flows = FlowSet.from_columns([int(hosts[0])], [int(hosts[-1])], [WARMUP_BYTES], [0])
        with tempfile.TemporaryDirectory(prefix="wormhole-audit-") as d:
            simulate(topo, flows, plan.cc, plan.overrides, mode="wormhole", fast_forward=plan.fast_forward,
                     memo_db=None if plan.memo_db is None else str(Path(d) / "warm-up.sqlite"))
        simulate(topo, flows, plan.cc, plan.overrides, mode="full")
    return time.perf_counter() - t0


def _runs(plan: Plan, args) -> dict:
    from ..replay import replay
    from ..workload.trace import Trace
    from .compare import DRAW_DELAYS_NS, delay_text, perturb_ops

    common = dict(topology=plan.topology, cc=plan.cc, iterations=plan.iterations_arg, config=plan.overrides,
                  progress=not args.quiet, ports=args.ports, gpus=plan.gpus)
    wh = dict(mode="wormhole", fast_forward=plan.fast_forward, memo_db=plan.memo_db,
              memo_shared_prefixes=args.memo_shared_prefixes, memo_episodes=args.memo_episodes,
              memo_recurring=args.memo_recurring, journal=True)
    runs = {"sources": {}}
    _say(args, "warm-up (compiling or loading the engine's kernels, untimed)")
    runs["warmup_seconds"] = _warm_up(plan)
    _say(args, "accelerated run (wormhole)")
    runs["wormhole"] = _numbered(replay(plan.source, **common, **wh))  # by path: the memo records the trace digest
    runs["sources"]["wormhole"] = "simulated"
    if plan.baseline is not None:
        runs["full"] = _saved_run(plan.baseline["tables"], plan.baseline["meta"].get("counters"))
        runs["sources"]["full"] = f"baseline {plan.baseline_dir}"
        _say(args, f"full run: reused from {plan.baseline_dir}")
    else:
        _say(args, "full run (packet by packet)")
        runs["full"] = _numbered(replay(plan.full_source(), **common, mode="full"))
        runs["sources"]["full"] = "simulated"
    runs["perturbation"], runs["perturbed"] = [], []
    saved = plan.baseline["noise"] if plan.baseline is not None else []
    reused = 0
    for k in range(args.noise_floor):
        ops, info = perturb_ops(plan.trace.ops, delta_ns=DRAW_DELAYS_NS[k])
        if info is None:
            plan.notes.append("No noise floor: the trace has no compute op to perturb.")
            break
        if k < len(saved) and saved[k]["perturbation"] == info:
            runs["perturbed"].append(_saved_run(saved[k]["tables"], saved[k]["counters"]))
            reused += 1
            _say(args, f"noise floor, draw {k + 1}: reused from {plan.baseline_dir}")
        else:
            _say(args, f"noise floor, draw {k + 1}: full run with op {info['op_id']} ({info['name']}, rank "
                       f"{info['rank']}) {delay_text(info['delta_ns'])} longer")
            runs["perturbed"].append(_numbered(replay(plan.full_source(Trace(ops, plan.trace.meta)), **common,
                                                      mode="full")))
        runs["perturbation"].append(info)
    if runs["perturbed"]:
        n = len(runs["perturbed"])
        runs["sources"]["noise_floor"] = ("simulated" if not reused else f"baseline {plan.baseline_dir}" if reused == n
                                          else f"{n - reused} simulated, {reused} from baseline {plan.baseline_dir}")
    runs["spot_checks"] = None
    if args.spot_check:
        _say(args, f"spot check: accelerated run again, {args.spot_check} memo hit(s) simulated instead of applied")
        spot = replay(plan.source, **common, **wh, memo_spot_check=args.spot_check)
        runs["spot_checks"] = spot.spot_checks
        runs["spot_counters"] = spot.counters
        runs["sources"]["spot_check"] = "simulated"
    return runs


def _numbered(res):
    """``res`` with its iterations numbered across jobs (``index``; each row's ``job`` and
    ``iteration`` kept) when it has several jobs, so that the comparison matches each once."""
    its = res.iterations
    if "job" in its and its["job"].nunique() > 1:
        its = its.rename(columns={"index": "iteration"})
        its.insert(0, "index", range(len(its)))
        res.iterations = its
    return res


def _jobs_digest(jobs) -> str:
    from ..replay import _jobs_digest as digest

    return digest(jobs)


# --- the audit ---------------------------------------------------------------------------------------

def _summary(res) -> dict:
    from .compare import jsonable

    c = res.counters or {}
    out = {k: c.get(k) for k in ("mode", "wall_seconds", "simulated_ns", "events", "flows", "flows_completed",
                                 "drops", "pfc_pauses")}
    out["iterations"] = [{"index": int(r.index), "duration_ns": int(r.duration_ns)} for r in res.iterations.itertuples()]
    if "wormhole" in c:
        out["wormhole"] = c["wormhole"]
    return jsonable(out)


def _list_text(values) -> list:
    return [" ".join(str(x) for x in (list(v) if v is not None else [])) for v in values]


def _saved_run(tables: dict, counters: dict | None):
    """A run read back from a baseline folder, in the shape ``replay`` returns."""
    from ..replay import ReplayResult

    return ReplayResult(flows=tables["flows"], collectives=tables["collectives"], iterations=tables["iterations"],
                        counters=dict(counters or {}), breakdown=tables.get("breakdown"), layers=tables.get("layers"))


def _with_draw(table, matched, key: str, value: str, draw: int):
    """``table`` with noise-floor draw ``draw``'s ``value`` and error columns from ``matched``."""
    from .compare import draw_column

    names = {value: draw_column(value, draw), "error": draw_column("noise_error", draw)}
    return table.merge(matched[[key, value, "error"]].rename(columns=names), on=key)


def build_audit(plan: Plan, runs: dict, args) -> tuple[dict, dict]:
    """``(audit, tables)``: the audit.json content and the tables to write and plot."""
    import numpy as np

    from .. import __version__
    from .compare import (annotate_flows, check_thresholds, entries_by_error, error_stats, fast_forward_summary,
                          iteration_stats, jsonable, match_collectives, match_flows, match_iterations,
                          draw_column, MismatchError, noise_comparison, partitions_by_error, rank_end_stat, records,
                          ring_spread_stat,
                          spot_check_errors, widest, worst_flows)

    full, fast, pert = runs["full"], runs["wormhole"], runs["perturbed"]
    hits, jumps = getattr(fast, "memo_hits", None), getattr(fast, "jumps", None)
    try:
        flows = annotate_flows(match_flows(full.flows, fast.flows), hits, jumps)
        its = match_iterations(full.iterations, fast.iterations)
        coll = match_collectives(full.collectives, fast.collectives)
        draws = []  # per draw: its errors; its columns are named by compare.draw_column
        for k, res in enumerate(pert):
            nf = match_flows(full.flows, res.flows, side="perturbed")
            ni = match_iterations(full.iterations, res.iterations, side="perturbed")
            nc = match_collectives(full.collectives, res.collectives, side="perturbed")
            flows = _with_draw(flows, nf, "flow_id", "fct_perturbed", k)
            its = _with_draw(its, ni, "index", "duration_perturbed", k)
            coll = _with_draw(coll, nc, "unit", "duration_perturbed", k)
            draws.append({"fct_error": error_stats(flows[draw_column("noise_error", k)]),
                          "iteration_error": iteration_stats(ni),
                          "collective_error": error_stats(nc["error"]),
                          "rank_end": {"max": rank_end_stat(full.flows, res.flows)},
                          "ring_spread": {"max": ring_spread_stat(full.flows, res.flows)}})
    except MismatchError as e:
        where = f" (baseline {plan.baseline_dir})" if plan.baseline is not None else ""
        raise InputError(f"audit: the runs cannot be matched{where}: {e}") from None

    fct = error_stats(flows["error"])
    fct["bias"] = float(np.nanmean(flows["signed_error"])) if fct["count"] else None
    iteration = iteration_stats(its)
    iteration["iterations"] = records(its[["index", "duration_full", "duration_wormhole", "error", "signed_error"]])
    collective = error_stats(coll["error"])
    fc, wc = full.counters or {}, fast.counters or {}
    w = wc.get("wormhole") or {}
    wall_full, wall_fast = fc.get("wall_seconds"), wc.get("wall_seconds")
    # a baseline's wall time was measured in another process (another load, maybe another machine
    # or build): divided by a fresh one it is no speedup at all
    comparable = plan.baseline is None
    virtual = flows["virtual"].astype(bool) if "virtual" in flows else np.zeros(len(flows), bool)
    net = flows[~virtual]
    audit = {
        "schema": AUDIT_SCHEMA, "version": VERSION, "tool_version": __version__,
        "passed": True,
        "inputs": {"trace": str(plan.trace_path) if plan.jobs is None else None, "jobs": plan.source if plan.jobs else None,
                   **plan.identity, "config": plan.overrides,
                   "memo_db": w.get("memo_db") if plan.memo_db else None,
                   "fast_forward": w.get("options")},
        "runs": runs["sources"],
        "speedup": (wall_full / wall_fast) if comparable and wall_full and wall_fast else None,
        "wall_seconds": {"full": wall_full, "wormhole": wall_fast, "warmup": runs.get("warmup_seconds")},
        "flows": {"total": int(len(flows)), "network": int(len(net)), "virtual": int(virtual.sum()),
                  "measured": fct["count"],
                  "incomplete_full": int((~net["completed_full"].astype(bool)).sum()) if "completed_full" in net else 0,
                  "incomplete_wormhole": int((~net["completed_wormhole"].astype(bool)).sum())
                  if "completed_wormhole" in net else 0},
        "fct_error": fct,
        "iteration_error": iteration,
        "collective_error": collective,
        "rank_end": {"max": rank_end_stat(full.flows, fast.flows)},  # shown, not judged: the worst rank's timeline
        "ring_spread": {"max": ring_spread_stat(full.flows, fast.flows)},  # ... and how far apart it put the rings
        "worst_flows": worst_flows(flows, hits, jumps, k=args.worst),
        "worst_collectives": records(coll[np.isfinite(coll["error"])].sort_values("error", ascending=False)
                                     .head(args.worst)[["unit", "name", "coll", "iteration", "duration_full",
                                                        "duration_wormhole", "error"]]),
        "worst_entries": records(entries_by_error(flows, hits, k=args.worst)),
        "worst_partitions": records(partitions_by_error(flows, jumps, k=args.worst)),
        "fast_forward": fast_forward_summary(fc, wc, jumps, fast.flows),
        "memo": None,
        "spot_check": None,
        "noise_floor": None,
        "thresholds": None,
        "full": _summary(full),
        "wormhole": _summary(fast),
        "notes": list(plan.notes),
    }
    if not comparable:
        ev_full, ev_fast = fc.get("events"), wc.get("events")
        events = (f"; events full / accelerated: {ev_full:,} / {ev_fast:,} ({ev_full / ev_fast:.1f}x fewer)"
                  if ev_full and ev_fast else "")
        audit["notes"].append("Speedup not reported: the full run's wall time comes from the baseline, measured in "
                              f"another process under another load, so it does not compare with this run's{events}.")
    if plan.memo_db is not None:
        audit["memo"] = {k: w.get(f"memo_{k}") for k in ("db", "hits", "misses", "refused", "inserts", "learned",
                                                         "entries_at_start")}
        audit["memo"]["hits_recorded"] = None if hits is None else int(len(hits))
    if hits is None and plan.memo_db is not None:
        audit["notes"].append("The accelerated run recorded no memo-hit journal: memo hits cannot be traced to flows.")
    if jumps is None:
        audit["notes"].append("The accelerated run recorded no jump journal: the fast-forwarded fractions and "
                              "the timeline are not available.")
    spot = runs["spot_checks"]
    if args.spot_check:
        s = None if spot is None else spot.copy()
        if s is not None:
            if "error" in s:
                s = s.rename(columns={"error": "engine_error"})
            s["error"] = spot_check_errors(s)
            spot = s
        cols = ("time_ns", "digest", "t_conv_ns", "expected_bytes", "actual_bytes", "expected_ns", "actual_ns",
                "interrupted", "error")
        audit["spot_check"] = {
            "requested": args.spot_check, "count": 0 if s is None else int(len(s)),
            "interrupted": 0 if s is None or "interrupted" not in s else int(s["interrupted"].astype(bool).sum()),
            "error": error_stats(s["error"] if s is not None and len(s) else []),
            "checks": [] if s is None else records(s.sort_values("error", ascending=False, na_position="last")
                                                   [[c for c in cols if c in s]]),
        }
        if s is not None and len(s) < args.spot_check:
            audit["notes"].append(f"Spot check: {len(s)} of the {args.spot_check} requested hits were available "
                                  "(the run had fewer memo hits of distinct entries).")
    if draws:
        noise = widest(draws)
        audit["noise_floor"] = {"perturbation": runs["perturbation"][0],
                                "draws": [{"perturbation": p, **d} for p, d in zip(runs["perturbation"], draws)],
                                **noise, **noise_comparison(fct, iteration, noise["fct_error"], noise["iteration_error"],
                                                            len(draws))}
    limits = {"max_mean_error": args.max_mean_error, "max_p99_error": args.max_p99_error,
              "max_iteration_error": args.max_iteration_error}
    audit["thresholds"] = check_thresholds(audit, limits)
    audit["passed"] = audit["thresholds"]["passed"]
    tables = {"flows": flows, "collectives": coll, "iterations": its, "jumps": jumps, "memo_hits": hits,
              "spot_checks": spot, "fast_flows": fast.flows}
    return jsonable(audit), tables


# --- writing ----------------------------------------------------------------------------------------

def _write_text(path: Path, text: str) -> None:
    from ..files import write_atomic

    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    write_atomic(path, w)


def _write_run(d: Path, res, meta: dict | None) -> None:
    from ..files import write_atomic

    write_atomic(d / "flows.parquet", lambda tmp: res.flows.to_parquet(tmp, index=False))
    write_atomic(d / "collectives.csv", lambda tmp: res.collectives.to_csv(tmp, index=False))
    write_atomic(d / "iterations.csv", lambda tmp: res.iterations.to_csv(tmp, index=False))
    for name, table in (("iteration_breakdown.csv", res.breakdown), ("layer_breakdown.csv", res.layers)):
        if table is not None:  # a run kept from a baseline has none
            write_atomic(d / name, lambda tmp, t=table: t.to_csv(tmp, index=False))
    if meta is not None:  # written last: a baseline.json names a complete folder
        _write_text(d / "baseline.json", json.dumps(meta, indent=1, default=str) + "\n")


def _write(plan: Plan, runs: dict, audit: dict, tables: dict, html: str) -> dict:
    from ..files import write_atomic
    from .compare import jsonable

    out = plan.out
    paths = {"report": out / "report.html", "audit": out / "audit.json", "flows": out / "flows.parquet",
             "collectives": out / "collectives.csv", "iterations": out / "iterations.csv",
             "baseline": out / "full"}
    flows = tables["flows"].copy()
    flows["memo_digests"] = [list(x) for x in flows["memo_digests"]]
    spot = tables["spot_checks"]
    if spot is not None:
        paths["spot_checks"] = out / "spot_checks.csv"
    audit["report"] = str(paths["report"])
    audit["outputs"] = {k: str(v) for k, v in paths.items()}
    full_meta = {"schema": BASELINE_SCHEMA, "version": VERSION, "identity": plan.identity,
                 "trace": str(plan.trace_path) if plan.jobs is None else None,
                 "jobs": plan.source if plan.jobs else None, "config": plan.overrides,
                 "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 "counters": jsonable(runs["full"].counters),
                 "noise_floor": runs["perturbation"][0] if runs["perturbed"] else None,  # draw 1, as before draws
                 "noise_counters": jsonable(runs["perturbed"][0].counters) if runs["perturbed"] else None,
                 "noise_draws": [{"perturbation": p, "counters": jsonable(r.counters)}
                                 for p, r in zip(runs["perturbation"], runs["perturbed"])]}
    if plan.baseline is not None and plan.baseline["meta"].get("created_at"):
        full_meta["created_at"] = plan.baseline["meta"]["created_at"]
    try:
        for k, (p, r) in enumerate(zip(runs["perturbation"], runs["perturbed"])):
            _write_run(_noise_dir(out / "full", k), r, {"schema": BASELINE_SCHEMA + "-noise", "version": VERSION,
                                                         "perturbation": p})
        _write_run(out / "full", runs["full"], full_meta)
        write_atomic(paths["flows"], lambda tmp: flows.to_parquet(tmp, index=False))
        write_atomic(paths["collectives"], lambda tmp: tables["collectives"].to_csv(tmp, index=False))
        write_atomic(paths["iterations"], lambda tmp: tables["iterations"].to_csv(tmp, index=False))
        if spot is not None:
            s = spot.copy()
            for c in s.columns:
                if s[c].dtype == object and any(isinstance(v, (list, tuple)) or hasattr(v, "__array__") for v in s[c]):
                    s[c] = _list_text(s[c])
            write_atomic(paths["spot_checks"], lambda tmp: s.to_csv(tmp, index=False))
        _write_text(paths["audit"], json.dumps(audit, indent=1) + "\n")
        _write_text(paths["report"], html)
    except OSError as e:
        raise InputError(f"audit: cannot write outputs to {out}: {e.strerror}") from None
    return paths


# --- the command --------------------------------------------------------------------------------------

def _print_human(audit: dict) -> None:
    from .compare import delays, pct, threshold_text

    f, i = audit["fct_error"], audit["iteration_error"]
    print(f"FCT error over {f['count']} network flows: mean {pct(f['mean'])}, p50 {pct(f['p50'])}, "
          f"p90 {pct(f['p90'])}, p99 {pct(f['p99'])}, max {pct(f['max'])}")
    print(f"iteration-time error: mean {pct(i['mean'])}, max {pct(i['max'])}; "
          f"collective-time error: mean {pct(audit['collective_error']['mean'])}; "
          f"worst rank's end: {pct(audit['rank_end']['max'])} of its iteration; "
          f"rings' spread: {pct(audit['ring_spread']['max'])}")
    nf = audit["noise_floor"]
    if nf is not None:
        n = len(nf["draws"])
        print(f"noise floor (full vs full with {delays(n)} more on one op"
              f"{f', widest of {n} draws' if n > 1 else ''}): "
              f"FCT mean {pct(nf['fct_error']['mean'])}, "
              f"p99 {pct(nf['fct_error']['p99'])}, iteration max {pct(nf['iteration_error']['max'])}, "
              f"worst rank's end {pct(nf['rank_end']['max'])}, rings' spread {pct(nf['ring_spread']['max'])}")
        print(nf["verdict"])
    s, ff, w = audit["speedup"], audit["fast_forward"], audit["wall_seconds"]
    print(f"speedup {s:.2f}x (full {w['full']:.2f} s, wormhole {w['wormhole']:.2f} s); " if s else "speedup n/a; ",
          end="")
    print(f"fast-forwarded: {pct(ff['time_fraction'], 1)} of simulated time, {pct(ff['flow_time_fraction'], 1)} "
          f"of flow time; events avoided {pct(ff['events_avoided'], 1)}")
    m = audit["memo"]
    if m is not None:
        print(f"memo: {m['hits']} hits, {m['misses']} misses, {m['inserts']} inserts ({m['db']})")
    sc = audit["spot_check"]
    if sc is not None:
        print(f"spot check: {sc['count']} hit(s) re-simulated, entry error mean {pct(sc['error']['mean'])}, "
              f"max {pct(sc['error']['max'])}")
    t = audit["thresholds"]
    if t["exceeded"]:
        print("thresholds exceeded: " + "; ".join(threshold_text(x) for x in t["exceeded"]))
    elif any(v is not None for v in t["limits"].values()):
        print("thresholds: passed")
    print(f"report: {audit['report']}")


def run(args) -> int:
    """Execute ``audit``; the exit status (0, 1 when a threshold is exceeded)."""
    from .report import render

    t0 = time.perf_counter()
    plan = _plan(args)
    runs = _runs(plan, args)
    audit, tables = build_audit(plan, runs, args)
    audit["wall_seconds"]["audit"] = None  # filled just before writing
    audit["report"] = str(plan.out / "report.html")
    html = render(audit, tables)
    audit["wall_seconds"]["audit"] = round(time.perf_counter() - t0, 3)
    _write(plan, runs, audit, tables, html)
    if args.json:
        print(json.dumps(audit))
    else:
        _print_human(audit)
    if not audit["passed"]:
        if args.json:
            from .compare import threshold_text

            print("wormhole-replay audit: thresholds exceeded: " + "; ".join(
                threshold_text(x) for x in audit["thresholds"]["exceeded"]), file=sys.stderr)
        return 1
    return 0
