"""Collective bandwidths, the per-rank iteration breakdown, the per-name (layer) breakdown and the
critical path: on hand-made tables whose answers are worked out by hand, then on a small replay."""

import numpy as np
import pandas as pd
import pytest

from wormhole_replay.observe.breakdown import add_bandwidths, covered, iteration_breakdown, layer_breakdown, union
from wormhole_replay.observe.critical import critical_path
from wormhole_replay.replay import replay
from wormhole_replay.workload.trace import Trace, new_ops


def test_union_and_coverage():
    s, e = union([5, 0, 2, 10], [7, 3, 4, 10])  # [0,3) + [2,4) overlap; [10,10) is empty
    assert s.tolist() == [0, 5, 10] and e.tolist() == [4, 7, 10]
    assert covered(s, e, [0, 2, 4, 6, 100]).tolist() == [0, 2, 4, 5, 6]
    assert covered(*union([], []), [5]).tolist() == [0]


def hand_flows():
    """Iteration 0 on two ranks (times in ns); worked out in the test below.

    rank 0: compute A [0,3000) and B [4000,8000); sends X to rank 1 [2000,6000) (all-reduce
    "grads"); receives Y from rank 1 [9000,10000) (p2p "act").  rank 1: compute [0,1000)."""
    rows = [  # flow_id, kind, name, rank, dst_rank, start, received
        (0, "compute", "fwd", 0, 0, 0, 3000),
        (1, "compute", "bwd", 0, 0, 4000, 8000),
        (2, "coll", "grads", 0, 1, 2000, 6000),
        (3, "compute", "fwd", 1, 1, 0, 1000),
        (4, "p2p", "act", 1, 0, 9000, 10000),
    ]
    f = pd.DataFrame(rows, columns=["flow_id", "kind", "name", "rank", "dst_rank", "start_ns", "received_ns"])
    f["iteration"] = 0
    return f


def test_iteration_breakdown_by_hand():
    its = pd.DataFrame({"index": [0], "start_ns": [0], "end_ns": [10000]})
    b = iteration_breakdown(hand_flows(), its).set_index("rank")
    # rank 0: compute 3000 + 4000; communication [2000,6000) + [9000,10000) = 5000, of which
    # [2000,3000) and [4000,6000) are under compute (3000); idle is [8000,9000)
    r0 = b.loc[0]
    assert (r0.compute_ns, r0.communication_ns, r0.overlapped_ns, r0.exposed_communication_ns, r0.idle_ns) == \
        (7000, 5000, 3000, 2000, 1000)
    # rank 1: compute 1000; it receives X and sends Y: 5000, none hidden; idle the rest
    r1 = b.loc[1]
    assert (r1.compute_ns, r1.communication_ns, r1.overlapped_ns, r1.exposed_communication_ns, r1.idle_ns) == \
        (1000, 5000, 0, 5000, 4000)
    assert (b.compute_ns + b.exposed_communication_ns + b.idle_ns == b.iteration_ns).all()


def test_layer_breakdown_by_hand():
    t = layer_breakdown(hand_flows()).set_index("name")
    assert t.loc["fwd", "ranks"] == 2 and t.loc["fwd", "compute_ns"] == 2000  # (3000 + 1000) / 2
    assert t.loc["bwd", "compute_ns"] == 4000
    # grads: 4000 on both ranks; rank 0's compute hides 3000 of it, rank 1's none
    g = t.loc["grads"]
    assert (g.kind, g.ranks, g.communication_ns, g.exposed_communication_ns, g.exposed_communication_max_ns) == \
        ("coll", 2, 4000, 2500, 4000)
    assert t.loc["act", "exposed_communication_ns"] == 1000
    later = hand_flows().assign(start_ns=lambda f: f.start_ns + 12345, received_ns=lambda f: f.received_ns + 12345)
    assert layer_breakdown(later).equals(layer_breakdown(hand_flows()))  # only durations matter


def test_breakdown_of_many_iterations_and_an_absent_rank():
    # the same iteration twice, 1 ms apart, and a rank 2 with nothing to do: all idle
    f = hand_flows()
    g = f.assign(iteration=1, flow_id=f.flow_id + 10, start_ns=f.start_ns + 1_000_000,
                 received_ns=f.received_ns + 1_000_000)
    extra = f.iloc[[0]].assign(flow_id=99, rank=2, dst_rank=2, start_ns=0, received_ns=0)  # a zero-length op
    its = pd.DataFrame({"index": [0, 1], "start_ns": [0, 1_000_000], "end_ns": [10000, 1_010_000]})
    b = iteration_breakdown(pd.concat([f, g, extra]), its)
    one = b[b.iteration == 1].drop(columns=["iteration", "start_ns", "end_ns"]).reset_index(drop=True)
    zero = b[b.iteration == 0].drop(columns=["iteration", "start_ns", "end_ns"]).reset_index(drop=True)
    assert one.equals(zero)
    r2 = b[(b["rank"] == 2)]
    assert (r2.idle_ns == 10000).all() and (r2.compute_ns == 0).all()


