"""The benchmarks' own arithmetic (tools/ is not a package: loaded by path)."""

import importlib.util
import math
import sys

import pytest

from conftest import REPO


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba's cached kernels (``pace_model``) find their module by name
    spec.loader.exec_module(module)
    return module


def test_bench_engine_counts_a_lost_flow_as_an_error(reference_runs, tmp_path):
    """A run that lost a flow must not print 0.00%: the missing flow is counted and weighs 100% in
    the per-flow error, and the mean FCT is not computed over the survivors.  Catches missing
    flows vanishing in nanmean/nanmax (the bug of the first bench_engine)."""
    fct_errors = _tool("bench_engine").fct_errors
    ref = reference_runs / "S1_dcqcn" / "fct.original-hpcc.txt"
    lines = ref.read_text().splitlines(keepends=True)
    assert fct_errors(ref, ref) == (0.0, 0.0, 0.0, 0)
    ours = tmp_path / "fct.txt"
    ours.write_text("".join(lines[1:]))  # the first flow to finish never finished
    mean_e, max_e, mean_fct, missing = fct_errors(ref, ours)
    assert missing == 1 and max_e == 1.0 and mean_e == pytest.approx(1 / len(lines))
    assert math.isnan(mean_fct)
    fcts = [int(line.split()[6]) for line in lines]
    first = lines[0].split()
    first[6] = str(2 * fcts[0])  # one FCT twice as long: 100% off, nothing missing
    ours.write_text(" ".join(first) + "\n" + "".join(lines[1:]))
    _, max_e, mean_fct, missing = fct_errors(ref, ours)
    assert (max_e, missing) == (1.0, 0) and mean_fct == pytest.approx(fcts[0] / sum(fcts))


def test_a_bench_scale_noise_draw_delays_one_op_of_one_rank(tmp_path):
    """A noise-floor draw on an AICB import (a program trace: one rank's ops per pipeline stage) must
    delay one op of one rank, as ``audit``'s does.  Delaying the program's op delayed it on every
    rank, which only shifts the whole run by 1 ns: on the 128-GPU AICB iteration the draw gave the
    same events, every time 1 ns later, and a floor of 0."""
    import os
    from pathlib import Path

    from wormhole_replay.workload.importers import import_aicb
    from wormhole_replay.workload.program import instantiate, is_program
    from wormhole_replay.workload.trace import load_trace, save_trace

    external = Path(os.environ.get("WORMHOLE_EXTERNAL_TRACES", REPO.parent / "shared" / "external-traces"))
    source = external / "aicb" / "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt"
    if not source.is_file():
        pytest.skip(f"{source} not found (../shared/external-traces or $WORMHOLE_EXTERNAL_TRACES)")
    program = import_aicb(source, gpus=16)
    assert is_program(program)
    save_trace(program, tmp_path / "aicb.parquet")
    drawn = load_trace(_tool("bench_scale").perturbed(tmp_path, tmp_path / "aicb.parquet", "fat-tree-4", 10))
    ranks = instantiate(program, hosts=16).ops
    assert not is_program(drawn) and len(drawn.ops) == len(ranks)
    delta = drawn.ops["duration_ns"].to_numpy() - ranks["duration_ns"].to_numpy()
    assert sorted(set(delta)) == [0, 10] and (delta == 10).sum() == 1


