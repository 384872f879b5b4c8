"""Flows join and leave partitions.

Every active network flow crosses a set of links: its data path, its ACK path, and the reverse
direction of each (PFC frames travel against the data).  Flows that share a link are in one
partition: the connected components of the flow-link graph, kept incrementally.  A starting flow
thaws the frozen partitions it arrives on (skip-back), then opens a partition, joins one or merges
several (``flow_started``); a finishing flow leaves its partition, which is split if it fell apart
(``flow_finished``, a union-find over the partition's ports).  A host's NIC carries its flows'
data and its incoming flows' ACKs, so every flow that touches a host is in that host's partition.
Either way the flows sharing a port with it restart their windows, and fluid ones among them
thaw (``fluid.neighbourhood_changed``).
"""

from ..kernel import kernel
from ..layout import (CI_MEMO, CI_WH_FLUID, FT_APATH, FT_DPATH, FT_MEMO_TIMER, FT_PART, FT_PNEXT, MEMO_EMPTIED,
                      ML_EMPTIED, PT_FOREIGN, PT_LIVE_DATA, PT_MEMO_DATA, PT_MEMO_DATA_GROUPS, PT_MEMO_DATA_GROUPS_SQ, PT_NUSE,
                      PT_PART, PT_PEER, PT_PNEXT, ST_WH_SPLITS, WP_FLOWS, WP_GEN, WP_NFLOWS, WP_PORTS, WP_STATE)
from .fluid import release_all
from .fluid_groups import neighbourhood_changed
from .jump import thaw
from .partitions import (FROZEN, changed, ensure_sampling, flow_link, flow_unlink, merge, part_free, part_new,
                         port_link, port_unlink, ports_end, record, transient)


@kernel(inline="always")
def count_data(net, flows, f, column, groups_column, squares_column, by):
    """Every port flow f's data leaves from counts ``by`` more in ``column``, its group of the memo's
    (``FT_MEMO_TIMER``) in ``groups_column`` and that group's square in ``squares_column``: the n
    flows counted at a port are all of group g exactly when their groups sum to n g and their
    squares to n g^2 (``data_meets``).  (A port's group was kept as one value, 0 once two groups had
    met there until it had no flow left: where a pipeline send met a ring's simulated copy, every
    later copy of that ring due there was simulated, one keeping the port for the next, 44,544 of
    the 128-GPU rail's 107,008 taken.)"""
    ft, paths, ports = flows.table, flows.paths, net.ports
    group = ft[f, FT_MEMO_TIMER]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        ports[p, column] += by
        ports[p, groups_column] += by * group
        ports[p, squares_column] += by * group * group


