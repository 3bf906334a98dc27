"""Kademlia bucket refresh for every node once the network has formed (the stabilisation phase).

Why: a node decides it is responsible for a key when no contact it knows is closer (greedy XOR routing,
`p2pubsub.node.neighbourhood`). That is right only if the node knows at least one node in every non-empty
*level* of the id space relative to its own id (ids sharing exactly ``j`` leading bits with it): any node of the
level holding a key is closer to the key. kademlia 2.2.3's bootstrap only looks up the joining node's own id, so
a node that joined early never hears of later nodes in its far levels unless they happen to contact it; in a
100-node network a few nodes end up believing themselves responsible for keys a closer node also holds, and
probes wait for tree nodes that live elsewhere. The Kademlia paper's join (§2.3) refreshes every bucket; the
library refreshes only buckets idle for an hour.

Here each node refreshes every level its routing table holds no contact of (down to a few levels past the deepest
it knows; the table's buckets are coarser than levels, so they are not the unit): it asks the ``alpha`` contacts
closest to a seeded-random id of the level's range for their neighbours of that id (``find_node``, the library's
RPC), up to ``hops`` rounds moving to the closest nodes returned, until one lies in the range; it then pings the
closest such nodes, which puts them in its table (and it in theirs). A bounded lookup that stops at the first node
of the range, rather than the library's full `NodeSpiderCrawl` (which contacts every one of the k closest nodes,
~50 RPCs a bucket, and dominated the simulator's start-up). A second and third
round retry the levels still missing, and the library's full lookup takes the last few.
"""

from __future__ import annotations

import asyncio
import random

from kademlia.crawling import NodeSpiderCrawl
from kademlia.node import Node as Contact

__all__ = ["refresh_buckets"]


async def refresh_buckets(server, rng: random.Random, rounds: int = 3, hops: int = 6, ping: int = 2,
                          beyond: int = 3) -> int:
    """Refresh every level of ``server``'s id space (a kademlia `Server`) that its table holds no contact of, down
    to ``beyond`` levels past the deepest it knows; returns the RPCs sent."""
    protocol = server.protocol
    me_bytes = server.node.id
    me = server.node.long_id
    rpcs = 0
    for _ in range(rounds):
        known = {160 - (me ^ c.long_id).bit_length() for c in protocol.router.contacts()}
        deepest = max(known, default=0)
        todo = [j for j in range(min(160, deepest + beyond + 1)) if j not in known]
        if not todo:
            break
        ranges = [_level_range(me, j) for j in todo]
        results = await asyncio.gather(
            *(_refresh_range(server, lo, hi, rng, hops, ping, me_bytes) for lo, hi in ranges)
        )
        rpcs += sum(results)
    # the few levels the bounded lookups missed: the library's full lookup (it finds the k closest to the target,
    # and those in the level's range are pinged into the table)
    known = {160 - (me ^ c.long_id).bit_length() for c in protocol.router.contacts()}
    deepest = max(known, default=0)
    for j in [j for j in range(min(160, deepest + beyond + 1)) if j not in known]:
        lo, hi = _level_range(me, j)
        target = Contact(rng.randint(lo, hi).to_bytes(20, "big"))
        nearest = protocol.router.find_neighbors(target, server.alpha)
        if not nearest:
            continue
        found = await NodeSpiderCrawl(protocol, target, nearest, server.ksize, server.alpha).find()
        fresh = [c for c in found if lo <= c.long_id <= hi and c.id != me_bytes and protocol.router.is_new_node(c)]
        await asyncio.gather(*(protocol.call_ping(c) for c in fresh[:ping]))
        rpcs += server.ksize + len(fresh[:ping])
    return rpcs


def _level_range(me: int, j: int) -> tuple[int, int]:
    """Ids sharing exactly ``j`` leading bits with ``me``: the first ``j`` bits equal, bit ``j`` flipped."""
    low_bits = 159 - j
    lo = ((me >> low_bits) ^ 1) << low_bits
    return lo, lo | ((1 << low_bits) - 1)


async def _refresh_range(server, lo: int, hi: int, rng: random.Random, hops: int, ping: int, me: bytes) -> int:
    protocol = server.protocol
    target = Contact(rng.randint(lo, hi).to_bytes(20, "big"))
    asked: set[bytes] = set()
    ask = protocol.router.find_neighbors(target, server.alpha)
    rpcs = 0
    for _ in range(hops):
        ask = [c for c in ask if c.id not in asked]
        if not ask:
            return rpcs
        asked.update(c.id for c in ask)
        replies = await asyncio.gather(*(protocol.call_find_node(c, target) for c in ask))
        rpcs += len(ask)
        found: dict[bytes, Contact] = {}
        for ok, nodes in replies:
            if ok and isinstance(nodes, list):
                for t in nodes:
                    c = Contact(*t)
                    if c.id != me:
                        found[c.id] = c
        closest = sorted(found.values(), key=lambda c: c.distance_to(target))
        in_range = [c for c in closest if lo <= c.long_id <= hi]
        if in_range:
            fresh = [c for c in in_range if protocol.router.is_new_node(c)][:ping]
            await asyncio.gather(*(protocol.call_ping(c) for c in fresh))
            return rpcs + len(fresh)
        ask = closest[: server.alpha]
    return rpcs
