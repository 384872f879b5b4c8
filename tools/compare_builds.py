#!/usr/bin/env python
"""Two builds of the engine side by side, in one run: speed on reference scenarios and first-run
compile time from an empty Numba cache.

Each build is a git revision (or ``WORKTREE`` for the working tree), checked out into a temporary
folder and run from there (``PYTHONPATH``), so both use this environment's libraries.  For each
build: the compile time per mode (``--compile-modes``: full and wormhole, since a run compiles only
the machinery its mode uses; a small run with the build's Numba cache emptied, minus the same run
with the cache warm), then ``--repeat`` whole-process runs of each scenario, alternating builds so
that a drift in the machine's speed hits both alike.  Prints the fastest and
median CPU time (user + system of the whole process: steadier than wall time on a loaded machine)
per build and scenario, their ratio, and whether both builds wrote the same ``fct.txt``.

    python tools/compare_builds.py HEAD~1 WORKTREE                 # S4 both CCs, 3 repeats
    python tools/compare_builds.py abc123 def456 --runs S1_dcqcn S5_dcqcn --repeat 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO.parent / "shared" / "reference-runs"


def checkout(rev: str, into: Path) -> Path:
    """The build's sources: ``WORKTREE`` (copied) or a revision (``git archive``)."""
    into.mkdir(parents=True)
    if rev == "WORKTREE":
        for part in ("wormhole_replay", "migrations"):  # the memo (wormhole mode) needs its migrations
            shutil.copytree(REPO / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "wormhole_replay", "migrations"], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"compare_builds: {rev}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def simulate_cpu_seconds(folder: Path, out: Path, *extra: str, tree: Path | None = None, mode: str = "full") -> float:
    """One full-mode ``simulate`` of a reference run in a fresh process (the build in ``tree``, else
    this environment's): the child's CPU seconds (user + system), which other work on a loaded
    machine moves far less than wall time."""
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else None
    cmd = [sys.executable, "-m", "wormhole_replay", "simulate", str(folder / "config.txt"), "--paths",
           str(folder / "paths.txt"), "--seq-num-bytes", "8", "--mode", mode, "--out", str(out), "--quiet", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{Path(sys.argv[0]).stem}: {tree.name if tree else 'this build'} on {folder.name}: "
                         f"{p.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def run(tree: Path, folder: Path, out: Path, mode: str = "full") -> float:
    """``simulate_cpu_seconds`` with the build in ``tree``."""
    return simulate_cpu_seconds(folder, out, tree=tree, mode=mode)


def small_runs_seconds(tree: Path, folders, out: Path, mode: str) -> float:
    """``run`` of each folder in turn, each with a fresh output folder (and so a fresh memo database)."""
    seconds = 0.0
    for folder in folders:
        shutil.rmtree(out, ignore_errors=True)
        seconds += run(tree, folder, out, mode)
    return seconds


def clear_cache(tree: Path) -> None:
    for f in list(tree.rglob("*.nbi")) + list(tree.rglob("*.nbc")) + list(tree.rglob("engine-sources.sha256")):
        f.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--runs", nargs="+", default=["S4_dcqcn", "S4_hpcc"], help="reference runs to time")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compile-run", default="S1_hpcc", help="the small run timed cold and warm")
    ap.add_argument("--compile-repeat", type=int, default=1, help="cold compiles per build (the fastest counts)")
    ap.add_argument("--compile-modes", nargs="+", default=["full", "wormhole"], choices=["full", "wormhole"],
                    help="modes whose first-run compile is timed, each from an empty cache")
    a = ap.parse_args()
    folders = [RUNS / r for r in [a.compile_run, *a.runs]]
    missing = [f.name for f in folders if not (f / "config.txt").is_file()]
    if missing:
        print(f"compare_builds: no reference run {', '.join(missing)} in {RUNS}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="compare-builds-") as tmp:
        tmp = Path(tmp)
        trees = {name: checkout(rev, tmp / name) for name, rev in (("before", a.before), ("after", a.after))}
        print(f"before = {a.before}, after = {a.after}")
        # Compile from an empty cache, per mode (a build may compile only what a mode uses): both CCs,
        # builds alternating, then the same runs warm.
        small_runs = (RUNS / "S1_dcqcn", RUNS / a.compile_run)
        for mode in a.compile_modes:
            colds = {name: [] for name in trees}
            for _ in range(a.compile_repeat):
                for name, tree in trees.items():
                    clear_cache(tree)
                    colds[name].append(small_runs_seconds(tree, small_runs, tmp / "o", mode))
            for name, tree in trees.items():
                cold, warm = min(colds[name]), small_runs_seconds(tree, small_runs, tmp / "o", mode)
                print(f"{name:>6} --mode {mode:<8}: first runs from an empty cache {cold:6.1f} s, warm {warm:5.1f} s: "
                      f"compile ~{cold - warm:5.1f} s CPU", flush=True)
        for folder in folders[1:]:
            walls = {name: [] for name in trees}
            for _ in range(a.repeat):
                for name, tree in trees.items():
                    walls[name].append(run(tree, folder, tmp / f"{name}-{folder.name}"))
            same = all((tmp / f"{n}-{folder.name}" / "fct.txt").read_bytes()
                       == (tmp / f"before-{folder.name}" / "fct.txt").read_bytes() for n in trees)
            b, f = min(walls["before"]), min(walls["after"])
            print(f"{folder.name:<10} before {b:6.2f} s (median {statistics.median(walls['before']):6.2f})  "
                  f"after {f:6.2f} s (median {statistics.median(walls['after']):6.2f})  after/before {f / b:5.3f}  "
                  f"fct.txt {'identical' if same else 'DIFFERS'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
