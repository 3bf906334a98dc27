"""``p2pubsub demo``: a local in-memory network that subscribes, publishes and prints what it delivers.

It runs the real 2d-tree core on many in-process hosts (no sockets) with PADRES stock quotes when the shared
data folder is present and a small synthetic market otherwise, then checks every delivery against a brute-force
oracle and prints the verdict.
"""

from __future__ import annotations

import random
import sys
from typing import TextIO

from .datadir import data_path
from .inmemory import InMemoryNetwork, Oracle
from .model import Schema, parse_event, parse_filter
from .tree import TreeConfig

SCHEMA = Schema.from_dict(
    "stocks",
    {
        "attributes": {
            "symbol": {"type": "string"},
            "price": {"type": "float", "min": 0, "max": 1000},
            "volume": {"type": "int", "min": 0, "max": 1_000_000_000},
        }
    },
)

FILTERS = [
    {"symbol": {"eq": "AAPL"}},
    {"symbol": {"eq": "MSFT"}, "price": {"lt": 27.0}},
    {"price": {"ge": 100}},
    {"symbol": {"prefix": "I"}, "volume": {"gt": 5_000_000}},
    {"price": {"ge": 20, "le": 21}},
    {"volume": {"ge": 30_000_000}},
]


def quotes(rng: random.Random, count: int) -> list[dict]:
    """Real closing quotes of a few symbols when the data is there, a random walk otherwise."""
    symbols = ["AAPL", "MSFT", "INTC", "IBM", "YHOO", "ORCL"]
    out = []
    base = data_path("stockquotes")
    if base is not None:
        from .workload.quotes import parse_quote_file

        for sym in symbols:
            path = base / sym
            if path.exists():
                rows = parse_quote_file(path.read_text(), sym, sym)[0][-(count // len(symbols) + 1) :]
                out += [{"symbol": sym, "price": min(999.0, r.close), "volume": min(10**9, r.volume)} for r in rows]
    if not out:
        for i in range(count):
            sym = symbols[i % len(symbols)]
            price, volume = round(rng.uniform(10, 150), 2), rng.randint(10**5, 5 * 10**7)
            out.append({"symbol": sym, "price": price, "volume": volume})
    rng.shuffle(out)
    return out[:count]


def run(hosts: int = 64, events: int = 24, seed: int = 1, out: TextIO = sys.stdout) -> bool:
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
