"""``wormhole-replay sweep``: many configurations at once, on Dask, sharing one memo database.

    wormhole-replay sweep SPEC.toml --out DIR [--workers N | --scheduler tcp://HOST:PORT]
        [--memo-db PATH|URL | --no-memo] [--json] [--quiet]

Everything is checked before any task starts (the spec, every point as its run would check it,
the memo database, the output folder, the scheduler): bad input is one line and exit status 2,
with nothing run. Exit status 1 when some point failed (the table and report are still written),
130 when interrupted (running the same command again resumes).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError


def default_workers() -> int:
    """One worker process per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def add_parser(subparsers, parser_class=None):
    """Register ``sweep`` on ``subparsers`` (an argparse ``add_subparsers`` result); ``parser_class``
    is accepted for symmetry with the other commands (sweep has no sub-actions)."""
    s = subparsers.add_parser(
        "sweep", help="run many configurations (a TOML spec) on Dask, sharing one memo database",
        description="Run every point of SPEC.toml (a base run and a [grid] or [[points]]: see README, 'Sweeps') "
                    "as a Dask task, on local worker processes or a scheduler's workers; write DIR/sweep.parquet "
                    "(one row per point), DIR/sweep.html and DIR/points/ID/. Running it again skips the points "
                    "that finished. Exit status 1 when a point failed, 2 on bad input.")
    s.add_argument("spec", metavar="SPEC.toml", help="the sweep spec")
    s.add_argument("--out", required=True, metavar="DIR", help="output folder (resumed when it holds this sweep)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help=f"local worker processes (default: one per core, {default_workers()} here)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="a running Dask scheduler (dask scheduler) "
                       "whose workers run the points")
    m = s.add_mutually_exclusive_group()
    m.add_argument("--memo-db", metavar="PATH|URL", help="the memo database all points share: a SQLite file "
                   "(one machine) or postgresql+psycopg://... (default: DIR/memo.sqlite)")
    m.add_argument("--no-memo", action="store_true", help="no memo database: steady-state fast-forwarding only")
    s.add_argument("--json", action="store_true", help="print one JSON summary on stdout")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    return s


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder (--out)")
    existing = next((p for p in (out, *out.absolute().parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{out}: cannot write there (--out)")


def _memo(args, points, out: Path) -> tuple[str | None, str | None, str | None]:
    """(target the workers open, its masked URL, its backend), checked by opening it here (which
    also creates it, or upgrades its schema, once rather than in every worker); None without."""
    from ..memo.store import MemoStore

    if args.no_memo or all(p.task["mode"] != "wormhole" for p in points):
        return None, None, None
    target = args.memo_db or str(out / "memo.sqlite")
    if "://" not in target:  # a file: the same one whatever folder a worker runs in
        target = str(Path(target).expanduser().absolute())
    with MemoStore.open(target) as store:
        return target, store.safe_url, store.backend


@contextmanager
def _lock(out: Path):
    """One sweep at a time in a folder (a lock on the folder itself: no lock file to leave behind)."""
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{out}: another sweep is running in this folder") from None
        yield
    finally:
        os.close(fd)


class _Interrupts:
    """Ctrl-C and SIGTERM stop a sweep: cancel, keep what finished, write the table, exit 130.

    The handler remembers the signal as well as raising KeyboardInterrupt, because Python swallows
    an exception raised inside a finalizer (a signal landing in pyarrow's ``ParquetWriter.__del__``
    was printed as "Exception ignored" and the sweep ran every point to exit status 0): the sweep's
    loop and its end look at ``seen`` too."""

    def __init__(self):
        self.seen = False

    def _stop(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    @contextmanager
    def installed(self):
        # (SIGINT left ignored where it was: a shell's background job keeps running on Ctrl-C)
        caught = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
        previous = {s: signal.signal(s, self._stop) for s in caught}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if self.seen:
            raise KeyboardInterrupt


def _say(args, text: str) -> None:
    if not args.quiet:
        print(f"sweep: {text}", file=sys.stderr, flush=True)


def run(args) -> int:
    """Execute ``sweep``; the exit status (0, or 1 when a point failed)."""
    from .points import label, resolve
    from .run import check_memo_reach, open_client, read_record, run_sweep
    from .spec import load_spec

    if args.workers is not None and args.workers < 1:
        raise InputError(f"sweep: --workers {args.workers}: give at least 1")
    spec = load_spec(args.spec)
    points = resolve(spec)
    out = Path(args.out)
    _check_out(out)
    workers = args.workers or default_workers()
    done = sum(1 for p in points if (read_record(out, p) or {}).get("status") == "ok")
    with _Interrupts().installed() as interrupts:
        if done == len(points):
            where, memo_url = "no worker (all points had finished)", None
            with _lock(out):
                result = run_sweep(spec, points, out, None, None, progress=False, stopped=lambda: interrupts.seen)
        else:  # the scheduler before the memo database: an unreachable one leaves nothing written
            with open_client(workers, args.scheduler) as (client, where):
                memo_db, memo_url, backend = _memo(args, points, out)
                check_memo_reach(client, memo_db, backend)
                if not client.scheduler_info()["workers"]:
                    _say(args, "no worker has joined the scheduler yet: waiting for one")
                _say(args, f"{len(points)} points ({done} finished before), {len(points) - done} to run on {where}; "
                           f"memo: {memo_url or 'none'}")
                with _lock(out):
                    result = run_sweep(spec, points, out, client, memo_db, progress=not args.quiet,
                                       stopped=lambda: interrupts.seen)
    result.update(workers=where, memo_db=memo_url)
    if args.json:
        print(json.dumps(result))
    else:
        rate = f" ({result['points_per_hour']:,.0f} points/hour)" if result["points_per_hour"] else ""
        print(f"{result['points']} points: {result['ok']} ok, {result['failed']} failed; {result['ran']} ran in "
              f"{result['wall_seconds']:.1f} s{rate}, {result['skipped']} finished before")
        for f in result["failed_points"]:
            print(f"  point {f['index']} ({label(f['params'])}, {f['id']}) failed: {f['error']}")
        print(f"table: {result['outputs']['table']}; report: {result['outputs']['report']}")
    return 1 if result["failed"] else 0
