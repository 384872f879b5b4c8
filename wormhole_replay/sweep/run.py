"""Running a sweep on Dask: the cluster, one task per point not finished yet, the progress bar, and
the sweep's folder, of which this process is the only writer:

    DIR/sweep.toml       the spec as last run
    DIR/points/ID/       per point: inputs.json (what its id digests), config.txt (its keys), the run's
                         outputs (replay: flows.parquet, collectives.csv, iterations.csv, fct.txt;
                         simulate: fct.txt, pfc.txt, flows.parquet), counters.json, memo_hits.parquet
                         (when it hit), error.txt (the traceback, when it failed), and point.json,
                         written last: the point's record (status, error, metrics, worker)
    DIR/sweep.parquet    the results table (``table.py``), rewritten as points finish
    DIR/sweep.html       the report (``report.py``), rewritten at the end (and when interrupted)

Resuming: a point whose ``point.json`` says ``ok`` is not run again; a failed one is (its error may
have been the machine's; a deterministic one comes back at once). Points are submitted in the spec's
order, and Dask starts them in that order, so that later points find what earlier ones taught the
memo. A worker that dies has its point rescheduled on another by Dask itself; once more workers than
``distributed.scheduler.allowed-failures`` (3) died running it, it is recorded failed
(``KilledWorker``); a point's record counts its ``attempts``. A lost scheduler ends the sweep with
one line (the finished points are kept). Interrupted (Ctrl-C, SIGTERM), the sweep cancels what is
still running, keeps what finished and writes the table and report: running it again resumes.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import CancelledError
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import InputError
from ..files import write_atomic
from . import table
from .points import Point
from .spec import Spec

POINT_FILE = "point.json"
TOPIC = "wormhole-replay-sweep"  # workers announce each point they start on this Dask event topic
CONNECT_SECONDS = 10
TICK_SECONDS = 1.0  # how often the progress bar's running count is refreshed


@contextmanager
def open_client(workers: int | None = None, scheduler: str | None = None):
    """A Dask client, and what it runs on in words: the scheduler at ``scheduler``, or a new local
    cluster of ``workers`` worker processes, one thread each (closed on exit). Dask's own log is
    quiet meanwhile: the sweep reports lost workers (``attempts``), failed points and a lost
    scheduler itself, in one line each."""
    from distributed import Client, LocalCluster

    logs = [logging.getLogger(n) for n in ["distributed", *logging.root.manager.loggerDict] if n.startswith("distributed")]
    levels = [log.level for log in logs]  # (Dask's config gives some of them levels of their own)
    for log in logs:
        log.setLevel(logging.CRITICAL)
    try:
        if scheduler:
            try:
                client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, TimeoutError, ValueError) as e:
                raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({_first_line(e)})") from None
            with client:
                yield client, f"the scheduler at {scheduler}"
            return
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
            yield client, f"{workers} local worker process{'es' if workers != 1 else ''}"
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)


def check_memo_reach(client, memo_db: str | None, backend: str | None) -> None:
    """A SQLite memo database is a file of this machine: refuse workers on other machines, which
    would each write a database of their own (one line, before any task). ``backend``: the
    store's (``sqlite``, ``postgresql``)."""
    if memo_db is None or backend != "sqlite":
        return
    here = socket.gethostname()
    elsewhere = sorted({h for h in client.run(socket.gethostname).values() if h != here})
    if elsewhere:
        raise InputError(f"the memo database {memo_db} is a SQLite file on {here}, but workers run on "
                         f"{', '.join(elsewhere)}: give --memo-db postgresql+psycopg://... (a server all reach)")