def test_bench_scale_where_splits_the_signed_error_by_what_was_forwarded_and_when():
    """Where a run's bias sits: flows never fast-forwarded, partly, mostly, wholly (a timer); and by
    start quarter; each group's mean signed error, total FCT against full's and share of full's
    total.  Hand-made: the two flows never forwarded are 10% late, the mostly forwarded one on
    time, the timer 20% early; a draw read on the run's groups (``groups_from``) puts its own
    errors on the same flows."""
    import pandas as pd

    where = _tool("bench_scale").where
    full = pd.DataFrame({"flow_id": [0, 1, 2, 3, 4, 5], "virtual": [False, False, False, False, True, False],
                         "start_ns": [0, 10, 20, 30, 0, 40], "finish_ns": [100, 110, 120, 130, 5, 240],
                         "fct_ns": [100, 100, 100, 100, 5, 200], "completed": [True] * 6})
    other = full.assign(fct_ns=[110, 110, 130, 100, 50, 160], finish_ns=[110, 120, 150, 130, 50, 200],
                        size_bytes=[1000] * 6, fast_forwarded_bytes=[0, 0, 200, 900, 0, 1000])
    t = where(full, other, quarters=2).set_index("flows")
    assert t.loc["forwarded none", "n"] == 2 and t.loc["forwarded none", "signed_error"] == pytest.approx(0.1)
    assert t.loc["forwarded some", "signed_error"] == pytest.approx(0.3)
    assert t.loc["forwarded most", "n"] == 1 and t.loc["forwarded most", "signed_error"] == pytest.approx(0.0)
    assert t.loc["forwarded all", "n"] == 1 and t.loc["forwarded all", "total_error"] == pytest.approx(-0.2)
    assert t.loc["forwarded all", "share"] == pytest.approx(200 / 600)  # the virtual flow never counts
    assert t.loc["forwarded none", "total_error"] == pytest.approx(0.1)
    assert t.loc["started in quarter 1", "n"] == 2 and t.loc["started in quarter 1", "signed_error"] == pytest.approx(0.1)
    assert t.loc["started in quarter 2", "signed_error"] == pytest.approx(0.1 / 3)
    assert t.loc["started in quarter 2", "total_error"] == pytest.approx(390 / 400 - 1)
    draw = full.assign(fct_ns=[100, 100, 100, 100, 5, 210], size_bytes=[1000] * 6, fast_forwarded_bytes=[0] * 6)
    d = where(full, draw, quarters=2, groups_from=other).set_index("flows")
    assert d.loc["forwarded all", "n"] == 1 and d.loc["forwarded all", "total_error"] == pytest.approx(0.05)
    assert d.loc["forwarded none", "total_error"] == pytest.approx(0.0)


def test_bench_contention_cuts_a_runs_network_flows_into_a_flow_file(tmp_path):
    """``--cut RUN LO HI``: the network flows of a run starting within [LO, HI) ms, at their start
    times less LO and with their source ports (so their ECMP paths).  Catches compute ops (virtual
    flows) or flows outside the window let in, starts not shifted, the ports dropped."""
    import numpy as np
    import pandas as pd

    from wormhole_replay.errors import InputError

    cut = _tool("bench_contention").cut
    pd.DataFrame({"src": [0, 1, 2, 3], "dst": [4, 5, 6, 7], "sport": [10, 11, 12, 13], "dport": [100] * 4,
                  "pg": [3] * 4, "size_bytes": [1000, 2000, 3000, 4000],
                  "start_ns": [1_000_000, 2_500_000, 2_600_000, 9_000_000],
                  "virtual": [False, False, True, False]}).to_parquet(tmp_path / "flows.parquet")
    flows = cut(str(tmp_path), 2, 10)
    assert list(flows.src) == [1, 3] and list(flows.size) == [2000, 4000]
    assert list(flows.start_ns) == [500_000, 7_000_000] and list(flows.sport) == [11, 13]
    assert np.all(flows.dport == 100)
    with pytest.raises(InputError, match="no network flow"):
        cut(str(tmp_path), 3, 4)
    with pytest.raises(InputError, match="no flows.parquet"):
        cut(str(tmp_path / "nowhere"), 0, 1)


def test_bench_contention_episodes_split_a_flows_live_time_around_its_fluid_episodes():
    """``--episodes``: a flow live 0-2, fluid 2-5, live 5-6, fluid 6-8, live 8-10 (slices every unit)
    spends 20% of its time live before its first episode, 10% between, 20% after the last; a flow
    never fluid counts wholly before.  Catches the shares computed over the wrong span."""
    import numpy as np
    import pandas as pd

    episodes = _tool("bench_contention").Episodes()
    on = [False, False, True, True, True, False, True, True, False, False]
    for t in range(10):
        episodes.t.append(t)
        episodes.fluid.append(np.array([on[t], False]))
    flows = pd.DataFrame({"start_ns": [0, 0], "finish_ns": [10, 10]})
    text = episodes.report(flows, np.array([True, False]))
    assert "live 20.0% of the flows' time before" in text and "10.0% between episodes (2.0 per flow" in text
    assert "20.0% after the last; 0 flows never fluid" in text
    text = episodes.report(flows, np.array([True, True]))
    assert "live 60.0% of the flows' time before" in text and "1 flows never fluid" in text


