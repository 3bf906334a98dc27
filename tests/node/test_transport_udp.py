"""PeerTransport on real loopback UDP sockets (port 0): ordering, large messages, limits, silent and restarted
peers, garbage. Every wait is on a condition with a deadline."""

import asyncio
import random
import struct

import pytest

from p2pubsub.node.transport import FIRST, MAGIC, PeerTransport, TransportConfig
from p2pubsub.node.wire import MAX_MESSAGE, MessageTooLarge, encode
from p2pubsub.tree import LeafUpdate, SubInstalled, TreeId

LEAF = TreeId("stocks.price", "0110")
FAST = TransportConfig(initial_rto=0.05, min_rto=0.02, max_rto=0.2, max_retries=3)
DEADLINE = 20.0  # seconds; generous for loaded CI machines, never reached when things work


def msg(sender: str, i: int) -> SubInstalled:
    return SubInstalled(sender, i, 0, LEAF)


class Endpoint(asyncio.DatagramProtocol):
    """Plays the node's datagram protocol: the transport's datagrams first, anything else to 'kademlia'."""

    def __init__(self, node: "Node") -> None:
        self.node = node
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.node.peers.attach(transport)

    def datagram_received(self, data, addr) -> None:
        if not self.node.peers.datagram_received(data, addr):
            self.node.other.append(data)
        self.node.changed.set()  # conditions on ACKs and counters are re-checked on every datagram

    def connection_lost(self, exc) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class Node:
    """A transport on its own loopback socket, recording deliveries and hand-backs; `until` waits on them."""

    def __init__(self, name: str, config: TransportConfig | None = None) -> None:
        self.name = name
        self.config = config or TransportConfig()
        self.received: dict[tuple, list] = {}
        self.undeliverable: list[tuple] = []
        self.other: list[bytes] = []
        self.changed = asyncio.Event()
        self.peers = self._transport(random.Random(name))

    def _transport(self, rng) -> PeerTransport:
        return PeerTransport(
            on_message=self._on_message,
            on_undeliverable=self._on_undeliverable,
            rng=rng,
            config=self.config,
        )

    async def start(self, port: int = 0) -> "Node":
        loop = asyncio.get_running_loop()
        self.udp, self.endpoint = await loop.create_datagram_endpoint(
            lambda: Endpoint(self), local_addr=("127.0.0.1", port)
        )
        self.addr = self.udp.get_extra_info("sockname")[:2]
        return self

    async def restart(self, seed: str) -> None:
        """Die (socket closed, state lost) and come back on the same port as a new process would."""
        self.peers.close()
        self.udp.close()
        await self.endpoint.closed
        self.received.clear()
        self.peers = self._transport(random.Random(seed))
        await self.start(self.addr[1])

    def _on_message(self, addr, message) -> None:
        self.received.setdefault(addr, []).append(message)
        self.changed.set()

    def _on_undeliverable(self, addr, messages) -> None:
        self.undeliverable.append((addr, messages))
        self.changed.set()

    def got(self, other: "Node") -> list:
        return self.received.get(other.addr, [])

    def close(self) -> None:
        self.peers.close()
        self.udp.close()


async def until(condition, *nodes: Node, timeout: float = DEADLINE) -> None:
    """Wait until ``condition()`` holds, re-checked whenever a datagram or a hand-back reaches one of ``nodes``."""
    async with asyncio.timeout(timeout):
        while not condition():
            waits = [asyncio.ensure_future(n.changed.wait()) for n in nodes]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            for n in nodes:
                n.changed.clear()


async def drained(sender: Node, receiver: Node) -> None:
    """Wait until everything ``sender`` queued for ``receiver`` is acknowledged."""
    await until(lambda: sender.peers.stats(receiver.addr).queue_length == 0, sender)


@pytest.fixture
async def loop_errors():
    loop = asyncio.get_running_loop()
    errors: list = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield errors
    loop.set_exception_handler(None)
    assert not errors, f"unhandled errors in the loop: {errors}"


