"""Collectives expanded into flow DAGs, replayed on an idle fabric against analytic times."""

import numpy as np
import pytest

from wormhole_replay.api import execute, prepare_direct_run
from wormhole_replay.errors import InputError
from wormhole_replay.workload.collectives import all_reduce_ring, all_to_all, reduce_scatter_ring
from wormhole_replay.workload.flowfile import FlowSet, find_cycle

STAR = "leaf-spine:hosts=9,leaves=1,spines=0"
LINK = 100e9
PROP = 1000  # ns per link


def replay(block, topology=STAR, cc="dcqcn"):
    fs = FlowSet.from_columns(block.src, block.dst, block.size, 0, deps=block.deps)
    r = prepare_direct_run(topology, fs, cc, out=None)
    return execute(r)


def test_ring_all_reduce_matches_analytic_time():
    """n ranks on one switch, S bytes each: 2(n-1) steps of S/n.  Every host link carries a
    step's data one way and the ACKs of the step it receives the other, so a step moves
    S/n x (1052 + 60)/1000 wire bytes per link at 100 Gb/s, plus two hops of propagation."""
    n, size = 8, 16_000_000
    ranks = list(range(1, n + 1))
    res = replay(all_reduce_ring(ranks, size))
    f = res.flows
    assert f.completed.all() and len(f) == n * 2 * (n - 1)
    total = f.received_ns.max() - f.start_ns.min()
    chunk = size / n
    step = chunk * (1052 + 60) / 1000 * 8 / LINK * 1e9 + 2 * PROP
    analytic = 2 * (n - 1) * step
    assert abs(total / analytic - 1) < 0.02
    # the ring's traffic: each rank sends 2(n-1) chunks of S/n, no more (a ring that sends whole
    # buffers, or one step too many, could still finish near the analytic time on idle links)
    sent = f.groupby("src")["size_bytes"].sum()
    assert len(sent) == n and (sent == 2 * (n - 1) * size // n).all()


def test_dependencies_are_respected():
    n = 4
    block = reduce_scatter_ring(list(range(1, n + 1)), 4_000_000)
    f = replay(block).flows.set_index("flow_id")
    for i, deps in enumerate(block.deps):
        for d in deps:
            assert f.loc[i, "start_ns"] >= f.loc[d, "received_ns"]


def test_all_to_all_matches_analytic_time():
    """Every rank sends S to each of n-1 peers at once; each host link carries (n-1) x S of
    data (and as many ACKs the other way): (n-1) x S x (1052 + 60)/1000 x 8 / B."""
    n, size = 4, 2_000_000
    res = replay(all_to_all(list(range(1, n + 1)), size))
    f = res.flows
    assert f.completed.all() and len(f) == n * (n - 1)
    total = f.received_ns.max() - f.start_ns.min()
    analytic = (n - 1) * size * (1052 + 60) / 1000 * 8 / LINK * 1e9 + 2 * PROP
    assert abs(total / analytic - 1) < 0.02


def test_uneven_all_to_all_and_bad_sizes():
    block = all_to_all([1, 2, 3], [[0, 5, 0], [7, 0, 1], [0, 0, 0]])
    assert sorted(zip(block.src, block.dst, block.size)) == [(1, 2, 5), (2, 1, 7), (2, 3, 1)]
    with pytest.raises(InputError):
        all_reduce_ring([1, 1, 2], 1000)
    with pytest.raises(InputError):
        all_reduce_ring([1, 2, 3], 2)


def test_a_dependency_cycle_is_refused():
    fs = FlowSet.from_columns([1, 2], [2, 1], [1000, 1000], 0, deps=[[1], [0]])
    with pytest.raises(InputError, match="cycle"):
        execute(prepare_direct_run(STAR, fs, "dcqcn", out=None))


def test_find_cycle_takes_id_order_at_once_and_otherwise_searches():
    assert find_cycle(np.array([0, 0, 1, 2]), np.array([0, 1])) is None  # each on a lower id: a DAG at once
    assert find_cycle(np.array([0, 1, 1, 1]), np.array([2])) is None  # flow 0 after flow 2: still a DAG
    assert find_cycle(np.array([0, 1, 2]), np.array([1, 0])) == 0  # 0 after 1 after 0
    assert find_cycle(np.array([0, 1]), np.array([0])) == 0  # a flow after itself


def test_virtual_flows_are_compute_and_intra_server_copies():
    """A compute op (virtual, 20 us) between two network transfers: the second starts when the
    compute is done; a virtual flow never touches the packet network or fct.txt."""
    from wormhole_replay.engine.simulate import format_fct

    fs = FlowSet.from_columns([1, 2, 2], [2, 2, 3], [500_000, 0, 500_000], 0, deps=[[], [0], [1]],
                              duration_ns=[-1, 20_000, -1])
    f = execute(prepare_direct_run(STAR, fs, "dcqcn", out=None)).flows
    assert f.completed.all()
    assert f.loc[1, "start_ns"] == f.loc[0, "received_ns"]
    assert f.loc[1, "finish_ns"] == f.loc[1, "start_ns"] + 20_000
    assert f.loc[2, "start_ns"] == f.loc[1, "finish_ns"]
    assert f.loc[1, "packets_sent"] == 0
    assert len(format_fct(f).splitlines()) == 2


def test_double_binary_tree_all_reduce():
    from wormhole_replay.workload.collectives import all_reduce_tree

    n, size = 7, 2_000_000
    block = all_reduce_tree(list(range(1, n + 1)), size)
    # two trees, each: n-1 reduce flows up and n-1 broadcast flows down, of half the buffer
    assert len(block) == 4 * (n - 1) and set(block.size) == {size // 2}
    f = replay(block).flows.set_index("flow_id")
    assert f.completed.all()
    for i, deps in enumerate(block.deps):
        for d in deps:
            assert f.loc[i, "start_ns"] >= f.loc[d, "received_ns"]
    # what each flow carries: its sender's own contribution and all that the flows it waited for
    # carried.  In each tree, every rank must end up with every rank's contribution: a missing or
    # wrong dependency (a parent forwarding before its children reported) leaves someone short
    carries = []
    for i, deps in enumerate(block.deps):
        carries.append({block.src[i]}.union(*(carries[d] for d in deps)))
    ranks = set(range(1, n + 1))
    for tree in (0, 1):
        flows = [i for i in range(len(block.src)) if block.channel[i] == tree]
        for r in ranks:
            has = {r}.union(*(carries[i] for i in flows if block.dst[i] == r))
            assert has == ranks, (tree, r, sorted(ranks - has))