def test_bench_contention_memo_runs_wormhole_mode_on_a_new_database(tmp_path):
    """``--memo``: the wormhole run keeps a memo database (its counters in the result), the full
    run none.  Catches the database dropped on the way, or handed to the full run."""
    tool = _tool("bench_contention")
    flows = tool.rings("fat-tree:k=4", [1], 0.1)
    db = tmp_path / "memo.sqlite"
    fast, _ = tool.run(flows, "fat-tree:k=4", "hpcc", "wormhole", memo_db=str(db))
    assert "memo_inserts" in fast.counters["wormhole"] and db.is_file()
    tool.run(flows, "fat-tree:k=4", "hpcc", "full", memo_db=str(tmp_path / "other.sqlite"))
    assert not (tmp_path / "other.sqlite").exists()


def _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, *flags) -> str:
    """``bench_memo`` on a 16-GPU DDP iteration on a rail (its ring steps and iterations recur):
    what it prints."""
    from wormhole_replay.workload.generators import GptShape, gpt_trace
    from wormhole_replay.workload.trace import save_trace

    save_trace(gpt_trace(GptShape(layers=1, hidden=1024, seq=512, vocab=8192), gpus=16, tp=2, tflops=5.0),
               tmp_path / "t.parquet")
    monkeypatch.setattr("sys.argv", ["bench_memo", "--trace", str(tmp_path / "t.parquet"), "--topology",
                                     "rail:servers=8,gpus_per_server=2", "--cc", "hpcc", *flags])
    assert _tool("bench_memo").main() == 0
    return capsys.readouterr().out


def test_bench_memo_episodes_prints_the_iterations_taken_whole(tmp_path, monkeypatch, capsys):
    """``--episodes``: the cold run takes its last iteration whole and the warm run all but its
    first (a rail shape whose iterations recur); catches the option not reaching the runs."""
    out = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, "--iterations", "4", "--episodes")
    lines = {line.split(" iterations:")[0]: line for line in out.splitlines() if " iterations: " in line}
    assert lines["cold"].count("hits 1/1") == 1 and lines["warm"].count("hits 1/1") == 3, lines


def test_bench_memo_recurring_takes_flows_from_their_copies(tmp_path, monkeypatch, capsys):
    """``--recurring``: on a rail each ring step recurs, so the cold run simulates a few copies of
    each and the warm run almost nothing; catches the option not reaching the runs."""
    out = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, "--iterations", "2", "--recurring")
    assert "recurring flows memoized" in out.splitlines()[0]
    events = {line.split()[0]: int(line.split()[3].replace(",", "")) for line in out.splitlines()
              if len(line.split()) > 3 and line.split()[2].endswith("x")}  # the table's rows
    assert events["warm"] < 0.01 * events["full"] and events["cold"] < 0.5 * events["full"], out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}  # per iteration
    assert set(rows) == {"cold", "warm", "floor"} and all(r.count("#") == 2 for r in rows.values()), out
    mean_fct = [float(cell.split(", ")[1].rstrip("%")) for cell in rows["warm"].split("; ")]
    assert all(abs(m) < 1 for m in mean_fct), out  # a rail's copies recur alike, iteration by iteration


def test_bench_memo_draws_run_the_mechanism_on_perturbed_traces(tmp_path, monkeypatch, capsys):
    """``--draws 2``: the cold run again on the trace with one op 1 ns and 10 ns longer, each on a
    database of its own, printed as rows and per-iteration lines of their own against the same full
    run; catches the draws not running, sharing the cold run's database, or not being printed."""
    import wormhole_replay.replay as replay_module

    dbs = []
    real = replay_module.replay

    def noting(*args, **kwargs):
        dbs.append(kwargs.get("memo_db"))
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_module, "replay", noting)
    out = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, "--iterations", "1", "--recurring", "--no-plain",
                                "--no-floor", "--draws", "2")
    rows = [line.split()[0] for line in out.splitlines() if len(line.split()) > 3 and line.split()[2].endswith("x")]
    assert rows == ["full", "cold", "warm", "+1ns", "+10ns"], out
    lines = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert lines == ["cold", "warm", "+1ns", "+10ns"], out
    cold_db, draw_dbs = dbs[2], dbs[-2:]  # after the warm-up and the full run: cold, warm, the draws
    assert len(set(draw_dbs) | {cold_db}) == 3 and None not in draw_dbs, dbs


