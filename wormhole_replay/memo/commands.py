"""``wormhole-replay memo``: look after a memo database.

``memo stats|upgrade|export|import|prune --db PATH|URL``; the database is a SQLite file or a
SQLAlchemy URL (``postgresql+psycopg://USER@HOST/DB``). URLs are printed with the password masked.
"""

from __future__ import annotations

import json

from ..errors import InputError
from .entry import KINDS

ACTIONS = "stats, upgrade, export, import or prune"


def add_parser(subparsers, parser_class=None):
    """Register ``memo`` and its actions on ``subparsers`` (argparse ``add_subparsers`` result);
    ``parser_class`` is the class of the actions' parsers (default: memo's own)."""
    m = subparsers.add_parser("memo", help="memo database maintenance: stats, upgrade, export, import, prune",
                              description="Look after a memo database (a SQLite file or a SQLAlchemy URL).")
    sub = m.add_subparsers(dest="memo_command", metavar="ACTION", parser_class=parser_class or type(m))

    def action(name, help):
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--db", required=True, metavar="PATH|URL",
                       help="memo database: a SQLite file, sqlite:///FILE or postgresql+psycopg://USER@HOST/DB")
        return p

    p = action("stats", "what the database holds: entries by kind and network fingerprint, runs")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--entries", type=int, default=0, metavar="N",
                   help="also the N entries that carried runs the most: hits, simulated time and bytes their "
                        "hits let runs skip")
    p = action("upgrade", "create the database or upgrade its schema to this version's; print the revision")
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 if the database needs creating or upgrading")
    p = action("export", "write entries to a JSON file (format: wormhole_replay/memo/exchange.py)")
    p.add_argument("output", metavar="OUT.json")
    p.add_argument("--fingerprint", metavar="FP", help="only this network fingerprint's entries")
    p = action("import", "add the entries of an exported JSON file (all checked first; known ones skipped)")
    p.add_argument("input", metavar="IN.json")
    p = action("prune", "remove entries matching every filter given (or --all)")
    p.add_argument("--fingerprint", metavar="FP", help="entries of this network fingerprint")
    p.add_argument("--kind", choices=list(KINDS), help="entries of this kind")
    p.add_argument("--older-than", type=float, metavar="DAYS", help="entries created more than DAYS days ago")
    p.add_argument("--unused-days", type=float, metavar="DAYS", help="entries neither used nor created in the last DAYS days")
    p.add_argument("--all", action="store_true", help="every entry")
    return m


def _same():
    """The store's isomorphism test, when ``memo/fcg.py`` provides it (digest-only dedupe otherwise)."""
    try:
        from .fcg import same_entry
    except ImportError:
        return None
    return same_entry


def _existing(db: str) -> str:
    """``db``, or InputError when it names a SQLite file that does not exist (no silent new database)."""
    from .store import _parse_target

    _, label, path = _parse_target(db)
    if path is not None and not path.exists():
        raise InputError(f"{label}: no such memo database")
    return db


def run(args) -> int:
    """Execute ``memo ACTION``; the exit status."""
    from .store import MemoStore

    cmd = args.memo_command
    if cmd is None:
        raise InputError(f"memo: say what to do: {ACTIONS} (see memo --help)")
    if cmd == "upgrade":
        return _upgrade(args)
    store = MemoStore.open(args.db if cmd == "import" else _existing(args.db))
    try:
        if cmd == "stats":
            if args.entries < 0:
                raise InputError(f"memo stats --entries {args.entries}: give 0 or more")
            stats = store.stats()
            if args.entries:
                stats["top_entries"] = store.top_entries(args.entries)
            _print_stats(stats, args.json)
        elif cmd == "export":
            from .exchange import export

            n = export(store, args.output, args.fingerprint)
            print(f"{args.output}: {n} entries exported from {store.label}")
        elif cmd == "import":
            from .exchange import import_

            read, inserted = import_(store, args.input, same=_same())
            print(f"{args.input}: {read} entries read, {inserted} new in {store.label} ({read - inserted} known already)")
        elif cmd == "prune":
            n = store.prune(fingerprint=args.fingerprint, kind=args.kind, older_than_days=args.older_than,
                            unused_days=args.unused_days, everything=args.all)
            print(f"{n} entries removed from {store.label}")
    finally:
        store.close()
    return 0


def _upgrade(args) -> int:
    from .store import MemoStore

    store = MemoStore.open(args.db, upgrade=not args.check)
    try:
        before, head = store.previous_revision, store.head
        if args.check:
            if before == head:
                print(f"{store.label}: schema revision {head}, up to date")
                return 0
            print(f"{store.label}: schema revision {before or '(none: new database)'}, "
                  f"needs an upgrade to {head} (wormhole-replay memo upgrade --db ...)")
            return 1
        what = "up to date" if before == head else "created" if before is None else f"upgraded from {before}"
        print(f"{store.label}: schema revision {store.revision} ({what})")
        return 0
    finally:
        store.close()


def _print_stats(s: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(s, sort_keys=True))
        return
    kinds = ", ".join(f"{k} {n:,}" for k, n in s["by_kind"].items())
    print(f"{s['url']}  (schema revision {s['revision']})")
    print(f"entries: {s['entries']:,}" + (f"  ({kinds})" if kinds else ""))
    print(f"hits:    {s['hits']:,}")
    print(f"runs:    {s['runs']:,}")
    if s["by_fingerprint"]:
        print("by network fingerprint:")
        for fp, n in s["by_fingerprint"].items():
            print(f"  {fp}  {n:,}")
    if "top_entries" in s:
        print("entries that carried runs (time and bytes: what the jumps their hits began skipped):")
        if not s["top_entries"]:
            print("  none: no entry has been hit yet")
        for e in s["top_entries"]:
            print(f"  {e['digest'][:12]}  {e['kind']:<9}  {e['flows']:3d} flows  {e['hits']:6,} hits  "
                  f"{e['jumped_ns'] / 1e6:10.3f} ms  {e['jumped_bytes'] / 1e6:12.1f} MB  last used {e['last_used_at']}")
