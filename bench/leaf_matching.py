"""Leaf matching throughput: the vectorised leaf store against a naive per-object loop, side by side.

A leaf holding 10,000 subscriptions of the thesis workload (every predicate evaluated, not only the base
attribute) is matched against the same events both ways; we report subscription checks per second and their
ratio. The naive loop is what the thesis describes (§3.4.1: "a simple linear matching algorithm").

    python bench/leaf_matching.py [--subs 10000] [--events 2000]
"""

from __future__ import annotations

import argparse
import time

from p2pubsub.model import Absent, parse_event, parse_filter
from p2pubsub.tree import SubEntry
from p2pubsub.tree.leafstore import LeafStore, coordinates
from p2pubsub.workload import thesis_workload


def naive(entries: list[SubEntry], values: dict, coords: dict, base: str) -> list[SubEntry]:
    out = []
    vb = coords.get(base)
    for e in entries:
        in_piece = e.piece_lo <= vb and (vb < e.piece_hi or (e.piece_hi_closed and vb == e.piece_hi))
        if in_piece and e.subscription.matches(values, Absent.NO_MATCH):
            out.append(e)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subs", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=2_000)
    args = ap.parse_args()
    work = thesis_workload(max(1, args.subs // 5), 7, events=args.events)
    schema = work.parsed_schema()
    base = schema.names[0]
    entries = []
    for i, s in enumerate(work.subscriptions):
        sub = parse_filter(schema, s.filter)
        lo, hi = sub.constraint(base).coords() if base in sub.attributes else schema.attribute(base).domain
        entries.append(SubEntry(f"s{i}", 0, 0, 1, 0, sub, base, lo, hi, True, (lo, hi)))
    store = LeafStore()
    for e in entries:
        store.add(e)
    events = [parse_event(schema, p.attributes).values for p in work.events()]
    coords = [coordinates(v) for v in events]

    t = time.perf_counter()
    fast = [store.match(v, c, base, Absent.NO_MATCH) for v, c in zip(events, coords, strict=True)]
    t_fast = time.perf_counter() - t
    sample = max(1, len(events) // 10)  # the loop is slow: time a tenth of the events
    t = time.perf_counter()
    slow = [naive(entries, v, c, base) for v, c in zip(events[:sample], coords[:sample], strict=True)]
    t_slow = (time.perf_counter() - t) * len(events) / sample
    assert [{e.key for e in m} for m in fast[:sample]] == [{e.key for e in m} for m in slow], "results differ"

    checks = len(entries) * len(events)
    hits = sum(map(len, fast)) / len(events)
    print(f"leaf of {len(entries)} subscriptions, {len(events)} events, {hits:.0f} matches per event on average")
    print(f"{'':>12} {'checks/s':>14} {'us/event':>10}")
    print(f"{'vectorised':>12} {checks / t_fast:>14,.0f} {1e6 * t_fast / len(events):>10.1f}")
    print(f"{'naive loop':>12} {checks / t_slow:>14,.0f} {1e6 * t_slow / len(events):>10.1f}")
    print(f"speed-up: {t_slow / t_fast:.1f}x (target: at least 10x)")


if __name__ == "__main__":
    main()