def test_bench_memo_cache_keeps_the_full_run_and_its_draw_for_a_later_call(tmp_path, monkeypatch, capsys):
    """``--cache``: the first call simulates the full run and its noise draw and keeps them, a later
    one takes them from there (no full simulation) and prints the same full row; ``--no-plain``
    skips the wormhole run without a memo, ``--no-floor`` the draw.  Catches the cache not being
    read or not being written."""
    import wormhole_replay.replay as replay_module

    full_runs = []
    real = replay_module.replay

    def counting(*args, **kwargs):
        full_runs.extend([1] if kwargs.get("mode") == "full" else [])
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_module, "replay", counting)
    flags = ("--iterations", "1", "--recurring", "--cache", str(tmp_path / "cache"), "--no-plain")
    first = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, *flags)
    assert len(full_runs) == 2 and len(list((tmp_path / "cache").iterdir())) == 2  # the full run, its draw
    second = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, *flags)
    assert len(full_runs) == 2, "the second call simulated a full run again"
    full_row = [next(line for line in out.splitlines() if line.startswith("full ")) for out in (first, second)]
    floor_line = [out.splitlines()[-1] for out in (first, second)]
    assert full_row[0] == full_row[1] and floor_line[0] == floor_line[1]
    assert not any(line.startswith("no memo") for line in second.splitlines())
    flags = ("--iterations", "1", "--recurring", "--cache", str(tmp_path / "other"), "--no-plain", "--no-floor")
    third = _bench_memo_on_a_rail(tmp_path, monkeypatch, capsys, *flags)
    assert len(full_runs) == 3 and len(list((tmp_path / "other").iterdir())) == 1  # the full run, no draw
    assert "noise floor" not in third and not any(line.startswith("  floor") for line in third.splitlines())


def test_bench_scale_runs_its_noise_draws_side_by_side_when_asked(tmp_path, monkeypatch):
    """``--draw-jobs 2``: the noise-floor draws' full runs run two at a time (each call waits at a
    barrier only two runs in flight can pass: one at a time, it times out), keyed one per delay,
    and come back in the order of their delays."""
    import threading

    bench = _tool("bench_scale")
    met = threading.Barrier(2, timeout=30)
    keys = []

    def fake_replay(cache, trace_path, topo, cc, mode, extra=(), key=None):
        keys.append(key)
        met.wait()  # two by two: 1 and 10 ns, then 100 ns and 1 us
        return {"delay": int(trace_path.stem), "mode": mode}

    monkeypatch.setattr(bench, "perturbed", lambda cache, t, topo, delay: tmp_path / f"{delay}.parquet")
    monkeypatch.setattr(bench, "replay", fake_replay)
    runs = bench.draws(tmp_path, tmp_path / "t.parquet", "fat-tree", "hpcc", (1, 10, 100, 1000), jobs=2)
    assert [r["delay"] for r in runs] == [1, 10, 100, 1000] and {r["mode"] for r in runs} == {"full"}
    assert sorted(keys) == sorted(["noise-1ns", "noise-10ns", "noise-100ns", "noise-1000ns"])


