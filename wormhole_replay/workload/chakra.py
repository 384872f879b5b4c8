"""MLCommons Chakra execution traces (ET) into the native trace.

The few messages the importer needs are declared here from Chakra's wire contract (field numbers
and enum values of ``et_def.proto``, schema 0.0.4) and built with the ``protobuf`` library; a file
is a stream of varint-length-prefixed messages, the first a ``GlobalMetadata``, then ``Node``s,
optionally gzipped.  One file per rank: ``<prefix>.<rank>.et``.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ..errors import InputError, warn_input

COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE = 1, 2, 3
COLL_TYPES = {0: "all_reduce", 2: "all_gather", 6: "all_to_all", 7: "reduce_scatter", 8: "reduce_scatter"}
COLL_AS_COMPUTE = {5: "broadcast", 9: "barrier"}  # replayed from their duration, as ASTRA-sim does
# attributes a communication node may carry (Chakra's converters and ASTRA-sim's generators);
# others are named in one warning per file: they may say something this importer does not replay
KNOWN_COMM_ATTRS = {"comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag", "comm_priority", "pg_name",
                    "involved_dim", "is_cpu_op", "rf_id", "fw_parent", "fw_tid", "op_schema", "scope", "seq_id",
                    "tid"}
SUPPORTED_VERSION = re.compile(r"(^0\.0\.[34]$)|(chakra\.0\.0\.[34]$)|(^1\.0\.[0-9]+$)|(^1\.[01]\.[0-9]+-chakra)")


def _messages():
    f = descriptor_pb2.FileDescriptorProto(name="wormhole_chakra_et.proto", package="wormhole_chakra", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto

    def msg(name, fields):
        m = f.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                fd.type_name = type_name
        return m

    opt, rep = T.LABEL_OPTIONAL, T.LABEL_REPEATED
    attr = msg("AttributeProto", [
        ("name", 1, T.TYPE_STRING, opt, None), ("double_val", 3, T.TYPE_DOUBLE, opt, None),
        ("float_val", 5, T.TYPE_FLOAT, opt, None), ("int32_val", 7, T.TYPE_INT32, opt, None),
        ("int64_val", 9, T.TYPE_INT64, opt, None), ("uint32_val", 11, T.TYPE_UINT32, opt, None),
        ("uint64_val", 13, T.TYPE_UINT64, opt, None), ("sint32_val", 15, T.TYPE_SINT32, opt, None),
        ("sint64_val", 17, T.TYPE_SINT64, opt, None), ("bool_val", 27, T.TYPE_BOOL, opt, None),
        ("string_val", 29, T.TYPE_STRING, opt, None)])
    for i, fd in enumerate(attr.field):
        if i > 0:
            fd.oneof_index = 0
    attr.oneof_decl.add(name="value")
    msg("IOInfo", [("values", 1, T.TYPE_STRING, opt, None), ("shapes", 2, T.TYPE_STRING, opt, None),
                   ("types", 3, T.TYPE_STRING, opt, None)])
    msg("GlobalMetadata", [("version", 1, T.TYPE_STRING, opt, None),
                           ("attr", 2, T.TYPE_MESSAGE, rep, ".wormhole_chakra.AttributeProto")])
    msg("Node", [("id", 1, T.TYPE_UINT64, opt, None), ("name", 2, T.TYPE_STRING, opt, None),
                 ("type", 3, T.TYPE_INT32, opt, None), ("ctrl_deps", 4, T.TYPE_UINT64, rep, None),
                 ("data_deps", 5, T.TYPE_UINT64, rep, None), ("start_time_micros", 6, T.TYPE_UINT64, opt, None),
                 ("duration_micros", 7, T.TYPE_UINT64, opt, None),
                 ("inputs", 8, T.TYPE_MESSAGE, opt, ".wormhole_chakra.IOInfo"),
                 ("outputs", 9, T.TYPE_MESSAGE, opt, ".wormhole_chakra.IOInfo"),
                 ("attr", 10, T.TYPE_MESSAGE, rep, ".wormhole_chakra.AttributeProto")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    get = lambda n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"wormhole_chakra.{n}"))
    return get("GlobalMetadata"), get("Node")


_GlobalMetadata, _Node = _messages()


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated length prefix")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("bad length prefix")


def _attrs(msg) -> dict:
    out = {}
    for a in msg.attr:
        which = a.WhichOneof("value")
        out[a.name] = getattr(a, which) if which else None
    return out


def read_et(path: str | Path) -> tuple[dict, list]:
    """One ET file: (metadata attributes incl. ``version``, list of Node messages)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such Chakra ET file")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise InputError(f"{p}: a damaged gzip file ({e})") from None
    try:
        pos, n, msgs = 0, 0, []
        while pos < len(raw):
            size, pos = _varint(raw, pos)
            if pos + size > len(raw):
                raise ValueError(f"message {n} is cut short")
            m = _GlobalMetadata() if n == 0 else _Node()
            m.ParseFromString(raw[pos:pos + size])
            msgs.append(m)
            pos += size
            n += 1
    except Exception as e:  # protobuf raises its own DecodeError
        raise InputError(f"{p}: not a readable Chakra ET ({e})") from None
    if not msgs:
        raise InputError(f"{p}: an empty Chakra ET")
    meta = _attrs(msgs[0])
    meta["version"] = msgs[0].version
    return meta, msgs[1:]


