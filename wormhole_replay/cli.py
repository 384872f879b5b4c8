"""The ``wormhole-replay`` command line.

Bad input is one line on stderr and exit status 2 (``InputError``, argument errors, unreadable
files); results are written atomically (temp file + rename), so an interrupted or failed run never
leaves half a file behind.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .errors import InputError, InputWarning
from .files import sha256_file
from .files import write_atomic as _write_atomic
from .audit import command as _audit
from .observe import command as _report
from .memo import commands as _memo
from .sweep import command as _sweep
from .options import (add_episodes_option, add_job_option, add_mode_options, add_monitor_option, add_port_option,
                      fast_forward_from_args, jobs_or_trace, memo_db_from_args, monitor_interval_from_args)

PROG = "wormhole-replay"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message):
        raise InputError(f"{self.prog}: {message} (see --help)")


def _write_text(path: Path, text: str) -> None:
    def w(tmp):
        with open(tmp, "w") as f:
            f.write(text)

    _write_atomic(path, w)


def _write_outputs(outputs: dict, tables: dict, where) -> None:
    """Write each of ``tables`` (a DataFrame, text or a JSON-able dict) to ``outputs[name]``,
    atomically, by its suffix (``.parquet``, ``.csv``, ``.json``, text otherwise)."""
    def one(path: Path, obj):
        if path.suffix == ".parquet":
            _write_atomic(path, lambda tmp: obj.to_parquet(tmp, index=False))
        elif path.suffix == ".csv":
            _write_atomic(path, lambda tmp: obj.to_csv(tmp, index=False))
        elif path.suffix == ".json":
            _write_text(path, json.dumps(obj, indent=1) + "\n")
        else:
            _write_text(path, obj)

    try:
        for name, obj in tables.items():
            one(Path(outputs[name]), obj)
    except OSError as e:
        raise InputError(f"cannot write outputs to {where}: {e.strerror}") from None


def _finish_run(args, out_dir: Path, outputs: dict, summary: dict, inputs: dict) -> None:
    """``summary.json`` (the summary and the run's inputs) and, with ``--report``, ``report.html``."""
    outputs["summary"] = out_dir / "summary.json"
    if args.report:
        outputs["report"] = out_dir / "report.html"
    summary["outputs"] = {k: str(v) for k, v in outputs.items()}
    _write_outputs(outputs, {"summary": {**summary, "inputs": inputs}}, out_dir)
    if args.report:
        _report.write_report(out_dir, outputs["report"])
    if summary["flows_completed"] < summary["flows"]:  # the outputs hold them, as not completed: say so
        print(f"{PROG}: warning: {summary['flows'] - summary['flows_completed']} of {summary['flows']} flows did not "
              f"complete (the run's last event at {summary['simulated_ns'] / 1e9:.3f} s simulated; a --config "
              "SIMULATOR_STOP_TIME ends a run early, lost packets without a retransmission timer never end)", file=sys.stderr)


def _mode_summary(c: dict) -> dict:
    """``mode`` and, in wormhole mode, the ``wormhole`` block of a summary."""
    out = {"mode": c.get("mode", "full")}
    if "wormhole" in c:
        out["wormhole"] = c["wormhole"]
    return out


def _acceleration_line(summary: dict) -> str | None:
    """What wormhole mode did, in one line after a run (None in full mode): the bytes not simulated,
    the jumps, the memo's hits and, with recurring flows, the classes it took."""
    w = summary.get("wormhole")
    if w is None:
        return None
    parts = [f"{w['bytes_fast_forwarded']:.1%} of the network bytes not simulated", f"{w['fast_forwards']} fast-forwards"]
    if "memo_hits" in w:
        lookups = w["memo_hits"] + w["memo_misses"] + w.get("memo_refused", 0)  # (an entry found but refused: a lookup)
        parts.append(f"memo {w['memo_hits']} hits of {lookups} lookups")
    if w.get("memo_recurring_classes"):
        parts.append(f"recurring flows: {w['memo_recurring_trusted']} of {w['memo_recurring_classes']} classes trusted, "
                     f"{w['memo_recurring_taken']:,} copies taken, {w['memo_recurring_met_live']:,} of them simulated after all")
    return "wormhole: " + "; ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Packet-level RDMA network simulation of training traffic, "
                "faithful to the HPCC ns-3 simulator and accelerated with Wormhole.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("simulate", help="full packet-level simulation of a flow set",
                       description="Run a reference-style CONFIG.txt as is (its file names relative to it), "
                       "or give --topology, --flows and --cc directly.")
    s.add_argument("config", nargs="?", help="reference config.txt (TOPOLOGY_FILE, FLOW_FILE, CC_MODE, ...)")
    s.add_argument("--topology", help="fat-tree:k=K | leaf-spine:hosts=H,leaves=L,spines=S | "
                   "rail:servers=S,gpus_per_server=G (each with optional ,bw=100G,delay=1us) | topology.txt")
    s.add_argument("--flows", help="reference flow.txt")
    s.add_argument("--cc", choices=["dcqcn", "hpcc", "dctcp"], help="congestion control (the run.py preset at the NIC rate)")
    s.add_argument("--config", dest="overrides", metavar="FILE", help="with --topology: config.txt keys overriding the preset")
    s.add_argument("--paths", help="pin each flow's data and ACK path (the reference runs' paths.txt)")
    s.add_argument("--routing", help="order equal-cost next hops as a reference routing.txt does, "
                   "so ECMP hashing picks the reference's paths")
    s.add_argument("--seq-num-bytes", type=int, choices=[4, 8], help="override SEQ_NUM_BYTES")
    s.add_argument("--out", help="output folder (default: FCT_OUTPUT_FILE's place for a config, ./out otherwise)")
    s.add_argument("--json", action="store_true", help="print one JSON summary on stdout")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    add_monitor_option(s)
    _report.add_report_option(s)
    add_mode_options(s)

    g = sub.add_parser("gen", help="generate a synthetic training trace (GPT or MoE)")
    gsub = g.add_subparsers(dest="model_kind", metavar="KIND", parser_class=_Parser)
    for kind in ("gpt", "moe"):
        k = gsub.add_parser(kind, help=f"a Megatron-style {kind.upper()} iteration (TP/PP/DP{'/EP' if kind == 'moe' else ''}, 1F1B)")
        k.add_argument("--model", help="preset: " + ", ".join(_presets(kind)))
        for opt in ("layers", "hidden", "seq", "vocab") + (("experts", "topk") if kind == "moe" else ()):
            k.add_argument(f"--{opt}", type=int, help=f"custom shape: {opt} (overrides the preset's)"
                           + ("; without a preset 2, Mixtral's" if opt == "topk" else ""))
        k.add_argument("--gpus", type=int, required=True)
        k.add_argument("--tp", type=int, default=1)
        k.add_argument("--pp", type=int, default=1)
        k.add_argument("--dp", type=int, help="default: gpus / (tp x pp)")
        if kind == "moe":
            k.add_argument("--ep", type=int, default=1, help="expert parallelism, dividing dp")
        k.add_argument("--microbatches", type=int, default=1)
        k.add_argument("--iterations", type=int, default=1)
        k.add_argument("--bucket-mb", type=float, default=25.0, help="DP gradient bucket cap in MiB, filled tensor by tensor as PyTorch DDP fills it (25)")
        k.add_argument("--tflops", type=float, default=150.0, help="sustained TFLOP/s per GPU for compute times")
        k.add_argument("-o", "--output", required=True, help="trace file to write (.parquet)")

    im = sub.add_parser("import", help="convert another project's workload file into a native trace")
    isub = im.add_subparsers(dest="format", metavar="FORMAT", parser_class=_Parser)
    for fmt, what in (("hpcc-flow", "the reference simulator's flow.txt"), ("aicb", "SimAI / AICB workload text"),
                      ("chakra", "Chakra ET, one file per rank (<prefix>.<rank>.et) or their folder"), ("kineto", "PyTorch profiler JSON, one file per rank")):
        k = isub.add_parser(fmt, help=what)
        k.add_argument("inputs", nargs="+", help="input file(s)")
        k.add_argument("-o", "--output", required=True, help="trace file to write (.parquet)")
        if fmt in ("aicb", "chakra"):
            k.add_argument("--gpus", type=int, help="GPU count (AICB: the job size, over the header's all_gpus; "
                           "without either the size stays open and replay takes it from the topology; "
                           "a Chakra job larger than its files)")

    r = sub.add_parser("replay", help="replay a training trace through the packet network",
                       description="Replay a native trace (see wormhole_replay/workload/trace.py): per-flow, "
                       "per-collective and per-iteration times.")
    r.add_argument("trace", nargs="?", help="native trace file (.parquet); or several --job")
    add_job_option(r)
    r.add_argument("--topology", required=True, help="topology spec or topology.txt (hosts are the GPUs)")
    r.add_argument("--cc", required=True, choices=["dcqcn", "hpcc", "dctcp"], help="congestion control preset")
    r.add_argument("--config", dest="overrides", metavar="FILE", help="config.txt keys overriding the preset")
    r.add_argument("--iterations", type=int, help="replay only the first N iterations of the trace")
    r.add_argument("--gpus", type=int, help="job size of a trace that leaves it open (an AICB file without "
                   "all_gpus; default: every host of the topology)")
    r.add_argument("--intra-bw", help="intra-server link rate, e.g. 2880Gbps (default: the trace's, else 2880Gbps)")
    r.add_argument("--intra-latency", help="intra-server link latency, e.g. 25ns (default: the trace's, else 25ns)")
    r.add_argument("--out", default="out", help="output folder (default ./out)")
    r.add_argument("--json", action="store_true", help="print one JSON summary on stdout")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    add_monitor_option(r)
    _report.add_report_option(r)
    add_port_option(r)
    add_mode_options(r)
    add_episodes_option(r)

    _memo.add_parser(sub, _Parser)
    _audit.add_parser(sub, _Parser)
    _report.add_parser(sub, _Parser)
    _sweep.add_parser(sub, _Parser)
    return p