def test_bench_scale_warm_reruns_on_the_database_the_first_run_filled(tmp_path, monkeypatch):
    """``--warm``: a second wormhole run given the first one's memo database (``memo.sqlite`` beside
    its outputs), judged against full on a line of its own, with its iteration times against the
    first run's.  Runs are stubbed (hand-made outputs): the warm run's flow 0 is 20% late and its
    iteration 4% slower than the cold run's, which is on time."""
    import pandas as pd

    bench = _tool("bench_scale")
    calls = []

    def fake_replay(cache, trace_path, topo, cc, mode, extra=(), key=None):
        d = tmp_path / f"run{len(calls)}"
        d.mkdir()
        calls.append((mode, tuple(extra), d))
        warm = "--memo-db" in extra
        fct = [120 if warm else 100, 100]
        pd.DataFrame({"flow_id": [0, 1], "virtual": [False, False], "start_ns": [0, 0], "fct_ns": fct,
                      "finish_ns": fct, "completed": [True, True]}).to_parquet(d / "flows.parquet")
        pd.DataFrame({"index": [0], "start_ns": [0], "end_ns": [104 if warm else 100],
                      "duration_ns": [104 if warm else 100]}).to_csv(d / "iterations.csv", index=False)
        return {"wall_s": 10.0 if warm else 20.0 if mode == "wormhole" else 100.0, "rss_mb": 1.0,
                "events": 10 if warm else 50 if mode == "wormhole" else 100, "wormhole": {}, "dir": d, "cached": False}

    monkeypatch.setattr(bench, "trace", lambda cache, name, scale: tmp_path / "t.parquet")
    monkeypatch.setattr(bench, "replay", fake_replay)
    r = bench.row(tmp_path, "ddp", "fat-tree", "hpcc", 1.0, False, 0, recurring=1.0, warm=True)
    (m0, cold, cold_dir), (m1, warm, _), (m2, _, _) = calls
    assert (m0, m1, m2) == ("wormhole", "wormhole", "full")
    assert cold == ("--memo-recurring", "1.0") and warm == (*cold, "--memo-db", str(cold_dir / "memo.sqlite"))
    assert r["speedup"] == pytest.approx(5.0) and r["verdict"] == "within bounds"
    w = r["warm"]
    assert w["workload"] == "ddp (warm)" and w["speedup"] == pytest.approx(10.0)
    assert w["events_avoided"] == pytest.approx(0.9) and w["fct_mean"] == pytest.approx(0.1)
    assert w["warm_vs_cold"] == pytest.approx(0.04) and w["verdict"] == "BEYOND: fct_mean, fct_p99, iteration, mean_fct"
    assert not cold_dir.exists()  # the wormhole runs' outputs are not kept (without --where)


def test_pace_model_gives_each_later_copy_a_sample_in_turn_or_its_class_mean_from_the_pool_asked():
    """``tools/pace_model.py``: a class of 12 copies one after another, alone on their path (pace 1,
    so each copy's alone time is its time), is learned from its first 8 (given; by default
    ``recurring._samples`` takes 4 of 12), and each later copy is predicted the j-th sample's time
    (``aligned``, as the memo replays them), the samples' mean (``mean``), or the mean times one of
    the samples' deviations (``pooled``).
    They draw from the class's first 8 (as the memo), those and its probes, 8 spread over its
    copies, or all its copies (``--pool``).  Catches a later copy given another sample, or the mean
    taken over other copies than the pool's."""
    import numpy as np
    import pandas as pd

    model = _tool("pace_model").model
    samples_us = [100, 110, 120, 130, 140, 150, 160, 170]
    times_us = samples_us + [200] * 4
    start_us = np.cumsum([0] + [t + 50 for t in times_us[:-1]])
    n = len(times_us)
    flows = pd.DataFrame({"flow_id": np.arange(n), "virtual": False, "completed": True, "src": 0, "dst": 4,
                          "sport": 10, "dport": 100, "pg": 3, "size_bytes": 1_000_000, "iteration": 0,
                          "start_ns": start_us * 1000, "received_ns": (start_us + times_us) * 1000,
                          "kind": "coll", "rank": 0, "dst_rank": 1, "unit": np.arange(n)})
    default = model(flows, "leaf-spine:hosts=16,leaves=4,spines=2", 1.1, "recurring", 1.0, "aligned")
    assert default["sample"].tolist() == [True] * 4 + [False] * 8  # a quarter of 12, at least 4
    predicted = {}
    for order in ("aligned", "mean", "pooled"):
        net = model(flows, "leaf-spine:hosts=16,leaves=4,spines=2", 1.1, "recurring", 1.0, order, samples=8)
        assert net["sample"].tolist() == [True] * 8 + [False] * 4
        assert (net["alone_ns"] == net["time_ns"]).all()  # alone on its path: pace 1
        predicted[order] = (net["predicted_ns"][8:] / 1000).tolist()
    assert predicted["aligned"] == [100, 110, 120, 130]
    assert predicted["mean"] == [135] * 4
    assert set(predicted["pooled"]) <= set(samples_us)
    # the later copies are the same 4 whatever they draw from: 8 copies spread over all 12 (the 1st,
    # 2nd, 4th, 5th, 7th, 8th, 10th and 12th: mean 151.25 us, covered in whole microseconds) or all 12
    for pool, mean_us in (("spread", 152), ("all", 157)):
        net = model(flows, "leaf-spine:hosts=16,leaves=4,spines=2", 1.1, "recurring", 1.0, "mean", pool, samples=8)
        assert net["sample"].tolist() == [True] * 8 + [False] * 4
        assert (net["predicted_ns"][8:] / 1000).tolist() == [mean_us] * 4
    # probes at every 2nd place after the samples (the 10th and 12th, 200 us each) are simulated and
    # join the pool (probes, tried in the memo and not kept: DEVELOPERS.md, "Probes"): (8 x 135 + 2 x 200) / 10 = 148
    net = model(flows, "leaf-spine:hosts=16,leaves=4,spines=2", 1.1, "recurring", 1.0, "mean", "probed", samples=8,
                stride=2)
    assert net["sample"].tolist() == [True] * 8 + [False, True, False, True]
    assert (net["predicted_ns"][[8, 10]] / 1000).tolist() == [148, 148]


