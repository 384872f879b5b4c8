"""Matching two runs of one trace, one to one, and measuring how far apart they are.

Pure pandas and NumPy: every function here takes the tables a replay returns (or hand-made
ones with the same columns) and no simulation is run.

Conventions, used by the report and ``audit.json`` alike:

* The reference is always the full packet-level run.  A relative error is
  ``|other - full| / full`` (``signed_error`` keeps the sign: positive = the other run is
  slower); it is NaN where the full value is not positive.
* Per-flow FCT errors cover *network* flows only: virtual flows (compute operations and copies
  inside a server) take a fixed duration and only move.  A flow that did not complete in either
  run has no error (it is counted apart).
* Percentiles are NumPy's (linear interpolation), over the flows that have an error.
* Columns of a matched table are named after the side: ``fct_full`` / ``fct_wormhole`` (ns),
  ``start_full``, ``finish_full``, ... and ``error``, ``signed_error``.  Matching the full run with
  a perturbed full run (the noise floor) uses the side name ``perturbed``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

STATS = ("count", "mean", "p50", "p90", "p99", "max")
FLOW_INFO = ("flow_id", "src", "dst", "size_bytes", "virtual", "kind", "name", "coll", "iteration", "rank",
             "unit", "op_id")


class MismatchError(ValueError):
    """The two runs do not describe the same flows (or collectives, or iterations)."""


# --- errors and their distribution -----------------------------------------------------------

def relative_error(ref, other) -> tuple[np.ndarray, np.ndarray]:
    """``(|other - ref| / ref, (other - ref) / ref)`` elementwise; NaN where ``ref <= 0`` or
    either side is missing."""
    ref = np.asarray(ref, dtype=float)
    other = np.asarray(other, dtype=float)
    signed = np.full(ref.shape, np.nan)
    ok = np.isfinite(ref) & np.isfinite(other) & (ref > 0)
    signed[ok] = (other[ok] - ref[ok]) / ref[ok]
    return np.abs(signed), signed


def error_stats(errors, keys=STATS) -> dict:
    """``count`` and, over the finite values of ``errors``, the ``mean``, ``p50``, ``p90``,
    ``p99`` and ``max`` (``None`` for each when there is none)."""
    e = np.asarray(errors, dtype=float)
    e = e[np.isfinite(e)]
    out = {}
    for k in keys:
        if k == "count":
            out[k] = int(e.size)
        elif e.size == 0:
            out[k] = None
        elif k == "mean":
            out[k] = float(e.mean())
        elif k == "max":
            out[k] = float(e.max())
        else:
            out[k] = float(np.percentile(e, float(k[1:])))
    return out


# --- matching ---------------------------------------------------------------------------------

def _check_same_keys(ref: pd.DataFrame, other: pd.DataFrame, key: str, what: str) -> None:
    a, b = pd.Index(ref[key]), pd.Index(other[key])
    if not a.is_unique or not b.is_unique:
        raise MismatchError(f"{what}: {key} is not unique in one of the runs")
    only_a, only_b = a.difference(b), b.difference(a)
    if len(only_a) or len(only_b):
        raise MismatchError(f"the runs have different {what}: {len(only_a)} only in the full run "
                            f"(e.g. {key} {list(only_a[:3])}), {len(only_b)} only in the other (e.g. {list(only_b[:3])})")


def match_flows(full: pd.DataFrame, other: pd.DataFrame, side: str = "wormhole") -> pd.DataFrame:
    """One row per flow of both runs (matched on ``flow_id``, which must be the same set):
    the flow's description from the full run, ``start_/finish_/fct_/completed_`` of each side,
    ``error`` and ``signed_error`` of the FCT (network flows completed in both runs only)."""
    _check_same_keys(full, other, "flow_id", "flows")
    info = [c for c in FLOW_INFO if c in full.columns]
    times = {"start_ns": "start", "finish_ns": "finish", "fct_ns": "fct", "completed": "completed"}
    a = full[info + [c for c in times if c in full.columns]].rename(columns={c: f"{n}_full" for c, n in times.items()})
    b = other[["flow_id"] + [c for c in times if c in other.columns]].rename(
        columns={c: f"{n}_{side}" for c, n in times.items()})
    m = a.merge(b, on="flow_id", how="inner", validate="one_to_one").sort_values("flow_id", ignore_index=True)
    measured = np.ones(len(m), dtype=bool)
    if "virtual" in m:
        measured &= ~m["virtual"].to_numpy(dtype=bool)
    for s in ("full", side):
        if f"completed_{s}" in m:
            measured &= m[f"completed_{s}"].to_numpy(dtype=bool)
    err, signed = relative_error(m["fct_full"], m[f"fct_{side}"])
    err[~measured] = np.nan
    signed[~measured] = np.nan
    m["error"] = err
    m["signed_error"] = signed
    return m


def match_iterations(full: pd.DataFrame, other: pd.DataFrame, side: str = "wormhole") -> pd.DataFrame:
    """One row per iteration (``index``): start, end, duration and wall seconds of each side, the
    other side's ``memo_hits`` / ``memo_lookups`` if it has them, and the duration's ``error`` /
    ``signed_error``."""
    _check_same_keys(full, other, "index", "iterations")
    cols = {"start_ns": "start", "end_ns": "end", "duration_ns": "duration", "wall_seconds": "wall_seconds"}
    a = full[["index"] + [c for c in cols if c in full]].rename(columns={c: f"{n}_full" for c, n in cols.items()})
    b = other[["index"] + [c for c in cols if c in other] + [c for c in ("memo_hits", "memo_lookups") if c in other]]
    b = b.rename(columns={c: f"{n}_{side}" for c, n in cols.items()})
    m = a.merge(b, on="index", validate="one_to_one").sort_values("index", ignore_index=True)
    m["error"], m["signed_error"] = relative_error(m["duration_full"], m[f"duration_{side}"])
    return m


def match_collectives(full: pd.DataFrame, other: pd.DataFrame, side: str = "wormhole") -> pd.DataFrame:
    """One row per collective instance or point-to-point transfer (``unit``): its description from
    the full run, start, end and duration of each side, and the duration's errors."""
    _check_same_keys(full, other, "unit", "collectives")
    info = [c for c in ("unit", "name", "coll", "iteration", "flows") if c in full]
    cols = {"start_ns": "start", "end_ns": "end", "duration_ns": "duration"}
    a = full[info + list(cols)].rename(columns={c: f"{n}_full" for c, n in cols.items()})
    b = other[["unit"] + list(cols)].rename(columns={c: f"{n}_{side}" for c, n in cols.items()})
    m = a.merge(b, on="unit", validate="one_to_one").sort_values("unit", ignore_index=True)
    m["error"], m["signed_error"] = relative_error(m["duration_full"], m[f"duration_{side}"])
    return m


