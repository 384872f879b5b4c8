"""Source ports, which decide ECMP paths: a flow file numbered as the reference's third.cc does,
and replayed collectives that keep their connections' ports (and so their paths)."""

import numpy as np

from wormhole_replay import simulate
from wormhole_replay.replay import replay
from wormhole_replay.topology import build_topology
from wormhole_replay.topology.routing import compute_routes, flow_path
from wormhole_replay.workload.flowfile import FlowSet
from wormhole_replay.workload.ports import replay_source_ports

from test_replay import dp_trace


def test_flow_file_ports_are_numbered_per_host_pair_in_start_order():
    """third.cc: ``port = portNumder[src][dst]++`` from 10000, flows taken in start order.  Catches
    a per-source counter (host 0's flow to host 2 would get 10001 or 10002) and numbering in file
    order instead of start order (the two 0 -> 1 flows would swap)."""
    fs = FlowSet.from_columns(src=[0, 0, 0, 3, 0], dst=[1, 2, 1, 1, 1], size=[100_000] * 5,
                              start_ns=[2000, 1000, 500, 1000, 3000])
    r = simulate("leaf-spine:hosts=8,leaves=2,spines=2", fs, cc="dcqcn")
    assert r.flows.sort_values("flow_id")["sport"].tolist() == [10001, 10000, 10000, 10000, 10002]


def test_connection_ports_repeat_per_connection_and_pair():
    """Connections of one host pair count from 10000 in first-use order; a connection used again
    keeps its port; virtual flows take none."""
    src, dst = [0, 0, 0, 0, 1, 0], [1, 1, 1, 2, 0, 1]
    conn = [("dp", "ring", 0), ("tp", "ring", 0), ("dp", "ring", 0), ("dp", "ring", 0), ("dp", "ring", 0), None]
    virtual = [False, False, False, False, False, True]
    assert replay_source_ports(src, dst, conn, virtual).tolist() == [10000, 10001, 10000, 10000, 10000, 0]
    assert replay_source_ports(src, dst, conn, virtual, "flow").tolist() == [10000, 10001, 10002, 10000, 10000, 0]


def _paths(topo, flows):
    routes = compute_routes(topo)
    return {int(r.flow_id): flow_path(topo, routes, int(r.src), int(r.dst), int(r.sport), int(r.dport))
            for r in flows.itertuples()}


def _by_step(flows, iteration):
    """The ring flows of one iteration's all-reduce, keyed by (sender, position among its sends)."""
    f = flows[(flows["iteration"] == iteration) & (flows["kind"] == "coll")].sort_values("flow_id")
    return {(int(s), k): int(fid) for s, g in f.groupby("src") for k, fid in enumerate(g["flow_id"])}


def test_successive_all_reduces_of_a_group_take_the_same_paths():
    """NCCL reuses a communicator's connections, and RoCEv2 derives the UDP source port from the
    queue pair: the two iterations' all-reduces of the DP group cross the fabric on the same ECMP
    paths, step for step.  Per-flow ports (``ports="flow"``, ns-3's numbering) re-draw them; on this
    k=4 fat-tree some ring steps then change path, which is what made contention reshuffle from one
    collective to the next."""
    topo = build_topology("fat-tree:k=4")
    trace = dp_trace(ranks=8, iterations=2, size=800_000)
    stable = replay(trace, "fat-tree:k=4", "dcqcn", mode="full").flows
    paths = _paths(topo, stable)
    first, second = _by_step(stable, 0), _by_step(stable, 1)
    assert first.keys() == second.keys() and len(first) == 8 * 14
    for key in first:
        assert paths[first[key]] == paths[second[key]]
        assert stable.set_index("flow_id").loc[first[key], "sport"] == stable.set_index("flow_id").loc[second[key], "sport"]

    redrawn = replay(trace, "fat-tree:k=4", "dcqcn", mode="full", ports="flow").flows
    paths = _paths(topo, redrawn)
    first, second = _by_step(redrawn, 0), _by_step(redrawn, 1)
    assert len(set(redrawn["sport"][redrawn["kind"] == "coll"])) > 1
    assert sum(paths[first[k]] != paths[second[k]] for k in first) > 0