def cmd_simulate(args) -> int:
    from .api import execute, prepare_config_run, prepare_direct_run

    if args.config and (args.topology or args.flows or args.cc or args.overrides):
        raise InputError("simulate: give either CONFIG.txt or --topology/--flows/--cc, not both")
    if args.config:
        run = prepare_config_run(args.config, args.paths, args.routing, args.out, args.seq_num_bytes)
    else:
        missing = [o for o, v in (("--topology", args.topology), ("--flows", args.flows), ("--cc", args.cc)) if not v]
        if missing:
            raise InputError(f"simulate: missing {', '.join(missing)} (or give a CONFIG.txt)")
        run = prepare_direct_run(args.topology, args.flows, args.cc, args.overrides, args.paths, args.routing,
                                 args.out or "out", args.seq_num_bytes)
    run.monitor_links(monitor_interval_from_args(args))
    run.fast_forward = fast_forward_from_args(args)
    run.memo_db = memo_db_from_args(args, run.outputs["fct"].parent)
    run.memo_shared_prefixes = args.memo_shared_prefixes
    if run.memo_db is not None:
        source = Path(args.config).parent / run.cfg.flow_file if args.config else Path(args.flows)
        run.source_digest = sha256_file(source) if source.is_file() else None
    result = execute(run, progress=not args.quiet)

    from .engine.simulate import format_fct, format_pfc

    from .observe.pfc import pausable_queues, pfc_intervals
    from .topology.tiers import ports_table

    out = run.outputs
    out_dir = out["flows"].parent
    out["pfc_intervals"] = out["pfc"].with_name("pfc_intervals.parquet")
    out["ports"] = out_dir / "ports.csv"
    queues = pausable_queues(run.flows.pg[~run.flows.is_virtual], run.cfg.ack_high_prio)
    tables = {"fct": format_fct(result.flows), "pfc": format_pfc(result.pfc), "flows": result.flows,
              "pfc_intervals": pfc_intervals(result.pfc, queues), "ports": ports_table(run.topo)}
    if result.links is not None:
        out["links"] = out_dir / "links.parquet"
        tables["links"] = result.links
    if result.qlen is not None:
        tables["qlen"] = result.qlen
    else:
        out.pop("qlen", None)
    _write_outputs(out, tables, out_dir)
    c = result.counters
    summary = {
        **_mode_summary(c),
        "cc": run.cfg.cc_name,
        "wall_seconds": round(c["wall_seconds"], 3),
        "simulated_ns": c["simulated_ns"],
        "events": c["events"],
        "events_per_second": round(c["events"] / max(c["wall_seconds"], 1e-9)),
        "flows": c["flows"],
        "flows_completed": c["flows_completed"],
        "drops": c["drops"],
        "pfc_pauses": c["pfc_pauses"],
        "ecn_marks": c["ecn_marks"],
        "timeouts": c["timeouts"],
    }
    _finish_run(args, out_dir, out, summary, {"command": "simulate", "config": args.config, "topology": args.topology,
                                              "flows": args.flows, "cc": run.cfg.cc_name})
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{c['flows_completed']}/{c['flows']} flows completed, {c['simulated_ns'] / 1e6:.3f} ms simulated, "
              f"{c['events']:,} events in {c['wall_seconds']:.2f} s; fct: {out['fct']}")
        if (line := _acceleration_line(summary)) is not None:
            print(line)
    return 0


