"""The ``p2pubsub`` command line."""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    return 0 if run(hosts=args.hosts, events=args.events, seed=args.seed) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p2pubsub", description="Peer-to-peer content-based publish/subscribe.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run a local in-memory network: subscribe, publish, print deliveries")
    demo.add_argument("--hosts", type=int, default=64, help="in-memory hosts (default 64)")
    demo.add_argument("--events", type=int, default=24, help="events to publish (default 24)")
    demo.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    demo.set_defaults(func=_demo)

    from .sim.cli import add_sim_arguments

    add_sim_arguments(sub.add_parser("sim", help="run a scenario's nodes on the virtual-time simulator"))

    from spark.report import add_report_arguments

    add_report_arguments(sub.add_parser("report", help="replay simulator traces with PySpark; metrics, plots"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
