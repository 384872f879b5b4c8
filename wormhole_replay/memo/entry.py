"""A memo entry as the engine, the store and the export format see it.

Three kinds, each keyed by a canonical Flow Conflict Graph (``memo/fcg.py``) and a network
fingerprint (``memo/fingerprint.py``):

* ``transient``: ``key`` is the FCG when a partition's flows changed; ``value`` is
  ``{"t_conv_ns": int, "bytes": [int per vertex], "rates": [float per vertex]}``: how long the
  transient lasted, what each flow delivered meanwhile, and the rates at its end (the converged
  FCG: the same edges with these vertex weights); optionally ``"steady": bool`` (default true:
  it ended in a steady state, which a hit continues at ``rates``; false: a prefix, ended by a
  change), ``"pipe": [int per vertex]`` (bytes in flight at the end, up to one BDP) and
  ``"cc": [[16 numbers] per vertex]`` (the CC state and timer phases at the end).
* ``course``: a transient of a partition with no shares to settle (``engine.wormhole.settled``),
  keyed from the change on (often a flow's first packet) by its start FCG over data and ACK ports
  with each vertex also weighted by the flow's base RTT, bytes left, bytes in flight and HPCC
  state (``fcg.course_weight``); ``value`` as a transient's, with ``"in_flight": [int per
  vertex]`` (bytes in flight where it began: a hit credits ``bytes + pipe - in_flight``, what the
  course sent).  Its flows cannot contend, so the course is a function of their own state, path
  and size.
* ``steady``: ``key`` is the FCG with the steady rates as vertex weights; ``value`` is
  ``{"rates": [float per vertex]}`` (the unquantised rates, bits per second), optionally ``"cc"``.

* ``episode``: a replay's iteration that ran alone on the network (``memo/episodes.py``); ``key``
  has one vertex per flow of the iteration in id order, weighted by a digest of what its course
  depends on, and its DAG inside the iteration as edges (weight 1: i precedes j, 2: j precedes i);
  ``wl_hash`` is the key's SHA-256; ``value`` is ``{"start_ns": [int per vertex], "rx_ns": [...],
  "fct_ns": [...]}``: each network flow's start after the iteration's first, and its time from
  its start to its last byte received and to its last ACK (-1 for a virtual flow).
* ``recurring``: a flow that recurs in a run (``memo/recurring.py``); ``key`` has one vertex, a
  digest of the flow's class (hosts, ports, priority, size) and of the set of classes its run sends,
  and no edges; ``wl_hash`` is the key's SHA-256; ``value`` is ``{"rx_ns": [int per copy],
  "fct_ns": [int per copy], "alone_rx_ns": [int per copy]}``: the times its simulated copies took
  from their start to their last byte received and to their last ACK, and the first at the pace
  each would have had alone (``recurring.Recurring.spent_beside``, ``recurring._alone``; positive, as many of each; entries made
  before 2026-12-03 have no ``alone_rx_ns`` and a key no run makes any more), and ``"gain"``, the
  pace gain those alone times are at (``recurring.fit_gain``, above 0 and at most 2; 1 where absent,
  as in entries made before 2026-12-04).  A refuted class's entry (its key's digest also holds
  ``by-place``) and a trusted class's copies simulated from their start (``simulated-by-place``)
  have ``"places"``: each copy's ordinal among its class's copies of its iteration
  (``recurring.Recurring._place``; distinct, non-negative); their times are as simulated, and the
  refuted class's entry is marked ``"refuted": true`` (since 2026-12-05; before, it held
  ``alone_rx_ns``, which no run reads any more).  A small class's entry (``aside-by-copy``, since
  2026-12-05, late: ``recurring.Recurring._aside``) holds its copies as simulated, ``"places"``
  their ordinals among the class's copies in the run, and is marked ``"aside": true``.

``key`` is ``{"v": [int quantised vertex weight], "e": [[i, j, int weight], ...]}`` with ``i < j``,
edges sorted; per-vertex lists in ``value`` follow the order of ``key["v"]``.  ``digest`` names an
entry uniquely (the store's unique key): two processes that learn the same FCG in the same vertex
order insert one row; isomorphic keys in another order are caught by the store's bucket check.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

KINDS = ("transient", "steady", "course", "episode", "recurring")
CC_FIELDS = 16  # per-flow CC state a value may carry (engine/memo_view.py: CC_RATES, CC_COUNTERS, timer phases)


def canonical_json(obj) -> str:
    """The one JSON spelling used for digests and the export format."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass
class MemoEntry:
    kind: str
    fingerprint: str
    scheme: str
    wl_hash: str
    key: dict
    value: dict
    n_vertices: int = field(init=False)
    n_edges: int = field(init=False)
    digest: str = field(init=False)

    def __post_init__(self):
        self.n_vertices = len(self.key["v"])
        self.n_edges = len(self.key["e"])
        text = canonical_json([self.kind, self.fingerprint, self.scheme, self.key])
        self.digest = hashlib.sha256(text.encode()).hexdigest()

    def as_dict(self) -> dict:
        return {"kind": self.kind, "fingerprint": self.fingerprint, "scheme": self.scheme,
                "wl_hash": self.wl_hash, "key": self.key, "value": self.value, "digest": self.digest}