def _presets(kind):
    from .workload.presets import GPT_PRESETS, MOE_PRESETS

    return GPT_PRESETS if kind == "gpt" else MOE_PRESETS


def cmd_gen(args) -> int:
    from .workload.generators import generate
    from .workload.presets import SHAPE_FIELDS

    if args.model_kind is None:
        raise InputError("gen: say what to generate: gen gpt ... or gen moe ...")
    try:
        trace = generate(args.model_kind, args.gpus, args.model, args.tp, args.pp, args.dp, getattr(args, "ep", 1),
                         args.microbatches, args.iterations, args.bucket_mb, args.tflops,
                         **{o: getattr(args, o, None) for o in SHAPE_FIELDS})
    except InputError as e:
        raise InputError(f"gen {args.model_kind}: {e}") from None
    _save(trace, args.output, f"{args.iterations} iteration(s)")
    return 0


def _save(trace, output, what: str) -> None:
    from .workload.trace import save_trace

    try:
        save_trace(trace, Path(output))
    except OSError as e:
        raise InputError(f"cannot write {output}: {e.strerror}") from None
    if trace.is_program:  # one program per pipeline stage, made per-rank at replay
        size = trace.meta.get("ranks")
        job = f"a job of {size} GPUs" if size else "job size open: replay takes it from the topology or --gpus"
        print(f"{output}: {len(trace.ops):,} ops in {trace.meta['program']['pp']} stage program(s) ({job}), {what}")
        return
    print(f"{output}: {len(trace.ops):,} ops on {trace.ranks} ranks, {what}")


