"""Running one point in a Dask worker: today's ``replay`` (or ``api.simulate``) with the point's
inputs, then its row of the results table (``table.metrics``) and its output files, all returned
to the client, which writes them.

The worker writes nothing in the sweep's folder, so a worker killed mid-point leaves nothing
half-done there and the folder need not be shared between machines; it writes only to the memo
database, through the run's own memo (whole transactions, idempotent inserts). A point that raises
comes back ``failed`` with its one-line error (and the traceback, for ``error.txt``); only a worker
that dies makes Dask retry the point, on another worker.

One point at a time per process: a worker started with several threads would otherwise run points
side by side in one interpreter, where the engine's kernels hold the GIL; the lock makes them queue.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tempfile
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InputError

_ONE_AT_A_TIME = threading.Lock()


def run_point(task: dict) -> dict:
    """Run the point ``task`` (``points.Point.task`` plus ``memo_db``); never raises for the
    point's own errors. Returns {``id``, ``status`` (ok | failed), ``error``, ``traceback``,
    ``metrics``, ``files`` (name -> bytes), ``worker``, ``host``, ``pid``, ``started_at``,
    ``finished_at``, ``wall_seconds``}."""
    with _ONE_AT_A_TIME:
        t0 = time.perf_counter()
        out = {"id": task["id"], **_where(), "started_at": _now(), "error": None, "traceback": None,
               "metrics": {}, "files": {}}
        _announce(task)
        try:
            with tempfile.TemporaryDirectory(prefix="wormhole-point-") as tmp:
                out["metrics"], out["files"] = _run(task, Path(tmp))
            out["status"] = "ok"
        except Exception as e:  # noqa: BLE001  (any failure of the point is its result, not the sweep's)
            out.update(status="failed", error=one_line(e), traceback=traceback.format_exc())
        out["finished_at"] = _now()
        out["wall_seconds"] = time.perf_counter() - t0
        return out


def one_line(e: BaseException) -> str:
    """An error as one line: an ``InputError``'s message, or the exception's type and first line."""
    text = (str(e).strip().splitlines() or [""])[0]
    return text if isinstance(e, InputError) else f"{type(e).__name__}: {text}".rstrip(": ")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _where() -> dict:
    try:
        from distributed import get_worker

        address = get_worker().address
    except (ImportError, ValueError):  # called outside a worker (tests, a debugger)
        address = None
    return {"worker": address, "host": socket.gethostname(), "pid": os.getpid()}


def _announce(task: dict) -> None:
    """Tell the client this point has started (its progress bar counts the running points)."""
    try:
        from distributed import get_worker

        get_worker().log_event(task["topic"], {"id": task["id"]})
    except (ImportError, KeyError, ValueError):  # outside a worker, or no topic to tell
        pass


def _parquet(df) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def _run(task: dict, tmp: Path) -> tuple[dict, dict]:
    from ..audit.compare import jsonable
    from ..engine.fastforward import FastForward
    from ..engine.simulate import format_fct, format_pfc
    from .table import metrics

    ff = None if task["fast_forward"] is None else FastForward(**task["fast_forward"])
    config = None
    if task["config_text"]:
        config = tmp / "config.txt"
        config.write_text(task["config_text"])
    memo_db = task.get("memo_db") if task["mode"] == "wormhole" else None
    if task["run"] == "replay":
        from ..replay import replay

        trace = task.get("trace")
        if trace is None:  # generated here, into a file so that the memo records its digest
            from ..workload.trace import save_trace
            from .points import generate

            trace = tmp / "trace.parquet"
            save_trace(generate(task["gen"]), trace)
        res = replay(trace, task["topology"], task["cc"], task["iterations"], config,
                     intra_bw_bps=task["intra_bw_bps"], intra_latency_ns=task["intra_latency_ns"], mode=task["mode"],
                     fast_forward=ff, memo_db=memo_db, memo_shared_prefixes=task["memo_shared_prefixes"],
                     memo_episodes=task.get("memo_episodes", False),
                     memo_recurring=task.get("memo_recurring", False), ports=task["ports"])
        hits, learned, tables = res.memo_hits, res.memo_learned, (res.iterations, res.collectives)
        files = {"flows.parquet": _parquet(res.flows), "collectives.csv": res.collectives.to_csv(index=False).encode(),
                 "iterations.csv": res.iterations.to_csv(index=False).encode(), "fct.txt": format_fct(res.flows).encode()}
    else:
        from ..api import simulate

        res = simulate(task["topology"], task["flows"], task["cc"], config, task["paths"], task["routing"],
                       mode=task["mode"], fast_forward=ff, memo_db=memo_db)
        session = res.memo  # the run's memo session: its journal and what it learned
        hits = session.tables()["memo_hits"] if session is not None else None
        learned, tables = ([e.digest for e in session.new_entries] if session is not None else None), (None, None)
        files = {"fct.txt": format_fct(res.flows).encode(), "pfc.txt": format_pfc(res.pfc).encode(),
                 "flows.parquet": _parquet(res.flows)}
    if hits is not None and len(hits):
        files["memo_hits.parquet"] = _parquet(hits)
    files["counters.json"] = (json.dumps(jsonable(res.counters), indent=1) + "\n").encode()
    return metrics(res.flows, *tables, res.counters, hits, learned), files