def rank_ends(full_flows: pd.DataFrame, other_flows: pd.DataFrame) -> pd.DataFrame:
    """One row per (job, iteration, rank): when the rank's last op of the iteration ended on each
    side (its flows' and compute ops' last ``finish_ns``), and ``shift``, the other side's end
    less full's as a fraction of full's iteration span (its first start to its last end).  An
    iteration's duration is read off its first and last rank, so a run can be right in every
    duration and still have one rank's timeline tens of milliseconds off: the next iteration then
    starts from it (measured on the 128-GPU DDP fat-tree, DEVELOPERS.md "Per-rank timelines").  Flows
    are matched by ``flow_id``; empty where they have no ranks (a flow file)."""
    if "rank" not in full_flows or "iteration" not in full_flows:
        return pd.DataFrame(columns=["iteration", "rank", "end_full", "end_other", "span_ns", "shift"])
    keys = [c for c in ("job", "iteration", "rank") if c in full_flows]
    t = full_flows[["flow_id"] + keys + ["start_ns", "finish_ns"]].merge(
        other_flows[["flow_id", "finish_ns"]].rename(columns={"finish_ns": "finish_other"}), on="flow_id",
        validate="one_to_one")
    t = t[(t["finish_ns"] >= 0) & (t["finish_other"] >= 0)]
    per = t.groupby(keys, sort=True).agg(end_full=("finish_ns", "max"), end_other=("finish_other", "max")).reset_index()
    outer = [k for k in keys if k != "rank"]
    span = t.groupby(outer).agg(first=("start_ns", "min"), last=("finish_ns", "max"))
    per = per.merge((span["last"] - span["first"]).rename("span_ns").reset_index(), on=outer)
    per["shift"] = (per["end_other"] - per["end_full"]) / per["span_ns"]
    return per