def test_pace_model_sharers_bins_copies_by_the_flows_beside_them_with_no_model():
    """``pace_model --sharers``: hosts 0 and 1 each send 12 copies to host 4 of the leaf-spine; the
    first 6 of each pair run together for 200 us (two on host 4's downlink, twice their 100 us
    alone), the last 6 apart for 100 us.  The copies alone land in bin "1" at 1x their time alone,
    the pairs in "~2" at 2x.  Catches a count that includes the copy's own flow twice, or misses the
    port the two share."""
    import numpy as np
    import pandas as pd

    by_sharers = _tool("pace_model").by_sharers
    rows = []
    for k in range(12):
        t = k * 1000
        together = k < 6
        for src, offset in ((0, 0), (1, 0 if together else 500)):
            start, time = t + offset, 200 if together else 100
            rows.append((src, start * 1000, (start + time) * 1000))
    src, start, received = (np.array(x) for x in zip(*rows))
    n = len(rows)
    flows = pd.DataFrame({"flow_id": np.arange(n), "virtual": False, "completed": True, "src": src, "dst": 4,
                          "sport": 10 + src, "dport": 100, "pg": 3, "size_bytes": 1_000_000, "iteration": 0,
                          "start_ns": start, "received_ns": received, "fct_ns": received - start,
                          "standalone_fct_ns": 100_000})
    table = by_sharers(flows, "leaf-spine:hosts=16,leaves=4,spines=2", "recurring")
    assert table["count"].to_dict() == {"1": 12, "~2": 12}
    assert table.loc["1", "50%"] == 1.0 and table.loc["~2", "50%"] == 2.0


@pytest.mark.parametrize("sharers", [False, True])
def test_pace_model_bad_input_is_one_line_and_exit_2(tmp_path, sharers):
    """A folder without flows.parquet, or an unknown topology, with or without ``--sharers``: one
    line on stderr, exit status 2, no traceback."""
    import subprocess

    import pandas as pd

    pd.DataFrame({"flow_id": [0], "virtual": [False], "completed": [True], "src": [0], "dst": [4], "sport": [10],
                  "dport": [100], "pg": [3], "size_bytes": [1000], "iteration": [0], "start_ns": [0],
                  "received_ns": [1000], "fct_ns": [1000], "standalone_fct_ns": [1000]}).to_parquet(tmp_path / "flows.parquet")
    for folder, topology, says in ((tmp_path / "nowhere", "fat-tree:k=4", "no flows.parquet there"),
                                   (tmp_path, "no-such-fabric:k=3", "unknown topology spec")):
        p = subprocess.run([sys.executable, str(REPO / "tools" / "pace_model.py"), str(folder), "--topology", topology,
                            *(["--sharers"] if sharers else [])], capture_output=True, text=True, timeout=300)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


