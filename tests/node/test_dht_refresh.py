"""Bucket freshness: a bucket whose contacts the peer transport hears from needs no hourly refresh lookup."""

from __future__ import annotations

import time

from kademlia.node import Node as Contact
from kademlia.storage import ForgetfulStorage

from p2pubsub.node.dht import REFRESH_S, PubSubProtocol


class Clock:
    def __init__(self) -> None:
        self.now = 10_000.0

    def time(self) -> float:
        return self.now


class Peers:
    """The peer transport as the DHT protocol sees it: who was heard from when."""

    def __init__(self) -> None:
        self.loop = Clock()
        self.heard: dict[tuple[str, int], float] = {}

    def heard_since(self, addr, since: float) -> bool:
        return self.heard.get(addr, -1.0) >= since


def contact(top_byte: int, i: int) -> Contact:
    return Contact(bytes([top_byte, i]) + bytes(18), f"10.0.{top_byte}.{i}", 8468)


def test_only_buckets_without_a_contact_heard_from_within_the_hour_are_lonely():
    peers = Peers()
    me = Contact(bytes(20), "10.0.0.0", 8468)
    proto = PubSubProtocol(me, ForgetfulStorage(), 2, peers=peers, on_contact=lambda c: None,
                           rpc_timeout=1.0, misses=2)
    far = [contact(0xC0, i) for i in range(2)]  # the far half of the id space
    near = [contact(0x01, i) for i in range(2)]  # close to our id 0
    for c in far + near:
        proto.router.add_contact(c)
    assert len(proto.router.buckets) >= 2
    far_bucket = proto.router.buckets[proto.router.get_bucket_for(far[0])]
    for bucket in proto.router.buckets:
        bucket.last_updated = time.monotonic() - 2 * REFRESH_S  # idle for two hours by the library's measure
    every = list(proto.router.buckets)
    assert proto.router.lonely_buckets() == every  # nobody heard from: all of them

    peers.heard[(far[1].ip, far[1].port)] = peers.loop.now - 10  # one far contact answered 10 s ago
    lonely = proto.router.lonely_buckets()
    assert far_bucket not in lonely and len(lonely) == len(every) - 1
    assert len(proto.get_refresh_ids()) == len(lonely)

    peers.loop.now += REFRESH_S  # an hour later, silence again: the far bucket is due as well
    assert proto.router.lonely_buckets() == every