def cmd_import(args) -> int:
    from .workload.importers import import_aicb, import_hpcc_flow, import_kineto

    if args.format is None:
        raise InputError("import: say which format: hpcc-flow, aicb, chakra or kineto")
    if args.format == "chakra":
        from .workload.chakra import import_chakra

        trace = import_chakra(args.inputs, args.gpus)
        trace.validate("chakra")
        _save(trace, args.output, f"from {len(args.inputs)} Chakra input(s)")
        return 0
    if args.format == "kineto":
        trace = import_kineto(args.inputs)
        trace.validate("kineto")
        how = {"kernels": "collectives from the NCCL kernels' metadata",
               "annotations": "collectives from the CPU nccl:* annotations (no NCCL metadata on the kernels)"}
        way = trace.meta["provenance"]["collectives_from"]
        _save(trace, args.output, f"from {len(args.inputs)} Kineto file(s), {how.get(way, way)}")
        return 0
    if len(args.inputs) != 1:
        raise InputError(f"import {args.format}: expected one input file")
    src = args.inputs[0]
    trace = import_hpcc_flow(src) if args.format == "hpcc-flow" else import_aicb(src, args.gpus)
    trace.validate(src)
    _save(trace, args.output, f"from {args.format} {src}")
    return 0


REPLAY_OUTPUTS = {"flows": "flows.parquet", "collectives": "collectives.csv", "iterations": "iterations.csv",
                  "breakdown": "iteration_breakdown.csv", "layers": "layer_breakdown.csv", "fct": "fct.txt",
                  "pfc": "pfc.txt", "pfc_intervals": "pfc_intervals.parquet", "deps": "deps.parquet",
                  "ports": "ports.csv", "links": "links.parquet"}