def read_record(out: Path, point: Point) -> dict | None:
    """The record of ``point`` from an earlier run of the sweep, if it finished (ok or failed)."""
    try:
        rec = json.loads((out / "points" / point.id / POINT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("id") == point.id else None


def _write_bytes(path: Path, data: bytes) -> None:
    def w(tmp):
        with open(tmp, "wb") as f:
            f.write(data)

    write_atomic(path, w)


def _json(x) -> bytes:
    return (json.dumps(x, indent=1, default=str) + "\n").encode()


def save_point(out: Path, point: Point, result: dict) -> dict:
    """Write a finished point's folder (``point.json`` last) and return its record."""
    d = out / "points" / point.id
    files = dict(result.get("files") or {})
    files["inputs.json"] = _json(point.inputs)
    if point.task["config_text"]:
        files["config.txt"] = point.task["config_text"].encode()
    if result["status"] != "ok":
        files["error.txt"] = ((result.get("traceback") or result["error"]) + "\n").encode()
    else:
        (d / "error.txt").unlink(missing_ok=True)  # from an earlier, failed attempt
    for name, data in files.items():
        _write_bytes(d / name, data)
    record = {k: v for k, v in result.items() if k not in ("files", "traceback")}
    record.update(index=point.index, params=point.params)
    _write_bytes(d / POINT_FILE, _json(record))
    return record


def _lost(point: Point, future) -> dict:
    """The result of a task that did not return one: its worker died too often, or it was dropped."""
    from .worker import one_line

    error = "cancelled (the scheduler dropped the task)" if future.status == "cancelled" else one_line(future.exception())
    return {"id": point.id, "status": "failed", "error": error, "metrics": {}}


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


class _Started:
    """How often workers have started each point (their events on ``TOPIC``): the running count,
    and a point's attempts (more than one when a worker died running it)."""

    def __init__(self):
        self._starts, self._lock = Counter(), threading.Lock()

    def __call__(self, event) -> None:
        with self._lock:
            self._starts[event[1]["id"]] += 1

    def running(self, pending_ids) -> int:
        with self._lock:
            return len(pending_ids & self._starts.keys())

    def attempts(self, point_id: str) -> int:
        with self._lock:
            return self._starts[point_id]


def run_sweep(spec: Spec, points: list[Point], out: Path, client, memo_db: str | None, progress: bool = True,
              stopped=lambda: False) -> dict:
    """Run the points of ``spec`` not finished in ``out`` on ``client``'s cluster (None will do when
    all have), sharing the memo database ``memo_db`` (None: none); write the folder. Returns the
    summary (``summary``). ``stopped()`` true stops it as KeyboardInterrupt does (checked each tick,
    for an interrupt that a finalizer swallowed)."""
    from distributed import wait
    from tqdm import tqdm

    from .worker import run_point

    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "sweep.toml", lambda tmp: Path(tmp).write_text(spec.text))
    records = {p.id: r for p in points if (r := read_record(out, p)) is not None}
    todo = [p for p in points if records.get(p.id, {}).get("status") != "ok"]
    skipped = len(points) - len(todo)
    table.write(out / "sweep.parquet", table.build(points, records, spec.varied))
    started = _Started()
    if todo:  # (nothing to run: no client needed)
        client.subscribe_topic(TOPIC, started)
    run = uuid.uuid4().hex[:6]  # task keys are the sweep run's own, readable on the dashboard
    futures = {client.submit(run_point, {**p.task, "memo_db": memo_db, "topic": TOPIC}, key=f"point-{p.id}-{run}",
                             pure=False): p for p in todo}
    bar = tqdm(total=len(todo), desc="sweep", unit="point", disable=not progress, file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    pending, failed = set(futures), 0
    try:
        while pending:
            if stopped():
                raise KeyboardInterrupt
            try:
                finished, pending = wait(pending, timeout=TICK_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished = ()
            for f in finished:
                p = futures[f]
                result = f.result() if f.status == "finished" else _lost(p, f)
                result["attempts"] = max(started.attempts(p.id), 1)
                records[p.id] = save_point(out, p, result)
                failed += records[p.id]["status"] != "ok"
                bar.update(1)
            if finished:
                table.write(out / "sweep.parquet", table.build(points, records, spec.varied))
            bar.set_postfix_str(f"running {started.running({futures[f].id for f in pending})}, failed {failed}")
    except (CancelledError, OSError):  # the scheduler is gone (its futures cancelled, or its connection)
        kept = sum(1 for r in records.values() if r["status"] == "ok")
        raise InputError(f"lost the connection to the Dask scheduler; the {kept} finished point(s) are kept: "
                         "run the same command again to resume") from None
    finally:
        wall = time.perf_counter() - t0
        with suppress(CancelledError, OSError):  # (nothing to cancel with when the scheduler is gone)
            if pending:
                client.cancel(list(pending))
            if todo:
                client.unsubscribe_topic(TOPIC)
        bar.close()
        df = table.build(points, records, spec.varied)
        table.write(out / "sweep.parquet", df)
        result = summary(points, records, skipped, len(todo) - len(pending), wall, out)
        _write_report(out, spec, df, result)
    return result


def summary(points: list[Point], records: dict, skipped: int, ran: int, wall: float, out: Path) -> dict:
    """What the sweep did: point counts, the points that failed, the rate and the outputs."""
    status = [records.get(p.id, {}).get("status", "pending") for p in points]
    ok_now = sum(1 for p in points if records.get(p.id, {}).get("status") == "ok") - skipped
    return {
        "points": len(points), "ok": status.count("ok"), "failed": status.count("failed"),
        "pending": status.count("pending"), "skipped": skipped, "ran": ran,
        "wall_seconds": round(wall, 3), "points_per_hour": round(ok_now / wall * 3600, 1) if wall > 0 and ok_now else None,
        "failed_points": [{"index": p.index, "id": p.id, "params": p.params, "error": records[p.id].get("error")}
                          for p, s in zip(points, status) if s == "failed"],
        "outputs": {"table": str(out / "sweep.parquet"), "report": str(out / "sweep.html"),
                    "points": str(out / "points")},
    }


def _write_report(out: Path, spec: Spec, df, result: dict) -> None:
    from .report import render

    html = render(spec, df, result)
    write_atomic(out / "sweep.html", lambda tmp: Path(tmp).write_text(html, encoding="utf-8"))