def test_critical_path_follows_the_last_arriving_predecessor():
    f = hand_flows()
    deps = pd.DataFrame({"flow_id": [1, 2, 4, 4, 4], "dep": [0, 0, 1, 2, 3]})
    assert critical_path(f, deps, 0) == [0, 1, 4]  # Y waited for B (8000), not X (6000) nor rank 1 (1000)
    f.loc[f.flow_id == 2, "received_ns"] = 8000  # a tie with B: the lowest flow id
    assert critical_path(f, deps, 0) == [0, 1, 4]
    assert critical_path(f[f.flow_id > 10], deps) == []


def test_bandwidths_follow_nccl_tests():
    ops = new_ops([
        dict(op_id=0, rank=0, kind="coll", name="ar", iteration=0, coll="all_reduce", group="g", bytes=4_000_000),
        dict(op_id=1, rank=0, kind="coll", name="ag", iteration=0, coll="all_gather", group="g", bytes=1_000_000),
        dict(op_id=2, rank=0, kind="coll", name="rs", iteration=0, coll="reduce_scatter", group="g", bytes=4_000_000),
        dict(op_id=3, rank=0, kind="coll", name="a2a", iteration=0, coll="all_to_all", group="g", bytes=4_000_000),
        dict(op_id=4, rank=0, kind="send", name="p", iteration=0, peer=1, bytes=1_000_000),
    ])
    coll = pd.DataFrame({"unit": range(5), "op_id": range(5), "duration_ns": [1000] * 5})
    b = add_bandwidths(coll, ops, {"g": [0, 1, 2, 3]})
    assert b["size_bytes"].tolist() == [4_000_000] * 4 + [1_000_000]  # all-gather: 4 ranks x 1 MB gathered
    assert b["algbw_GBps"].tolist() == [4000.0] * 4 + [1000.0]  # bytes / ns = GB/s
    assert b["busbw_GBps"].tolist() == [6000.0, 3000.0, 3000.0, 3000.0, 1000.0]  # 2(n-1)/n, (n-1)/n x 3, 1
    assert b["ranks"].tolist() == [4, 4, 4, 4, 2]


def skewed_trace(ranks=4, size=1_000_000):
    """Rank r computes (r + 1) us, then an all-reduce over every rank, then 500 ns more."""
    rows, oid = [], 0
    for r in range(ranks):
        rows.append(dict(op_id=oid, rank=r, kind="compute", name="fwd", iteration=0, duration_ns=1000 * (r + 1), deps=[]))
        rows.append(dict(op_id=oid + 1, rank=r, kind="coll", name="grads", iteration=0, coll="all_reduce", group="all",
                         bytes=size, algo="ring", deps=[oid]))
        rows.append(dict(op_id=oid + 2, rank=r, kind="compute", name="step", iteration=0, duration_ns=500, deps=[oid + 1]))
        oid += 3
    return Trace(new_ops(rows), dict(ranks=ranks, groups={"all": list(range(ranks))}, iterations=1))


@pytest.fixture(scope="module")
def skewed():
    return replay(skewed_trace(), "leaf-spine:hosts=4,leaves=1,spines=0", "dcqcn", mode="full")


def test_replay_breakdown_of_a_skewed_start(skewed):
    b = skewed.breakdown.set_index("rank")
    assert b["compute_ns"].tolist() == [1500, 2500, 3500, 4500]  # exactly the trace's compute
    assert (b.compute_ns + b.exposed_communication_ns + b.idle_ns == b.iteration_ns).all()
    assert (b.overlapped_ns == 0).all()  # compute, all-reduce, compute: nothing to overlap
    # rank 0's first send waits for rank 1 (ready at 2 us): 1 us idle before it; rank 3 is the last
    # ready and its send waits for rank 0, ready long before
    f = skewed.flows
    first = f[f.kind == "coll"].groupby("rank")["start_ns"].min()
    assert first.tolist() == [2000, 3000, 4000, 4000]
    it = skewed.iterations.iloc[0]
    assert b.loc[3, "iteration_ns"] == it.duration_ns
    c = skewed.collectives.iloc[0]
    assert (c.ranks, c.size_bytes) == (4, 1_000_000)
    assert c.algbw_GBps == pytest.approx(1_000_000 / c.duration_ns)
    assert c.busbw_GBps == pytest.approx(c.algbw_GBps * 1.5)


def test_replay_critical_path_is_a_dependency_chain(skewed):
    f = skewed.flows.set_index("flow_id")
    path = critical_path(skewed.flows, skewed.deps, 0)
    edges = set(zip(skewed.deps["dep"], skewed.deps["flow_id"]))
    assert all((a, b) in edges for a, b in zip(path, path[1:]))
    assert f.loc[path[-1], "received_ns"] == f["received_ns"].max()
    assert f.loc[path[0], "kind"] == "compute" and f.loc[path[-1], "name"] == "step"
    received = f.loc[path, "received_ns"].to_numpy()
    assert (np.diff(received) > 0).all()


def test_repeated_iterations_get_bandwidths_and_breakdowns():
    # iterations beyond the trace's own are copies with new op ids: their collectives still have a size
    r = replay(skewed_trace(), "leaf-spine:hosts=4,leaves=1,spines=0", "dcqcn", iterations=2, mode="full")
    assert r.collectives["iteration"].tolist() == [0, 1]
    assert (r.collectives["size_bytes"] == 1_000_000).all() and r.collectives["busbw_GBps"].notna().all()
    assert sorted(set(r.breakdown["iteration"])) == [0, 1]