def rings(flows: pd.DataFrame) -> pd.Series:
    """Each flow's ring: the lowest rank of the ranks its job's network collectives connect to its
    rank (a DP all-reduce's ring, on a DDP trace; NA for a rank no network collective reaches).
    Flows inside a server (virtual: TP, copies) join nothing, so a TP group does not merge its DP rings."""
    import networkx as nx

    job = flows["job"] if "job" in flows else pd.Series(0, index=flows.index)
    coll = flows[(flows["kind"] == "coll") & ~flows["virtual"].astype(bool)]
    g = nx.Graph()
    g.add_edges_from(zip(zip(job[coll.index], coll["rank"]), zip(job[coll.index], coll["dst_rank"])))
    lowest = pd.Series({node: min(r for _, r in c) for c in nx.connected_components(g) for node in c}, dtype=float)
    if lowest.empty:
        return pd.Series(pd.NA, index=flows.index, name="ring", dtype="Int64")
    at = pd.MultiIndex.from_arrays([job.to_numpy(), flows["rank"].to_numpy()])  # per flow, (job, rank)
    return pd.Series(lowest.reindex(at).to_numpy(), index=flows.index, name="ring").astype("Int64")


def ring_times(full_flows: pd.DataFrame, other_flows: pd.DataFrame) -> pd.DataFrame:
    """One row per (job, iteration, ring, ``rings``): the time its network collectives took on each
    side (per collective instance, ``unit``, its first network flow's start to its last byte
    received, summed: ``coll_full``, ``coll_other``) with ``coll_error`` (signed), and its ranks'
    mean ``rank_ends`` shift (``end_shift``, a fraction of the iteration).  A run can be right in
    every iteration's mean and have one ring fast and another slow in every iteration: the next
    iteration starts on the first rank done and ends on the last, so its duration moves by their
    spread (the 128-GPU DDP fat-tree under the memo's recurring flows, DEVELOPERS.md "A ring's draw,
    frozen").  Flows are matched by ``flow_id``; empty without ranks."""
    cols = ["iteration", "ring", "coll_full", "coll_other", "coll_error", "end_shift"]
    times = {"flow_id", "start_ns", "received_ns", "finish_ns"}
    if not times | {"rank", "dst_rank", "iteration", "kind", "virtual", "unit"} <= set(full_flows) \
            or not times <= set(other_flows):  # a flow file, or tables from before ranks
        return pd.DataFrame(columns=cols)
    flows = full_flows.assign(ring=rings(full_flows))
    f = flows[(flows["kind"] == "coll") & ~flows["virtual"].astype(bool) & flows["ring"].notna()]
    t = f.merge(other_flows[["flow_id", "start_ns", "received_ns"]], on="flow_id", suffixes=("", "_other"),
                validate="one_to_one")
    keys = [c for c in ("job", "iteration") if c in t] + ["ring"]
    per = t.groupby(keys + ["unit"]).agg(s=("start_ns", "min"), e=("received_ns", "max"),
                                        so=("start_ns_other", "min"), eo=("received_ns_other", "max"))
    out = pd.DataFrame({"coll_full": per["e"] - per["s"], "coll_other": per["eo"] - per["so"]}).groupby(keys).sum()
    out["coll_error"] = out["coll_other"] / out["coll_full"] - 1
    by_rank = [c for c in ("job", "rank") if c in flows]
    ring_of = flows.dropna(subset=["ring"]).groupby(by_rank)["ring"].first().reset_index()
    out["end_shift"] = rank_ends(full_flows, other_flows).merge(ring_of, on=by_rank).groupby(keys)["shift"].mean()
    return out.reset_index()


def ring_spread_stat(full_flows: pd.DataFrame, other_flows: pd.DataFrame) -> float | None:
    """The widest spread of the rings' collectives' time errors in one iteration (``ring_times``: the
    slowest ring's signed error less the fastest's): how far apart the run put rings that the full
    simulation timed alike, which an iteration's duration carries (None without rings)."""
    t = ring_times(full_flows, other_flows)
    if not len(t):
        return None
    g = t.groupby([c for c in ("job", "iteration") if c in t])["coll_error"]
    return float((g.max() - g.min()).max())