@kernel(inline="always")
def data_meets(net, flows, f, column, groups_column, squares_column):
    """Flow f's data would leave a port where flows counted in ``column`` (``count_data``) of
    another group than f's have theirs."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    group = ft[f, FT_MEMO_TIMER]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        n = ports[p, column]
        if n > 0 and (ports[p, groups_column] != n * group or ports[p, squares_column] != n * group * group):
            return True
    return False


@kernel
def flow_started(net, flows, events, cfg, state, parts, f):
    """Network flow f is about to start: thaw the frozen partitions it arrives on (skip-back),
    then join, merge or open a partition."""
    wp, ports, paths = parts.table, net.ports, flows.paths
    end = ports_end(flows, f)
    into = -1
    for j in range(flows.table[f, FT_DPATH], end):
        for p in (paths[j], ports[paths[j], PT_PEER]):
            k = ports[p, PT_PART]
            if k < 0:
                continue
            if wp[k, WP_STATE] == FROZEN:
                thaw(net, flows, events, cfg, state, parts, k)
            if into < 0 or wp[k, WP_NFLOWS] > wp[into, WP_NFLOWS]:
                into = k
    if into < 0:
        into = part_new(parts, state)
    for j in range(flows.table[f, FT_DPATH], end):
        for p in (paths[j], ports[paths[j], PT_PEER]):
            k = ports[p, PT_PART]
            if k >= 0 and k != into:
                merge(parts, net, flows, state, into, k)
    flow_link(parts, flows, into, f)
    foreign = 1 if flows.table[f, FT_MEMO_TIMER] == 0 else 0  # not one of the memo's timers (wormhole/timers.py)
    for j in range(flows.table[f, FT_DPATH], flows.table[f, FT_APATH]):
        ports[paths[j], PT_LIVE_DATA] += 1
    if foreign == 0:  # the memo's packet flows: another group's timers due where their data leaves are simulated
        count_data(net, flows, f, PT_MEMO_DATA, PT_MEMO_DATA_GROUPS, PT_MEMO_DATA_GROUPS_SQ, 1)
    for j in range(flows.table[f, FT_DPATH], end):
        for p in (paths[j], ports[paths[j], PT_PEER]):
            if ports[p, PT_PART] < 0:
                port_link(parts, net, into, p)
            ports[p, PT_NUSE] += 1
            ports[p, PT_FOREIGN] += foreign
    changed(parts, cfg, state, into)
    if cfg.ints[CI_WH_FLUID] != 0:
        neighbourhood_changed(net, flows, events, cfg, state, parts, into, f)
    ensure_sampling(events, cfg, state, flows.table.shape[0])


@kernel
def _find(uf, x):
    while uf[x] != x:
        uf[x] = uf[uf[x]]
        x = uf[x]
    return x


@kernel
def flow_finished(net, flows, events, cfg, state, parts, f):
    """Network flow f completed: leave its partition, which may split."""
    wp, ft, ports, paths = parts.table, flows.table, net.ports, flows.paths
    k = ft[f, FT_PART]
    if k < 0:
        return
    release_all(net, flows, cfg, state, f)
    flow_unlink(parts, flows, f)
    end = ports_end(flows, f)
    foreign = 1 if ft[f, FT_MEMO_TIMER] == 0 else 0
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        ports[paths[j], PT_LIVE_DATA] -= 1
    if foreign == 0:
        count_data(net, flows, f, PT_MEMO_DATA, PT_MEMO_DATA_GROUPS, PT_MEMO_DATA_GROUPS_SQ, -1)
    for j in range(ft[f, FT_DPATH], end):
        for p in (paths[j], ports[paths[j], PT_PEER]):
            ports[p, PT_NUSE] -= 1
            ports[p, PT_FOREIGN] -= foreign
            if ports[p, PT_NUSE] == 0:
                port_unlink(parts, net, p)
    if wp[k, WP_NFLOWS] == 0:
        if cfg.ints[CI_MEMO] & MEMO_EMPTIED:  # memo/episodes.py: a whole iteration may have ended
            record(parts, state, ML_EMPTIED, k, wp[k, WP_GEN])
        part_free(parts, state, k)
        return
    changed(parts, cfg, state, k)
    if cfg.ints[CI_WH_FLUID] != 0:  # its neighbours' shares move: they restart, and fluid ones thaw
        neighbourhood_changed(net, flows, events, cfg, state, parts, k, f)
    # union-find over the remaining flows' ports, one root per component
    n_ports = ports.shape[0]
    uf = parts.scratch_ints[:n_ports]
    part_of_root = parts.scratch_ints[n_ports:2 * n_ports]
    p = wp[k, WP_PORTS]
    while p >= 0:
        uf[p] = p
        part_of_root[p] = -1
        p = ports[p, PT_PNEXT]
    g = wp[k, WP_FLOWS]
    while g >= 0:
        r0 = _find(uf, paths[ft[g, FT_DPATH]])
        for j in range(ft[g, FT_DPATH], ports_end(flows, g)):
            for p in (paths[j], ports[paths[j], PT_PEER]):
                r = _find(uf, p)
                if r != r0:
                    uf[r] = r0
        g = ft[g, FT_PNEXT]
    first = _find(uf, paths[ft[wp[k, WP_FLOWS], FT_DPATH]])
    part_of_root[first] = k
    # move the flows and ports of every other component into a partition of its own
    g = wp[k, WP_FLOWS]
    while g >= 0:
        nx = ft[g, FT_PNEXT]
        r = _find(uf, paths[ft[g, FT_DPATH]])
        if part_of_root[r] < 0:
            part_of_root[r] = part_new(parts, state)
            transient(parts, cfg, state, part_of_root[r])
            state[ST_WH_SPLITS] += 1
        if part_of_root[r] != k:
            flow_unlink(parts, flows, g)
            flow_link(parts, flows, part_of_root[r], g)
        g = nx
    p = wp[k, WP_PORTS]
    while p >= 0:
        nx = ports[p, PT_PNEXT]
        r = _find(uf, p)
        if part_of_root[r] != k:
            port_unlink(parts, net, p)
            port_link(parts, net, part_of_root[r], p)
        p = nx