async def test_thousands_of_messages_arrive_in_order_per_peer(loop_errors):
    a, b, c = [await Node(name).start() for name in "abc"]
    n = 3000
    for i in range(n):  # a and c both send to b while b answers a: three streams at once
        a.peers.send(b.addr, msg("a", i))
        c.peers.send(b.addr, msg("c", i))
        b.peers.send(a.addr, msg("b", i))
    await until(lambda: len(b.got(a)) == n and len(b.got(c)) == n and len(a.got(b)) == n, a, b, c)
    assert b.got(a) == [msg("a", i) for i in range(n)]
    assert b.got(c) == [msg("c", i) for i in range(n)]
    assert a.got(b) == [msg("b", i) for i in range(n)]
    await drained(a, b)
    stats = a.peers.stats(b.addr)
    assert stats.sent_total == stats.acked_total == n and stats.received_total == n
    assert stats.srtt is not None and stats.in_flight == 0
    assert [x.undeliverable for x in (a, b, c)] == [[], [], []]
    assert b.other == []  # nothing of ours was passed on to the DHT
    for x in (a, b, c):
        x.close()


async def test_messages_near_the_size_limit(loop_errors):
    a, b = [await Node(name).start() for name in "ab"]
    overhead = len(encode(LeafUpdate(LEAF, "0" * 1000))) - 1000
    sent = [LeafUpdate(LEAF, str(i % 10) * (MAX_MESSAGE - overhead if i % 2 else 40)) for i in range(24)]
    assert len(encode(sent[1])) == MAX_MESSAGE
    for m in sent:
        a.peers.send(b.addr, m)
    await until(lambda: len(b.got(a)) == len(sent), a, b)
    assert b.got(a) == sent
    a.close()
    b.close()


async def test_too_large_is_refused_at_once_and_nothing_is_queued(loop_errors):
    a, b = [await Node(name).start() for name in "ab"]
    before = a.peers.counters.datagrams_out
    with pytest.raises(MessageTooLarge):
        a.peers.send(b.addr, LeafUpdate(LEAF, "0" * MAX_MESSAGE))
    assert a.peers.stats(b.addr).queue_length == 0
    assert a.peers.counters.datagrams_out == before
    a.peers.send(b.addr, msg("a", 1))  # the link is unaffected
    await until(lambda: b.got(a) == [msg("a", 1)], b)
    a.close()
    b.close()


async def test_a_peer_that_never_answers_gets_everything_handed_back(loop_errors):
    a = await Node("a", FAST).start()
    loop = asyncio.get_running_loop()
    silent, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0))
    target = silent.get_extra_info("sockname")[:2]
    sent = [msg("a", i) for i in range(200)]
    for m in sent:
        a.peers.send(target, m)
    await until(lambda: a.undeliverable, a)
    assert a.undeliverable == [(target, sent)]  # once, all of them, in order
    assert a.peers.counters.unreachable == 1
    assert a.peers.stats(target).queue_length == 0
    a.close()
    silent.close()


async def test_only_the_unacknowledged_messages_come_back(loop_errors):
    a, b = await Node("a", FAST).start(), await Node("b").start()
    first = [msg("a", i) for i in range(50)]
    for m in first:
        a.peers.send(b.addr, m)
    await until(lambda: len(b.got(a)) == 50, b)
    await drained(a, b)
    b.peers.close()  # b stops answering (its socket stays open, so no ICMP error either)
    second = [msg("a", i) for i in range(50, 57)]
    for m in second:
        a.peers.send(b.addr, m)
    await until(lambda: a.undeliverable, a)
    assert a.undeliverable == [(b.addr, second)]
    assert b.got(a) == first
    a.close()
    b.close()


async def test_a_restarted_peer_is_recognised_and_both_directions_start_over(loop_errors):
    config = TransportConfig(initial_rto=0.05, min_rto=0.02, max_rto=0.2, max_retries=40)
    a, b = await Node("a", config).start(), await Node("b", config).start()
    for i in range(100):
        a.peers.send(b.addr, msg("a", i))
        b.peers.send(a.addr, msg("b", i))
    await until(lambda: len(b.got(a)) == 100 and len(a.got(b)) == 100, a, b)
    await drained(a, b)
    await drained(b, a)

    await b.restart("b, second life")
    b.peers.send(a.addr, msg("b2", 0))  # a new stream from b: a starts receiving it from seq 0
    await until(lambda: len(a.got(b)) == 101, a)
    for i in range(100, 200):  # a's stream is unknown to the new b: RESET, and a starts it over
        a.peers.send(b.addr, msg("a", i))
    for i in range(1, 30):
        b.peers.send(a.addr, msg("b2", i))
    await until(lambda: len(b.got(a)) == 100 and len(a.got(b)) == 130, a, b)
    assert b.got(a) == [msg("a", i) for i in range(100, 200)]  # exactly the new ones: the old were acknowledged
    assert a.got(b) == [msg("b", i) for i in range(100)] + [msg("b2", i) for i in range(30)]
    assert a.peers.stats(b.addr).restarts == 2  # a new stream from b, and ours started over
    assert a.undeliverable == [] and b.undeliverable == []
    a.close()
    b.close()


