"""``wormhole-replay audit``: metrics on hand-made tables, and end-to-end audits (report, JSON,
baseline reuse and refusal, a poisoned memo entry, bad input, the bundled samples)."""

import base64
import contextlib
import io
import json
import shutil
import sqlite3
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wormhole_replay.audit import compare as C
from wormhole_replay.cli import main
from wormhole_replay.workload.trace import new_ops

REPO = Path(__file__).resolve().parents[1]
SMALL_TOPO = "rail:servers=2,gpus_per_server=4"
# The small trace's flows with a source port each (the reference's numbering) meet on shared links,
# so its audit has transients to learn and a chaotic full run; with NCCL's connection ports (the
# default) its rings never contend, the memo has nothing to learn and the noise floor is 0.  Three
# iterations: the memo is hit 3 times (with two, never; measured 2026-12-01).  Its contended ring
# steps release the next ones, so by default they jump at most 1/16 of their FCT, no jump is then a
# window long, and the memo learns nothing: these audits lift that cap (``--ff-releaser-share 1``)
# to test what they test (spot checks, hits named and traced) on a run with memo hits.
CONTENDED = ("--ports", "flow", "--ff-releaser-share", "1")
PLOTS = {"plot-fct-cdf", "plot-fct-scatter", "plot-iterations", "plot-collectives", "plot-timeline"}


# --- metrics on hand-made tables --------------------------------------------------------------------

def _flows(fct, virtual=None, completed=None, ids=None):
    n = len(fct)
    return pd.DataFrame({
        "flow_id": ids if ids is not None else np.arange(n), "src": 0, "dst": 1, "size_bytes": 1000,
        "virtual": virtual if virtual is not None else [False] * n, "kind": "coll", "name": "x", "coll": "all_reduce",
        "iteration": 0, "rank": 0, "unit": 0, "op_id": 0, "start_ns": 0, "finish_ns": fct, "fct_ns": fct,
        "completed": completed if completed is not None else [True] * n})


