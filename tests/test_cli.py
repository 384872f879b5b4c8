"""The command line: a real run end to end, and bad input as one line on stderr with exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "traces" / "examples" / "incast"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "wormhole_replay", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_simulate_config_writes_outputs_and_json(tmp_path):
    p = cli("simulate", EXAMPLE / "config.txt", "--out", tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    for key in ("mode", "wall_seconds", "simulated_ns", "events", "flows", "flows_completed", "outputs"):
        assert key in summary
    assert summary["mode"] == "wormhole" and "fast_forwards" in summary["wormhole"]  # the default mode
    assert summary["flows"] == summary["flows_completed"] == 11
    fct = Path(summary["outputs"]["fct"]).read_text().splitlines()
    assert len(fct) == 11 and all(len(line.split()) == 8 for line in fct)
    flows = pd.read_parquet(summary["outputs"]["flows"])
    for col in ("flow_id", "src", "dst", "size_bytes", "start_ns", "finish_ns", "fct_ns"):
        assert col in flows.columns
    assert Path(summary["outputs"]["pfc"]).exists()
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")], "no temporary files left"


def test_simulate_direct_form(tmp_path):
    p = cli("simulate", "--topology", "leaf-spine:hosts=16,leaves=4,spines=2", "--flows", EXAMPLE / "flow.txt",
            "--cc", "hpcc", "--out", tmp_path, "--json", "--quiet")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["flows_completed"] == 11


def test_a_direct_run_goes_on_past_four_seconds_and_warns_of_flows_left_unfinished(tmp_path):
    """run.py's preset stops at 4 s of simulated time, which cut long replays short (a 128-GPU MoE
    iteration, the fourth of a 4-iteration DDP replay): a direct run goes on until its flows are
    done; a --config SIMULATOR_STOP_TIME still ends it, and the flows it left are named on stderr."""
    flows = write(tmp_path / "f.txt", "2\n0 1 3 100 100000 0.001\n2 3 3 100 100000 4.5\n")
    args = ("simulate", "--topology", "fat-tree:k=4", "--flows", flows, "--cc", "hpcc", "--json", "--quiet")
    p = cli(*args, "--out", tmp_path / "a")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert json.loads(p.stdout)["flows_completed"] == 2
    p = cli(*args, "--out", tmp_path / "b", "--config", write(tmp_path / "c.txt", "SIMULATOR_STOP_TIME 4.0\n"))
    assert p.returncode == 0 and json.loads(p.stdout)["flows_completed"] == 1
    assert p.stderr.splitlines() == ["wormhole-replay: warning: 1 of 2 flows did not complete (the run's last event at "
                                     "0.001 s simulated; a --config SIMULATOR_STOP_TIME ends a run early, lost packets "
                                     "without a retransmission timer never end)"]


def test_a_wormhole_run_says_in_one_line_how_much_it_did_not_simulate(tmp_path):
    """After a wormhole run, one line says what acceleration did: the share of the network bytes
    not simulated packet by packet (``bytes_fast_forwarded`` in the summary, the flows table's
    ``fast_forwarded_bytes`` over their sizes) and the jumps; a full run prints no such line.  Two
    flows of 100 MB, each alone on its path, are fast-forwarded for most of their bytes.  Catches a
    share computed over other flows than the table's, or a line in full mode."""
    flows = write(tmp_path / "f.txt", "2\n0 4 3 100 100000000 0\n1 8 3 100 100000000 0\n")
    args = ("simulate", "--topology", "fat-tree:k=4", "--flows", flows, "--cc", "hpcc", "--quiet")
    p = cli(*args, "--out", tmp_path / "w")
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())["wormhole"]
    table = pd.read_parquet(tmp_path / "w" / "flows.parquet")
    share = table["fast_forwarded_bytes"].sum() / table["size_bytes"].sum()
    assert summary["bytes_fast_forwarded"] == pytest.approx(share, abs=1e-6) and share > 0.5
    line = p.stdout.splitlines()[-1]
    assert line.startswith(f"wormhole: {share:.1%} of the network bytes not simulated; "
                           f"{summary['fast_forwards']} fast-forwards"), p.stdout
    p = cli(*args, "--out", tmp_path / "f", "--mode", "full")
    assert p.returncode == 0 and "wormhole:" not in p.stdout, p.stdout


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


TRACE_TOPO = "rail:servers=2,gpus_per_server=4"

