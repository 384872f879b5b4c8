"""SPMD programs: a job kept as one program per pipeline stage, made per-rank for a job size.

Some exporters describe one rank's work, which every rank runs (SimAI / AICB: every rank reads the
same file).  Expanding that into per-rank ops at import time costs memory in the job size (a
9216-GPU AICB file would be tens of millions of op rows) and needs the size, which older AICB
files do not give (SimAI takes it from the topology).  So such an import keeps the programs and
the layout, and ``replay`` makes them per-rank (:func:`instantiate`) once it knows the size: the
trace's own, ``--gpus``, every host of the topology, or a job's placement.

A program trace is a :class:`~.trace.Trace` whose ``meta['program']`` is
``{"tp": TP, "pp": PP, "ep": EP}`` and whose ``meta['ranks']`` is the job size or ``None`` (open).
Its ops are those of the native format with three columns read differently:

* ``rank``: the pipeline stage the op belongs to (every rank of stage p runs program p);
* ``group`` (of a ``coll``): a role, one of ``ROLES``: the rank's TP group, its DP group (same
  stage and TP index), its expert-parallel group (``ep`` consecutive DP indices) or the DP group
  of its experts (the DP indices that hold the same experts, ``dp / ep`` of them);
* ``peer`` (of a ``send`` / ``recv``): the peer's stage (same DP and TP index).

Layout, as the generators': ``rank = (p * dp + d) * tp + t`` (Megatron's order, TP fastest);
concrete groups are named ``tp_p{p}_d{d}``, ``dp_p{p}_t{t}``, ``ep_p{p}_t{t}_b{d // ep}`` and
``dpep_p{p}_t{t}_e{d % ep}``.  A collective whose group has one member at the chosen size (DP
groups of a job with dp 1, say) is dropped, its dependents inheriting its dependencies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from .trace import COLLS, COLUMNS, KINDS, Trace, no_gc

ROLES = ("tp", "dp", "ep", "dp_ep")


def is_program(trace: Trace) -> bool:
    return bool(trace.meta.get("program"))


def validate_program(trace: Trace, where: str = "trace") -> None:
    """The checks of :meth:`Trace.validate` that make sense before the job size is known."""
    ops, prog = trace.ops, trace.meta["program"]
    if list(ops.columns) != COLUMNS:
        raise InputError(f"{where}: columns must be {COLUMNS}")
    try:
        tp, pp, ep = (int(prog[k]) for k in ("tp", "pp", "ep"))
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: a program trace needs integer tp, pp and ep in its metadata") from None
    if min(tp, pp, ep) < 1:
        raise InputError(f"{where}: tp {tp}, pp {pp} and ep {ep} must be >= 1")
    if trace.meta.get("ranks") is not None:
        job_shape(trace, int(trace.meta["ranks"]), where)
    ids = ops["op_id"].to_numpy()
    if len(np.unique(ids)) != len(ids):
        raise InputError(f"{where}: duplicate op ids")
    bad = ops[~ops["kind"].isin(KINDS)]
    if len(bad):
        raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown kind {bad.kind.iloc[0]!r}")
    if ((ops["rank"] < 0) | (ops["rank"] >= pp)).any():
        raise InputError(f"{where}: an op's stage is outside 0..{pp - 1}")
    known = set(int(x) for x in ids)
    for oid, deps in zip(ids, ops["deps"]):
        for d in deps:
            if int(d) not in known:
                raise InputError(f"{where}: op {oid} depends on op {d}, which does not exist")
    coll = ops[ops.kind == "coll"]
    bad = coll[~coll["coll"].isin(COLLS)]
    if len(bad):
        raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown collective type {bad.coll.iloc[0]!r}")
    bad = coll[~coll["group"].isin(ROLES)]
    if len(bad):
        raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown group role {bad.group.iloc[0]!r} "
                         f"(expected {', '.join(ROLES)})")
    p2p = ops[ops.kind.isin(["send", "recv"])]
    if ((p2p["peer"] < 0) | (p2p["peer"] >= pp) | (p2p["peer"] == p2p["rank"])).any():
        raise InputError(f"{where}: a send or recv names an invalid peer stage")
    if (ops.loc[ops.kind == "compute", "duration_ns"] < 0).any() or (coll["bytes"] < 0).any():
        raise InputError(f"{where}: a negative duration or size")


def job_shape(trace: Trace, gpus: int, where: str = "trace") -> tuple[int, int, int, int]:
    """``(tp, pp, dp, ep)`` of the program trace on ``gpus`` GPUs, or an error saying why not."""
    prog = trace.meta["program"]
    tp, pp, ep = int(prog["tp"]), int(prog["pp"]), int(prog["ep"])
    if gpus < 1 or gpus % (tp * pp):
        raise InputError(f"{where}: {gpus} GPUs do not split into tp {tp} x pp {pp}")
    dp = gpus // (tp * pp)
    if dp % ep:
        raise InputError(f"{where}: ep {ep} does not divide dp {dp} ({gpus} GPUs = tp {tp} x pp {pp} x dp {dp})")
    return tp, pp, dp, ep


def job_size(trace: Trace, gpus: int | None = None, hosts: int | None = None, where: str = "trace") -> int:
    """How many ranks ``trace`` has on a run: its own size; else ``gpus``; else ``hosts`` (every
    host of the topology, or of a job's placement).  ``gpus`` contradicting a fixed size is an
    error."""
    own = trace.meta.get("ranks")
    if own is not None:
        if gpus is not None and int(gpus) != int(own):
            raise InputError(f"{where}: a job of {own} GPUs; --gpus {gpus} contradicts it "
                             f"(re-import with --gpus to change an AICB job's size)")
        return int(own)
    if gpus is not None:
        return int(gpus)
    if hosts is None:
        raise InputError(f"{where}: the trace leaves the job size open; give --gpus")
    return int(hosts)


def instantiate(trace: Trace, gpus: int | None = None, hosts: int | None = None, where: str = "trace") -> Trace:
    """The per-rank trace of ``trace`` (returned as is unless it is a program): size as
    :func:`job_size` decides, ranks laid out as the module docstring says."""
    if not is_program(trace):
        if gpus is not None and int(gpus) != trace.ranks:
            raise InputError(f"{where}: a trace of {trace.ranks} ranks; --gpus {gpus} contradicts it")
        return trace
    n = job_size(trace, gpus, hosts, where)
    tp, pp, dp, ep = job_shape(trace, n, where)
    with no_gc():
        return _instantiate(trace, n, tp, pp, dp, ep)


def _instantiate(trace, n, tp, pp, dp, ep) -> Trace:
    def rank(p, d, t):
        return (p * dp + d) * tp + t

    sizes = {"tp": tp, "dp": dp, "ep": ep, "dp_ep": dp // ep}
    groups = {}
    for p in range(pp):
        for d in range(dp):
            groups[f"tp_p{p}_d{d}"] = [rank(p, d, t) for t in range(tp)]
        for t in range(tp):
            groups[f"dp_p{p}_t{t}"] = [rank(p, d, t) for d in range(dp)]
            if ep > 1:
                for blk in range(dp // ep):
                    groups[f"ep_p{p}_t{t}_b{blk}"] = [rank(p, blk * ep + e, t) for e in range(ep)]
            if dp // ep > 1:
                for e in range(ep):
                    groups[f"dpep_p{p}_t{t}_e{e}"] = [rank(p, e + j * ep, t) for j in range(dp // ep)]
    lone = [r for r, s in sizes.items() if s == 1]
    ops = _without(trace.ops, (trace.ops["kind"] == "coll") & trace.ops["group"].isin(lone))
    tables, next_id = [], 0
    replicas = [(d, t) for d in range(dp) for t in range(tp)]
    for p in range(pp):
        prog = ops[ops["rank"] == p]
        # op ids of the program, renumbered 0..len-1 so that replica r's ids are a block
        local = {int(o): i for i, o in enumerate(prog["op_id"].to_numpy())}
        prog = prog.assign(op_id=np.arange(len(prog), dtype=np.int64),
                           deps=[[local[int(x)] for x in ds] for ds in prog["deps"]])
        names = {"tp": [f"tp_p{p}_d{d}" for d, t in replicas], "dp": [f"dp_p{p}_t{t}" for d, t in replicas],
                 "ep": [f"ep_p{p}_t{t}_b{d // ep}" for d, t in replicas],
                 "dp_ep": [f"dpep_p{p}_t{t}_e{d % ep}" for d, t in replicas]}
        ranks = np.array([rank(p, d, t) for d, t in replicas], dtype=np.int64)
        peers = {q: np.array([rank(q, d, t) for d, t in replicas], dtype=np.int64) for q in range(pp) if q != p}
        tables.append(replicate(prog, ranks, names, peers, next_id))
        next_id += len(prog) * len(replicas)
    out = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    meta = {k: v for k, v in trace.meta.items() if k not in ("program", "ranks", "groups")}
    meta.update(ranks=n, groups=groups, layout={**trace.meta.get("layout", {}), "tp": tp, "pp": pp, "dp": dp, "ep": ep},
                provenance={**trace.meta.get("provenance", {}), "instantiated_for_gpus": n})
    return Trace(out[COLUMNS], meta)


def _without(ops: pd.DataFrame, drop) -> pd.DataFrame:
    """``ops`` without the rows of ``drop`` (a boolean mask); an op that depended on a dropped one
    depends on what that one depended on instead."""
    drop = np.asarray(drop, dtype=bool)
    if not drop.any():
        return ops
    gone = {int(o): list(map(int, d)) for o, d, x in zip(ops["op_id"], ops["deps"], drop) if x}
    memo = {}

    def through(d, seen=()):
        if d not in gone:
            return [d]
        if d not in memo:
            if d in seen:
                raise InputError("trace: the operations' dependencies form a cycle")
            memo[d] = sorted({y for x in gone[d] for y in through(x, seen + (d,))})
        return memo[d]

    kept = ops[~drop]
    deps = [sorted({y for x in ds for y in through(int(x))}) for ds in kept["deps"]]
    return kept.assign(deps=deps).reset_index(drop=True)


def replicate(prog: pd.DataFrame, ranks: np.ndarray, names: dict, peers: dict, first_id: int) -> pd.DataFrame:
    """One stage's program (op ids ``0..len-1``) for each of its ranks: op ids shifted per
    replica, groups filled in from their roles (``names[role][replica]``) and peers from their
    roles or stages (``peers[value][replica]``)."""
    n_ops, n_rep = len(prog), len(ranks)
    out = pd.DataFrame({c: np.tile(prog[c].to_numpy(), n_rep) for c in prog.columns if c != "deps"})
    k = np.repeat(np.arange(n_rep), n_ops)  # replica of each row
    out["op_id"] = first_id + k * n_ops + out["op_id"].to_numpy()
    out["rank"] = ranks[k]
    roles = prog["group"].to_numpy()
    group = np.empty(n_ops * n_rep, dtype=object)
    group[:] = ""
    for role, per_replica in names.items():
        hit = np.tile(roles == role, n_rep)
        if hit.any():
            group[hit] = np.asarray(per_replica, dtype=object)[k[hit]]
    out["group"] = group
    peer = out["peer"].to_numpy().copy()
    p2p = np.isin(out["kind"].to_numpy(), ["send", "recv"])
    for role, per_replica in peers.items():
        hit = p2p & (out["peer"].to_numpy() == role)
        if hit.any():
            peer[hit] = per_replica[k[hit]]
    out["peer"] = peer
    lengths = np.fromiter((len(d) for d in prog["deps"]), dtype=np.int64, count=n_ops)
    flat = np.fromiter((x for d in prog["deps"] for x in d), dtype=np.int64, count=int(lengths.sum()))
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1]
    deps = []
    for r in range(n_rep):
        shifted = (flat + first_id + r * n_ops).tolist()
        deps.extend(shifted[a:b] for a, b in zip(starts, ends))
    out["deps"] = deps
    return out[list(prog.columns)]
