"""Sweeps: points as Dask tasks in worker processes sharing one memo database; resumable, fault
tolerant, bad specs refused before any task.

The sweep most tests run (``_rounds``): on one 8-host leaf-spine under DCQCN, the repeated
contention of ``test_memo.py`` (a 30 MB and a 2 MB flow into one host, repeated every 10 ms) with 2,
3, 4 or 5 rounds, one flow file per point. The flow file does not enter the memo's network
fingerprint, so the points share entries: the long flow's climb back to line rate after the cut,
learned by the first points and hit by the later ones (measured: a cold 2-round point learns 1
entry and hits it once; a later point hits it once per round).
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from wormhole_replay import api
from wormhole_replay.cli import main
from wormhole_replay.errors import InputError
from wormhole_replay.memo.store import MemoStore
from wormhole_replay.sweep.points import resolve
from wormhole_replay.sweep.spec import RUN_FIELDS, load_spec
from wormhole_replay.sweep.table import COUNTERS

TOPO = "leaf-spine:hosts=8,leaves=2,spines=1"


def _rounds(tmp_path: Path, rounds=(2, 3, 4, 5)) -> Path:
    """The rounds sweep's spec (and its flow files) in ``tmp_path``."""
    for n in rounds:
        lines = [f"{i} 7 3 100 {size} {(r * 10_000_000 + i * 1000) / 1e9:.9f}"
                 for r in range(n) for i, size in enumerate((30_000_000, 2_000_000))]
        (tmp_path / f"rounds-{n}.txt").write_text(f"{len(lines)}\n" + "\n".join(lines) + "\n")
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'topology = "{TOPO}"\ncc = "dcqcn"\nflows = "rounds-{rounds[0]}.txt"\n\n[grid]\n'
                    f"flows = [{', '.join(repr(f'rounds-{n}.txt') for n in rounds)}]\n".replace("'", '"'))
    return spec


def _sweep(*args, env=None, timeout=600, **popen):
    cmd = [sys.executable, "-m", "wormhole_replay", "sweep", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          **popen)


def _records(out: Path) -> dict:
    return {d.name: json.loads((d / "point.json").read_text()) for d in (out / "points").iterdir()
            if (d / "point.json").is_file()}


def _check_shared_memo(table: pd.DataFrame, entries: int) -> None:
    """Every point inserted what it reports and nothing twice (points that ran at once and learned the
    same entry inserted it once); a point that found entries in the database (another point's) hit
    them; and some did."""
    assert table["memo_inserts"].sum() == entries > 0
    warm = table[table["memo_entries_at_start"] > 0]
    assert len(warm) >= 1 and (warm["memo_hits_earlier"] > 0).all(), table
    cold = table[table["memo_entries_at_start"] == 0]
    assert (cold["memo_hits_earlier"] == 0).all() and cold["memo_inserts"].sum() > 0, table


def _check_rounds(tmp_path: Path, out: Path, summary: dict) -> pd.DataFrame:
    assert summary["points"] == summary["ok"] == 4 and summary["failed"] == 0
    table = pd.read_parquet(out / "sweep.parquet")
    assert list(table["index"]) == [1, 2, 3, 4] and (table["status"] == "ok").all()
    assert [Path(f).name for f in table["flows"]] == [f"rounds-{n}.txt" for n in (2, 3, 4, 5)]
    assert table["id"].is_unique and (table["flow_count"] == [4, 6, 8, 10]).all()
    assert (table["flows_completed"] == table["flow_count"]).all() and table["fct_mean_ns"].gt(0).all()
    for point_id, share in zip(table["id"], table["bytes_fast_forwarded"]):
        names = {f.name for f in (out / "points" / point_id).iterdir()}
        assert {"point.json", "inputs.json", "fct.txt", "pfc.txt", "flows.parquet", "counters.json"} <= names
        flows = pd.read_parquet(out / "points" / point_id / "flows.parquet")  # wormhole mode: the share not simulated
        assert share == pytest.approx(flows["fast_forwarded_bytes"].sum() / flows["size_bytes"].sum(), abs=1e-6)
    html = (out / "sweep.html").read_text()
    assert 'id="plot-0"' in html and html.count("<tr>") >= 4 + 1
    return table