def validate(d: dict) -> MemoEntry:
    """An entry from its ``as_dict`` form, or ``ValueError`` saying what is wrong with it."""
    if not isinstance(d, dict):
        raise ValueError("an entry must be an object")
    for name, typ in (("kind", str), ("fingerprint", str), ("scheme", str), ("wl_hash", str),
                      ("key", dict), ("value", dict)):
        if not isinstance(d.get(name), typ):
            raise ValueError(f"entry field {name!r} missing or not a {typ.__name__}")
    if d["kind"] not in KINDS:
        raise ValueError(f"unknown entry kind {d['kind']!r}")
    v, e = d["key"].get("v"), d["key"].get("e")
    if not isinstance(v, list) or not v or not all(type(x) is int and x >= 0 for x in v):
        raise ValueError("key.v must be a non-empty list of non-negative integers")
    n = len(v)
    if not isinstance(e, list):
        raise ValueError("key.e must be a list")
    for edge in e:
        if (not isinstance(edge, list) or len(edge) != 3 or not all(type(x) is int for x in edge)
                or not 0 <= edge[0] < edge[1] < n or edge[2] < 1):
            raise ValueError(f"bad edge {edge!r} in key.e")
    if e != sorted(e) or len({(a, b) for a, b, _ in e}) != len(e):
        raise ValueError("key.e must be sorted without repeated pairs")
    val = d["value"]
    if d["kind"] == "episode":
        for name in ("start_ns", "rx_ns", "fct_ns"):
            x = val.get(name)
            if not isinstance(x, list) or len(x) != n or not all(type(y) is int and y >= -1 for y in x):
                raise ValueError(f"value.{name} must hold one integer (-1 or more) per vertex")
        return _checked(d, val)
    if d["kind"] == "recurring":
        rx, fct = val.get("rx_ns"), val.get("fct_ns")
        for name, x in (("rx_ns", rx), ("fct_ns", fct)):
            if not isinstance(x, list) or not x or not all(type(y) is int and y > 0 for y in x):
                raise ValueError(f"value.{name} must be a non-empty list of positive integers")
        if len(rx) != len(fct) or n != 1 or e:
            raise ValueError("a recurring flow's key has one vertex and its value as many rx_ns as fct_ns")
        alone = val.get("alone_rx_ns", rx)
        if not isinstance(alone, list) or len(alone) != len(rx) or not all(type(y) is int and y > 0 for y in alone):
            raise ValueError("value.alone_rx_ns must hold one positive integer per copy")
        gain = val.get("gain", 1.0)
        if isinstance(gain, bool) or not isinstance(gain, (int, float)) or not 0 < gain <= 2:
            raise ValueError("value.gain must be a number above 0 and at most 2")
        for flag in ("refuted", "aside"):
            if not isinstance(val.get(flag, False), bool):
                raise ValueError(f"value.{flag} must be true or false")
        places = val.get("places", list(range(len(rx))))
        if (not isinstance(places, list) or len(places) != len(rx) or not all(type(y) is int and y >= 0 for y in places)
                or len(set(places)) != len(places)):
            raise ValueError("value.places must hold one distinct non-negative integer per copy")
        return _checked(d, val)
    rates = val.get("rates")
    if not isinstance(rates, list) or len(rates) != n or not all(
            isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r < 1e15 for r in rates):
        raise ValueError("value.rates must hold one positive rate per vertex")
    if d["kind"] in ("transient", "course"):
        b, t = val.get("bytes"), val.get("t_conv_ns")
        if not isinstance(b, list) or len(b) != n or not all(type(x) is int and x >= 0 for x in b):
            raise ValueError("value.bytes must hold one non-negative integer per vertex")
        if type(t) is not int or t < 0:
            raise ValueError("value.t_conv_ns must be a non-negative integer")
    if "steady" in val and not isinstance(val["steady"], bool):
        raise ValueError("value.steady must be true or false")
    if "pipe" in val and (not isinstance(val["pipe"], list) or len(val["pipe"]) != n
                          or not all(type(x) is int and x >= 0 for x in val["pipe"])):
        raise ValueError("value.pipe must hold one non-negative integer per vertex")
    if "in_flight" in val and (not isinstance(val["in_flight"], list) or len(val["in_flight"]) != n
                               or not all(type(x) is int and x >= 0 for x in val["in_flight"])):
        raise ValueError("value.in_flight must hold one non-negative integer per vertex")
    cc = val.get("cc")
    if cc is not None and (not isinstance(cc, list) or len(cc) != n or not all(
            isinstance(row, list) and len(row) == CC_FIELDS
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in row)
            for row in cc)):
        raise ValueError(f"value.cc must hold one row of {CC_FIELDS} numbers per vertex")
    return _checked(d, val)


def _checked(d: dict, val: dict) -> MemoEntry:
    entry = MemoEntry(d["kind"], d["fingerprint"], d["scheme"], d["wl_hash"], d["key"], val)
    if "digest" in d and d["digest"] != entry.digest:
        raise ValueError(f"digest {d['digest']!r} does not match the entry's content")
    return entry