def cmd_replay(args) -> int:
    from .engine.simulate import format_fct, format_pfc
    from .replay import replay

    from .topology.units import parse_rate_bps, parse_time_ns

    try:
        bw = parse_rate_bps(args.intra_bw) if args.intra_bw else None
        lat = parse_time_ns(args.intra_latency) if args.intra_latency else None
    except ValueError as e:
        raise InputError(f"replay: bad --intra-bw / --intra-latency ({e})") from None
    ff = fast_forward_from_args(args)
    monitor = monitor_interval_from_args(args)
    out = Path(args.out)
    res = replay(jobs_or_trace(args, "replay"), args.topology, args.cc, args.iterations, args.overrides, progress=not args.quiet,
                 intra_bw_bps=bw, intra_latency_ns=lat, mode="full" if ff is None else "wormhole", fast_forward=ff,
                 memo_db=memo_db_from_args(args, out), memo_shared_prefixes=args.memo_shared_prefixes,
                 memo_episodes=args.memo_episodes, memo_recurring=args.memo_recurring, ports=args.ports,
                 gpus=args.gpus, monitor=monitor)
    tables = {"flows": res.flows, "collectives": res.collectives, "iterations": res.iterations,
              "breakdown": res.breakdown, "layers": res.layers, "fct": format_fct(res.flows),
              "pfc": format_pfc(res.pfc), "pfc_intervals": res.pfc_intervals, "deps": res.deps, "ports": res.ports}
    paths = {name: out / file for name, file in REPLAY_OUTPUTS.items()}
    if res.links is not None:
        tables["links"] = res.links
    else:
        paths.pop("links")
    if res.qlen is not None:  # a --config naming a QLEN_MON_FILE
        paths["qlen"], tables["qlen"] = out / Path(res.qlen_file).name, res.qlen
    _write_outputs(paths, tables, out)
    c = res.counters
    summary = {
        **_mode_summary(c),
        "cc": args.cc,
        "wall_seconds": round(c["wall_seconds"], 3),
        "simulated_ns": c["simulated_ns"],
        "events": c["events"],
        "flows": c["flows"],
        "flows_completed": c["flows_completed"],
        "drops": c["drops"],
        "pfc_pauses": c["pfc_pauses"],
        "iterations": [
            {**({"job": int(r.job)} if res.jobs is not None else {}),  # several jobs: whose iteration
             "index": int(r.index), "start_ns": int(r.start_ns), "end_ns": int(r.end_ns),
             "duration_ns": int(r.duration_ns), "wall_seconds": round(float(r.wall_seconds), 3),
             **({"memo_hits": int(r.memo_hits), "memo_lookups": int(r.memo_lookups)}
                if "memo_hits" in res.iterations else {})}
            for r in res.iterations.itertuples()
        ],
    }
    if res.jobs is not None:  # several jobs: each one's iteration times, and the links they share
        summary["jobs"] = [{**j, "iterations_ns": [i["duration_ns"] for i in summary["iterations"] if i["job"] == j["job"]]}
                           for j in res.jobs]
        summary["shared_links"] = c.get("shared_links", {})
    _finish_run(args, out, paths, summary, {"command": "replay", "trace": args.trace, "jobs": args.job,
                                            "topology": args.topology, "cc": args.cc, "iterations": args.iterations,
                                            "gpus": args.gpus, "config": args.overrides})
    if args.json:
        print(json.dumps(summary))
    else:
        names = {j["job"]: j["name"] for j in summary.get("jobs", [])}
        for it in summary["iterations"]:
            job = f"job {it['job']} ({names[it['job']]}) " if "job" in it else ""
            print(f"{job}iteration {it['index']}: {it['duration_ns'] / 1e6:.3f} ms")
        print(f"{c['flows_completed']}/{c['flows']} flows, {c['events']:,} events in {c['wall_seconds']:.2f} s; outputs in {out}")
        if (line := _acceleration_line(summary)) is not None:
            print(line)
    return 0


class _input_warnings_as_lines:
    """Importers' warnings about fields they do not know (``errors.InputWarning``) as one line each
    on stderr, once the command has succeeded (on bad input the error line is all there is)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always", InputWarning)
        return self

    def __exit__(self, kind, value, tb):
        self._catch.__exit__(kind, value, tb)
        for w in self._seen:
            if kind is None and issubclass(w.category, InputWarning):
                print(f"{PROG}: warning: {w.message}", file=sys.stderr)
            elif not issubclass(w.category, InputWarning):  # others as Python shows them
                import warnings

                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        return False


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help(sys.stderr)
            return 2
        with _input_warnings_as_lines():
            return {"replay": cmd_replay, "gen": cmd_gen, "import": cmd_import, "memo": _memo.run, "audit": _audit.run,
                    "report": _report.run, "sweep": _sweep.run}.get(args.command, cmd_simulate)(args)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
