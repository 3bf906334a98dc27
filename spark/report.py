"""`p2pubsub report RUN_DIR [RUN_DIR ...] --out REPORT_DIR`: replay traces, compute metrics, draw, write.

Python: :func:`run_report`. Command line: :func:`main`, or wire into another parser with
``add_report_arguments(subparsers.add_parser("report"))`` (it sets ``func`` to :func:`run_from_args`).
On a cluster: ``spark-submit --master yarn spark/report_job.py RUN_DIR... --out REPORT_DIR`` (see
:mod:`spark.report_job`). Importing this module does not import PySpark.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["add_report_arguments", "main", "run_from_args", "run_report"]


def run_report(
    run_dirs: list[str | Path],
    out_dir: str | Path,
    matrix: str | Path | None = None,
    progress: bool = True,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    matrix_format: str = "auto",
    broadcast_rows: int = 1_000_000,
) -> dict[str, Any]:
    """Replay `run_dirs` (each run's own matrix, or `matrix`), write the report to `out_dir`; returns metrics.

    `spark`: an existing session (left running); otherwise one is created (Java checked first) and
    stopped at the end. `matrix`: a King-format RTT file or a Parquet latency matrix (`matrix_format`).
    """
    from .compare import make_groups, pick_headline, pick_pair, scalability_series
    from .figures import draw_figures
    from .load import load_runs, row_counts
    from .matrix import load_matrix
    from .metrics import compute_run_metrics
    from .outputs import build_metrics, write_csvs, write_json, write_markdown
    from .progress import Progress
    from .replay import diagnostics, replay
    from .session import get_session

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prog = Progress(enabled=progress)
    own_session = spark is None
    try:
        with prog.step("starting Spark"):
            session = spark if spark is not None else get_session(master)
        prog.attach(session.sparkContext)
        with prog.step("reading traces"):
            traces = load_runs(session, list(run_dirs))
        mat = None
        if matrix is not None:
            with prog.step("loading latency matrix"):
                hosts = [r["host"] for r in traces.nodes.select("host").distinct().collect()]
                mat = load_matrix(session, matrix, hosts, matrix_format)
        with prog.step("replaying message paths"):
            rep = replay(traces, mat, broadcast_rows=broadcast_rows, progress=prog)
        with prog.step("checking the trace"):
            diag = diagnostics(rep)
        with prog.step("computing metrics"):
            subs, events = row_counts(traces, "subscriptions"), row_counts(traces, "events")
            runs = compute_run_metrics(rep, traces, subs, events)
        rep.messages.unpersist()
        with prog.step("drawing figures"):
            groups = make_groups(runs)
            headline = pick_headline(groups)
            mc, co = pick_pair(groups, "multicast", headline), pick_pair(groups, "cutoff", headline)
            series = scalability_series(groups, headline)
            figures = draw_figures(out, headline, mc, co, series)
        with prog.step("writing report"):
            metrics = build_metrics(runs, groups, headline, mc, co, series, figures, diag, rep.matrix_label)
            metrics["timings_s"] = {label: round(t, 3) for label, t in prog.steps_done}
            write_csvs(out, runs, metrics, figures)
            write_json(out, metrics)
            write_markdown(out, metrics, figures)
    finally:
        prog.close()
        if own_session and "session" in locals():
            session.stop()
    return metrics


def add_report_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the report's arguments to `parser` (a subcommand's parser, say) and set ``func``."""
    parser.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="run directories written by the simulator"
    )
    parser.add_argument("--out", required=True, metavar="REPORT_DIR", help="where to write the report")
    parser.add_argument(
        "--matrix",
        metavar="FILE",
        help="replay with this latency matrix (King-format RTT file, or a Parquet matrix with src_host, "
        "dst_host, one_way_ms); default: each run's own latency.parquet",
    )
    parser.add_argument("--matrix-format", choices=("auto", "king", "parquet"), default="auto")
    parser.add_argument(
        "--master", help="Spark master URL (default local[*], or what spark-submit was given)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no status line while Spark works")
    parser.set_defaults(func=run_from_args)
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Run the report for parsed arguments; prints where it went. Exit status."""
    from .session import JavaNotFoundError

    try:
        metrics = run_report(
            args.run_dirs,
            args.out,
            matrix=args.matrix,
            progress=not args.no_progress,
            master=args.master,
            matrix_format=args.matrix_format,
        )
    except JavaNotFoundError as e:
        print(f"p2pubsub report: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as e:
        print(f"p2pubsub report: {e}", file=sys.stderr)
        return 1
    rep = metrics["replay"]
    print(
        f"report: {Path(args.out) / 'report.md'} ({len(metrics['runs'])} runs; replay vs simulator: "
        f"max difference {rep['identity_max_diff_s']:.3g} s)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="p2pubsub report",
        description="Replay simulator traces with PySpark and write the evaluation report.",
    )
    add_report_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
