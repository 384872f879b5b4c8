"""The trace model: a per-rank graph of operations, and its native file format.

A trace is a table of operations plus job metadata.  Every operation belongs to one rank:

* ``compute``: ``duration_ns`` of work on the rank;
* ``coll``: the rank's part in a collective (``coll`` in all_reduce, all_gather, reduce_scatter,
  all_to_all) over a named ``group`` of ranks, with ``bytes`` its input size and ``algo`` a hint
  (``ring``, ``direct``); the k-th ``coll`` op of every member of a group, in op-id order, form one
  collective instance, as NCCL matches them by communicator and sequence;
* ``send`` / ``recv``: point to point with ``peer`` and ``bytes``; the k-th send from a to b
  matches the k-th recv at b from a.

Dependencies are explicit edges (``deps``: the ops that must be done first), never causality
inferred from timestamps.  Each op carries the ``iteration`` it belongs to.

Job metadata (``meta``): ``ranks``; ``program`` (a job kept as one program per pipeline stage,
made per-rank at replay: ``workload/program.py``; its ``ranks`` may be ``None``, the size open); ``rank_to_host`` (default: rank r on host index r) or
``rank_to_node`` (topology node ids, which must be hosts);
``groups`` {name: [ranks]}; ``layout`` (tp, pp, dp, ep, ...); ``iterations``; ``provenance``;
``intra_server`` {``bw_bps``, ``latency_ns``}, the link between GPUs of one server.

Native format, version 1: one Parquet file, one row per op (columns ``op_id, rank, kind, name,
iteration, duration_ns, coll, group, bytes, algo, peer, deps``; ``deps`` a list of op ids), with the
metadata as JSON under the key ``wormhole_replay.trace`` of the file's schema metadata.
"""

from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import write_atomic

SCHEMA = "wormhole-replay-trace"
VERSION = 1
META_KEY = b"wormhole_replay.trace"
KINDS = ("compute", "coll", "send", "recv")
COLLS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
COLUMNS = ["op_id", "rank", "kind", "name", "iteration", "duration_ns", "coll", "group", "bytes", "algo", "peer", "deps"]


@dataclass
class Trace:
    """Operations (a DataFrame with ``COLUMNS``) and job metadata."""

    ops: pd.DataFrame
    meta: dict = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return int(self.meta["ranks"])

    @property
    def iterations(self) -> int:
        return int(self.ops["iteration"].max()) + 1 if len(self.ops) else 0

    @property
    def is_program(self) -> bool:
        """One program per pipeline stage rather than per-rank ops (``workload/program.py``)."""
        return bool(self.meta.get("program"))

    def validate(self, where: str = "trace") -> None:
        if self.is_program:
            from .program import validate_program

            return validate_program(self, where)
        ops = self.ops
        if list(ops.columns) != COLUMNS:
            raise InputError(f"{where}: columns must be {COLUMNS}")
        n = self.ranks
        if n < 1:
            raise InputError(f"{where}: a trace needs at least one rank")
        ids = ops["op_id"].to_numpy()
        if len(np.unique(ids)) != len(ids):
            raise InputError(f"{where}: duplicate op ids")
        bad = ops[~ops["kind"].isin(KINDS)]
        if len(bad):
            raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown kind {bad.kind.iloc[0]!r} (expected {', '.join(KINDS)})")
        if ((ops["rank"] < 0) | (ops["rank"] >= n)).any():
            raise InputError(f"{where}: an op's rank is outside 0..{n - 1}")
        lengths = np.fromiter((len(d) for d in ops["deps"]), dtype=np.int64, count=len(ops))
        flat = np.fromiter((x for d in ops["deps"] for x in d), dtype=np.int64, count=int(lengths.sum()))
        unknown = ~np.isin(flat, ids)
        if unknown.any():
            k = int(np.flatnonzero(unknown)[0])
            owner = ids[np.searchsorted(np.cumsum(lengths), k, side="right")]
            raise InputError(f"{where}: op {owner} depends on op {flat[k]}, which does not exist")
        comp = ops[ops.kind == "compute"]
        if (comp["duration_ns"] < 0).any():
            raise InputError(f"{where}: a compute op has a negative duration")
        coll = ops[ops.kind == "coll"]
        groups = self.meta.get("groups", {})
        bad = coll[~coll["coll"].isin(COLLS)]
        if len(bad):
            raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown collective type {bad.coll.iloc[0]!r} "
                             f"(expected {', '.join(COLLS)})")
        bad = coll[~coll["group"].isin(list(groups))]
        if len(bad):
            raise InputError(f"{where}: op {bad.op_id.iloc[0]}: unknown group {bad.group.iloc[0]!r}")
        members = pd.DataFrame([(g, r) for g, rs in groups.items() for r in rs], columns=["group", "rank"]).drop_duplicates()
        joined = coll[["op_id", "group", "rank"]].merge(members, on=["group", "rank"], how="left", indicator=True)
        bad = joined[joined["_merge"] == "left_only"]
        if len(bad):
            raise InputError(f"{where}: op {bad.op_id.iloc[0]}: rank {bad['rank'].iloc[0]} is not in group {bad.group.iloc[0]!r}")
        if (coll["bytes"] < 0).any():
            raise InputError(f"{where}: a collective has a negative size")
        p2p = ops[ops.kind.isin(["send", "recv"])]
        if ((p2p["peer"] < 0) | (p2p["peer"] >= n) | (p2p["peer"] == p2p["rank"])).any():
            raise InputError(f"{where}: a send or recv has an invalid peer")