def rank_end_stat(full_flows: pd.DataFrame, other_flows: pd.DataFrame) -> float | None:
    """The largest ``rank_ends`` shift in magnitude: how far the worst rank's timeline ended from
    full's, as a fraction of its iteration (None without ranks)."""
    shift = rank_ends(full_flows, other_flows)["shift"]
    return float(shift.abs().max()) if len(shift) else None


def iteration_stats(matched_iterations: pd.DataFrame) -> dict:
    """``count``, ``mean`` and ``max`` of the iteration-time errors."""
    return error_stats(matched_iterations["error"], keys=("count", "mean", "max"))


# --- what touched which flow --------------------------------------------------------------------

def by_flow(table: pd.DataFrame | None, columns) -> pd.DataFrame:
    """``table`` (memo hits, jumps, spot checks: one row per event with a ``flows`` list) as one
    row per (event, flow): ``flow_id`` plus ``columns``; empty if ``table`` is None or empty."""
    columns = list(columns)
    if table is None or len(table) == 0 or "flows" not in table:
        return pd.DataFrame({"flow_id": pd.Series(dtype=np.int64), **{c: pd.Series(dtype=object) for c in columns}})
    t = table[[c for c in columns if c in table] + ["flows"]].copy()
    t["flows"] = [list(np.asarray(f).ravel()) if f is not None else [] for f in t["flows"]]
    t = t.explode("flows").dropna(subset=["flows"]).rename(columns={"flows": "flow_id"})
    t["flow_id"] = t["flow_id"].astype(np.int64)
    return t.reset_index(drop=True)


def annotate_flows(matched: pd.DataFrame, memo_hits: pd.DataFrame | None, jumps: pd.DataFrame | None) -> pd.DataFrame:
    """``matched`` plus, per flow, ``memo_digests`` (the entries applied to it, a list),
    ``memo_hits`` (how many hits touched it) and ``jumped_ns`` (the time it spent in jumps)."""
    m = matched.copy()
    h = by_flow(memo_hits, ["digest", "time_ns"])
    digests = h.groupby("flow_id")["digest"].agg(lambda s: sorted(set(map(str, s)))) if len(h) else pd.Series(dtype=object)
    m["memo_digests"] = [digests.get(f, []) for f in m["flow_id"]]
    m["memo_hits"] = h.groupby("flow_id").size().reindex(m["flow_id"], fill_value=0).to_numpy(np.int64) if len(h) \
        else np.zeros(len(m), np.int64)
    j = by_flow(jumps, ["start_ns", "end_ns"])
    if len(j):
        j["span"] = j["end_ns"].astype(np.int64) - j["start_ns"].astype(np.int64)
        m["jumped_ns"] = j.groupby("flow_id")["span"].sum().reindex(m["flow_id"], fill_value=0).to_numpy(np.int64)
    else:
        m["jumped_ns"] = np.zeros(len(m), np.int64)
    return m


def worst_flows(matched: pd.DataFrame, memo_hits: pd.DataFrame | None = None, jumps: pd.DataFrame | None = None,
                k: int = 10, side: str = "wormhole") -> list[dict]:
    """The ``k`` flows with the largest FCT error, each with the memo hits whose ``flows`` contain
    it (``digest``, ``time_ns``, ``steady``) and the jumps that moved it (``partition``, ``kind``,
    ``start_ns``, ``end_ns``)."""
    w = matched[np.isfinite(matched["error"])].sort_values(["error", "flow_id"], ascending=[False, True]).head(k)
    h = by_flow(memo_hits, ["digest", "time_ns", "steady", "t_conv_ns"])
    j = by_flow(jumps, ["partition", "kind", "start_ns", "end_ns"])
    out = []
    for r in w.itertuples(index=False):
        f = int(r.flow_id)
        row = {"flow_id": f}
        for c in ("src", "dst", "size_bytes", "iteration", "name", "coll", "unit"):
            if c in w:
                row[c] = getattr(r, c)
        row.update({"fct_full_ns": getattr(r, "fct_full"), f"fct_{side}_ns": getattr(r, f"fct_{side}"),
                    "error": r.error, "signed_error": r.signed_error})
        row["memo_hits"] = [{"digest": str(x.digest), "time_ns": x.time_ns,
                             **({"steady": bool(x.steady)} if "steady" in h else {})}
                            for x in h[h["flow_id"] == f].itertuples(index=False)]
        row["jumps"] = [{"partition": x.partition, "kind": x.kind, "start_ns": x.start_ns, "end_ns": x.end_ns}
                        for x in j[j["flow_id"] == f].itertuples(index=False)]
        out.append(jsonable(row))
    return out


