"""The routing table's `find_neighbors` answers with the contacts closest to the target, from the whole table."""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from kademlia.node import Node as Contact

from p2pubsub.node.dht import CountingRoutingTable


class Protocol:
    """What the table asks of its protocol: a ping of a full bucket's oldest contact (answered by nobody)."""

    async def call_ping(self, node: Contact) -> None:
        return None


def contact(rng: random.Random, i: int, structured: bool = False) -> Contact:
    """A random id, or (``structured``) a small number shifted left, landing on and beside bucket boundaries."""
    if structured:
        node_id = ((rng.randrange(1, 64) << rng.choice((0, 100, 150, 154))) % 2**160).to_bytes(20, "big")
    else:
        node_id = rng.randbytes(20)
    return Contact(node_id, f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", 8468)


def table(rng: random.Random, me: Contact, n: int, ksize: int, structured: bool) -> CountingRoutingTable:
    router = CountingRoutingTable(Protocol(), ksize, me)
    for i in range(n):
        c = contact(rng, i, structured)
        if router.is_new_node(c):
            router.add_contact(c)
    return router


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 300), ksize=st.integers(2, 20), k=st.integers(1, 25),
       structured=st.booleans())
def test_find_neighbors_is_the_k_closest_contacts_of_the_table(seed, n, ksize, k, structured):
    async def check():
        rng = random.Random(seed)
        me = contact(rng, 10**6)
        router = table(rng, me, n, ksize, structured)
        known = router.contacts()
        # targets: random and structured keys, our own id, and a contact's own id (never its own neighbour)
        targets = [Contact(rng.randbytes(20)) for _ in range(3)] + [contact(rng, 0, True), me] + known[:1]
        for target in targets:
            for exclude in (None, rng.choice(known) if known else None):  # the asker, by address
                got = router.find_neighbors(target, k=k, exclude=exclude)
                others = [c for c in known if c.id != target.id and not (exclude and c.same_home_as(exclude))]
                best = sorted(others, key=lambda c: c.long_id ^ target.long_id)[:k]
                assert [c.id for c in got] == [c.id for c in best]
        for c in known[: n // 2]:  # the answers follow the table's changes
            router.remove_contact(c)
        rest = router.contacts()
        target = Contact(rng.randbytes(20))
        best = sorted(rest, key=lambda c: c.long_id ^ target.long_id)[:k]
        assert [c.id for c in router.find_neighbors(target, k=k)] == [c.id for c in best]

    asyncio.run(check())


def test_a_node_whose_targets_neighbourhood_is_empty_still_answers():
    """The case that stalled joins in thesis-5000: every contact is far from the target, on one side."""
    async def check():
        me = Contact(bytes(20), "10.0.0.0", 8468)
        router = CountingRoutingTable(Protocol(), 4, me)
        near_me = [Contact(bytes([0, 0, 0, i]) + bytes(16), f"10.0.1.{i}", 8468) for i in range(1, 9)]
        for c in near_me:
            router.add_contact(c)
        target = Contact(b"\xff" * 20)
        got = router.find_neighbors(target, k=4)
        assert len(got) == 4
        assert {c.id for c in got} <= {c.id for c in near_me}

    asyncio.run(check())