def new_ops(rows: list[dict]) -> pd.DataFrame:
    """A DataFrame of ops from dicts (missing fields take neutral values)."""
    defaults = dict(name="", iteration=0, duration_ns=0, coll="", group="", bytes=0, algo="", peer=-1, deps=())
    full = [{**defaults, **r} for r in rows]
    df = pd.DataFrame(full, columns=COLUMNS)
    df["deps"] = [list(map(int, d)) for d in df["deps"]]
    for c in ("op_id", "rank", "iteration", "duration_ns", "bytes", "peer"):
        df[c] = df[c].astype(np.int64)
    return df


class OpsBuilder:
    """Appends ops as rows, made into columns once at the end (for generators writing millions
    of ops; use it under :func:`no_gc`)."""

    def __init__(self):
        self.rows = []  # one tuple per op, transposed into columns at the end

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, rank, kind, name="", iteration=0, duration_ns=0, coll="", group="", bytes=0, algo="", peer=-1,
            deps=()) -> int:
        oid = len(self.rows)
        self.rows.append((oid, rank, kind, name, iteration, duration_ns, coll, group, bytes, algo, peer, list(deps)))
        return oid

    def frame(self) -> pd.DataFrame:
        cols = list(zip(*self.rows)) if self.rows else [[] for _ in COLUMNS]
        df = pd.DataFrame({c: list(v) for c, v in zip(COLUMNS, cols)}, columns=COLUMNS)
        for c in ("op_id", "rank", "iteration", "duration_ns", "bytes", "peer"):
            df[c] = df[c].astype(np.int64)
        return df


@contextmanager
def no_gc():
    """Pause Python's cycle collector while building millions of small containers: they hold no
    cycles, and the collector's passes over them were half of a 1024-GPU generation's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def save_trace(trace: Trace, path: str | Path) -> None:
    """Write the native format (atomically: a temporary file, then a rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace.validate()
    path = Path(path)
    meta = {"schema": SCHEMA, "version": VERSION, **trace.meta}
    table = pa.Table.from_pandas(trace.ops, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def repeat_iterations(trace: Trace, n: int) -> Trace:
    """The trace run for ``n`` iterations: beyond its own, its last iteration repeats (training
    iterations are alike).  A copy's dependencies follow the original's: inside the iteration to
    the copies, and to the previous iteration as the last iteration depends on the one before it
    (ops matched by rank and order within the iteration); a one-iteration trace chains each rank's
    first ops of a copy after its last ops of the previous one."""
    have = trace.iterations
    if n <= have:
        return trace
    ops = trace.ops
    last = ops[ops["iteration"] == have - 1]
    prev = ops[ops["iteration"] == have - 2] if have > 1 else ops.iloc[:0]
    pos = {}  # op id -> (rank, index of the op among its rank's ops of its iteration)
    for frame in (prev, last):
        for r, g in frame.groupby("rank", sort=False):
            for j, o in enumerate(g["op_id"].to_numpy()):
                pos[int(o)] = (int(r), j)
    last_ids = [int(o) for o in last["op_id"].to_numpy()]
    prev_ids = {int(o) for o in prev["op_id"].to_numpy()}
    inside = set(last_ids)
    sinks = {}  # rank -> ops of the iteration no op of the iteration depends on
    if have == 1:
        needed = {int(d) for ds in last["deps"] for d in ds}
        for o, r in zip(last_ids, last["rank"].to_numpy()):
            if o not in needed:
                sinks.setdefault(int(r), []).append(o)
    by_pos = {pos[o]: o for o in last_ids}
    next_id = int(ops["op_id"].max()) + 1
    before = {o: o for o in last_ids}  # op of the last iteration -> its counterpart one iteration earlier
    frames = [ops]
    for k in range(have, n):
        new = {o: next_id + i for i, o in enumerate(last_ids)}
        next_id += len(last_ids)
        deps = []
        for o, ds, r in zip(last_ids, last["deps"], last["rank"].to_numpy()):
            out = []
            for d in ds:
                d = int(d)
                if d in inside:
                    out.append(new[d])
                elif d in prev_ids and pos[d] in by_pos:  # the previous iteration's counterpart
                    out.append(before[by_pos[pos[d]]])
                else:
                    out.append(d)
            if have == 1 and not ds:
                out = [before[s] for s in sinks.get(int(r), [])]
            deps.append(out)
        copy = last.copy()
        copy["op_id"] = [new[o] for o in last_ids]
        copy["iteration"] = k
        copy["deps"] = deps
        frames.append(copy)
        before = new
    meta = {**trace.meta, "iterations": n}
    return Trace(pd.concat(frames, ignore_index=True), meta)


def load_trace(path: str | Path) -> Trace:
    """Read the native format; refuse other files and newer versions with a clear error."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such trace file")
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise InputError(f"{path}: not a wormhole-replay trace ({str(e).splitlines()[0][:120]})") from None
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise InputError(f"{path}: a Parquet file, but not a wormhole-replay trace (no trace metadata)")
    meta = json.loads(raw)
    if meta.get("schema") != SCHEMA:
        raise InputError(f"{path}: not a wormhole-replay trace")
    if int(meta.get("version", 0)) > VERSION:
        raise InputError(f"{path}: trace format version {meta['version']} is newer than this program reads ({VERSION})")
    meta = {k: v for k, v in meta.items() if k not in ("schema", "version")}
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: a trace without the column(s) {', '.join(missing)}")
    with no_gc():
        ops = table.drop(["deps"]).to_pandas()
        ops["deps"] = table.column("deps").to_pylist()  # plain lists of ints, fast from Arrow
    trace = Trace(ops=ops[COLUMNS], meta=meta)
    trace.validate(str(path))
    return trace