def _check_version(p, meta, nodes):
    versions = [v for v in (meta.get("version"), meta.get("schema")) if v]
    for node in nodes[:50]:  # converters put the schema on an early metadata node
        s = _attrs(node).get("schema")
        if s:
            versions.append(str(s))
    if not versions:
        raise InputError(f"{p}: no Chakra schema version in the file")
    if not any(SUPPORTED_VERSION.search(str(v)) for v in versions):
        raise InputError(f"{p}: Chakra schema {versions[0]!r} is not supported (0.0.4 / 1.x-chakra.0.0.4 are)")


def rank_files(inputs: list[str]) -> dict[int, Path]:
    """``<prefix>.<rank>.et`` files from a folder or a list of files, by rank."""
    files = []
    for i in inputs:
        p = Path(i)
        files += sorted(p.glob("*.et")) if p.is_dir() else [p]
    out = {}
    for f in files:
        m = re.search(r"\.(\d+)\.et(\.gz)?$", f.name)
        if not m:
            raise InputError(f"{f}: a Chakra ET file must be named <prefix>.<rank>.et")
        out[int(m.group(1))] = f
    if not out:
        raise InputError(f"{', '.join(inputs)}: no Chakra ET files")
    return out


def import_chakra(inputs: list[str], world_size: int | None = None):
    """Chakra ET files (one per rank) as a trace.

    Only ``data_deps`` are dependencies (``ctrl_deps`` point at the CPU op that launched a
    kernel); CPU ops (``is_cpu_op``, the ``c10d::`` collective wrappers included) and metadata
    nodes are skipped, their dependencies passed
    through to the nodes that depend on them.  Compute and memory nodes become compute ops of
    their duration; COMM_COLL_NODE a collective (``comm_type``, ``comm_size`` bytes, ``pg_name``
    group, ``""``/``"0"`` meaning every rank), with broadcast and barrier replayed from their
    duration as ASTRA-sim does; COMM_SEND/RECV_NODE point to point (``comm_src``, ``comm_dst``).
    The ranks are 0..N-1 with N = ``world_size`` or the highest rank file + 1: every rank must
    have its file, except that a single file stands for every rank (SPMD), as a one-rank
    capture does.
    """
    from .trace import Trace, new_ops

    files = rank_files(inputs)
    n = world_size or (max(files) + 1)
    missing = [r for r in range(n) if r not in files]
    if missing and len(files) > 1:
        raise InputError(f"Chakra: no file for rank {missing[0]} ({len(missing)} missing of {n})")
    parsed = {}
    groups = {}
    for r, f in files.items():
        meta, nodes = read_et(f)
        _check_version(f, meta, nodes)
        parsed[r] = (f, nodes)
        for node in nodes:
            if node.type == METADATA_NODE and "process_group:init" in node.name and node.inputs.values:
                try:
                    for pg in json.loads(node.inputs.values)[0] if node.inputs.values.startswith("[[") else json.loads(node.inputs.values):
                        if isinstance(pg, dict) and "pg_name" in pg:
                            groups[f"pg{pg['pg_name']}"] = [int(x) for x in pg.get("ranks", [])] or list(range(n))
                except (ValueError, TypeError):
                    pass
    groups.setdefault("pg0", list(range(n)))
    rows = []
    for f, nodes in parsed.values():
        unknown = {k for node in nodes if node.type in (COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE)
                   for k in _attrs(node)} - KNOWN_COMM_ATTRS
        if unknown:
            warn_input(f"{f}: communication node attributes not known here, ignored: {', '.join(sorted(unknown))}")
    for rank in range(n):
        f, nodes = parsed.get(rank, next(iter(parsed.values())))
        by_id = {node.id: node for node in nodes}
        op_of = {}  # node id -> op ids that stand for it (itself, or a skipped node's inputs)

        def resolve(nid, seen=()):
            if nid in op_of:
                return op_of[nid]
            node = by_id.get(nid)
            if node is None or nid in seen:
                return []
            return sorted({x for d in node.data_deps for x in resolve(d, seen + (nid,))})

        for node in sorted(nodes, key=lambda x: x.id):
            a = _attrs(node)
            deps = sorted({x for d in node.data_deps for x in resolve(d)})
            kind = node.type
            cpu = bool(a.get("is_cpu_op", False))
            if kind == METADATA_NODE or cpu:  # CPU wrappers (c10d::..., aten::...) launch the GPU work
                op_of[node.id] = deps  # skipped: its dependents inherit its inputs
                continue
            oid = len(rows)
            dur = int(node.duration_micros) * 1000
            if kind in (COMP_NODE, MEM_LOAD_NODE, MEM_STORE_NODE):
                rows.append(dict(op_id=oid, rank=rank, kind="compute", name=node.name[:60], duration_ns=dur, deps=deps))
            elif kind == COMM_COLL_NODE:
                ct = int(a.get("comm_type", 0))
                if ct in COLL_AS_COMPUTE:
                    rows.append(dict(op_id=oid, rank=rank, kind="compute", name=COLL_AS_COMPUTE[ct], duration_ns=dur, deps=deps))
                elif ct in COLL_TYPES:
                    pg = str(a.get("pg_name", "") or "0")
                    group = f"pg{pg}" if f"pg{pg}" in groups else "pg0"
                    rows.append(dict(op_id=oid, rank=rank, kind="coll", name=node.name[:60], coll=COLL_TYPES[ct],
                                     group=group, bytes=int(a.get("comm_size", 0)), algo="ring", deps=deps))
                else:
                    raise InputError(f"{f}: node {node.id}: unsupported collective type {ct}")
            elif kind in (COMM_SEND_NODE, COMM_RECV_NODE):
                peer = int(a.get("comm_dst" if kind == COMM_SEND_NODE else "comm_src", -1))
                rows.append(dict(op_id=oid, rank=rank, kind="send" if kind == COMM_SEND_NODE else "recv", name=node.name[:60],
                                 peer=peer, bytes=int(a.get("comm_size", 0)), deps=deps))
            else:
                raise InputError(f"{f}: node {node.id}: unknown node type {kind}")
            op_of[node.id] = [oid]
    meta = dict(ranks=n, groups=groups, iterations=1,
                provenance=dict(importer="chakra", sources=[str(p) for p in files.values()]))
    return Trace(new_ops(rows), meta)