def entries_by_error(matched: pd.DataFrame, memo_hits: pd.DataFrame | None, k: int = 10) -> pd.DataFrame:
    """Memo entries ranked by the FCT error of the flows they were applied to: ``digest, hits,
    flows, mean_error, max_error, worst_flow, first_time_ns`` (the worst ``k``, by the sum of their
    flows' errors beyond the run's median error: a wrong entry puts every flow it is applied to
    off, while an innocent one applied later to a few of those flows shares only their errors, and
    one applied to hundreds of flows each as far off as the run's typical flow is not to blame;
    ranking by the worst flow ties them)."""
    cols = ["digest", "hits", "flows", "mean_error", "max_error", "worst_flow", "first_time_ns"]
    h = by_flow(memo_hits, ["digest", "time_ns"])
    if not len(h):
        return pd.DataFrame(columns=cols)
    h["digest"] = h["digest"].astype(str)
    h = h.merge(matched[["flow_id", "error"]], on="flow_id", how="left")
    typical = np.nanmedian(matched["error"].to_numpy(float)) if matched["error"].notna().any() else 0.0
    rows = []
    for d, g in h.groupby("digest", sort=False):
        e = g.drop_duplicates("flow_id")
        fin = e[np.isfinite(e["error"])]
        rows.append({"digest": d, "hits": int(g["time_ns"].nunique()), "flows": int(e["flow_id"].nunique()),
                     "mean_error": float(fin["error"].mean()) if len(fin) else np.nan,
                     "max_error": float(fin["error"].max()) if len(fin) else np.nan,
                     "worst_flow": int(fin.loc[fin["error"].idxmax(), "flow_id"]) if len(fin) else -1,
                     "first_time_ns": int(g["time_ns"].min()),
                     "_sum": float((fin["error"] - typical).sum())})
    t = pd.DataFrame(rows, columns=cols + ["_sum"])
    t = t.sort_values(["_sum", "max_error", "digest"], ascending=[False, False, True], na_position="last",
                      ignore_index=True)
    return t.drop(columns="_sum").head(k)


def partitions_by_error(matched: pd.DataFrame, jumps: pd.DataFrame | None, k: int = 10) -> pd.DataFrame:
    """Partitions ranked by the FCT error of the flows they fast-forwarded: ``partition, jumps,
    steady_jumps, memo_jumps, jumped_ns, flows, mean_error, max_error`` (the worst ``k``)."""
    cols = ["partition", "jumps", "steady_jumps", "memo_jumps", "jumped_ns", "flows", "mean_error", "max_error"]
    if jumps is None or not len(jumps):
        return pd.DataFrame(columns=cols)
    j = jumps.copy()
    j["span"] = j["end_ns"].astype(np.int64) - j["start_ns"].astype(np.int64)
    per = j.groupby("partition").agg(jumps=("span", "size"), jumped_ns=("span", "sum"),
                                     steady_jumps=("kind", lambda s: int((s == "steady").sum())),
                                     memo_jumps=("kind", lambda s: int((s == "memo").sum())))
    f = by_flow(jumps, ["partition"]).merge(matched[["flow_id", "error"]], on="flow_id", how="left")
    f = f.drop_duplicates(["partition", "flow_id"])
    err = f.groupby("partition").agg(flows=("flow_id", "size"), mean_error=("error", "mean"), max_error=("error", "max"))
    t = per.join(err, how="left").reset_index()
    t["flows"] = t["flows"].fillna(0).astype(np.int64)
    return t[cols].sort_values(["max_error", "mean_error"], ascending=False, na_position="last",
                               ignore_index=True).head(k)


# --- fast-forwarding --------------------------------------------------------------------------

