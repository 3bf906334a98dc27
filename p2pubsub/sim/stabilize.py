"""Kademlia bucket refresh for every node once the network has formed (the stabilisation phase).

Why: a node decides it is responsible for a key when no contact it knows is closer (greedy XOR routing,
`p2pubsub.node.neighbourhood`). That is right only if the node knows at least one node in every non-empty
*level* of the id space relative to its own id (ids sharing exactly ``j`` leading bits with it): any node of the
level holding a key is closer to the key. kademlia 2.2.3's bootstrap only looks up the joining node's own id, so
a node that joined early never hears of later nodes in its far levels unless they happen to contact it; in a
100-node network a few nodes end up believing themselves responsible for keys a closer node also holds, and
probes wait for tree nodes that live elsewhere. The Kademlia paper's join (§2.3) refreshes every bucket; the
library refreshes only buckets idle for an hour. Here each node looks up a seeded-random id in the range of every
bucket of its routing table (the library's own `NodeSpiderCrawl`, as its `_refresh_table` does), repeated while
refreshing splits buckets; afterwards every non-empty level is represented in every table.
"""

from __future__ import annotations

import asyncio
import random

from kademlia.crawling import NodeSpiderCrawl
from kademlia.node import Node as Contact

__all__ = ["refresh_buckets"]


async def refresh_buckets(server, rng: random.Random, rounds: int = 4) -> int:
    """Look up a random id in every bucket's range of ``server`` (a kademlia `Server`); returns lookups made."""
    protocol = server.protocol
    done: set[tuple[int, int]] = set()
    lookups = 0
    for _ in range(rounds):
        todo = [b.range for b in protocol.router.buckets if b.range not in done]
        if not todo:
            break
        crawls = []
        for lo, hi in todo:
            done.add((lo, hi))
            target = Contact(rng.randint(lo, hi).to_bytes(20, "big"))
            nearest = protocol.router.find_neighbors(target, server.alpha)
            if nearest:
                crawls.append(NodeSpiderCrawl(protocol, target, nearest, server.ksize, server.alpha).find())
        lookups += len(crawls)
        if crawls:
            await asyncio.gather(*crawls)
    return lookups
