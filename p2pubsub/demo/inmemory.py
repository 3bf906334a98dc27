"""``p2pubsub demo --in-memory``: a local in-memory network that subscribes, publishes and prints what it delivers.

It runs the real 2d-tree core on many in-process hosts (no sockets) with PADRES stock quotes when the shared
data folder is present and a small synthetic market otherwise, then checks every delivery against a brute-force
oracle and prints the verdict.
"""

from __future__ import annotations

import random
import sys
from typing import TextIO

from ..inmemory import InMemoryNetwork, Oracle
from ..model import parse_event, parse_filter
from ..tree import TreeConfig
from .stocks import FILTERS, SCHEMA, quotes


def run(hosts: int = 64, events: int = 24, seed: int = 1, out: TextIO | None = None) -> bool:
    out = out or sys.stdout  # read at call time, so a redirected stdout is the one written to
    rng = random.Random(seed)
    net = InMemoryNetwork(hosts, TreeConfig(), seed=seed)
    oracle = Oracle(net)
    names = {}
    print(f"p2pubsub demo: {hosts} in-memory hosts, schema {SCHEMA.name!r} {list(SCHEMA.names)}", file=out)
    for f in FILTERS:
        host = rng.randrange(hosts)
        sub_id = oracle.subscribe(host, SCHEMA, parse_filter(SCHEMA, f))
        names[sub_id] = (host, f)
    background = 2000  # other subscribers' filters, so the tree splits across hosts
    for _ in range(background):
        lo = rng.uniform(0, 990)
        oracle.subscribe(rng.randrange(hosts), SCHEMA, parse_filter(SCHEMA, {"price": {"ge": lo, "le": lo + 10}}))
    oracle.settle()
    leaves = sum(n.is_leaf for n in net.tree_nodes().values())
    print(f"installed {len(FILTERS)} + {background} subscriptions: {leaves} leaves", file=out)
    for sub_id, (host, f) in names.items():
        print(f"  host {host:>3} subscribes {sub_id[:8]}: {f}", file=out)
    published = {}
    for q in quotes(rng, events):
        published[oracle.publish(rng.randrange(hosts), SCHEMA, parse_event(SCHEMA, q))] = q
    oracle.settle()
    shown = [(h, s, e) for h, s, e in net.record.deliveries if s in names]
    for host, sub_id, event_id in shown:
        q = published[event_id]
        print(f"  host {host:>3} <- {sub_id[:8]}: {q['symbol']:<5} price {q['price']:>7.2f} volume {q['volume']:>11,}",
              file=out)
    verdict = oracle.verdict()
    ok = not any(verdict.values())
    messages = sum(net.record.remote.values())
    print(f"published {len(published)} events; {len(net.record.deliveries)} notifications "
          f"({len(shown)} to the subscriptions above); {messages} messages between hosts", file=out)
    print("oracle: " + ("every event reached exactly its subscribers" if ok else f"MISMATCH {verdict}"), file=out)
    return ok
