"""The points of a sweep: each one resolved (base + its overrides), checked the way its run would
check it, and named by its id, all before any task starts.

A point's id is the first 16 hex digits of the SHA-256 of its resolved inputs (``Point.inputs``):
the run (replay or simulate), the workload (the trace or flow file's SHA-256, or the generator's
fields with their defaults), the topology (its spec, or its file's SHA-256), the congestion control
and the whole resolved configuration (the preset with the point's keys on top, so two spellings of
one setting are one point), the iterations, mode, fast-forward options, port model, intra-server
link and the wormhole-replay version. The same inputs give the same id on any machine; that is what
makes a sweep resumable.

The check runs what the run runs before it simulates: the topology is built, the configuration
read (``api.prepare_direct_run``), the trace loaded or generated and expanded into flows on the
topology (``workload.expand.trace_to_flows``), the flow file read against it, the intra-server link
and fast-forward options checked. Points share what they can (one topology, trace and expansion per
distinct input). What only the engine's build refuses (HPCC with more than 8 link rates) shows as a
failed point.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import __version__
from ..errors import InputError
from ..files import sha256_file
from .spec import DEFAULTS, GEN_DEFAULTS, GEN_FIELDS, RUN_FIELDS, Spec, config_tokens

ID_DIGITS = 16


@dataclass
class Point:
    """One configuration of a sweep: ``index`` (1-based, in the spec's order), ``params`` (the
    varied fields' values), ``inputs`` (resolved: what ``id`` digests) and ``task`` (what a worker
    runs: ``worker.run_point``)."""

    index: int
    params: dict
    inputs: dict
    task: dict
    id: str

    def label(self) -> str:
        return label(self.params)


def label(params: dict) -> str:
    """``tp=2, pp=2`` (or ``base`` for a point that changes nothing)."""
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "base"


def digest(inputs: dict) -> str:
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:ID_DIGITS]


def config_text(config: dict) -> str:
    """A point's config keys as config.txt lines."""
    return "".join(f"{k} {config_tokens(v)}\n" for k, v in config.items())


class _Shared:
    """What points have in common, made once: file digests, topologies, traces and their flows."""

    def __init__(self):
        self._made = {}

    def get(self, key, make):
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def sha256(self, path: str) -> str:
        return self.get(("sha", path), lambda: sha256_file(path))

    def topology(self, spec: str):
        from ..topology import build_topology

        return self.get(("topology", spec), lambda: build_topology(spec))


def generate(gen: dict):
    """The trace a point's ``[gen]`` fields describe (``gen`` resolved: ``resolved_gen``)."""
    from ..workload.generators import generate as gen_trace

    if "gpus" not in gen:
        raise InputError("[gen] needs gpus")
    return gen_trace(**gen)


def resolved_gen(spec_gen: dict, over: dict, iterations: int) -> dict:
    fields = {**GEN_DEFAULTS, **spec_gen, **{k: v for k, v in over.items() if k in GEN_FIELDS}}
    return {**fields, "iterations": iterations}


def _parsed(parse, text: str | None, name: str):
    """``parse(text)`` (a unit parser of ``topology.units``), or None without a text; a bad text is
    an ``InputError`` naming the field."""
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError as e:
        raise InputError(f"{name} = {text!r}: {e}") from None


def _time_ns(text: str | None, name: str) -> int | None:
    from ..topology.units import parse_time_ns

    return _parsed(parse_time_ns, text, name)


def _rate_bps(text: str | None, name: str) -> float | None:
    from ..topology.units import parse_rate_bps

    return _parsed(parse_rate_bps, text, name)


def _fast_forward(run: dict, cfg) -> dict | None:
    """The point's fast-forward options as given (None: defaults), checked as the engine will."""
    from ..engine.fastforward import FastForward

    if run["mode"] != "wormhole":
        return None
    given = {"theta": run.get("ff_theta"), "samples": run.get("ff_samples"),
             "window_ns": _time_ns(run.get("ff_window"), "ff_window"), "tail_ns": _time_ns(run.get("ff_tail"), "ff_tail"),
             "releaser_share": run.get("ff_releaser_share"), "mean_jumps": run.get("ff_mean_jumps")}
    given = {k: v for k, v in given.items() if v is not None}
    FastForward(**given).resolve(cfg.cc_mode, cfg.rp_timer, base_rtt_ns=1000)  # the RTT only sets defaults
    return given


def _prepare(shared: _Shared, run: dict, config: str, flows_path: str | None):
    """``api.prepare_direct_run`` on the point's topology, CC and config (written where the run
    would read it; messages name it ``[config]``)."""
    from ..api import prepare_direct_run

    topo = shared.topology(run["topology"])
    with tempfile.TemporaryDirectory(prefix="wormhole-sweep-") as tmp:
        path = Path(tmp) / "config.txt"
        path.write_text(config)
        try:
            return prepare_direct_run(topo, flows_path, run["cc"], config=path if config else None,
                                      paths=run.get("paths"), routing=run.get("routing"), out=None)
        except InputError as e:
            raise InputError(str(e).replace(str(path), "[config]")) from None


