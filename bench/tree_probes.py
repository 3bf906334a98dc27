"""Probe messages per subscription and per event, against the number of subscriptions and the probe levels.

Runs the real 2d-tree core in the deterministic in-memory network (thesis workload, Tables 4.1-4.3; one tree
host per node, capacities rand(10, 30)), side by side for several configurations in one run. Counts are of
messages between two different hosts (a message a host sends to itself costs nothing on a DHT).

    python bench/tree_probes.py                 # 1e3, 1e4, 1e5 subscriptions; levels (2,6) (2,10) (2,14)
    python bench/tree_probes.py --quick         # 1e3 and 1e4 only
"""

from __future__ import annotations

import argparse
import time

from p2pubsub.inmemory import InMemoryNetwork
from p2pubsub.model import parse_event, parse_filter
from p2pubsub.tree import TreeConfig
from p2pubsub.workload import thesis_workload

SUB_TYPES = ("ProbeSub", "InsertSub", "SubInstalled", "LeafUpdate", "TransferSub")
PROBE_TYPES = ("ProbePub",)


def run(nodes: int, subs_per_node: int, events: int, config: TreeConfig, seed: int = 1) -> dict:
    work = thesis_workload(nodes, seed, subscriptions_per_node=subs_per_node, events=events)
    schema = work.parsed_schema()
    net = InMemoryNetwork(nodes, config, seed=seed, capacities=work.capacities)
    t0 = time.perf_counter()
    for i, sub in enumerate(work.subscriptions):
        net.subscribe(sub.node, schema, parse_filter(schema, sub.filter))
        if i % 64 == 63:
            net.settle(max_steps=10**8)
    net.settle(max_steps=10**8)
    sub_msgs = dict(net.record.remote)
    for pub in work.events():
        net.publish(pub.node, schema, parse_event(schema, pub.attributes))
    net.settle(max_steps=10**8)
    wall = time.perf_counter() - t0
    pub_msgs = {k: net.record.remote[k] - sub_msgs.get(k, 0) for k in net.record.remote}
    n_subs = len(work.subscriptions)
    nodes_ = net.tree_nodes()
    return {
        "subs": n_subs,
        "per_sub": sum(sub_msgs.get(t, 0) for t in SUB_TYPES) / n_subs,
        "probe_sub": (sub_msgs.get("ProbeSub", 0) + sub_msgs.get("InsertSub", 0)) / n_subs,
        "per_event": sum(pub_msgs.get(t, 0) for t in PROBE_TYPES) / events,
        "deliveries": pub_msgs.get("EventDelivery", 0) / events,
        "leaves": sum(n.is_leaf for n in nodes_.values()),
        "depth": max(t.level for t in nodes_),
        "jumps": sum(c.tree.stats.binary_search_jumps for c in net.cores),
        "wall_s": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 1e5-subscription row")
    ap.add_argument("--events", type=int, default=500)
    args = ap.parse_args()
    sizes = [(200, 5), (1000, 10)] + ([] if args.quick else [(2000, 50)])  # 1e3, 1e4, 1e5 subscriptions
    levels = [(2, 6), (2, 10), (2, 14)]
    header = f"{'subs':>7} {'levels':>7} {'msg/sub':>8} {'probe/sub':>9} {'probe/event':>11} " \
             f"{'notif/event':>11} {'leaves':>7} {'depth':>5} {'wall_s':>7}"
    print(header)
    print("-" * len(header))
    for nodes, per in sizes:
        for lo, hi in levels:
            r = run(nodes, per, args.events, TreeConfig(min_probe_level=lo, max_probe_level=hi))
            print(f"{r['subs']:>7} {f'{lo}-{hi}':>7} {r['per_sub']:>8.2f} {r['probe_sub']:>9.2f} "
                  f"{r['per_event']:>11.1f} {r['deliveries']:>11.1f} {r['leaves']:>7} {r['depth']:>5} "
                  f"{r['wall_s']:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