def test_four_points_on_two_local_workers_share_a_sqlite_memo(tmp_path):
    spec, out = _rounds(tmp_path), tmp_path / "out"
    p = _sweep(spec, "--out", out, "--workers", "2", "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    table = _check_rounds(tmp_path, out, summary)
    assert table["worker"].nunique() == 2  # two processes ran the points
    db = out / "memo.sqlite"
    with MemoStore.open(str(db)) as store:
        stats = store.stats()
        assert stats["runs"] == 4 and store.integrity_check() == []
    with sqlite3.connect(db) as c:
        digests = [r[0] for r in c.execute("select digest from entries")]
    assert len(digests) == len(set(digests))
    _check_shared_memo(table, len(digests))
    # a point is today's simulate: the first (cold, alone in its network's memo until it ended) gives
    # exactly the simulation's own output
    first = table[table["memo_entries_at_start"] == 0].iloc[0]
    direct = api.simulate(TOPO, first["flows"], "dcqcn", memo_db=tmp_path / "direct.sqlite")
    from wormhole_replay.engine.simulate import format_fct

    assert (out / "points" / first["id"] / "fct.txt").read_text() == format_fct(direct.flows)


def test_four_points_share_a_postgres_memo(tmp_path, pg_url):
    spec, out = _rounds(tmp_path), tmp_path / "out"
    p = _sweep(spec, "--out", out, "--workers", "2", "--memo-db", pg_url, "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["memo_db"].startswith("postgresql+psycopg://") and not (out / "memo.sqlite").exists()
    table = _check_rounds(tmp_path, out, summary)
    with MemoStore.open(pg_url) as store:
        stats = store.stats()
        assert stats["runs"] == 4 and store.integrity_check() == []
        entries = stats["entries"]
    _check_shared_memo(table, entries)


# --- a scheduler and workers started as separate processes -------------------------------------------

class DaskProcesses:
    """``dask scheduler`` and ``dask worker`` processes on 127.0.0.1 (free ports: the OS picks)."""

    def __init__(self, tmp_path: Path, workers: int = 2):
        self.procs, self.workers = [], {}
        self.log = open(tmp_path / "dask.log", "w")
        info = tmp_path / "scheduler.json"
        self._start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", info],
                    tmp_path)
        deadline = time.time() + 120
        while time.time() < deadline and not (info.is_file() and info.stat().st_size):
            time.sleep(0.1)
        self.address = json.loads(info.read_text())["address"]
        for i in range(workers):
            d = tmp_path / f"w{i}"
            d.mkdir()
            self.workers[f"w{i}"] = self._start(["worker", self.address, "--name", f"w{i}", "--nthreads", "1",
                                                  "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                                                  "--death-timeout", "60"], d)
        from distributed import Client

        self.client = Client(self.address, timeout=60)
        self.client.wait_for_workers(workers, timeout=120)

    def _start(self, args, cwd):
        p = subprocess.Popen([sys.executable, "-m", "dask", *map(str, args)], cwd=cwd, stdout=self.log,
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def address_of(self, name: str) -> str:
        return next(a for a, w in self.client.scheduler_info()["workers"].items() if w["name"] == name)

    def stop(self):
        if getattr(self, "client", None) is not None:
            self.client.close()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


@pytest.fixture
def dask_processes(tmp_path):
    cluster = None
    try:
        cluster = DaskProcesses(tmp_path)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()


def test_sweep_on_a_scheduler_and_two_worker_processes(tmp_path, dask_processes):
    spec, out = _rounds(tmp_path), tmp_path / "out"
    p = _sweep(spec, "--out", out, "--scheduler", dask_processes.address, "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["workers"] == f"the scheduler at {dask_processes.address}"
    table = _check_rounds(tmp_path, out, summary)
    assert set(table["worker"]) == {dask_processes.address_of("w0"), dask_processes.address_of("w1")}
    with MemoStore.open(str(out / "memo.sqlite")) as store:
        _check_shared_memo(table, store.count())


def test_a_killed_worker_has_its_point_retried_elsewhere(tmp_path, dask_processes):
    """Kill the worker process running a point: Dask runs the point on the other worker; the memo
    database keeps every entry once (the killed run had written none: it flushes every 30 s)."""
    from wormhole_replay.sweep.run import TOPIC

    spec, out = _rounds(tmp_path), tmp_path / "out"
    victim = dask_processes.address_of("w0")
    started, killed = [], threading.Event()

    def on_start(event):
        if event[1]["worker"] == victim and not killed.is_set():
            started.append(event[1]["id"])
            time.sleep(0.2)  # in the middle of the point (a fresh worker's first takes seconds)
            dask_processes.workers["w0"].kill()
            killed.set()

    dask_processes.client.subscribe_topic(TOPIC, on_start)
    p = _sweep(spec, "--out", out, "--scheduler", dask_processes.address, "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    assert killed.is_set() and dask_processes.workers["w0"].wait(timeout=10) is not None
    table = _check_rounds(tmp_path, out, json.loads(p.stdout))
    retried = table.set_index("id").loc[started[0]]
    assert retried["worker"] == dask_processes.address_of("w1")  # ran again, elsewhere, to the end
    assert retried["attempts"] == 2 and (table.drop(table.index[table["id"] == started[0]])["attempts"] == 1).all()
    with MemoStore.open(str(out / "memo.sqlite")) as store:
        assert store.integrity_check() == [] and store.stats()["runs"] == 4  # the killed run recorded nothing
        entries = store.count()
    with sqlite3.connect(out / "memo.sqlite") as c:
        digests = [r[0] for r in c.execute("select digest from entries")]
    assert len(digests) == len(set(digests)) == entries
    _check_shared_memo(table, entries)


# --- resuming, failing -----------------------------------------------------------------------------

def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    """Ctrl-C after the first point: the finished points stay, the table says what is pending, and
    the same command runs only the rest (3 rounds in full mode, 6 ECN seeds: about a second each)."""
    spec, out = _rounds(tmp_path, rounds=(3,)), tmp_path / "out"
    spec.write_text(spec.read_text().split("[grid]")[0] + 'mode = "full"\n[grid]\nRNG_SEED = [1, 2, 3, 4, 5, 6]\n')
    cmd = [sys.executable, "-m", "wormhole_replay", "sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]
    # Ctrl-C must reach it even where the tests run with SIGINT ignored (a shell's background job,
    # as `.ci/run &` is: the sweep then ignored it and finished all six points, exit status 0)
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None and not ((out / "points").is_dir() and _records(out)):
        time.sleep(0.05)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert err.strip().splitlines()[-1] == "wormhole-replay: interrupted"
    before = _records(out)
    assert 1 <= len(before) < 6, "the interruption must land mid-sweep"
    table = pd.read_parquet(out / "sweep.parquet")
    assert set(table["status"]) == {"ok", "pending"} and (table["status"] == "ok").sum() == len(before)
    mtimes = {i: (out / "points" / i / "point.json").stat().st_mtime_ns for i in before}
    again = _sweep(spec, "--out", out, "--workers", "1", "--json", "--quiet")
    assert again.returncode == 0, again.stderr
    s = json.loads(again.stdout)
    assert s["skipped"] == len(before) and s["ran"] == 6 - len(before) and s["ok"] == 6
    assert {i: (out / "points" / i / "point.json").stat().st_mtime_ns for i in before} == mtimes  # not run again
    assert (pd.read_parquet(out / "sweep.parquet")["status"] == "ok").all()



@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # (the dropped one, expected)
def test_an_interrupt_swallowed_by_a_finalizer_still_stops_the_sweep():
    """A signal landing in an object's ``__del__`` (pyarrow's ParquetWriter, seen in CI) raises
    KeyboardInterrupt there, which Python prints and drops: the sweep must stop all the same."""
    from wormhole_replay.sweep.command import _Interrupts

    class SignalledWhileCollected:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs here, inside the finalizer

    interrupts = _Interrupts()
    # Python's own Ctrl-C handler, as in a terminal: a job started in the background with `&`
    # inherits SIGINT ignored, which the sweep leaves alone (``installed``), and the test would fail
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts.installed():
                item = SignalledWhileCollected()
                del item  # the KeyboardInterrupt is dropped ("Exception ignored in ...")
                assert interrupts.seen  # run_sweep's loop looks at this each tick
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, inherited)

def _nine_rates(tmp_path: Path) -> tuple[Path, Path]:
    """A star of 9 hosts at 9 different link rates (HPCC's INT encodes at most 8), one flow."""
    links = [f"{h} 9 {10 * (h + 1)}Gbps 0.001ms 0" for h in range(9)]
    topo = tmp_path / "topology.txt"
    topo.write_text("10 1 9\n9\n" + "\n".join(links) + "\n")
    flows = tmp_path / "flow.txt"
    flows.write_text("1\n0 1 3 100 1000000 0.000001\n")
    return topo, flows


def test_a_failing_point_is_recorded_and_the_others_go_on(tmp_path):
    topo, flows = _nine_rates(tmp_path)
    spec, out = tmp_path / "sweep.toml", tmp_path / "out"
    spec.write_text(f'flows = "{flows}"\ntopology = "{topo}"\ncc = "dcqcn"\n\n[grid]\ncc = ["hpcc", "dcqcn"]\n')
    p = _sweep(spec, "--out", out, "--workers", "1", "--quiet")
    assert p.returncode == 1, p.stderr
    table = pd.read_parquet(out / "sweep.parquet").set_index("cc")
    assert list(table["status"]) == ["failed", "ok"]
    error = table.loc["hpcc", "error"]
    assert "at most 8 distinct link rates" in error and "\n" not in error
    assert f"point 1 (cc=hpcc, {table.loc['hpcc', 'id']}) failed: {error}" in p.stdout
    assert "Traceback" in (out / "points" / table.loc["hpcc", "id"] / "error.txt").read_text()
    assert table.loc["dcqcn", "flows_completed"] == 1
    again = _sweep(spec, "--out", out, "--workers", "1", "--json", "--quiet")  # a failed point runs again
    assert again.returncode == 1 and json.loads(again.stdout)["ran"] == 1


# --- bad specs: one line, exit 2, before anything runs -----------------------------------------------

GEN = '[gen]\nkind = "gpt"\nlayers = 2\nhidden = 256\nseq = 128\ngpus = 8\n'
BASE = f'topology = "{TOPO}"\ncc = "dcqcn"\n' + GEN


@pytest.mark.parametrize("text,message", [
    (BASE.replace("topology", "topolgy") + "[grid]\ntp = [1, 2]\n", "unknown field 'topolgy'"),
    (BASE + "[grid]\ntpp = [1, 2]\n", "unknown field 'tpp'"),
    (BASE + "[grid]\ntp = []\n", "tp has no values"),
    (BASE + "[grid]\n", "[grid] is empty"),
    (BASE, "nothing to sweep"),
    (BASE + "[grid]\ntp = [1, 3]\n", "point 2 (tp=3): impossible layout"),
    (BASE + '[grid]\ncc = ["dcqcn", "tcp"]\n', "cc = 'tcp': expected one of dcqcn, hpcc, dctcp"),
    (BASE + '[grid]\nBUFFER_SIZE = [4, "big"]\n', "point 2 (BUFFER_SIZE=big): [config]:1: bad value for BUFFER_SIZE"),
    (BASE + "[grid]\nbuffer_size = [4]\n", "config.txt keys are upper case: BUFFER_SIZE"),
    (BASE + "[grid]\niterations = [0]\n", "iterations = 0: give at least one"),
    (BASE + "[grid]\nff_theta = [0.03, 1.5]\n", "fast-forward theta must be in (0, 1)"),
    (BASE + '[grid]\ntopology = ["fat-tree:k=3"]\n', "point 1 (topology=fat-tree:k=3)"),
    (BASE + "[grid]\nBUFFER_SIZE = [4, 4.0]\n", "points 1 and 2 are the same run"),
    (BASE + "[grid]\ntp = [1]\n[[points]]\ntp = 2\n", "give [grid] or [[points]], not both"),
    (BASE + "[grid]\ntp = [1, 2\n", "not valid TOML"),
    (f'topology = "{TOPO}"\ncc = "dcqcn"\ntrace = "t.parquet"\n[grid]\ntp = [1]\n',
     "tp is a generator field, but the base run has no [gen]"),
    (f'topology = "{TOPO}"\ncc = "dcqcn"\n[grid]\nBUFFER_SIZE = [4]\n', "name one workload"),
    (f'topology = "{TOPO}"\ncc = "dcqcn"\ntrace = "missing.parquet"\n[grid]\nBUFFER_SIZE = [4]\n',
     "missing.parquet"),
    (BASE + '[grid]\nflows = ["flow.txt"]\n', "flows is a simulate field; this spec sweeps replay"),
])
def test_bad_specs_are_one_line_before_any_task(tmp_path, monkeypatch, capsys, text, message):
    import wormhole_replay.sweep.run as run

    monkeypatch.setattr(run, "open_client", lambda *a, **k: pytest.fail("a cluster was started"))
    spec, out = tmp_path / "sweep.toml", tmp_path / "out"
    spec.write_text(text)
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_point_id_digests_resolved_inputs(tmp_path):
    """Two spellings of one setting are one id; the content of an input file, not its name, counts."""
    spec = _rounds(tmp_path, rounds=(2, 3))
    a = resolve(load_spec(spec))
    assert [p.id for p in a] == [p.id for p in resolve(load_spec(spec))]  # stable
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in ("rounds-2.txt", "rounds-3.txt"):
        (copy / f).write_bytes((tmp_path / f).read_bytes())
    (copy / "sweep.toml").write_text(spec.read_text())
    assert [p.id for p in resolve(load_spec(copy / "sweep.toml"))] == [p.id for p in a]  # elsewhere, same
    (copy / "rounds-3.txt").write_text((tmp_path / "rounds-2.txt").read_text())  # now the same flows
    with pytest.raises(InputError, match="points 1 and 2 are the same run"):
        resolve(load_spec(copy / "sweep.toml"))


def test_result_columns_do_not_collide_with_field_names():
    assert not set(RUN_FIELDS) & {*COUNTERS, "index", "id", "status", "error", "wall_seconds"}


def test_table_and_report_keep_every_point_in_order(tmp_path):
    """Pending, failed and finished points each have their row; a parameter of mixed types becomes
    text; a point that leaves a config key to the preset shows as such in the report."""
    from wormhole_replay.sweep.points import Point
    from wormhole_replay.sweep.report import render
    from wormhole_replay.sweep.spec import Spec
    from wormhole_replay.sweep.table import build

    points = [Point(i + 1, {"U_TARGET": u, "topology": t}, {}, {}, f"id{i}")
              for i, (u, t) in enumerate([(0.9, "a"), (None, 3), (0.95, "c")])]
    records = {"id0": {"status": "ok", "metrics": {"iteration_mean_ns": 2e6, "iteration_1_ns": 5, "events": 9},
                       "wall_seconds": 1.5, "worker": "tcp://w"},
               "id1": {"status": "failed", "error": "boom", "metrics": {}}}
    df = build(points, records, ["U_TARGET", "topology"])
    assert list(df.columns[:6]) == ["index", "id", "U_TARGET", "topology", "status", "error"]
    assert list(df["status"]) == ["ok", "failed", "pending"] and list(df["topology"]) == ["a", "3", "c"]
    assert df["U_TARGET"].dtype == float
    assert list(df.columns[-5:]) == ["worker", "host", "attempts", "started_at", "finished_at"]
    spec = Spec(tmp_path / "s.toml", "replay", {}, None, {}, [], ["U_TARGET", "topology"], "x = 1")
    html = render(spec, df, {"points": 3, "ok": 1, "failed": 1, "pending": 1, "ran": 2, "wall_seconds": 3.0,
                             "skipped": 0})
    assert "U_TARGET=(preset)" in html and ">boom<" in html and html.count('id="plot-') == 2
    assert "mean iteration time" in html and "2.000 ms" in html


@pytest.mark.parametrize("extra,message", [
    (["--workers", "0"], "--workers 0: give at least 1"),
    (["--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
    (["--out-is-a-file"], "not a folder (--out)"),
])
def test_bad_options_are_one_line_with_nothing_written(tmp_path, monkeypatch, capsys, extra, message):
    import wormhole_replay.sweep.run as run

    monkeypatch.setattr(run, "CONNECT_SECONDS", 1)
    spec, out = _rounds(tmp_path, rounds=(2,)), tmp_path / "out"
    if extra == ["--out-is-a-file"]:
        out.write_text("")
        extra = []
    assert main(["sweep", str(spec), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.is_dir()
