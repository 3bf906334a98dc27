"""The ``p2pubsub`` command line."""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    if args.in_memory:
        live_only = [f for f, v in (("--nodes", args.nodes), ("--capacity", args.capacity),
                                    ("--timeout", args.timeout), ("--keep-running", args.keep_running or None))
                     if v is not None]
        if live_only:
            print(f"p2pubsub demo: {', '.join(live_only)} apply to the live network, not --in-memory", file=sys.stderr)
            return 2
        from .demo.inmemory import run

        return 0 if run(hosts=64 if args.hosts is None else args.hosts, events=args.events, seed=args.seed) else 1
    if args.hosts is not None:
        print("p2pubsub demo: --hosts counts in-memory hosts (with --in-memory); the live network takes --nodes",
              file=sys.stderr)
        return 2
    from .demo.live import LiveOptions, run

    try:
        options = LiveOptions(nodes=5 if args.nodes is None else args.nodes, events=args.events, seed=args.seed,
                              capacity=4 if args.capacity is None else args.capacity,
                              timeout=20.0 if args.timeout is None else args.timeout, keep_running=args.keep_running)
    except ValueError as e:
        print(f"p2pubsub demo: {e}", file=sys.stderr)
        return 2
    return run(options)


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535 (0: any free port), got {text!r}")
    return int(text)


def _node(args: argparse.Namespace) -> int:
    import logging

    from .node.config import NodeConfig
    from .node.main import run
    from .tree import TreeConfig

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        tree = TreeConfig(min_probe_level=args.min_probe_level, max_probe_level=args.max_probe_level,
                          probe_p=args.probe_p, cutoff=not args.no_cutoff, cutoff_fraction=args.cutoff_fraction,
                          lease_interval=args.lease_interval or None)
        if args.replicas < 1:
            raise ValueError("--replicas must be at least 1")
        if not args.tick_interval > 0:
            raise ValueError("--tick-interval must be positive")
    except ValueError as e:
        print(f"p2pubsub node: {e}", file=sys.stderr)
        return 2
    config = NodeConfig(
        host=args.host, dht_port=args.dht_port, http_port=None if args.no_http else args.http_port,
        advertise=args.advertise, bootstrap=tuple(args.bootstrap), capacity=args.capacity, tree=tree,
        multicast=not args.unicast, replicas=args.replicas, trace=args.trace, tick_interval=args.tick_interval,
    )
    try:
        scot = _scot_config(args)
    except ValueError as e:
        print(f"p2pubsub node: {e}", file=sys.stderr)
        return 2
    return run(config, scot)


def _scot_config(args: argparse.Namespace):
    """The SCOT overlay options (``--overlay scot|padres``), or None for the DHT mode."""
    defining = args.scot_tree is not None or args.scot_clusters is not None
    if args.overlay == "dht":
        if args.scot or defining or args.scot_dynamic:
            raise ValueError("--scot and --scot-* options need --overlay scot or --overlay padres")
        return None
    from .scot import OverlayDefinition, ScotConfig

    if not args.scot:
        raise ValueError(f"--overlay {args.overlay} needs --scot NAME (the overlay to join)")
    routing = "octopia" if args.overlay == "scot" else "padres"
    definition = None
    if defining:
        if args.scot_tree is None or args.scot_clusters is None:
            raise ValueError("defining an overlay takes both --scot-tree and --scot-clusters")
        definition = OverlayDefinition.from_cli(args.scot_tree, args.scot_clusters, routing=routing,
                                                dynamic=args.scot_dynamic, tau=args.scot_tau, t_w=args.scot_t_w)
    return ScotConfig(args.scot, definition, routing=routing, lease=args.scot_lease)