# case -> (arguments, what the one line must say): each case fails for its own reason, not for
# some other missing argument
BAD = {
    "missing config": (lambda d: ["simulate", d / "nope.txt"], "nope.txt: no such config file"),
    "missing flow file": (lambda d: ["simulate", "--topology", "fat-tree:k=4", "--flows", d / "nope.txt", "--cc", "dcqcn"],
                          "nope.txt: no such flow file"),
    "unknown cc": (lambda d: ["simulate", "--topology", "fat-tree:k=4", "--flows", EXAMPLE / "flow.txt", "--cc", "reno"],
                   "invalid choice: 'reno'"),
    "unknown topology spec": (lambda d: ["simulate", "--topology", "torus:n=4", "--flows", EXAMPLE / "flow.txt",
                                         "--cc", "dcqcn"], "unknown topology spec 'torus:n=4'"),
    "missing topology file": (lambda d: ["simulate", "--topology", d / "topo.txt", "--flows", EXAMPLE / "flow.txt",
                                         "--cc", "dcqcn"], "topo.txt: no such topology file"),
    "malformed topology": (lambda d: ["simulate", "--topology", write(d / "t.txt", "3 1 2\n2\n0 2 100Gbps\n1 2 100Gbps 1us 0\n"),
                                      "--flows", write(d / "f.txt", "1\n0 1 3 100 1000 2.0\n"), "--cc", "dcqcn"],
                           "t.txt:3: expected 5 fields"),
    "flow to a missing node": (lambda d: ["simulate", "--topology", "fat-tree:k=4", "--flows",
                                          write(d / "f.txt", "1\n0 99 3 100 1000 2.0\n"), "--cc", "dcqcn"],
                               "f.txt:2: destination node 99 does not exist"),
    "flow to itself": (lambda d: ["simulate", "--topology", "fat-tree:k=4", "--flows",
                                  write(d / "f.txt", "1\n3 3 3 100 1000 2.0\n"), "--cc", "dcqcn"],
                       "f.txt:2: source and destination are the same host"),
    "malformed flow line": (lambda d: ["simulate", "--topology", "fat-tree:k=4", "--flows",
                                       write(d / "f.txt", "2\n0 1 3 100 1000 2.0\n0 1 3 x\n"), "--cc", "hpcc"],
                            "f.txt:3: expected 6 fields"),
    "malformed config value": (lambda d: ["simulate", write(d / "c.txt", f"TOPOLOGY_FILE {EXAMPLE / 'topology.txt'}\n"
                                          f"FLOW_FILE {EXAMPLE / 'flow.txt'}\nCC_MODE fast\n")],
                               "c.txt:3: bad value for CC_MODE"),
    "unsupported cc mode in config": (lambda d: ["simulate", write(d / "c.txt", f"TOPOLOGY_FILE {EXAMPLE / 'topology.txt'}\n"
                                                 f"FLOW_FILE {EXAMPLE / 'flow.txt'}\nCC_MODE 7\n")],
                                      "CC_MODE 7 is not supported"),
    "unknown option": (lambda d: ["simulate", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    "replay without a topology": (lambda d: ["replay", REPO / "traces" / "gpt-16gpu.trace.parquet", "--cc", "hpcc"],
                                  "the following arguments are required: --topology"),
    "episodes without the memo": (lambda d: ["replay", REPO / "traces" / "gpt-16gpu.trace.parquet", "--topology",
                                             TRACE_TOPO, "--cc", "hpcc", "--memo-episodes", "--no-memo"],
                                  "--memo-episodes takes iterations from the memo database: drop --no-memo"),
    "recurring flows without the memo": (lambda d: ["replay", REPO / "traces" / "gpt-16gpu.trace.parquet", "--topology",
                                                    TRACE_TOPO, "--cc", "hpcc", "--memo-recurring", "--no-memo"],
                                         "--memo-recurring is the memo's (its session reads the finished copies)"),
    "replay of a missing trace": (lambda d: ["replay", d / "nope.parquet", "--topology", TRACE_TOPO, "--cc", "hpcc"],
                                  "nope.parquet: no such trace file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(tmp_path, case):
    """Catches a traceback, a zero exit, a partial output folder, or a case that fails for another
    reason than its own (the line must name what is wrong)."""
    argv, says = BAD[case]
    p = cli(*argv(tmp_path), *(["--out", tmp_path / "out"] if case != "unknown option" else []))
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert lines[0].startswith("wormhole-replay: error:")
    assert says in lines[0], lines[0]
    assert not (tmp_path / "out").exists(), "nothing written on bad input"


def test_error_names_file_and_line(tmp_path):
    f = write(tmp_path / "f.txt", "2\n0 1 3 100 1000 2.0\n0 99 3 100 1000 2.0\n")
    p = cli("simulate", "--topology", "fat-tree:k=4", "--flows", f, "--cc", "dcqcn")
    assert p.returncode == 2
    assert f"{f}:3:" in p.stderr


def test_every_command_prints_its_help():
    """``--help`` formats every option's help (a bare ``%`` in one, as in "1%", crashed ``replay
    --help`` with a traceback)."""
    import argparse

    from wormhole_replay.cli import build_parser

    parser = build_parser()
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0]
    seen = set()

    def walk(p):
        if id(p) in seen:
            return
        seen.add(id(p))
        assert p.format_help()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    walk(sub)

    walk(parser)
    assert {"replay", "audit"} <= set(commands.choices)
