"""Export and import of memo entries as plain JSON (never pickle: an import must not run code).

The format, version 1: one JSON object (UTF-8) with these fields:

* ``format``: always ``"wormhole-replay-memo"``;
* ``version``: the version of this format, ``1``; a reader refuses a version it does not know;
* ``schema_revision``: the memo database's schema revision the export came from (``"0003"``),
  for information only (the entries' form does not depend on it);
* ``exported_at``: when, as ISO 8601 UTC (``"2026-11-30T12:00:00+00:00"``);
* ``entries``: a list of objects, one per entry, in the exporting database's insertion order:

  * ``kind``: ``"transient"``, ``"course"``, ``"steady"``, ``"episode"`` or ``"recurring"``
    (version 1 readers before 2026-12-01 know the first and third only, and refuse a file with
    courses; before 2026-12-03, a file with episodes or recurring flows);
  * ``fingerprint``: the network fingerprint the entry is valid for (``memo/fingerprint.py``);
  * ``scheme``: the canonical-hashing scheme (names the WL hashing version, ``memo/fcg.py``);
  * ``wl_hash``: the key's Weisfeiler-Lehman hash under that scheme (the lookup bucket; an
    episode's and a recurring flow's: the key's SHA-256);
  * ``key``: the Flow Conflict Graph, ``{"v": [int], "e": [[i, j, int], ...]}`` (an episode's:
    its flows and their DAG);
  * ``value``: what was learned, ``{"rates": [...]}`` (+ ``"bytes"``, ``"t_conv_ns"`` for a
    transient or a course, + ``"in_flight"`` for a course; an episode's ``{"start_ns": [...],
    "rx_ns": [...], "fct_ns": [...]}``, a recurring flow's ``{"rx_ns": [...], "fct_ns": [...], "alone_rx_ns": [...]}``
    per simulated copy); see ``memo/entry.py`` for all five;
  * ``digest``: SHA-256 of the entry's content; checked on import;
  * ``hits``: how often the exporting database used the entry (information only: an imported
    entry starts at 0 hits in its new database).

An import checks every entry (``entry.validate``) before writing anything, then inserts them all
in one transaction, skipping entries the database already has.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InputError, read_input_text
from ..files import write_atomic
from .entry import validate

FORMAT = "wormhole-replay-memo"
VERSION = 1


def export(store, path, fingerprint: str | None = None) -> int:
    """Write the store's entries (those of one fingerprint, if given) to ``path`` atomically;
    return how many were written."""
    rows = store.entries_with_hits(fingerprint)
    head = {"format": FORMAT, "version": VERSION, "schema_revision": store.revision,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    # one entry per line: diffable and greppable, still one JSON document
    lines = [json.dumps({**e.as_dict(), "hits": hits}, sort_keys=True, allow_nan=False) for e, hits in rows]
    body = "[\n" + ",\n".join(lines) + "\n]" if lines else "[]"
    text = json.dumps(head, sort_keys=True)[:-1] + f', "entries": {body}}}\n'

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    try:
        write_atomic(Path(path), write)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None
    return len(rows)


def import_(store, path, same=None) -> tuple[int, int]:
    """Read an export and insert its entries; return (entries read, entries inserted).

    Every entry is checked first: on any problem nothing is written and ``InputError`` names the
    entry's index. ``same`` is the isomorphism test handed to ``store.insert``.
    """
    text = read_input_text(path, "memo export")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"{path}: not a wormhole-replay memo export (no \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise InputError(f"{path}: memo export version {doc.get('version')!r} is not supported "
                         f"(this wormhole-replay reads version {VERSION})")
    items = doc.get("entries")
    if not isinstance(items, list):
        raise InputError(f"{path}: \"entries\" must be a list")
    entries = []
    for i, d in enumerate(items):
        try:
            entries.append(validate(d))
        except ValueError as e:
            raise InputError(f"{path}: entry {i}: {e}") from None
    return len(entries), store.insert(entries, same=same)