async def test_messages_sent_while_the_peer_was_down_reach_its_next_life(loop_errors):
    """The sender still talks to the old session: the new one answers RESET and gets everything, in order."""
    config = TransportConfig(initial_rto=0.05, min_rto=0.02, max_rto=0.2, max_retries=40)
    a, b = await Node("a", config).start(), await Node("b", config).start()
    for i in range(20):
        a.peers.send(b.addr, msg("a", i))
    await until(lambda: len(b.got(a)) == 20, b)
    await drained(a, b)
    b.peers.close()  # down: a's next messages go unanswered ...
    pending = [msg("a", i) for i in range(20, 60)]
    for m in pending:
        a.peers.send(b.addr, m)
    await until(lambda: a.peers.stats(b.addr).timeouts >= 1, b)  # b's socket still sees the retransmissions
    await b.restart("b, second life")  # ... until a new process binds the port
    await until(lambda: len(b.got(a)) == 40, b)
    assert b.got(a) == pending
    assert b.peers.counters.resets_sent >= 1
    assert a.undeliverable == []
    a.close()
    b.close()


async def test_garbage_with_our_magic_byte_is_dropped_and_counted(loop_errors):
    a, b = await Node("a").start(), await Node("b").start()
    loop = asyncio.get_running_loop()
    raw, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0))
    head = struct.Struct("!BBI")
    rng = random.Random(5)
    first_data = 0x10 | FIRST | 1
    junk = [
        bytes([MAGIC]),
        bytes([MAGIC]) + rng.randbytes(40),
        head.pack(MAGIC, 0x21, 7) + b"\x00" * 8,  # a future version
        head.pack(MAGIC, 0x17, 7) + b"\x00" * 8,  # an unknown kind
        head.pack(MAGIC, 0x1A, 7) + b"\x00" * 4,  # FIRST on an ACK
        head.pack(MAGIC, first_data, 0) + b"\x00" * 8,  # epoch 0
        head.pack(MAGIC, first_data, 7) + struct.pack("!IH", 0, 3) + b"\x01\x80\x00",  # a bad wire frame
        head.pack(MAGIC, first_data, 7) + struct.pack("!IH", 1, 99) + b"\x01",  # a truncated frame
        head.pack(MAGIC, first_data, 7) + struct.pack("!I", 2),  # DATA without messages
        head.pack(MAGIC, first_data, 7) + struct.pack("!IH", 99, 1) + b"\x00",  # a new stream beyond the window
        head.pack(MAGIC, 0x12, 7) + struct.pack("!I", 0),  # ACK of a stream b does not have
        head.pack(MAGIC, 0x13, 7),  # RESET of a stream b does not have
    ] + [bytes([MAGIC]) + rng.randbytes(rng.randrange(1, 100)) for _ in range(200)]
    kademlia_like = [b"\x00" + rng.randbytes(30), b"\x01" + rng.randbytes(30)]
    for data in junk + kademlia_like:
        raw.sendto(data, b.addr)
    a.peers.send(b.addr, msg("a", 0))  # b keeps working
    await until(lambda: b.got(a) == [msg("a", 0)] and len(b.other) == 2, a, b)
    assert b.other == kademlia_like
    counted = b.peers.counters
    assert counted.garbage >= 9 and counted.stale >= 2
    assert counted.datagrams_in >= len(junk)
    assert b.peers.datagram_received(b"", ("127.0.0.1", 1)) is False
    a.close()
    b.close()
    raw.close()
