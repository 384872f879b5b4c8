"""Reader for HPCC ns-3 ``topology.txt`` files (and SimAI's variant of the format).

The format (HPCC ``scratch/third.cc``)::

    node_num switch_num link_num
    <switch_num switch node ids>            # every other id is a host
    src dst rate delay error_rate           # link_num lines, e.g. 0 320 100Gbps 1000ns 0.000000

SimAI's ns-3 uses a 6-field header, ``total_nodes gpus_per_server nvswitch_num switch_num
links gpu_type``, whose second line lists the ``nvswitch_num + switch_num`` switch ids; we
treat NVSwitches as switches and take ``gpus_per_server`` from the header.

The reference reads the file token by token; we read it line by line (tokens separated by
white space, blank lines ignored, lines after the last link ignored) so that errors can name
the line.
"""

from __future__ import annotations


import numpy as np

from wormhole_replay.errors import InputError, read_input_text
from wormhole_replay.topology.model import Topology
from wormhole_replay.topology.units import parse_rate_bps, parse_time_ns

_LINK_FIELDS = "'src dst rate delay error_rate'"


def _int_token(token: str, what: str, where: str) -> int:
    try:
        return int(token)
    except ValueError:
        raise InputError(f"{where}: {what} must be an integer, got {token!r}") from None


def read_topology_file(path, gpus_per_server: int | None = None) -> Topology:
    """Read an HPCC (or SimAI) ``topology.txt``.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Error messages name it as given.
    gpus_per_server : int, optional
        How many consecutive hosts share a server. Default: the SimAI header's value, else 1.
        Passing a value that contradicts a SimAI header is an error.

    Returns
    -------
    Topology
        Links in file order; ``name`` is ``str(path)``.

    Raises
    ------
    InputError
        Missing file, malformed header, wrong counts, bad numbers or units, node ids out of
        range, or a topology that fails :meth:`Topology.validate`; the message names
        ``file:line`` where there is one.
    """
    name = str(path)
    text = read_input_text(path, "topology file")

    # (line number, tokens) for each non-blank line.
    lines = [(no, line.split()) for no, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InputError(f"{name}: empty file (expected header 'node_num switch_num link_num')")
    cursor = iter(lines)

    # Header.
    no, header = next(cursor)
    where = f"{name}:{no}"
    if len(header) == 3:
        node_num, switch_num, link_num = (
            _int_token(tok, what, where)
            for tok, what in zip(header, ("node_num", "switch_num", "link_num"))
        )
        header_gpus = None
    elif len(header) == 6:
        node_num, header_gpus, nvswitch_num, plain_switch_num, link_num = (
            _int_token(tok, what, where)
            for tok, what in zip(
                header[:5], ("total_nodes", "gpus_per_server", "nvswitch_num", "switch_num", "links")
            )
        )
        if nvswitch_num < 0 or plain_switch_num < 0:
            raise InputError(f"{where}: switch counts must be >= 0")
        switch_num = nvswitch_num + plain_switch_num
    else:
        raise InputError(
            f"{where}: expected header 'node_num switch_num link_num' (or SimAI's 6 fields "
            f"'total_nodes gpus_per_server nvswitch_num switch_num links gpu_type'), "
            f"got {len(header)} fields"
        )
    if node_num < 1:
        raise InputError(f"{where}: node_num must be >= 1, got {node_num}")
    if not 0 <= switch_num <= node_num:
        raise InputError(f"{where}: switch count {switch_num} not in 0..node_num={node_num}")
    if link_num < 0:
        raise InputError(f"{where}: link_num must be >= 0, got {link_num}")
    if header_gpus is not None:
        if gpus_per_server is not None and gpus_per_server != header_gpus:
            raise InputError(
                f"{where}: header says gpus_per_server={header_gpus}, "
                f"but gpus_per_server={gpus_per_server} was requested"
            )
        gpus_per_server = header_gpus
    if gpus_per_server is None:
        gpus_per_server = 1

    # Switch ids.
    is_switch = np.zeros(node_num, dtype=bool)
    if switch_num > 0:
        try:
            no, ids = next(cursor)
        except StopIteration:
            raise InputError(f"{name}: missing the line of {switch_num} switch ids") from None
        where = f"{name}:{no}"
        if len(ids) != switch_num:
            raise InputError(f"{where}: expected {switch_num} switch ids, got {len(ids)}")
        for tok in ids:
            sid = _int_token(tok, "switch id", where)
            if not 0 <= sid < node_num:
                raise InputError(f"{where}: switch id {sid} out of range 0..{node_num - 1}")
            if is_switch[sid]:
                raise InputError(f"{where}: switch id {sid} listed twice")
            is_switch[sid] = True

    # Links.
    link_a = np.empty(link_num, dtype=np.int64)
    link_b = np.empty(link_num, dtype=np.int64)
    rate = np.empty(link_num, dtype=np.int64)
    delay = np.empty(link_num, dtype=np.int64)
    error = np.empty(link_num, dtype=np.float64)
    link_lines = np.empty(link_num, dtype=np.int64)
    for i in range(link_num):
        try:
            no, fields = next(cursor)
        except StopIteration:
            raise InputError(f"{name}: header promises {link_num} links, file has {i}") from None
        where = f"{name}:{no}"
        if len(fields) != 5:
            raise InputError(f"{where}: expected 5 fields {_LINK_FIELDS}, got {len(fields)}")
        src = _int_token(fields[0], "src", where)
        dst = _int_token(fields[1], "dst", where)
        for node in (src, dst):
            if not 0 <= node < node_num:
                raise InputError(f"{where}: node id {node} out of range 0..{node_num - 1}")
        if src == dst:
            raise InputError(f"{where}: link from node {src} to itself")
        try:
            rate[i] = parse_rate_bps(fields[2])
            delay[i] = parse_time_ns(fields[3])
            error[i] = float(fields[4])
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
        if rate[i] <= 0:
            raise InputError(f"{where}: rate must be > 0, got {fields[2]!r}")
        if delay[i] < 0:
            raise InputError(f"{where}: delay must be >= 0, got {fields[3]!r}")
        if not 0 <= error[i] <= 1:
            raise InputError(f"{where}: error_rate must be in [0, 1], got {fields[4]!r}")
        link_a[i], link_b[i], link_lines[i] = src, dst, no

    # Whole-topology checks (one NIC per host, connectivity) cannot name a single line
    # in general; for a host with several links, name the line of its second link.
    hosts_deg = np.bincount(np.concatenate([link_a, link_b]), minlength=node_num)
    for h in np.flatnonzero(~is_switch & (hosts_deg > 1)):
        second = np.flatnonzero((link_a == h) | (link_b == h))[1]
        raise InputError(
            f"{name}:{link_lines[second]}: host {h} has {hosts_deg[h]} links; "
            f"a host must have exactly one NIC link"
        )
    try:
        return Topology(
            n_nodes=node_num,
            is_switch=is_switch,
            link_a=link_a,
            link_b=link_b,
            link_rate_bps=rate,
            link_delay_ns=delay,
            link_error_rate=error,
            gpus_per_server=gpus_per_server,
            name=name,
        )
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