def test_pace_model_max_min_shares_give_a_flow_what_its_sharers_held_down_elsewhere_leave():
    """``pace_model --share maxmin``: host 0 sends to host 4 (A), and host 1 sends to hosts 4, 2 and
    3 (B, C, D) of the leaf-spine, all four for the same 100 us.  A shares host 4's downlink with B
    alone, but B is held to a third by host 1's NIC: A's max-min share is two thirds, where equal
    shares of its busiest port give it half (gain 1).  Catches a water-filling that does not fix the
    tightest link's flows first, or that hands a fixed flow's room to no one."""
    import numpy as np
    import pandas as pd

    from wormhole_replay.topology import build_topology

    model = _tool("pace_model").model
    hosts = np.asarray(build_topology("leaf-spine:hosts=16,leaves=4,spines=2").hosts)
    pairs = [(0, 4), (1, 4), (1, 2), (1, 3)]
    flows = pd.DataFrame({"flow_id": np.arange(4), "virtual": False, "completed": True,
                          "src": [hosts[a] for a, _ in pairs], "dst": [hosts[b] for _, b in pairs],
                          "sport": 10, "dport": 100, "pg": 3, "size_bytes": 1_000_000, "iteration": 0,
                          "start_ns": 0, "received_ns": 100_000, "kind": "coll", "rank": [0, 1, 1, 1],
                          "dst_rank": [4, 4, 2, 3], "unit": 0})
    alone = {share: model(flows, "leaf-spine:hosts=16,leaves=4,spines=2", 1.0, "all", 1.0, share=share)["alone_ns"]
             for share in ("equal", "maxmin")}
    assert alone["equal"].tolist() == pytest.approx([50_000] + [100_000 / 3] * 3)
    assert alone["maxmin"].tolist() == pytest.approx([200_000 / 3] + [100_000 / 3] * 3)


def test_bench_newcomer_measures_a_newcomers_share_and_the_timers_time_for_it():
    """One case of ``bench_newcomer``: a 1 MB newcomer joining two flows on the leaf-spine keeps more
    than an equal share in full simulation (a third of the link), and the timers beside it give it
    a time within 10% of full (the yield; DEVELOPERS.md, "Newcomers")."""
    row = _tool("bench_newcomer").case("leaf-spine", 2, 1.0, 50, timers=True)
    assert 1 / 3 < row["share"] < 0.5, row
    assert row["full_us"] == pytest.approx(8e6 / (row["share"] * 95e9) * 1e6, rel=1e-9)  # 1 MB at that share
    assert abs(row["error"]) < 0.10, row


def test_ring_timelines_prints_each_rings_spread_beside_the_floor(tmp_path, monkeypatch, capsys):
    """Two rings, one 10% slow and one 10% fast in the run, both exact in the floor: the run's
    spread reads -10 .. +10 and the floor's 0; a folder without flows is one line on stderr and
    status 2."""
    import pandas as pd

    tool = _tool("ring_timelines")
    full = pd.DataFrame({"flow_id": range(4), "iteration": 0, "rank": [0, 1, 2, 3], "dst_rank": [1, 0, 3, 2],
                         "unit": [0, 0, 1, 1], "kind": "coll", "virtual": False, "start_ns": 0,
                         "received_ns": [100, 100, 100, 100]})
    full["finish_ns"] = full["received_ns"]
    for name, rx in (("full", [100] * 4), ("run", [110, 100, 90, 90]), ("floor", [100] * 4)):
        (tmp_path / name).mkdir()
        full.assign(received_ns=rx, finish_ns=rx).to_parquet(tmp_path / name / "flows.parquet")
    monkeypatch.setattr(sys, "argv", ["ring_timelines", str(tmp_path / "full"), str(tmp_path / "run"),
                                      "--floor", str(tmp_path / "floor"), "--table"])
    assert tool.main() == 0
    out = capsys.readouterr().out
    row = out.splitlines()[4].split()  # iteration 0: run's |err| min max, end min max, then the floor's
    assert [float(x) for x in row[1:4]] == [10.0, -10.0, 10.0] and [float(x) for x in row[6:9]] == [0.0, 0.0, 0.0]
    monkeypatch.setattr(sys, "argv", ["ring_timelines", str(tmp_path / "full"), str(tmp_path / "none")])
    assert tool.main() == 2
    err = capsys.readouterr().err
    assert "no flows.parquet" in err and len(err.splitlines()) == 1
