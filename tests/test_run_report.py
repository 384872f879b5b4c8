"""``report DIR``: the HTML report of a run folder is one self-contained file with every plot, it
opens in a headless browser without errors, and the monitor plots read ``links.parquet``."""

import base64
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wormhole_replay.observe.report import NOT_MONITORED, hottest_links, load_run, render

from test_cli import EXAMPLE, REPO, cli

PLOTS = ["plot-timeline", "plot-breakdown", "plot-fct-size", "plot-slowdown", "plot-link-utilisation",
         "plot-queue-lengths", "plot-pfc"]


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory):
    """The bundled GPT sample, one iteration (a few seconds), with --report."""
    out = tmp_path_factory.mktemp("gpt") / "run"
    p = cli("replay", REPO / "traces" / "gpt-16gpu.trace.parquet", "--topology", "rail:servers=4,gpus_per_server=4",
            "--cc", "dcqcn", "--iterations", "1", "--out", out, "--report", "--quiet", "--no-memo")
    assert p.returncode == 0, p.stderr
    return out


def images(html: str) -> dict[str, bytes]:
    """The PNG behind each ``<img id=...>``."""
    return {m.group(1): base64.b64decode(m.group(2))
            for m in re.finditer(r'<img id="([^"]+)"[^>]*src="data:image/png;base64,([^"]+)"', html)}


def test_report_is_self_contained_with_every_plot(gpt_run):
    html = (gpt_run / "report.html").read_text()
    assert not re.search(r"https?://|<script|<link|@import|url\(", html)  # nothing fetched, nothing run
    assert all(src.startswith("data:") for src in re.findall(r'src="([^"]*)"', html))
    got = images(html)
    assert sorted(got) == sorted(PLOTS)
    for ident, data in got.items():
        assert data[:8] == b"\x89PNG\r\n\x1a\n", ident
        assert int.from_bytes(data[16:20], "big") >= 600, ident  # width from the IHDR chunk
    assert NOT_MONITORED in html  # no links.parquet: the monitor plots say so
    assert "critical path" in html and "dp_grad_bucket" in html  # the path table and the bandwidth table
    for name in ("iteration_breakdown.csv", "layer_breakdown.csv", "deps.parquet", "ports.csv", "pfc_intervals.parquet",
                 "summary.json"):
        assert (gpt_run / name).is_file(), name


def test_report_is_deterministic(gpt_run, tmp_path):
    p = cli("report", gpt_run, "--out", tmp_path / "again.html")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "again.html").read_bytes() == (gpt_run / "report.html").read_bytes()


CHECK = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.querySelectorAll("img")];
  const bad = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.id);
  const out = document.createElement("pre");
  out.id = "check";
  out.textContent = "images=" + imgs.map(i => i.id).join(",") + " broken=" + bad.join(",");
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_opens_in_headless_chromium(gpt_run, tmp_path):
    # a copy with a probe appended: the browser reports which images it decoded
    page = tmp_path / "probe.html"
    page.write_text((gpt_run / "report.html").read_text().replace("</body>", CHECK + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                            "--enable-logging=stderr", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    found = re.search(r'<pre id="check">images=([^ ]*) broken=([^<]*)</pre>', p.stdout)
    assert found, p.stdout[-2000:]
    assert sorted(found.group(1).split(",")) == sorted(PLOTS)
    assert found.group(2) == ""
    assert not re.search(r"CONSOLE|Uncaught|Failed to load resource", p.stderr), p.stderr[-2000:]


def synthetic_monitor(run_dir: Path, out: Path) -> Path:
    """A copy of a run folder with links.parquet as the monitor will write it: every port sampled
    every 10 us; edge switch 16's port 1 busy, host ports idle; the second half fast-forwarded."""
    shutil.copytree(run_dir, out)
    ports = pd.read_csv(out / "ports.csv")
    times = np.arange(10_000, 18_000_000, 10_000)
    rows = []
    for k, (node, ifindex, rate) in enumerate(ports[["node", "ifindex", "rate_bps"]].itertuples(index=False)):
        util = np.full(len(times), 0.9 if (node, ifindex) == (16, 1) else (k % 7) / 10)
        tx = (util * rate * 10e-6 / 8).astype(np.int64)
        rows.append(pd.DataFrame({"time_ns": times, "node": node, "port": ifindex, "queue_bytes": (k % 5) * 1000,
                                  "tx_bytes": tx, "utilisation": util, "paused": False,
                                  "fast_forwarded": times > 9_000_000}))
    pd.concat(rows, ignore_index=True).to_parquet(out / "links.parquet", index=False)
    pd.DataFrame({"node": [16, 17], "ifindex": [1, 2], "queue": [3, 3], "start_ns": [1_000_000, 2_000_000],
                  "end_ns": [1_500_000, -1]}).to_parquet(out / "pfc_intervals.parquet", index=False)
    return out


def test_report_reads_the_monitor_files(gpt_run, tmp_path):
    d = synthetic_monitor(gpt_run, tmp_path / "monitored")
    run = load_run(d)
    hot = hottest_links(run)
    assert set(hot) == {"host", "edge", "aggregation"}  # the rail network's tiers
    assert (hot["edge"].iloc[0].node, hot["edge"].iloc[0].port) == (16, 1)
    html = render(run)
    assert NOT_MONITORED not in html
    assert sorted(images(html)) == sorted(PLOTS)
    assert "2 pause intervals on 2 ports (queue 3)" in html and "1 still paused at the end" in html


def test_report_of_a_flow_level_run(tmp_path):
    p = cli("simulate", EXAMPLE / "config.txt", "--out", tmp_path, "--quiet", "--report")
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "report.html").read_text()
    assert sorted(images(html)) == sorted(PLOTS)
    assert "a flow-level run" in html.lower()


def test_report_says_how_much_of_a_wormhole_run_was_not_simulated(tmp_path):
    """Two flows of 100 MB, each alone on its path, fast-forwarded for most of their bytes: the
    report's summary gives the share of the network bytes not simulated (from the flows table, so
    older folders have it too); a full run's report has no such row."""
    flows = tmp_path / "f.txt"
    flows.write_text("2\n0 4 3 100 100000000 0\n1 8 3 100 100000000 0\n")
    args = ("simulate", "--topology", "fat-tree:k=4", "--flows", flows, "--cc", "hpcc", "--quiet", "--report")
    row = "network bytes not simulated (jumps, fluid flows, the memo)</td><td class=\"l\">"
    assert cli(*args, "--out", tmp_path / "w").returncode == 0
    table = pd.read_parquet(tmp_path / "w" / "flows.parquet")
    share = table["fast_forwarded_bytes"].sum() / table["size_bytes"].sum()
    assert share > 0.5 and f"{row}{share:.1%}<" in (tmp_path / "w" / "report.html").read_text()
    assert cli(*args, "--out", tmp_path / "f", "--mode", "full").returncode == 0
    assert "network bytes not simulated" not in (tmp_path / "f" / "report.html").read_text()


def test_report_bad_input_is_one_line(tmp_path):
    for args, text in ((["report", tmp_path / "nowhere"], "no such folder"),
                       (["report", tmp_path], "not a replay or simulate output folder")):
        p = cli(*args)
        assert p.returncode == 2 and text in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
