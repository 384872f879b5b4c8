"""``wormhole-replay report DIR``: the HTML report of a ``replay`` or ``simulate`` output folder
(``observe/report.py``), written atomically to ``DIR/report.html`` unless ``--out`` says where."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError


def add_parser(subparsers, parser_class=None):
    p = subparsers.add_parser("report", help="an HTML report (timeline, critical path, links, PFC) of a run folder",
                              description="One self-contained HTML file for the output folder of replay or simulate: "
                              "the timeline of an iteration with its critical path, the time breakdown, collective "
                              "bandwidths, FCTs and slowdowns, link utilisation, queue lengths and PFC pauses.")
    p.add_argument("dir", help="output folder of replay or simulate")
    p.add_argument("--out", metavar="FILE", help="where to write the report (default DIR/report.html)")
    p.add_argument("--iteration", type=int, help="the iteration the timeline shows (default: the last)")
    return p


def add_report_option(p) -> None:
    """``--report`` for the commands that write a run folder."""
    p.add_argument("--report", action="store_true", help="also write report.html (see the report command)")


def write_report(d: str | Path, out: str | Path | None = None, iteration: int | None = None) -> Path:
    """Render the report of folder ``d`` and write it (atomically); returns its path."""
    from ..files import write_atomic
    from .report import load_run, render

    html = render(load_run(d), iteration)
    path = Path(out) if out is not None else Path(d) / "report.html"

    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(html)

    try:
        write_atomic(path, w)
    except OSError as e:
        raise InputError(f"report: cannot write {path}: {e.strerror}") from None
    return path


def run(args) -> int:
    print(write_report(args.dir, args.out, args.iteration))
    return 0