def union_length(starts, ends) -> int:
    """Total length covered by the intervals ``[start, end)`` (overlaps counted once)."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if not s.size:
        return 0
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    # a new block starts where an interval begins after everything before it has ended
    new = np.concatenate([[True], s[1:] > reach[:-1]])
    block_start = s[new]
    block_end = np.concatenate([reach[np.flatnonzero(new)[1:] - 1], [reach[-1]]])
    return int((block_end - block_start).sum())


def fast_forward_summary(full_counters: dict, fast_counters: dict, jumps: pd.DataFrame | None = None,
                         fast_flows: pd.DataFrame | None = None) -> dict:
    """What the accelerated run skipped: ``time_fraction`` (share of the simulated time during which
    at least one partition was fast-forwarded), ``flow_time_fraction`` (share of the network flows'
    time spent in jumps rather than simulated), ``events_avoided`` (1 - events / full events), the
    engine's counters (``fast_forwards``, ``skipped_partition_ns``, ...); fractions are ``None``
    without a jump record."""
    w = fast_counters.get("wormhole") or {}
    sim = fast_counters.get("simulated_ns") or 0
    ev_full, ev_fast = full_counters.get("events"), fast_counters.get("events")
    out = {
        "time_fraction": None, "flow_time_fraction": None,
        "events_full": ev_full, "events_wormhole": ev_fast,
        "events_avoided": (1 - ev_fast / ev_full) if ev_full and ev_fast is not None else None,
        "events_skipped_estimate": w.get("events_skipped_estimate"),
        "fast_forwards": w.get("fast_forwards"), "skip_backs": w.get("skip_backs"),
        "memo_jumps": w.get("memo_jumps"), "steady_jumps": None,
        "skipped_partition_ns": w.get("skipped_ns"), "simulated_ns": sim,
        "partitions_max": w.get("partitions_max"),
    }
    if jumps is not None:
        out["steady_jumps"] = int((jumps["kind"] == "steady").sum()) if len(jumps) else 0
        if sim > 0:
            out["time_fraction"] = union_length(jumps["start_ns"], jumps["end_ns"]) / sim if len(jumps) else 0.0
        if fast_flows is not None:
            net = fast_flows[~fast_flows["virtual"].astype(bool)] if "virtual" in fast_flows else fast_flows
            total = float(net["fct_ns"].clip(lower=0).sum())
            j = by_flow(jumps, ["start_ns", "end_ns"])
            j = j[j["flow_id"].isin(net["flow_id"])]
            spent = float((j["end_ns"].astype(np.int64) - j["start_ns"].astype(np.int64)).sum()) if len(j) else 0.0
            out["flow_time_fraction"] = spent / total if total > 0 else None
    return out


# --- spot checks --------------------------------------------------------------------------------

def spot_check_errors(spot: pd.DataFrame) -> np.ndarray:
    """Per spot check, the relative error of the entry's bytes against the bytes its flows actually
    delivered when simulated packet by packet: ``|expected - actual| / actual`` (the largest over
    its flows when the columns hold one value per flow); for a check of a recurring flow, which
    compares times (``expected_ns``, ``actual_ns``: to its last byte received), its own ``error``
    (``engine_error`` once the audit has renamed it);
    NaN for a check that was interrupted (its partition changed before the transient ended) or
    cannot be compared."""
    out = np.full(len(spot), np.nan)
    if not len(spot):
        return out
    if not {"expected_bytes", "actual_bytes"} <= set(spot.columns):
        return spot["error"].to_numpy(dtype=float) if "error" in spot else out
    stopped = spot["interrupted"].to_numpy(dtype=bool) if "interrupted" in spot else np.zeros(len(spot), bool)
    timed = spot["actual_ns"].notna().to_numpy() if "actual_ns" in spot else np.zeros(len(spot), bool)
    own = spot["error" if "error" in spot else "engine_error"] if timed.any() else None  # audit renames it
    for i, (e, a) in enumerate(zip(spot["expected_bytes"], spot["actual_bytes"])):
        if timed[i] and not stopped[i]:
            out[i] = float(own.iloc[i])
            continue
        e = np.asarray(e, dtype=float).ravel()
        a = np.asarray(a, dtype=float).ravel()
        if stopped[i] or e.shape != a.shape or not e.size or (a <= 0).any():
            continue
        out[i] = float(np.max(np.abs(e - a) / a))
    return out


# --- the noise floor --------------------------------------------------------------------------

def perturbation_targets(ops: pd.DataFrame) -> pd.DataFrame:
    """The ops the noise-floor runs perturb, one per iteration from the first on: each iteration's
    first (lowest ``op_id``) compute op with a positive duration that some other op depends on;
    none at all if the first iteration has none."""
    depended = {int(x) for d in ops["deps"] for x in d}
    c = ops[(ops["kind"] == "compute") & (ops["duration_ns"] > 0) & ops["op_id"].isin(depended)]
    c = c.sort_values("op_id").groupby("iteration", sort=True).head(1).sort_values("iteration")
    return c if len(c) and c["iteration"].iloc[0] == ops["iteration"].min() else c.iloc[:0]


def perturb_ops(ops: pd.DataFrame, delta_ns: int = 1) -> tuple[pd.DataFrame, dict | None]:
    """A copy of ``ops`` with ``delta_ns`` added to the duration of :func:`perturbation_targets`
    (one op in every iteration), and what was changed (``op_id, rank, name, iteration, duration_ns,
    delta_ns`` of the first iteration's op; with several iterations also ``later_op_ids``, the
    later iterations' ops); ``(ops, None)`` when there is nothing to perturb.  The draws of a noise
    floor delay the same ops by ``DRAW_DELAYS_NS``: 1 ns, 10 ns, 100 ns, 1 us, all below the
    run-to-run jitter of a real GPU kernel.  Measured on the bundled GPT sample (2 iterations): 1,
    2 and 10 ns take DCQCN to the same contention order (24.9% mean FCT change), 100 ns and 1 us
    to others (20.0%, 18.0%); under HPCC 1 ns and 10 ns give 10.5% and 9.1%.  Delaying other ops by
    1 ns was tried too: most have slack, and changed nothing at all.

    Every iteration, not only the first (2026-12-06): a real kernel jitters in every iteration, and
    where the network is quiet between iterations a change in the first does not reach the next.
    On a 4-layer MoE (``bench_scale``'s ``moe16`` trace, 4 iterations, HPCC) the first iteration's
    op alone left iterations 2-4 of the draw identical to full's, 460 ns later (a floor of 0 there,
    against 5.8% per flow in the first), so every later iteration of an accelerated run read as
    beyond it (DEVELOPERS.md, "Auditing (from the README)")."""
    targets = perturbation_targets(ops)
    if not len(targets):
        return ops, None
    first, later = targets.iloc[0], [int(x) for x in targets["op_id"].iloc[1:]]
    out = ops.copy()
    out.loc[out["op_id"].isin(targets["op_id"]), "duration_ns"] += int(delta_ns)
    info = {"op_id": int(first["op_id"]), "rank": int(first["rank"]), "name": str(first["name"]),
            "iteration": int(first["iteration"]), "duration_ns": int(first["duration_ns"]), "delta_ns": int(delta_ns)}
    if later:  # (a one-iteration trace's draw is as before, and so are the baselines saved with it)
        info["later_op_ids"] = later
    return out, info


DRAW_DELAYS_NS = (1, 10, 100, 1000)  # noise-floor draw k delays the op by this much


def delay_text(ns: int) -> str:
    return f"{ns} ns" if ns < 1000 or ns % 1000 else f"{ns // 1000} us"


def delays(draws: int) -> str:
    """The delays of the first ``draws`` draws, in words: '1 ns, 10 ns or 100 ns'."""
    words = [delay_text(d) for d in DRAW_DELAYS_NS[:draws]]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def draw_column(name: str, draw: int) -> str:
    """A noise-floor draw's column in the matched tables: ``name`` for the first (0), then
    ``name_2``, ``name_3``, ..."""
    return name if draw == 0 else f"{name}_{draw + 1}"


def widest(draws: list[dict]) -> dict:
    """The noise floor of several draws (each ``{name: stats}``): every statistic at its largest
    over the draws, so that an accelerated run is called within the floor only if it moved no
    more than the full simulation moved from itself in at least one draw."""
    out = {}
    for name in draws[0]:
        out[name] = {}
        for k, v in draws[0][name].items():
            values = [d[name][k] for d in draws if d[name][k] is not None]
            out[name][k] = (max(values) if values else None) if k != "count" else v
    return out


def noise_comparison(fct: dict, iteration: dict, noise_fct: dict, noise_iteration: dict, draws: int = 1) -> dict:
    """Whether each headline error of the accelerated run is within the full simulation's own
    noise floor (the widest of ``draws``): ``within`` {``fct_mean``, ``fct_p99``,
    ``iteration_max``: bool or None}, ``all_within`` and a plain-language ``verdict``."""
    pairs = {"fct_mean": (fct.get("mean"), noise_fct.get("mean")),
             "fct_p99": (fct.get("p99"), noise_fct.get("p99")),
             "iteration_max": (iteration.get("max"), noise_iteration.get("max"))}
    within = {k: (None if a is None or b is None else bool(a <= b)) for k, (a, b) in pairs.items()}
    known = [v for v in within.values() if v is not None]
    all_within = bool(known) and all(known)
    label = {"fct_mean": "mean FCT error", "fct_p99": "p99 FCT error", "iteration_max": "max iteration-time error"}
    if all_within:
        when = ("when one compute op is delayed by 1 ns" if draws == 1 else
                f"when one compute op is delayed by {delays(draws)}, in the widest of {draws} draws")
        verdict = ("Within the noise floor: the accelerated run differs from the full simulation by no more than "
                   f"the full simulation differs from itself {when} "
                   f"({', '.join(f'{label[k]} {pct(pairs[k][0])} vs {pct(pairs[k][1])}' for k in pairs)}).")
    elif known:
        over = [k for k, v in within.items() if v is False]
        verdict = ("Beyond the noise floor: " + ", ".join(f"{label[k]} {pct(pairs[k][0])} exceeds the full "
                                                          f"simulation's own {pct(pairs[k][1])}" for k in over) + ".")
    else:
        verdict = "No noise floor could be measured."
    return {"within": within, "all_within": all_within, "verdict": verdict}


# --- thresholds -------------------------------------------------------------------------------

THRESHOLDS = {  # option name -> (section, key, description)
    "max_mean_error": ("fct_error", "mean", "mean FCT error"),
    "max_p99_error": ("fct_error", "p99", "p99 FCT error"),
    "max_iteration_error": ("iteration_error", "max", "max iteration-time error"),
}


def check_thresholds(metrics: dict, limits: dict) -> dict:
    """``limits`` {option: fraction or None} against ``metrics`` {``fct_error``: ...,
    ``iteration_error``: ...}: ``limits``, ``exceeded`` [{name, metric, limit, value}], ``passed``.
    Fails closed: a threshold whose metric could not be measured (``None``: no matched flow or
    iteration, or NaN) counts as exceeded, with ``value`` None, so a CI gate never passes on a run
    it could not judge."""
    exceeded = []
    for name, limit in limits.items():
        if limit is None:
            continue
        section, key, what = THRESHOLDS[name]
        value = (metrics.get(section) or {}).get(key)
        unmeasured = value is None or (isinstance(value, float) and not math.isfinite(value))
        if unmeasured or value > limit:
            exceeded.append({"name": name, "metric": what, "limit": limit, "value": None if unmeasured else value})
    return {"limits": dict(limits), "exceeded": exceeded, "passed": not exceeded}


def threshold_text(x: dict) -> str:
    """One exceeded threshold for people: ``mean FCT error 1.20% > 1.00%``, or ``... not measured``."""
    if x["value"] is None:
        return f"{x['metric']} not measured (limit {pct(x['limit'])})"
    return f"{x['metric']} {pct(x['value'])} > {pct(x['limit'])}"


# --- formatting -------------------------------------------------------------------------------

def pct(x, digits: int = 2) -> str:
    """A fraction as a percentage for people (``0.0123`` -> ``1.23%``; missing -> ``n/a``)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{100 * x:.{digits}f}%"


def jsonable(x):
    """``x`` with NumPy scalars and arrays made plain Python, NaN and infinities made ``None``."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [jsonable(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is pd.NA or x is pd.NaT:
        return None
    return x


def records(df: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready rows."""
    return [jsonable(r) for r in df.to_dict(orient="records")]
