"""``p2pubsub sim SCENARIO.toml --out DIR``: run a scenario on the virtual-time simulator.

`add_sim_arguments` adds the options to an argparse parser; `run_from_args` runs it and returns an exit code
(0: done, and exact where the scenario has no churn; 1: the oracle found missing, false or duplicate deliveries
in a scenario without churn; 2: the scenario could not be read).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

__all__ = ["add_sim_arguments", "run_from_args"]


def add_sim_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("scenario", type=Path, help="scenario file (TOML, see p2pubsub.scenario)")
    parser.add_argument("--out", type=Path, required=True, help="run directory: summary.json and Parquet traces")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: only when stderr is a terminal)",
    )
    parser.add_argument("--seed", type=int, help="override the scenario's seed")
    parser.add_argument(
        "--tick-interval",
        type=float,
        help="seconds between a node's housekeeping ticks (default: the scenario's protocol.tick_interval_s)",
    )
    parser.add_argument(
        "--check-trace", action="store_true", help="also check that every receipt matches its message's type"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log warnings (-v) or more (-vv)")
    parser.set_defaults(func=run_from_args)
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..scenario import ScenarioError, load_scenario
    from .progress import Progress
    from .runner import run_scenario

    level = {0: logging.ERROR, 1: logging.WARNING}.get(args.verbose, logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.verbose == 0:  # RPC timeouts after a crash are expected; rpcudp logs each as an error
        for name in ("rpcudp", "kademlia"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        scenario = load_scenario(args.scenario)
    except (OSError, ScenarioError) as e:
        print(f"p2pubsub sim: {e}", file=sys.stderr)
        return 2
    if args.seed is not None:
        scenario = replace(scenario, seed=args.seed)
    node_config = {} if args.tick_interval is None else {"tick_interval": args.tick_interval}
    summary = run_scenario(
        scenario, args.out, progress=Progress(enabled=args.progress), check_trace=args.check_trace,
        node_config=node_config,
    )
    d = summary["deliveries"]
    lat = summary["latency_ms"]["delivery"]
    model = summary["network"]["latency_model"]["model"]
    if scenario.network.latency != model and not scenario.network.latency.startswith(model):
        # the figures of such a run are not the ones asked for: say so whatever the verbosity
        print(f"p2pubsub sim: note: latency model {scenario.network.latency!r} was not available (its data "
              f"folder is missing: see $P2PUBSUB_DATA); this run used the {model!r} model", file=sys.stderr)
    brief = {
        "out": str(args.out),
        "nodes": summary["nodes"],
        "subscriptions": summary["subscriptions"],
        "events": summary["events"],
        "deliveries": {k: d[k] for k in ("expected", "delivered", "missing", "false_positive", "duplicate")},
        **({"missing_spread": {k: d[k] for k in ("missing_events", "missing_subscriptions", "missing_by_tenth")}}
           if d.get("missing") else {}),
        "delivery_ms": {k: lat[k] for k in ("mean", "p50", "p99")},
        "latency_model": model,
        "wall_s": summary["wall_s"],
        "peak_rss_mb": summary["peak_rss_mb"],
    }
    if "tables" in summary:  # broker overlays (mode scot / padres)
        t, ims = summary["tables"], summary["inter_broker_messages"]
        brief["tables"] = {k: t[f"{k}_per_broker"]["mean"] for k in ("advertisements", "subscriptions")}
        brief["inter_broker_messages"] = {k: ims[k] for k in ("advertise", "subscribe", "publish")}
        brief["advertise_ms"] = summary["latency_ms"]["advertise"]["mean"]
    print(json.dumps(brief))
    inexact = d["missing"] or d["false_positive"] or d["duplicate"]
    return 1 if inexact and not scenario.churn else 0


def main(argv: list[str] | None = None) -> int:
    parser = add_sim_arguments(argparse.ArgumentParser(prog="p2pubsub sim", description=__doc__))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