def _simulate_workload(spec: Spec, over: dict, run: dict, text: str, shared: _Shared, inputs: dict, task: dict):
    """A simulate point's flow file (and pinned paths, routing) checked and named; its prepared run."""
    prepared = _prepare(shared, run, text, run["flows"])
    inputs["flows_sha256"] = shared.sha256(run["flows"])
    for name in ("paths", "routing"):
        if run.get(name):
            inputs[f"{name}_sha256"] = shared.sha256(run[name])
    task.update(flows=run["flows"], paths=run.get("paths"), routing=run.get("routing"))
    return prepared


def _replay_workload(spec: Spec, over: dict, run: dict, text: str, shared: _Shared, inputs: dict, task: dict):
    """A replay point's trace (loaded or generated), iterations, intra-server link and ports,
    checked by expanding the trace on the topology as the run will; its prepared run."""
    from ..replay import with_intra_server
    from ..workload.expand import trace_to_flows
    from ..workload.trace import load_trace

    prepared = _prepare(shared, run, text, None)
    iterations = run.get("iterations")
    if iterations is not None and iterations < 1:
        raise InputError(f"iterations = {iterations}: give at least one")
    if spec.gen is not None:  # generated with its iterations, replayed whole
        gen = resolved_gen(spec.gen, over, iterations or 1)
        key = ("gen", json.dumps(gen, sort_keys=True))
        trace = shared.get(key, lambda: generate(gen))
        inputs["gen"], task["gen"], task["iterations"] = gen, gen, None
    else:
        key = ("trace", run["trace"])
        trace = shared.get(key, lambda: load_trace(run["trace"]))
        inputs["trace_sha256"] = shared.sha256(run["trace"])
        task["trace"], task["iterations"] = run["trace"], iterations
    bw, lat = _rate_bps(run.get("intra_bw"), "intra_bw"), _time_ns(run.get("intra_latency"), "intra_latency")
    with_intra_server(trace, bw, lat)
    shared.get(key + (run["topology"], task["iterations"], run["ports"]),  # kept: that it expands, not the flows
               lambda: bool(trace_to_flows(trace, prepared.topo, task["iterations"], run["ports"])))
    inputs.update(iterations=iterations or trace.iterations, ports=run["ports"], intra_bw_bps=bw, intra_latency_ns=lat)
    if run["mode"] == "wormhole":
        inputs["memo_shared_prefixes"] = run["memo_shared_prefixes"]
        for flag in ("memo_episodes", "memo_recurring"):  # only when set: points named before keep their ids
            if run[flag] is not False:
                inputs[flag] = run[flag]  # True, or memo_recurring's spread
    task.update(ports=run["ports"], intra_bw_bps=bw, intra_latency_ns=lat, memo_shared_prefixes=run["memo_shared_prefixes"],
                memo_episodes=run["memo_episodes"], memo_recurring=run["memo_recurring"])
    return prepared


def _resolve(spec: Spec, index: int, over: dict, shared: _Shared) -> Point:
    run = {**DEFAULTS, **spec.base, **{k: v for k, v in over.items() if k in RUN_FIELDS}}
    config = {**spec.config, **{k: v for k, v in over.items() if k not in RUN_FIELDS and k not in GEN_FIELDS}}
    text = config_text(config)
    topology = run["topology"]
    inputs = {"run": spec.run, "version": __version__, "cc": run["cc"], "mode": run["mode"],
              "topology": {"file_sha256": shared.sha256(topology)} if Path(topology).is_file() and ":" not in topology
              else topology.strip()}
    task = {"run": spec.run, "topology": topology, "cc": run["cc"], "mode": run["mode"], "config_text": text}
    workload = _simulate_workload if spec.run == "simulate" else _replay_workload
    prepared = workload(spec, over, run, text, shared, inputs, task)
    inputs["config"] = asdict(prepared.cfg)
    inputs["fast_forward"] = task["fast_forward"] = _fast_forward(run, prepared.cfg)
    params = {name: over.get(name, _base_value(spec, name)) for name in spec.varied}
    point_id = digest(inputs)
    return Point(index, params, inputs, {**task, "id": point_id}, point_id)


def _base_value(spec: Spec, name: str):
    """What a point that does not set ``name`` has: the base's value, else the default (None: the
    preset's, for a config key)."""
    if name in RUN_FIELDS:
        return spec.base.get(name, DEFAULTS.get(name))
    if name in GEN_FIELDS:
        return (spec.gen or {}).get(name, GEN_DEFAULTS.get(name))
    return spec.config.get(name)


def resolve(spec: Spec) -> list[Point]:
    """Every point of ``spec``, checked; ``InputError`` naming the first point the run would refuse
    (or two points that are the same run)."""
    shared = _Shared()
    points, seen = [], {}
    for i, over in enumerate(spec.overrides, 1):
        try:
            p = _resolve(spec, i, over, shared)
        except InputError as e:
            raise InputError(f"{spec.path}: point {i} ({label(over)}): {e}") from None
        if p.id in seen:
            raise InputError(f"{spec.path}: points {seen[p.id]} and {i} are the same run ({label(over)}); "
                             "drop one")
        seen[p.id] = i
        points.append(p)
    return points