def add_node_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="interface to bind, UDP and TCP (default 127.0.0.1)")
    p.add_argument("--dht-port", type=_port, default=8468, metavar="P",
                   help="UDP port of the DHT and of all peer messages (default 8468; 0: any free port)")
    p.add_argument("--http-port", type=_port, default=8080, metavar="Q",
                   help="TCP port of the REST API (default 8080; 0: any free port)")
    p.add_argument("--no-http", action="store_true", help="run without the REST API")
    p.add_argument("--bootstrap", type=_address, action="append", default=[], metavar="HOST:PORT",
                   help="a node of the network to join (repeatable; host names allowed); none: start a new network")
    p.add_argument("--advertise", metavar="ADDR",
                   help="address peers reach this node at, when --host is a wildcard (default: asked of a "
                        "bootstrap node)")
    p.add_argument("--capacity", type=int, default=1000, metavar="N",
                   help="subscriptions a leaf on this node holds before it splits (default 1000)")
    p.add_argument("--unicast", action="store_true", help="one message per probe instead of grouped multicast")
    p.add_argument("--min-probe-level", type=int, default=2, metavar="L", help="RndRegionProbe min level (2)")
    p.add_argument("--max-probe-level", type=int, default=10, metavar="L", help="probe max level (10)")
    p.add_argument("--probe-p", type=float, default=0.5, metavar="P", help="probe stop probability (0.5)")
    p.add_argument("--no-cutoff", action="store_true",
                   help="schemas this node creates get no cut-off line (load balancing off)")
    p.add_argument("--cutoff-fraction", type=float, default=0.25, metavar="F",
                   help="cut-off line c as a fraction of each attribute's domain (0.25)")
    p.add_argument("--replicas", type=int, default=3, metavar="R",
                   help="copies of each tree node and schema, on the R nodes closest to its key (default 3)")
    p.add_argument("--lease-interval", type=float, default=30.0, metavar="S",
                   help="seconds between lease renewals of this node's subscriptions; a leaf drops a piece not "
                        "renewed for three intervals (default 30; 0: no leases)")
    p.add_argument("--tick-interval", type=float, default=2.0, metavar="S",
                   help="seconds between housekeeping ticks: expiry, hand-off and replica checks (default 2)")
    p.add_argument("--trace", metavar="FILE",
                   help="append one JSON line per peer message sent and received to FILE (p2pubsub.node.tracefile)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    o = p.add_argument_group(
        "overlay", "Instead of the DHT's 2d-tree, take a broker position in a SCOT overlay (OctopiA paper) through the "
        "DHT: the node's cluster is its id mod the number of clusters; it claims a free region slot of that cluster "
        "(or waits on standby for one) and routes with OctopiA (scot) or the PADRES-style baseline (padres). "
        "Clients advertise before they publish (POST /v1/advertisements).")
    o.add_argument("--overlay", choices=["dht", "scot", "padres"], default="dht",
                   help="dht: the distributed 2d-tree (default); scot: SCOT clusters with OctopiA routing; padres: "
                        "the PADRES-style baseline on the same positions, unclustered")
    o.add_argument("--scot", metavar="NAME", help="the overlay to join (its definition is stored under NAME)")
    o.add_argument("--scot-tree", metavar="EDGES",
                   help="define the overlay: its acyclic factor as edges A-B,B-C,... (a single label: one region; "
                        "s_e: the paper's 14-broker tree)")
    o.add_argument("--scot-clusters", type=int, metavar="N", help="define the overlay: N clusters (1-64)")
    o.add_argument("--scot-dynamic", action="store_true",
                   help="define the overlay with dynamic routing (OctopiA IDR / TID-D) instead of static")
    o.add_argument("--scot-tau", type=float, default=10.0, metavar="T", help="congestion threshold tau (10)")
    o.add_argument("--scot-t-w", type=float, default=0.05, metavar="S", help="link statistics window t_w (0.05 s)")
    o.add_argument("--scot-lease", type=float, default=10.0, metavar="S",
                   help="slot lease in seconds, renewed every third of it; a crashed holder's slot is taken over "
                        "by a standby node within about 1.5 leases (default 10)")
    p.set_defaults(func=_node)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p2pubsub", description="Peer-to-peer content-based publish/subscribe.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo", help="run a small local network of real nodes: subscribe, publish stock quotes, print deliveries",
        description="Start a few real nodes on 127.0.0.1 (ports from the OS), then through their REST API: register "
                    "a stock schema, subscribe through some nodes, publish quotes through others, read every "
                    "notification by long poll and check them against a brute-force oracle. Exit status 0: every "
                    "subscriber got exactly its events; 1: a wrong delivery; 2: the demo could not run.")
    demo.add_argument("--nodes", type=int, metavar="N", help="real nodes (default 5)")
    demo.add_argument("--events", type=int, default=24, metavar="N", help="quotes to publish (default 24)")
    demo.add_argument("--seed", type=int, default=1, help="random seed of the workload and node ids (default 1)")
    demo.add_argument("--capacity", type=int, metavar="N",
                      help="subscriptions a leaf holds before it splits (default 4: the tree spreads over the nodes)")
    demo.add_argument("--timeout", type=float, metavar="S",
                      help="seconds any one step may take: a node's start, a request, the wait for notifications "
                           "(default 20)")
    demo.add_argument("--keep-running", action="store_true",
                      help="leave the network up afterwards and print curl examples for its API, until Ctrl-C")
    demo.add_argument("--in-memory", action="store_true",
                      help="instead: the 2d-tree core on an in-memory network (no sockets), with --hosts")
    demo.add_argument("--hosts", type=int, metavar="N", help="with --in-memory: in-memory hosts (default 64)")
    demo.set_defaults(func=_demo)

    add_node_arguments(sub.add_parser(
        "node", help="run a node (DHT + pub/sub + REST API) until SIGINT/SIGTERM",
        description="Run one p2pubsub node: it joins (or starts) a network, serves the REST API, and hands its "
                    "state over to the network when stopped with SIGINT or SIGTERM."))

    from .experiment.cli import add_experiment_arguments

    add_experiment_arguments(sub.add_parser(
        "experiment", help="a churn experiment on real node processes: scenario timeline, oracle, summary.json",
        description="Start a network of `p2pubsub node` processes on loopback, drive the scenario's workload "
                    "through the REST API, carry out its churn timeline (join, leave = SIGTERM, crash = SIGKILL), "
                    "and write DIR/summary.json and the merged message traces."))

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