def test_error_stats_are_over_finite_values():
    s = C.error_stats([0.0, 0.1, 0.2, np.nan, 0.3])
    assert s["count"] == 4
    assert s["mean"] == pytest.approx(0.15)
    assert s["p50"] == pytest.approx(0.15)
    assert s["p99"] == pytest.approx(np.percentile([0, 0.1, 0.2, 0.3], 99))
    assert s["max"] == pytest.approx(0.3)
    assert C.error_stats([np.nan]) == {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    err, signed = C.relative_error([100, 0, 200], [110, 5, 180])
    assert err[0] == pytest.approx(0.1) and np.isnan(err[1]) and signed[2] == pytest.approx(-0.1)


def test_flows_match_one_to_one_and_only_network_flows_have_errors():
    full = _flows([100, 200, 300, 400, 0], virtual=[False, True, False, False, False],
                  completed=[True, True, True, False, True])
    fast = _flows([110, 250, 300, 500, 7]).iloc[::-1]  # another row order: matched on flow_id
    m = C.match_flows(full, fast)
    assert list(m["flow_id"]) == [0, 1, 2, 3, 4]
    assert list(m["fct_wormhole"]) == [110, 250, 300, 500, 7]
    assert m["error"].iloc[0] == pytest.approx(0.1)
    assert np.isnan(m["error"].iloc[1])  # virtual
    assert m["error"].iloc[2] == 0
    assert np.isnan(m["error"].iloc[3])  # not completed in the full run
    assert np.isnan(m["error"].iloc[4])  # zero FCT: no relative error
    with pytest.raises(C.MismatchError, match="different flows"):
        C.match_flows(full, _flows([1, 2, 3], ids=[0, 1, 9]))


def test_iterations_and_collectives_match_on_their_keys():
    it_full = pd.DataFrame({"index": [0, 1], "start_ns": [0, 100], "end_ns": [100, 300], "duration_ns": [100, 200],
                            "wall_seconds": [1.0, 1.0]})
    it_fast = it_full.assign(duration_ns=[105, 190], memo_hits=[3, 4])
    m = C.match_iterations(it_full, it_fast)
    assert list(m["error"]) == pytest.approx([0.05, 0.05])
    assert list(m["signed_error"]) == pytest.approx([0.05, -0.05])
    assert list(m["memo_hits"]) == [3, 4]
    assert C.iteration_stats(m) == {"count": 2, "mean": pytest.approx(0.05), "max": pytest.approx(0.05)}
    cf = pd.DataFrame({"unit": [7, 8], "name": ["a", "b"], "coll": ["all_reduce", ""], "iteration": [0, 0],
                       "flows": [4, 1], "start_ns": [0, 0], "end_ns": [10, 20], "duration_ns": [10, 20]})
    mc = C.match_collectives(cf, cf.assign(duration_ns=[12, 20]))
    assert list(mc["error"]) == pytest.approx([0.2, 0.0])


def test_a_ranks_timeline_end_is_its_last_op_of_the_iteration():
    """``rank_ends``: rank 0 ends iteration 0 with a compute op at 100 (full) and 110 (other), rank 1
    with a flow at 80 (both); iteration 0 spans 0-100 in full, so rank 0 is 10% late; in iteration
    1 (span 100-300) rank 1 is 20 early (-10%).  ``rank_end_stat`` is the largest magnitude, None
    without ranks."""
    full = pd.DataFrame({"flow_id": range(5), "iteration": [0, 0, 0, 1, 1], "rank": [0, 0, 1, 0, 1],
                         "start_ns": [0, 10, 5, 100, 120], "finish_ns": [50, 100, 80, 300, 250]})
    other = full.assign(finish_ns=[50, 110, 80, 300, 230]).iloc[::-1]  # matched by flow id, not row
    r = C.rank_ends(full, other)
    assert r[["iteration", "rank"]].values.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert r["shift"].tolist() == pytest.approx([0.1, 0.0, 0.0, -0.1])
    assert C.rank_end_stat(full, other) == pytest.approx(0.1) and C.rank_end_stat(full, full) == 0
    assert C.rank_end_stat(full.drop(columns="rank"), other) is None  # a flow file: no ranks


def test_ring_times_split_the_collectives_by_the_ring_their_ranks_form():
    """``rings``: ranks 0-1 and 2-3 all-reduce over the network (two rings, named 0 and 2); a TP copy
    inside a server between ranks 0 and 2 (virtual) joins nothing.  ``ring_times``: ring 0's one
    collective takes 100 in full and 110 in the other run (+10%), ring 2's two take 50 + 50 and
    40 + 50 (-10%); rank 1 ends 20 late in an iteration spanning 0-200, so ring 0's ranks' mean
    end is 5% late."""
    full = pd.DataFrame({"flow_id": range(7), "iteration": 0, "rank": [0, 1, 2, 3, 2, 3, 0],
                         "dst_rank": [1, 0, 3, 2, 3, 2, 2], "unit": [0, 0, 1, 1, 2, 2, 3],
                         "kind": ["coll"] * 7, "virtual": [False] * 6 + [True],
                         "start_ns": [0, 0, 0, 0, 100, 100, 150], "received_ns": [100, 90, 50, 40, 150, 140, 200]})
    full["finish_ns"] = full["received_ns"]
    other = full.assign(received_ns=[100, 110, 40, 40, 150, 140, 200])
    other["finish_ns"] = other["received_ns"]
    assert C.rings(full).tolist() == [0, 0, 2, 2, 2, 2, 0]
    t = C.ring_times(full, other.iloc[::-1])  # matched by flow id, not row
    assert t["ring"].tolist() == [0, 2]
    assert t["coll_full"].tolist() == [100, 100] and t["coll_other"].tolist() == [110, 90]
    assert t["coll_error"].tolist() == pytest.approx([0.1, -0.1])
    assert t["end_shift"].tolist() == pytest.approx([0.05, 0.0])
    assert C.ring_times(full.drop(columns="rank"), other).empty  # a flow file: no rings
    assert C.ring_spread_stat(full, other) == pytest.approx(0.2)  # +10% less -10%
    assert C.ring_spread_stat(full, full) == 0 and C.ring_spread_stat(full.drop(columns="rank"), other) is None


def test_worst_flows_name_the_memo_entries_and_jumps_that_touched_them():
    full = _flows([100, 100, 100, 100])
    fast = _flows([100, 150, 120, 101])
    m = C.match_flows(full, fast)
    hits = pd.DataFrame({"time_ns": [10, 20, 30], "digest": ["aaa", "bbb", "aaa"], "steady": [True, False, True],
                         "t_conv_ns": [5, 5, 5], "flows": [[1, 2], [3], [1]]})
    jumps = pd.DataFrame({"partition": [4, 5], "start_ns": [10, 40], "end_ns": [15, 60], "kind": ["memo", "steady"],
                          "flows": [[1, 2], [2, 3]]})
    w = C.worst_flows(m, hits, jumps, k=2)
    assert [x["flow_id"] for x in w] == [1, 2]
    assert [h["digest"] for h in w[0]["memo_hits"]] == ["aaa", "aaa"]
    assert [j["partition"] for j in w[1]["jumps"]] == [4, 5]
    assert w[0]["error"] == pytest.approx(0.5)
    e = C.entries_by_error(m, hits)
    assert list(e["digest"]) == ["aaa", "bbb"]
    assert e.iloc[0]["hits"] == 2 and e.iloc[0]["flows"] == 2 and e.iloc[0]["max_error"] == pytest.approx(0.5)
    assert e.iloc[0]["worst_flow"] == 1
    p = C.partitions_by_error(m, jumps)
    assert list(p["partition"]) == [4, 5] and p.iloc[0]["memo_jumps"] == 1
    a = C.annotate_flows(m, hits, jumps)
    assert a.set_index("flow_id").loc[1, "memo_digests"] == ["aaa"]
    assert list(a["memo_hits"]) == [0, 2, 1, 1]
    assert list(a["jumped_ns"]) == [0, 5, 25, 20]
    assert C.worst_flows(m, None, None, k=1)[0]["memo_hits"] == []


def test_fast_forward_fractions():
    assert C.union_length([0, 5, 20, 1], [10, 15, 30, 2]) == 25
    assert C.union_length([], []) == 0
    assert C.union_length([0, 2], [10, 3]) == 10
    jumps = pd.DataFrame({"partition": [0, 1], "start_ns": [0, 50], "end_ns": [40, 60], "kind": ["steady", "memo"],
                          "flows": [[0], [1]]})
    fast_flows = _flows([100, 100])
    s = C.fast_forward_summary({"events": 1000}, {"events": 250, "simulated_ns": 100,
                                                  "wormhole": {"skipped_ns": 50, "fast_forwards": 2}}, jumps, fast_flows)
    assert s["time_fraction"] == pytest.approx(0.5)
    assert s["flow_time_fraction"] == pytest.approx(50 / 200)
    assert s["events_avoided"] == pytest.approx(0.75)
    assert s["steady_jumps"] == 1 and s["skipped_partition_ns"] == 50
    assert C.fast_forward_summary({"events": 10}, {"events": 10, "simulated_ns": 5})["time_fraction"] is None


def test_the_noise_floor_perturbs_one_compute_op_by_1ns():
    ops = new_ops([dict(op_id=0, rank=0, kind="coll", coll="all_reduce", group="g", bytes=8),
                   dict(op_id=1, rank=0, kind="compute", duration_ns=0, deps=[0]),
                   dict(op_id=2, rank=1, kind="compute", duration_ns=500),  # nothing depends on it
                   dict(op_id=3, rank=0, kind="compute", duration_ns=700, deps=[1]),
                   dict(op_id=4, rank=0, kind="send", peer=1, bytes=8, deps=[3]),
                   dict(op_id=5, rank=0, kind="compute", duration_ns=100, iteration=1, deps=[4])])
    out, info = C.perturb_ops(ops)
    assert info == {"op_id": 3, "rank": 0, "name": "", "iteration": 0, "duration_ns": 700, "delta_ns": 1}
    assert list(out["duration_ns"]) == [0, 0, 500, 701, 0, 100]
    assert list(ops["duration_ns"]) == [0, 0, 500, 700, 0, 100]  # the original is untouched
    out, info = C.perturb_ops(ops, delta_ns=2)  # the second draw of a noise floor
    assert info["op_id"] == 3 and info["delta_ns"] == 2 and list(out["duration_ns"]) == [0, 0, 500, 702, 0, 100]
    assert C.perturb_ops(ops[ops.kind != "compute"])[1] is None


def test_the_noise_floor_perturbs_the_same_op_in_every_iteration():
    # a real kernel jitters in every iteration; where the network is quiet between iterations a
    # change in the first one never reaches the next, whose floor would read 0
    ops = new_ops([dict(op_id=0, rank=0, kind="compute", duration_ns=300),
                   dict(op_id=1, rank=0, kind="send", peer=1, bytes=8, deps=[0]),
                   dict(op_id=2, rank=0, kind="compute", duration_ns=300, iteration=1, deps=[1]),
                   dict(op_id=3, rank=0, kind="send", peer=1, bytes=8, iteration=1, deps=[2]),
                   dict(op_id=4, rank=0, kind="compute", duration_ns=300, iteration=2, deps=[3]),
                   dict(op_id=5, rank=0, kind="send", peer=1, bytes=8, iteration=2, deps=[4])])
    out, info = C.perturb_ops(ops, delta_ns=10)
    assert info == {"op_id": 0, "rank": 0, "name": "", "iteration": 0, "duration_ns": 300, "delta_ns": 10,
                    "later_op_ids": [2, 4]}
    assert list(out["duration_ns"]) == [310, 0, 310, 0, 310, 0]
    assert "later_op_ids" not in C.perturb_ops(ops[ops.iteration == 0])[1]  # one iteration: as before


def test_the_noise_floor_of_several_draws_is_each_statistic_at_its_widest():
    a = {"fct_error": {"count": 4, "mean": 0.1, "p99": 0.5}, "iteration_error": {"count": 2, "mean": 0.02, "max": None}}
    b = {"fct_error": {"count": 4, "mean": 0.2, "p99": 0.3}, "iteration_error": {"count": 2, "mean": 0.01, "max": 0.03}}
    assert C.widest([a, b]) == {"fct_error": {"count": 4, "mean": 0.2, "p99": 0.5},
                                "iteration_error": {"count": 2, "mean": 0.02, "max": 0.03}}
    assert C.widest([a]) == a
    v = C.noise_comparison({"mean": 0.02, "p99": 0.3}, {"max": 0.01}, {"mean": 0.1, "p99": 0.8}, {"max": 0.05}, 3)
    assert "delayed by 1 ns, 10 ns or 100 ns, in the widest of 3 draws" in v["verdict"]


def test_thresholds_noise_verdict_and_spot_check_errors():
    metrics = {"fct_error": {"mean": 0.02, "p99": 0.3}, "iteration_error": {"max": 0.01}}
    t = C.check_thresholds(metrics, {"max_mean_error": 0.01, "max_p99_error": 0.5, "max_iteration_error": None})
    assert not t["passed"] and [x["name"] for x in t["exceeded"]] == ["max_mean_error"]
    assert C.check_thresholds(metrics, {"max_mean_error": None})["passed"]
    assert C.check_thresholds(metrics, {"max_mean_error": 0.05, "max_p99_error": 0.5})["passed"]
    v = C.noise_comparison({"mean": 0.02, "p99": 0.3}, {"max": 0.01}, {"mean": 0.1, "p99": 0.8}, {"max": 0.05})
    assert v["all_within"] and v["verdict"].startswith("Within the noise floor")
    v = C.noise_comparison({"mean": 0.2, "p99": 0.3}, {"max": 0.01}, {"mean": 0.1, "p99": 0.8}, {"max": 0.05})
    assert not v["all_within"] and "mean FCT error 20.00% exceeds" in v["verdict"]
    spot = pd.DataFrame({"expected_bytes": [1000, 1100, [10, 30], 5], "actual_bytes": [1000, 1000, [10, 20], 9],
                         "interrupted": [False, False, False, True]})
    assert list(C.spot_check_errors(spot)[:3]) == pytest.approx([0.0, 0.1, 0.5])
    assert np.isnan(C.spot_check_errors(spot)[3])
    # a recurring flow's check compares times (its bytes are not compared): its own error
    timed = pd.DataFrame({"expected_bytes": [1000, -1, -1], "actual_bytes": [1000, -1, -1],
                          "expected_ns": [None, 1000, 1000], "actual_ns": [None, 1020, None],
                          "error": [None, 0.02 / 1.02, None], "interrupted": [False, False, True]})
    errors = C.spot_check_errors(timed)
    assert errors[:2] == pytest.approx([0.0, 0.02 / 1.02]) and np.isnan(errors[2])


def test_a_threshold_on_a_metric_that_was_not_measured_fails_closed():
    """Catches a CI gate that fails open: with no matched flow (or no iteration) the metric is
    None, and a threshold on it must count as exceeded, not pass."""
    nothing = {"fct_error": C.error_stats([np.nan]), "iteration_error": {"count": 0, "mean": None, "max": None}}
    t = C.check_thresholds(nothing, {"max_mean_error": 0.01, "max_p99_error": 0.05, "max_iteration_error": 0.01})
    assert not t["passed"]
    assert [(x["name"], x["value"]) for x in t["exceeded"]] == [
        ("max_mean_error", None), ("max_p99_error", None), ("max_iteration_error", None)]
    assert not C.check_thresholds({}, {"max_mean_error": 0.01})["passed"]  # the section itself missing
    assert not C.check_thresholds({"fct_error": {"mean": float("nan")}}, {"max_mean_error": 0.01})["passed"]
    assert C.threshold_text(t["exceeded"][0]) == "mean FCT error not measured (limit 1.00%)"


# --- end to end -------------------------------------------------------------------------------------

class _Html(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.imgs, self.tags, self.stack, self.errors = [], [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "img":
            self.imgs.append(a)
        elif tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _check_report(path: Path, extra_plots=()) -> str:
    text = path.read_text(encoding="utf-8")
    p = _Html()
    p.feed(text)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    assert {t for t, _ in p.tags}.isdisjoint({"script", "link", "iframe", "object", "embed"})
    for tag, a in p.tags:  # nothing is fetched from elsewhere
        for k in ("src", "href"):
            assert k not in a or a[k].startswith("data:image/png;base64,"), (tag, a.get(k, "")[:80])
    for img in p.imgs:
        data = base64.b64decode(img["src"].removeprefix("data:image/png;base64,"), validate=True)
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000
    ids = {img.get("id") for img in p.imgs}
    assert PLOTS | set(extra_plots) <= ids, ids
    return text


def _check_json_matches_tables(out: Path, audit: dict) -> None:
    assert json.loads((out / "audit.json").read_text()) == audit
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) == len(pd.read_parquet(out / "full" / "flows.parquet")) == audit["flows"]["total"]
    assert flows["flow_id"].is_unique
    assert flows.loc[flows["virtual"], "error"].isna().all()
    nf = audit["noise_floor"]
    if nf is None:
        assert "noise_error" not in flows
    else:  # one column per draw, and the floor is each statistic's widest
        assert nf["fct_error"] == C.widest(nf["draws"])["fct_error"]
        assert nf["perturbation"] == nf["draws"][0]["perturbation"]
    draws = [] if nf is None else nf["draws"]
    sections = [("error", audit["fct_error"])] + [(f"noise_error{'_' + str(k + 1) if k else ''}", d["fct_error"])
                                                  for k, d in enumerate(draws)]
    for col, section in sections:
        e = flows[col].dropna().to_numpy()
        assert section["count"] == len(e) > 0
        assert section["mean"] == pytest.approx(e.mean(), rel=1e-12, abs=1e-15)
        assert section["max"] == pytest.approx(e.max())
        for q in (50, 90, 99):
            assert section[f"p{q}"] == pytest.approx(np.percentile(e, q), rel=1e-12, abs=1e-15)
    its = pd.read_csv(out / "iterations.csv")
    assert audit["iteration_error"]["mean"] == pytest.approx(its["error"].mean())
    assert audit["iteration_error"]["max"] == pytest.approx(its["error"].max())
    assert [x["duration_wormhole"] for x in audit["iteration_error"]["iterations"]] == list(its["duration_wormhole"])
    coll = pd.read_csv(out / "collectives.csv")
    assert audit["collective_error"]["mean"] == pytest.approx(coll["error"].mean())
    assert audit["collective_error"]["count"] == coll["error"].notna().sum()
    worst = flows.dropna(subset=["error"]).sort_values(["error", "flow_id"], ascending=[False, True])
    assert [w["flow_id"] for w in audit["worst_flows"]] == list(worst["flow_id"][:len(audit["worst_flows"])])
    w = audit["wall_seconds"]
    if audit["runs"]["full"] == "simulated":
        assert audit["speedup"] == pytest.approx(w["full"] / w["wormhole"])
    else:  # a stored wall time over a fresh one is no speedup
        assert audit["speedup"] is None and any(n.startswith("Speedup not reported") for n in audit["notes"])
    for key in ("speedup", "fct_error", "iteration_error", "full", "wormhole", "report"):
        assert key in audit
    assert audit["full"]["mode"] == "full" and audit["wormhole"]["mode"] == "wormhole"


def _audit(argv):
    """``wormhole-replay audit ...`` in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["audit", *argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    from wormhole_replay.workload.generators import GptShape, gpt_trace
    from wormhole_replay.workload.trace import save_trace

    path = tmp_path_factory.mktemp("trace") / "small.parquet"
    save_trace(gpt_trace(GptShape(layers=2, hidden=2048, seq=1024), gpus=8, tp=2, iterations=3, bucket_mb=8.0), path)
    return path


@pytest.fixture(scope="module")
def first_audit(small_trace, tmp_path_factory):
    """One audit of the small trace with spot checks: its folder and JSON."""
    out = tmp_path_factory.mktemp("audit") / "a1"
    rc, stdout, stderr = _audit([str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--out", str(out),
                                 "--spot-check", "2", "--json", "--quiet"])
    assert rc == 0, stderr
    return out, json.loads(stdout)


@pytest.fixture(scope="module")
def noise_audit(first_audit, small_trace, tmp_path_factory):
    """The first audit's accelerated run again (a fresh memo database: the same run), on its saved
    full run, with a noise floor of two draws: its folder and JSON."""
    base, _ = first_audit
    d = tmp_path_factory.mktemp("noise")
    rc, stdout, stderr = _audit([str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc",
                                 "--out", str(d / "n2"), "--baseline", str(base), "--memo-db", str(d / "memo.sqlite"),
                                 "--noise-floor", "2", "--json", "--quiet"])
    assert rc == 0, stderr
    return d / "n2", json.loads(stdout)


def _mean_fct_error(out: Path) -> float:
    """The aggregate: the accelerated run's mean FCT over the full run's, minus 1 (network flows)."""
    f = pd.read_parquet(out / "flows.parquet")
    f = f[~f["virtual"]]
    return float(f["fct_wormhole"].mean() / f["fct_full"].mean() - 1)


def test_audit_writes_a_self_contained_report_and_consistent_tables(first_audit):
    out, audit = first_audit
    text = _check_report(out / "report.html")
    _check_json_matches_tables(out, audit)
    assert audit["runs"]["full"] == "simulated" and audit["passed"]
    assert not audit["thresholds"]["exceeded"]  # none given: the gate is tested where it is set
    assert audit["report"] == str(out / "report.html")
    assert audit["fct_error"]["count"] == audit["flows"]["network"] > 0
    assert audit["memo"]["hits"] > 0 and audit["memo"]["hits_recorded"] == audit["memo"]["hits"]
    ff = audit["fast_forward"]
    assert 0 < ff["time_fraction"] <= 1 and 0 < ff["flow_time_fraction"] <= 1 and ff["events_avoided"] > 0
    sc = audit["spot_check"]
    assert sc["requested"] == 2 and 1 <= sc["count"] <= 2 and (out / "spot_checks.csv").is_file()
    # an interrupted check has no error; every other one is measured (and bounded in
    # test_memo.py::test_a_spot_checked_memo_hit_delivers_what_its_entry_says, where checks finish)
    assert sc["error"]["count"] == sc["count"] - sc["interrupted"]
    assert audit["noise_floor"] is None and "No noise floor measured" in text
    assert 0 <= audit["rank_end"]["max"] < 0.5 and "timeline end (of its iteration)" in text
    assert audit["ring_spread"]["max"] >= 0 and "collectives&#x27; error less the fastest" in text
    meta = json.loads((out / "full" / "baseline.json").read_text())
    assert meta["identity"]["cc"] == "hpcc" and meta["identity"]["iterations"] == 3
    assert meta["identity"]["topology"] == SMALL_TOPO and len(meta["identity"]["trace_sha256"]) == 64
    assert meta["counters"]["events"] == audit["full"]["events"]


def test_the_full_run_keeps_its_breakdown_and_bandwidths(first_audit):
    out, _ = first_audit
    b = pd.read_csv(out / "full" / "iteration_breakdown.csv")  # per rank, adding up to each iteration's time
    assert len(b) and (b.compute_ns + b.exposed_communication_ns + b.idle_ns == b.iteration_ns).all()
    assert (out / "full" / "layer_breakdown.csv").is_file()
    assert {"algbw_GBps", "busbw_GBps"} <= set(pd.read_csv(out / "full" / "collectives.csv").columns)


def test_baseline_is_reused_without_a_full_run(first_audit, small_trace, tmp_path):
    base, first = first_audit
    out = tmp_path / "a2"
    rc, stdout, stderr = _audit([str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--out", str(out),
                                 "--baseline", str(base), "--memo-db", str(tmp_path / "memo.sqlite"), "--quiet"])
    assert rc == 0, stderr
    assert "FCT error over" in stdout and f"report: {out / 'report.html'}" in stdout
    audit = json.loads((out / "audit.json").read_text())
    assert audit["runs"]["full"] == f"baseline {base / 'full'}"
    assert audit["wall_seconds"]["full"] == first["wall_seconds"]["full"]  # the saved run's, not a new one
    assert audit["full"]["events"] == first["full"]["events"]
    assert first["speedup"] is not None and audit["speedup"] is None  # the saved wall time is not this run's
    assert "speedup n/a" in stdout
    _check_json_matches_tables(out, audit)
    _check_report(out / "report.html")
    # the new folder is itself a baseline: the full run copied with its identity
    assert json.loads((out / "full" / "baseline.json").read_text())["identity"] == \
        json.loads((base / "full" / "baseline.json").read_text())["identity"]
    assert (out / "full" / "iteration_breakdown.csv").read_bytes() == (base / "full" / "iteration_breakdown.csv").read_bytes()


def test_noise_floor_draws_are_saved_and_reused(noise_audit, small_trace, tmp_path):
    """--noise-floor N: N perturbed full runs (one op 1 ns, 10 ns, ... longer), the floor at its widest, each draw
    saved with the baseline and reused by a later audit that asks for as many or more."""
    n2, two = noise_audit
    common = [str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--no-memo", "--json", "--quiet"]
    nf = two["noise_floor"]
    assert two["runs"]["noise_floor"] == "simulated" and len(nf["draws"]) == 2
    assert [d["perturbation"]["delta_ns"] for d in nf["draws"]] == [1, 10]
    assert nf["fct_error"]["mean"] == max(d["fct_error"]["mean"] for d in nf["draws"]) > 0
    assert nf["rank_end"]["max"] == max(d["rank_end"]["max"] for d in nf["draws"])  # the worst rank, widest draw
    _check_json_matches_tables(n2, two)
    text = _check_report(n2 / "report.html")
    assert "widest of 2 draws" in text and "draw 2" in text
    assert (n2 / "full" / "noise-2" / "baseline.json").is_file()
    rc, stdout, stderr = _audit(common + ["--out", str(tmp_path / "n3"), "--baseline", str(n2), "--noise-floor", "3"])
    assert rc == 0, stderr
    three = json.loads(stdout)
    assert three["runs"]["noise_floor"] == f"1 simulated, 2 from baseline {n2 / 'full'}"
    assert three["noise_floor"]["draws"][:2] == nf["draws"]  # the saved draws, as they were
    assert len(three["noise_floor"]["draws"]) == 3
    _check_json_matches_tables(tmp_path / "n3", three)
    # a baseline written before draws (one noise run, no noise_draws) still gives its draw
    old = tmp_path / "before-draws"
    shutil.copytree(n2 / "full", old)
    meta = json.loads((old / "baseline.json").read_text())
    del meta["noise_draws"]
    (old / "baseline.json").write_text(json.dumps(meta))
    rc, stdout, stderr = _audit(common + ["--out", str(tmp_path / "old"), "--baseline", str(old), "--noise-floor"])
    assert rc == 0, stderr
    assert json.loads(stdout)["noise_floor"]["draws"] == nf["draws"][:1]


@pytest.mark.parametrize("topology, cc, extra, says", [
    (SMALL_TOPO, "dcqcn", [], "baseline was made with --cc hpcc, not dcqcn"),
    ("rail:servers=4,gpus_per_server=2", "hpcc", [], f"baseline was made with --topology {SMALL_TOPO}, not"),
    (SMALL_TOPO, "hpcc", ["--iterations", "1"], "baseline covers 3 iteration(s), not 1"),
])
def test_a_baseline_made_with_other_inputs_is_refused(first_audit, small_trace, tmp_path, topology, cc, extra, says):
    base, _ = first_audit
    out = tmp_path / "refused"
    rc, stdout, stderr = _audit([str(small_trace), "--topology", topology, *CONTENDED, "--cc", cc, *extra, "--out", str(out),
                                 "--baseline", str(base / "full"), "--quiet"])
    assert rc == 2 and stdout == ""
    assert stderr.count("\n") == 1 and says in stderr, stderr
    assert not out.exists()  # nothing written


def test_bad_input_is_one_line_and_exit_2(tmp_path, small_trace):
    out = tmp_path / "never"
    r = subprocess.run([sys.executable, "-m", "wormhole_replay", "audit", str(tmp_path / "missing.parquet"),
                        "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--out", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no such trace file" in r.stderr, r.stderr
    common = [str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--out", str(out), "--quiet"]
    for extra, says in ((["--max-mean-error", "lots"], "expected a fraction"),
                        (["--spot-check", "2", "--no-memo"], "needs a memo database"),
                        (["--memo-episodes", "--no-memo"], "drop --no-memo"),
                        (["--baseline", str(tmp_path / "nothing")], "no such baseline folder"),
                        (["--baseline", str(tmp_path)], "not an audit baseline"),
                        (["--iterations", "4"], "the trace has 3 iteration(s)"),
                        (["--noise-floor", "5"], "at most 4 draws")):
        rc, stdout, stderr = _audit(common + extra)
        assert rc == 2 and stderr.count("\n") == 1 and says in stderr, (extra, stderr)
    rc, _, stderr = _audit([str(small_trace), "--topology", "torus:k=3", "--cc", "hpcc", "--out", str(out)])
    assert rc == 2 and "unknown topology" in stderr
    assert not out.exists()


def test_a_poisoned_memo_entry_is_caught_and_named(first_audit, small_trace, tmp_path):
    base, clean = first_audit
    # the threshold: a quarter above the clean audit's mean error (the runs are deterministic;
    # measured 2026-12-01: clean 3.09%, poisoned 9.64%; poisoning the bytes alone moved nothing,
    # the hit being steady: its flows go on at the entry's steady rates)
    limit = 1.25 * clean["fct_error"]["mean"]
    db = tmp_path / "poisoned.sqlite"
    with contextlib.closing(sqlite3.connect(base / "memo.sqlite")) as src, contextlib.closing(sqlite3.connect(db)) as dst:
        src.backup(dst)
        # the transient hit most often (the likeliest to be hit again when the poisoned run replays)
        digest, value = dst.execute("SELECT digest, value_json FROM entries WHERE kind = 'transient' "
                                    "ORDER BY hits DESC, id LIMIT 1").fetchone()
        value = json.loads(value)
        value["bytes"] = [1000 for _ in value["bytes"]]  # the transient delivers almost nothing, it says,
        value["rates"] = [r / 2 for r in value["rates"]]  # and settles at half the rates
        dst.execute("UPDATE entries SET value_json = ? WHERE digest = ?", (json.dumps(value), digest))
        dst.commit()
    out = tmp_path / "poisoned"
    rc, stdout, stderr = _audit([str(small_trace), "--topology", SMALL_TOPO, *CONTENDED, "--cc", "hpcc", "--out", str(out),
                                 "--baseline", str(base), "--memo-db", str(db),
                                 "--max-mean-error", f"{limit * 100:.4f}%", "--json", "--quiet"])
    assert rc == 1
    assert "thresholds exceeded: mean FCT error" in stderr
    audit = json.loads(stdout)
    assert not audit["passed"]
    assert [x["name"] for x in audit["thresholds"]["exceeded"]] == ["max_mean_error"]
    assert audit["thresholds"]["exceeded"][0]["value"] > limit
    assert audit["worst_entries"][0]["digest"] == digest  # named first among the entries
    assert digest in (out / "report.html").read_text()
    _check_json_matches_tables(out, audit)


def test_the_small_trace_audit_with_memo_hits_holds_the_iteration_bound(noise_audit):
    """The audit with jumps and memo hits (the small trace on per-flow ports): most of the run
    fast-forwarded, memo hits applied, and every iteration's time within 1% of the full run's.
    Measured 2026-12-01 (late): 65.7% of events avoided, 171 memo hits (mostly courses of settled
    partitions, each entry confirmed by a simulated first hit: 17 confirmed, 19 refuted), iteration
    time 0.68% at most.  Before courses were confirmed their hits put iterations 1.3-3.1% short;
    before courses at all, 3 hits and 1.0076% (a strict xfail).  Catches a jump or hit that
    credits the wrong bytes on the critical path."""
    out, audit = noise_audit
    ff = audit["fast_forward"]
    assert ff["events_avoided"] >= 0.5 and ff["steady_jumps"] >= 10 and ff["memo_jumps"] >= 1
    assert audit["memo"]["hits"] >= 1
    assert audit["flows"]["incomplete_wormhole"] == 0 == audit["flows"]["incomplete_full"]
    assert audit["iteration_error"]["max"] <= 0.01


def test_the_small_trace_audit_with_memo_hits_holds_the_mean_fct_bound(noise_audit):
    """The aggregate the issue always bounds: mean FCT within 1% (network flows).  A 5% error on
    one ring step moves it by about 1%."""
    out, _ = noise_audit
    assert abs(_mean_fct_error(out)) <= 0.01


def test_the_small_trace_audit_per_flow_errors_are_within_the_noise_floor(noise_audit):
    """Per statistic, the bound is the larger of the issue's (mean 1%, p99 5%) and the full
    simulation's own noise floor (two draws).  Measured 2026-12-01 (evening), with the generator's
    per-tensor buckets (16 MB all-reduces, 4 MB ring steps): mean 3.89% against a floor of 11.8%,
    p99 40.6% against 88.0%; with the layer-sized buckets before, it was beyond (mean 1.96% against
    a floor of 1.24%) and this test a strict xfail."""
    _, audit = noise_audit
    fct, floor = audit["fct_error"], audit["noise_floor"]["fct_error"]
    assert fct["mean"] <= max(0.01, floor["mean"]) and fct["p99"] <= max(0.05, floor["p99"]), (fct, floor)


@pytest.fixture(scope="module")
def long_ring_trace(tmp_path_factory):
    """One GPT-13B layer on 16 GPUs (TP 4 in a server, DP 4 across the rail), 800 MB buckets: the
    benchmark's shape (tools/bench_wormhole.py) cut to a layer: DP ring steps of 13 and 58 MB."""
    import dataclasses

    from wormhole_replay.workload.generators import GPT_PRESETS, gpt_trace
    from wormhole_replay.workload.trace import save_trace

    path = tmp_path_factory.mktemp("long-ring") / "gpt13b-1layer.parquet"
    shape = dataclasses.replace(GPT_PRESETS["gpt-13b"], layers=1)
    save_trace(gpt_trace(shape, 16, tp=4, bucket_mb=800, name="gpt-13b"), path)
    return path


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_a_gpt_layer_with_long_ring_steps_is_fast_forwarded_within_the_bounds(long_ring_trace, cc, tmp_path):
    """The headline at reduced scale: an audit with the issue's thresholds as a CI gate would set
    them passes, having fast-forwarded most of the run.  Measured 2026-12-01 (evening, per-tensor
    buckets: a first all-reduce of one MLP matrix, 52 MB, whose 13 MB ring steps are short, then
    one of 232 MB; HPCC / DCQCN): 86.7% / 80.1% of events avoided in 36 / 24 steady jumps; per-flow
    FCT error mean 0.039% / 0.016%, p99 0.11% / 0.03%; iteration time 0.036% / 0.023%.  (With
    layer-sized buckets, one 157 MB all-reduce: 97.0% / 98.2%.)  The noise floor (1 ns) is below
    0.01% on every statistic, so the absolute bounds decide.  Catches a jump crediting wrong bytes
    or landing at the wrong time, and a change that stops jumping here (the events avoided)."""
    out = tmp_path / cc
    rc, stdout, stderr = _audit([str(long_ring_trace), "--topology", "rail:servers=4,gpus_per_server=4", "--cc", cc,
                                 "--out", str(out), "--max-mean-error", "1%", "--max-p99-error", "5%",
                                 "--max-iteration-error", "1%", "--json", "--quiet"])
    assert rc == 0, stderr
    audit = json.loads(stdout)
    assert audit["passed"] and audit["fct_error"]["count"] == audit["flows"]["network"] == 192
    ff = audit["fast_forward"]
    assert ff["events_avoided"] >= 0.75 and ff["steady_jumps"] >= 16, ff
    assert abs(_mean_fct_error(out)) <= 0.01


@pytest.mark.parametrize("sample,cc", [("gpt", "hpcc"), ("moe", "hpcc"), ("gpt", "dcqcn"), ("moe", "dcqcn")])
def test_bundled_samples_are_fast_forwarded_within_their_noise_floor(sample, cc, tmp_path):
    """The bundled samples are chaotic DAG workloads (16 GPUs on a 4x4 rail, contending): a few
    settled jumps and memo courses, and every statistic within the full simulation's own noise
    floor (four draws), the mean FCT within 1%.  Measured 2026-12-01 (gpt-hpcc, moe-hpcc, gpt-dcqcn,
    moe-dcqcn): events avoided 12.5%, 5.0%, 12.3%, 8.9%; per-flow FCT error mean 0.18%, 1.4%, 4.8%,
    0.00% against floors of 4.8%, 2.2%, 5.9%, 13.1%; iteration 0.14%, 0.05%, 2.6%, 0.00% against
    2.5%, 3.6%, 3.9%, 5.2%; mean FCT -0.04%, -0.03%, -0.27%, 0.00% (the floor's own draws move the
    mean FCT by up to 1.7%, 0.3%, 1.1%, 1.0%).  Until 2026-12-01 no jump was allowed here (a
    settled jump then needed a full window) and these runs equalled the full one.  Catches a jump
    or memo hit perturbing a chaotic run beyond what one nanosecond does."""
    out = tmp_path / sample
    rc, stdout, stderr = _audit([str(REPO / "traces" / f"{sample}-16gpu.trace.parquet"), "--topology",
                                 "rail:servers=4,gpus_per_server=4", "--cc", cc, "--out", str(out),
                                 "--noise-floor", "4", "--json", "--quiet"])
    assert rc == 0, stderr
    audit = json.loads(stdout)
    assert audit["wormhole"]["wormhole"]["fast_forwards"] > 0 and audit["fast_forward"]["events_avoided"] > 0.03
    assert audit["noise_floor"]["all_within"], audit["noise_floor"]["verdict"]
    assert abs(_mean_fct_error(out)) <= 0.01
    _check_json_matches_tables(out, audit)
