"""The trace model, its native format, expansion into flows, and replay."""

import json
import subprocess
import sys

import numpy as np
import pytest

from wormhole_replay.errors import InputError
from wormhole_replay.replay import replay
from wormhole_replay.workload.expand import trace_to_flows
from wormhole_replay.workload.trace import Trace, load_trace, new_ops, save_trace
from wormhole_replay.topology import build_topology


def dp_trace(ranks=8, iterations=2, size=8_000_000, compute_ns=50_000):
    """Per rank and iteration: compute, then a data-parallel all-reduce over every rank."""
    rows, oid = [], 0
    last = {r: [] for r in range(ranks)}
    for it in range(iterations):
        for r in range(ranks):
            rows.append(dict(op_id=oid, rank=r, kind="compute", name="fwd_bwd", iteration=it, duration_ns=compute_ns, deps=last[r]))
            last[r] = [oid]
            oid += 1
        for r in range(ranks):
            rows.append(dict(op_id=oid, rank=r, kind="coll", name="grads", iteration=it, coll="all_reduce", group="dp",
                             bytes=size, algo="ring", deps=last[r]))
            last[r] = [oid]
            oid += 1
    return Trace(new_ops(rows), dict(ranks=ranks, groups={"dp": list(range(ranks))}, iterations=iterations))


def test_native_format_round_trip(tmp_path):
    t = dp_trace()
    save_trace(t, tmp_path / "t.parquet")
    u = load_trace(tmp_path / "t.parquet")
    assert u.meta["groups"] == t.meta["groups"]
    assert u.ops.drop(columns="deps").equals(t.ops.drop(columns="deps"))
    assert list(u.ops.deps) == list(t.ops.deps)


def test_bad_traces_are_refused(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(InputError, match="not a wormhole-replay trace"):
        load_trace(tmp_path / "x.parquet")
    with pytest.raises(InputError, match="no such trace"):
        load_trace(tmp_path / "missing.parquet")
    t = dp_trace()
    t.ops.loc[8, "coll"] = "all_scatter"  # the first collective op
    with pytest.raises(InputError, match="unknown collective type"):
        t.validate()
    t = dp_trace()
    t.ops = t.ops[~((t.ops.kind == "coll") & (t.ops["rank"] == 3) & (t.ops.iteration == 1))].reset_index(drop=True)
    with pytest.raises(InputError, match="different numbers of collectives"):
        trace_to_flows(t, build_topology("leaf-spine:hosts=8,leaves=2,spines=1"))


def test_too_few_gpus_is_an_error():
    with pytest.raises(InputError, match="needs 8 GPUs"):
        trace_to_flows(dp_trace(), build_topology("leaf-spine:hosts=4,leaves=2,spines=1"))


def test_replay_iterations_and_collectives():
    res = replay(dp_trace(), "leaf-spine:hosts=8,leaves=2,spines=1", "dcqcn")
    assert res.flows.completed.all()
    assert list(res.iterations["index"]) == [0, 1]
    assert len(res.collectives) == 2
    # an iteration takes its compute plus its all-reduce, and the second starts after the first
    it = res.iterations
    assert (it.duration_ns > 50_000).all()
    assert it.start_ns.iloc[1] >= it.start_ns.iloc[0] + 50_000
    # ring over 8 ranks: 2 x 7 steps of 8 flows
    assert (res.collectives.flows == 112).all()


def test_intra_server_traffic_skips_the_packet_network():
    """With 4 GPUs per server, ring steps between neighbours of one server are virtual flows."""
    res = replay(dp_trace(iterations=1), "leaf-spine:hosts=8,leaves=2,spines=1,gpus_per_server=4", "hpcc")
    f = res.flows[res.flows.kind == "coll"]
    same = (f.src // 4) == (f.dst // 4)
    assert f[same].virtual.all() and not f[~same].virtual.any()
    assert (f[same].packets_sent == 0).all()


def test_cli_replay_json(tmp_path):
    save_trace(dp_trace(), tmp_path / "t.parquet")
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", "replay", str(tmp_path / "t.parquet"), "--topology",
                        "leaf-spine:hosts=8,leaves=2,spines=1", "--cc", "dcqcn", "--out", str(tmp_path / "o"), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert [i["index"] for i in s["iterations"]] == [0, 1]
    for i in s["iterations"]:
        assert set(i) == {"index", "start_ns", "end_ns", "duration_ns", "wall_seconds"}
    assert (tmp_path / "o" / "flows.parquet").exists() and (tmp_path / "o" / "iterations.csv").exists()
