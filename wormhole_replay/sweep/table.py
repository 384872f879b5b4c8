"""The results table, ``DIR/sweep.parquet``: one row per point of the spec, in its order.

Columns: ``index`` (1-based), ``id``, one column per varied field (its value at the point), then
``status`` (ok, failed, or pending: not run yet), ``error`` (one line), and the point's metrics:

* times: ``iteration_mean_ns``, ``iteration_max_ns``, ``iteration_K_ns`` per iteration K (replay),
  ``makespan_ns`` (first flow start to last byte received), and per collective kind
  (``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``p2p`` for send/recv)
  ``coll_KIND_mean_ns`` (mean duration of one instance) and ``coll_KIND_per_iteration_ns`` (summed
  over the instances of an iteration, overlapping ones each counted);
* FCT statistics over completed network flows (virtual compute and copy flows excluded):
  ``fct_mean_ns``, ``fct_p50_ns``, ``fct_p99_ns``, ``fct_max_ns``, ``slowdown_mean``,
  ``slowdown_p99`` (FCT over the flow's standalone FCT);
* the run: ``events``, ``simulated_ns``, ``flow_count``, ``flows_completed``, ``drops``,
  ``pfc_pauses``, ``ecn_marks``, ``timeouts``, ``fast_forwards``, ``bytes_fast_forwarded`` (the
  share of the network bytes not simulated packet by packet; None in full mode),
  ``sim_wall_seconds`` (the engine),
  ``wall_seconds`` (the whole point in its worker: loading, generating, simulating);
* the memo: ``memo_hits``, ``memo_inserts`` (rows this point added to the database),
  ``memo_misses``, ``memo_entries_at_start`` (entries of its network the database held when it
  started), ``memo_hits_earlier`` (hits on entries it did not learn itself, i.e. that the database
  held when it started: learned by an earlier point, or an earlier sweep);
* where: ``worker``, ``host``, ``attempts`` (more than 1: a worker died running it and Dask ran it
  again), ``started_at``, ``finished_at`` (UTC, of the attempt that finished).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..files import write_atomic

COUNTERS = {"events": "events", "simulated_ns": "simulated_ns", "flow_count": "flows",
            "flows_completed": "flows_completed", "drops": "drops", "pfc_pauses": "pfc_pauses",
            "ecn_marks": "ecn_marks", "timeouts": "timeouts", "sim_wall_seconds": "wall_seconds"}
MEMO = ("memo_hits", "memo_inserts", "memo_misses", "memo_entries_at_start")
WHERE = ("worker", "host", "attempts", "started_at", "finished_at")
HEAD = ("index", "id")  # then the varied fields, then STATUS, then the metrics, then WHERE
STATUS = ("status", "error")


def _stats(prefix: str, x: np.ndarray) -> dict:
    if not x.size:
        return {f"{prefix}_{s}": None for s in ("mean", "p99")}
    return {f"{prefix}_mean": float(x.mean()), f"{prefix}_p99": float(np.percentile(x, 99))}


def metrics(flows: pd.DataFrame, iterations: pd.DataFrame | None, collectives: pd.DataFrame | None, counters: dict,
            memo_hits: pd.DataFrame | None, learned: list | None) -> dict:
    """A point's metrics (the columns above but ``wall_seconds`` and where) from its run's tables,
    counters, memo-hit journal and the digests of the entries it learned."""
    m = {col: counters.get(key) for col, key in COUNTERS.items()}
    w = counters.get("wormhole") or {}
    m["fast_forwards"] = w.get("fast_forwards")
    m["bytes_fast_forwarded"] = w.get("bytes_fast_forwarded")
    m.update({k: w.get(k) for k in MEMO})
    m["memo_hits_earlier"] = None if memo_hits is None else int((~memo_hits["digest"].isin(learned or [])).sum())
    net = flows[~flows["virtual"].astype(bool) & flows["completed"].astype(bool)]
    fct = net["fct_ns"].to_numpy(float)
    m["fct_mean_ns"] = float(fct.mean()) if fct.size else None
    for q in (50, 99, 100):
        m[f"fct_{'max' if q == 100 else f'p{q}'}_ns"] = float(np.percentile(fct, q)) if fct.size else None
    m.update(_stats("slowdown", fct / np.maximum(net["standalone_fct_ns"].to_numpy(float), 1.0)))
    done = flows[flows["completed"].astype(bool)]
    m["makespan_ns"] = int(done["received_ns"].max() - done["start_ns"].min()) if len(done) else None
    if iterations is not None and len(iterations):
        d = iterations["duration_ns"].to_numpy(float)
        m["iteration_mean_ns"], m["iteration_max_ns"] = float(d.mean()), float(d.max())
        m.update({f"iteration_{int(i)}_ns": int(v) for i, v in zip(iterations["index"], iterations["duration_ns"])})
    if collectives is not None and len(collectives):
        kind = collectives["coll"].fillna("").replace("", "p2p")
        n_iter = max(int(collectives["iteration"].nunique()), 1)
        for k, g in collectives.groupby(kind, sort=True):
            m[f"coll_{k}_mean_ns"] = float(g["duration_ns"].mean())
            m[f"coll_{k}_per_iteration_ns"] = float(g["duration_ns"].sum()) / n_iter
    return m


def row(point, record: dict | None) -> dict:
    """The table row of ``point`` (``points.Point``) given its record (``point.json``; None: pending)."""
    r = {"index": point.index, "id": point.id, **point.params}
    if record is None:
        return {**r, "status": "pending", "error": None}
    r.update(status=record["status"], error=record.get("error"), **record.get("metrics", {}),
             wall_seconds=record.get("wall_seconds"))
    r.update({k: record.get(k) for k in WHERE})
    return r


def build(points: list, records: dict, varied: list[str]) -> pd.DataFrame:
    """The table of ``points`` ({id: record} for those that ran), columns in the documented order."""
    df = pd.DataFrame([row(p, records.get(p.id)) for p in points])
    for name in varied:  # one type per column: numbers stay numbers, anything mixed becomes text
        values = [v for v in df[name] if v is not None]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if not numeric and not all(isinstance(v, bool) for v in values):
            df[name] = [None if v is None else str(v) for v in df[name]]
    rest = sorted((c for c in df.columns if c not in (*HEAD, *varied, *STATUS, *WHERE)), key=_metric_order)
    return df[[*HEAD, *varied, *STATUS, *rest, *[c for c in WHERE if c in df]]]


FIXED = (*COUNTERS, "fast_forwards", *MEMO, "memo_hits_earlier", "fct_mean_ns", "fct_p50_ns", "fct_p99_ns",
         "fct_max_ns", "slowdown_mean", "slowdown_p99", "makespan_ns", "iteration_mean_ns", "iteration_max_ns")


def _metric_order(col: str) -> tuple:
    """The documented columns first, then iterations by number, collective kinds, the wall time:
    the same order whichever point finished first."""
    if col in FIXED:
        return (0, FIXED.index(col), "")
    if col.startswith("iteration_"):
        return (1, int(col.split("_")[1]), "")
    return (2, 0, col) if col.startswith("coll_") else (3, 0, col)


def write(path, df: pd.DataFrame) -> None:
    write_atomic(path, lambda tmp: df.to_parquet(tmp, index=False))
