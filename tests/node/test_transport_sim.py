"""PeerTransport on the virtual-time simulator: loss, reordering, crashes, determinism, queue statistics, and a
kademlia node sharing the transport's port."""

import asyncio
import random
import struct

import pytest
from kademlia.network import Server
from kademlia.protocol import KademliaProtocol

from overlays.messages import LinkSample
from p2pubsub.node.transport import FIRST, MAGIC, PeerTransport, TransportConfig, _unwrap
from p2pubsub.node.wire import MAX_MESSAGE, encode
from p2pubsub.sim import SimNetwork, VirtualTimeLoop
from p2pubsub.sim.kademlia_nodes import node_id
from p2pubsub.sim.kademlia_patch import kademlia_on_loop
from p2pubsub.tree import LeafUpdate, SubInstalled, TreeId

LEAF = TreeId("stocks.price", "0110")


def msg(sender: int, i: int, pad: int = 0) -> SubInstalled:
    """Message ``i`` of ``sender``; ``pad`` makes it bigger (so datagrams carry varying numbers of messages)."""
    return SubInstalled(f"s{sender}" + "x" * pad, i, sender, LEAF)


class Endpoint(asyncio.DatagramProtocol):
    """Plays the node's datagram protocol: the transport's datagrams first, anything else elsewhere."""

    def __init__(self, peers: PeerTransport) -> None:
        self.peers = peers
        self.other: list[bytes] = []

    def connection_made(self, transport) -> None:
        self.peers.attach(transport)

    def datagram_received(self, data, addr) -> None:
        if not self.peers.datagram_received(data, addr):
            self.other.append(data)


class Node:
    """A transport on one simulated host, recording what it delivers and hands back."""

    def __init__(self, loop, net, host, seed, config=None):
        self.loop, self.net, self.host = loop, net, host
        self.received: dict[tuple, list] = {}
        self.log: list[tuple] = []  # (time, from, message) in delivery order
        self.undeliverable: list[tuple] = []
        self.peers = PeerTransport(
            on_message=self._on_message,
            on_undeliverable=lambda addr, ms: self.undeliverable.append((addr, ms)),
            clock=loop,
            rng=random.Random(f"node/{seed}/{host}"),
            config=config or TransportConfig(),
        )
        udp, _ = loop.run_until_complete(
            loop.create_datagram_endpoint(lambda: Endpoint(self.peers), local_addr=(net.ip_of(host), 0))
        )
        self.addr = udp.get_extra_info("sockname")

    def _on_message(self, addr, message):
        self.received.setdefault(addr, []).append(message)
        self.log.append((self.loop.time(), addr, message))

    def handed_back(self, addr) -> list:
        return [m for a, ms in self.undeliverable if a == addr for m in ms]


@pytest.fixture
def vloop():
    loop = VirtualTimeLoop()
    errors = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    loop.close()
    assert not errors, f"unhandled errors in the loop: {errors}"


def jitter(seed: int, base: float = 0.02, spread: float = 0.03):
    """20-50 ms one way, drawn per datagram: later datagrams often overtake earlier ones."""
    rng = random.Random(f"jitter/{seed}")
    return lambda _src, _dst: base + rng.random() * spread


def lossy_exchange(seed: int, n: int = 600) -> tuple[list, SimNetwork, list]:
    """Three hosts, each sending ``n`` messages to each other one, over 20% loss and jitter."""
    loop = VirtualTimeLoop()
    net = SimNetwork(loop, latency=jitter(seed), loss=0.2, seed=seed)
    overtaken = []  # DATA datagrams that arrived before one sent earlier on the same link

    last_sent: dict[tuple, float] = {}

    def trace(src, dst, nbytes, sent_at, received_at, payload):
        if received_at is None or payload[0] != MAGIC or payload[1] & 0x0F != 1:
            return
        key = (src, dst)
        if sent_at < last_sent.get(key, -1.0):
            overtaken.append(key)
        last_sent[key] = max(sent_at, last_sent.get(key, -1.0))

    net.trace = trace
    nodes = [Node(loop, net, h, seed) for h in net.add_hosts(3)]
    sizes = random.Random(seed)
    for i in range(n):
        for a in nodes:
            for b in nodes:
                if a is not b:
                    a.peers.send(b.addr, msg(a.host, i, pad=sizes.choice([0, 0, 0, 300, 1500])))
    loop.run_for(120.0)
    try:
        return nodes, net, overtaken
    finally:
        loop.close()


def test_every_message_arrives_exactly_once_and_in_order_under_loss_and_reordering():
    n = 600
    nodes, net, overtaken = lossy_exchange(seed=7, n=n)
    assert net.stats.lost > 0.15 * net.stats.sent  # the network did lose ...
    assert len(overtaken) > 50  # ... and reorder
    for b in nodes:
        for a in nodes:
            if a is not b:
                got = b.received[a.addr]
                assert [(m.piece, m.version) for m in got] == [(a.host, i) for i in range(n)]
                stats = a.peers.stats(b.addr)
                assert stats.acked_total == stats.sent_total == n and stats.queue_length == 0
                assert b.peers.stats(a.addr).received_total == n
        assert b.undeliverable == []
    retransmits = sum(s.retransmits for x in nodes for s in x.peers.all_stats().values())
    duplicates = sum(s.duplicates for x in nodes for s in x.peers.all_stats().values())
    assert retransmits > 0 and duplicates > 0  # recovered, and the duplicates were suppressed


def test_runs_are_deterministic():
    def fingerprint(seed):
        nodes, net, overtaken = lossy_exchange(seed=seed, n=150)
        return (
            [[(t, a, m.version) for t, a, m in x.log] for x in nodes],
            net.stats,
            overtaken,
            [sorted(x.peers.all_stats().items()) for x in nodes],
        )

    first = fingerprint(3)
    assert fingerprint(3) == first
    assert fingerprint(4)[0] != first[0]


def test_a_crashed_host_gets_every_unacknowledged_message_handed_back(vloop):
    config = TransportConfig(initial_rto=0.2, max_retries=4)
    net = SimNetwork(vloop, latency=jitter(1), loss=0.1, seed=1)
    a, b = (Node(vloop, net, h, seed=1, config=config) for h in net.add_hosts(2))
    sent = [msg(a.host, i) for i in range(300)]
    for i, m in enumerate(sent):  # one message every 30 ms for 9 s
        vloop.call_at(0.03 * i, a.peers.send, b.addr, m)
    vloop.call_at(1.0, net.crash, b.host)
    vloop.run_until(60.0)

    back = a.handed_back(b.addr)
    got = b.received[a.addr]
    assert len(a.undeliverable) >= 2  # given up once, then again on the messages sent after that
    assert got == sent[: len(got)]  # a prefix, in order
    assert back == sent[len(sent) - len(back) :]  # a suffix, in order, handed back once each
    assert len(got) + len(back) >= len(sent)  # nothing lost silently ...
    assert len(got) + len(back) - len(sent) <= config.window  # ... at most the unacknowledged ones both ways
    assert a.peers.counters.unreachable == len(a.undeliverable)
    assert a.peers.stats(b.addr).queue_length == 0

    # back up: a new session starts, and the link works in order again
    net.recover(b.host)
    later = [msg(a.host, 1000 + i) for i in range(50)]
    for m in later:
        a.peers.send(b.addr, m)
    vloop.run_until(120.0)
    assert b.received[a.addr][-50:] == later
    assert b.peers.stats(a.addr).restarts == 1


def test_a_receiver_that_restarts_gets_the_rest_in_order(vloop):
    """A new transport on the receiver's address: RESET makes the sender start its stream over."""
    config = TransportConfig(initial_rto=0.2, max_retries=8)
    net = SimNetwork(vloop, latency=jitter(2), loss=0.1, seed=2)
    a, b = (Node(vloop, net, h, seed=2, config=config) for h in net.add_hosts(2))
    first = [msg(a.host, i) for i in range(100)]
    for m in first:
        a.peers.send(b.addr, m)
    vloop.run_until(5.0)
    assert b.received[a.addr] == first and a.peers.stats(b.addr).queue_length == 0

    b.peers.close()  # b's process dies; a new one binds the same port
    b.peers = PeerTransport(
        on_message=b._on_message, on_undeliverable=lambda *x: None, clock=vloop, rng=random.Random("b2")
    )
    endpoint = net.endpoints(b.host)[0]
    endpoint.get_protocol().peers = b.peers
    b.peers.attach(endpoint)
    b.received.clear()

    second = [msg(a.host, i) for i in range(100, 200)]
    for m in second:
        a.peers.send(b.addr, m)
    reply = [msg(b.host, i) for i in range(20)]
    for m in reply:
        b.peers.send(a.addr, m)
    vloop.run_until(30.0)
    assert b.received[a.addr] == second
    assert a.received[b.addr] == reply
    assert a.peers.stats(b.addr).restarts == 1  # ours refused (RESET), started over; b's is its first to a
    assert a.undeliverable == []
    assert b.peers.counters.resets_sent >= 1


def test_queue_statistics_count_the_last_window(vloop):
    config = TransportConfig(window=4, pack_bytes=1, stats_window=1.0)
    net = SimNetwork(vloop, latency=0.05)
    a, b = (Node(vloop, net, h, seed=3, config=config) for h in net.add_hosts(2))
    for i in range(30):
        vloop.call_at(0.1, a.peers.send, b.addr, msg(a.host, i))

    vloop.run_until(0.15)
    s = a.peers.stats(b.addr)
    assert (s.queue_length, s.waiting, s.unacked, s.in_flight) == (30, 26, 4, 4)
    assert (s.q_in, s.q_out) == (0, 0)  # the window [0, 1) is not complete yet

    vloop.run_until(1.5)
    s = a.peers.stats(b.addr)
    assert s.queue_length == 0
    assert (s.q_in, s.q_out, s.sent_total, s.acked_total) == (30, 30, 30, 30)
    # RTT 0.1 s; the last 2 of 30 datagrams waited for the delayed ACK (ack_every=4)
    assert 0.1 <= s.srtt <= 0.1 + config.ack_delay
    assert s.retransmits == 0
    assert LinkSample(b.addr, s.queue_length, s.q_in, s.q_out) == LinkSample(b.addr, 0, 30, 30)
    assert b.peers.stats(a.addr).received == 30

    vloop.run_until(2.5)  # a quiet window
    s = a.peers.stats(b.addr)
    assert (s.q_in, s.q_out, b.peers.stats(a.addr).received) == (0, 0, 0)

    net.crash(b.host)  # nothing leaves the queue any more: it grows by what comes in
    for i in range(10):
        vloop.call_at(3.0 + 0.05 * i, a.peers.send, b.addr, msg(a.host, 100 + i))
    vloop.run_until(4.2)
    s = a.peers.stats(b.addr)
    assert (s.queue_length, s.q_in, s.q_out, s.in_flight) == (10, 10, 0, 4)
    assert s.timeouts >= 1
    assert set(a.peers.all_stats()) == {b.addr}
    assert a.peers.stats(("10.9.9.9", 1)).queue_length == 0  # unknown address: zeros


def test_large_messages_and_packing_under_loss(vloop):
    net = SimNetwork(vloop, latency=jitter(5), loss=0.2, seed=5)
    a, b = (Node(vloop, net, h, seed=5) for h in net.add_hosts(2))
    overhead = len(encode(LeafUpdate(LEAF, "0" * 1000))) - 1000
    sent = []
    for i in range(40):
        size = MAX_MESSAGE - overhead if i % 4 == 0 else 10 + i
        sent.append(LeafUpdate(LEAF, str(i % 10) * size))
    for m in sent:
        a.peers.send(b.addr, m)
    vloop.run_until(120.0)
    assert len(encode(sent[0])) == MAX_MESSAGE
    assert b.received[a.addr] == sent
    assert a.undeliverable == []


def test_forget_hands_back_and_both_streams_start_over(vloop):
    net = SimNetwork(vloop, latency=jitter(6), loss=0.1, seed=6)
    a, b = (Node(vloop, net, h, seed=6) for h in net.add_hosts(2))
    to_b = [msg(a.host, i) for i in range(200)]
    to_a = [msg(b.host, i) for i in range(200)]
    for i in range(100):
        a.peers.send(b.addr, to_b[i])
        b.peers.send(a.addr, to_a[i])
    vloop.run_until(0.2)  # mid-flight
    returned = a.peers.forget(b.addr)
    assert returned == to_b[100 - len(returned) : 100] and returned  # what was not acknowledged, in order
    assert a.peers.stats(b.addr).sent_total == 0  # no state left
    for i in range(100, 200):
        a.peers.send(b.addr, to_b[i])
        b.peers.send(a.addr, to_a[i])
    vloop.run_until(30.0)
    # a's old stream: a prefix arrived, the rest was handed back (some of it may have arrived: lost ACKs); then
    # a's new stream, complete
    got_b = b.received[a.addr]
    k = len(got_b) - 100
    assert got_b == to_b[:k] + to_b[100:] and 100 - len(returned) <= k <= 100
    # b's stream was refused by the forgetful a (RESET) and started over from its first unacknowledged message:
    # all of it arrives, in order, with at most a repeat of what a had delivered but not yet acknowledged
    versions = [m.version for m in a.received[b.addr]]
    k = next((i for i in range(1, len(versions)) if versions[i] <= versions[i - 1]), len(versions))
    assert versions[:k] == list(range(k))
    assert versions[k:] == list(range(versions[k], 200)) if k < len(versions) else k == 200
    assert a.undeliverable == [] and b.undeliverable == []
    assert b.peers.stats(a.addr).restarts == 2  # a's new stream, and b's own started over


def test_stragglers_and_junk_do_not_disturb_a_stream(vloop):
    net = SimNetwork(vloop, latency=0.01)
    a, b = (Node(vloop, net, h, seed=8) for h in net.add_hosts(2))
    a.peers.send(b.addr, msg(a.host, 0))
    vloop.run_until(1.0)
    epoch = b.peers._peers[a.addr].recv_epoch
    head = struct.Struct("!BBI")
    frame = encode(msg(a.host, 99))
    data = struct.pack("!IH", 0, len(frame)) + frame
    for junk in (
        head.pack(MAGIC, 0x10 | FIRST | 1, epoch ^ 1) + struct.pack("!IH", 0, 2) + b"\x01\x80",  # bad frame, new epoch
        head.pack(MAGIC, 0x10 | FIRST | 1, epoch ^ 2) + struct.pack("!IH", 70, len(frame)) + frame,  # beyond window
        head.pack(MAGIC, 0x10 | 2, epoch ^ 3) + struct.pack("!I", 5),  # ACK of a stream b never had
        head.pack(MAGIC, 0x10 | 1, epoch ^ 4) + data,  # DATA of a stream b does not know, without FIRST: RESET
    ):
        assert b.peers.datagram_received(junk, a.addr) is True
    for i in range(1, 20):
        a.peers.send(b.addr, msg(a.host, i))
    vloop.run_until(2.0)
    assert b.received[a.addr] == [msg(a.host, i) for i in range(20)]
    assert b.peers._peers[a.addr].recv_epoch == epoch
    assert b.peers.stats(a.addr).restarts == 0 and a.peers.stats(b.addr).restarts == 0
    assert b.peers.counters.garbage == 2 and b.peers.counters.resets_sent == 1

    b.peers._peers[a.addr].retired += (epoch ^ 5,)  # a straggler of a past stream is ignored, FIRST or not
    stale = b.peers.counters.stale
    b.peers.datagram_received(head.pack(MAGIC, 0x10 | FIRST | 1, epoch ^ 5) + data, a.addr)
    assert b.peers.counters.stale == stale + 1 and b.peers._peers[a.addr].recv_epoch == epoch


def test_sequence_numbers_wrap_around(vloop):
    net = SimNetwork(vloop, latency=jitter(10), loss=0.2, seed=10)
    a, b = (Node(vloop, net, h, seed=10) for h in net.add_hosts(2))
    a.peers.send(b.addr, msg(a.host, 0))
    vloop.run_until(5.0)
    start = (1 << 32) - 30  # jump both ends of the stream close to 2**32
    sender, receiver = a.peers._peers[b.addr], b.peers._peers[a.addr]
    sender.base = sender.next_seq = receiver.expected = start
    sent = [msg(a.host, i) for i in range(1, 300)]
    for m in sent:
        a.peers.send(b.addr, m)
    vloop.run_until(60.0)
    assert b.received[a.addr][1:] == sent
    assert sender.base == sender.next_seq > 1 << 32
    assert _unwrap(5, (1 << 32) - 3) == (1 << 32) + 5 and _unwrap((1 << 32) - 2, 3) == -2


# -- a kademlia node and the transport on one port ---------------------------------------------------------------


def node_server(received: list, loop) -> Server:
    """A kademlia Server whose protocol hands the transport its datagrams: the hook the node will use."""

    class NodeProtocol(KademliaProtocol):
        def __init__(self, source_node, storage, ksize):
            super().__init__(source_node, storage, ksize)
            self.peers = PeerTransport(
                on_message=lambda addr, m: received.append((addr, m)),
                on_undeliverable=lambda addr, ms: received.append(("undeliverable", addr, ms)),
                clock=loop,
                rng=random.Random(source_node.id),
            )

        def connection_made(self, transport):
            super().connection_made(transport)
            self.peers.attach(transport)

        def datagram_received(self, data, addr):
            if not self.peers.datagram_received(data, addr):
                super().datagram_received(data, addr)

    class NodeServer(Server):
        protocol_class = NodeProtocol

    return NodeServer


def test_kademlia_and_peer_messages_share_one_port(vloop):
    net = SimNetwork(vloop, latency=jitter(9, base=0.01, spread=0.02))
    hosts = net.add_hosts(4)
    received = {h: [] for h in hosts}

    async def scenario():
        servers = []
        for h in hosts:
            server = node_server(received[h], vloop)(node_id=node_id(9, h))
            await server.listen(8468, interface=net.ip_of(h))
            servers.append(server)
        for s in servers[1:]:
            await s.bootstrap([(net.ip_of(hosts[0]), 8468)])
        for i, s in enumerate(servers):  # peer messages to every other node while the DHT works
            for h in hosts:
                if h != i:
                    for k in range(50):
                        s.protocol.peers.send((net.ip_of(h), 8468), msg(i, k))
        await servers[1].set("stocks.price/0110", "host-3")
        value = await servers[2].get("stocks.price/0110")
        await asyncio.sleep(5.0)  # virtual: let the last ACKs arrive
        for s in servers:
            s.stop()
        return value, servers

    with kademlia_on_loop(vloop, seed=9):
        value, servers = vloop.run_until_complete(scenario())
    assert value == "host-3"
    for h in hosts:
        by_sender = {}
        for _addr, m in received[h]:
            by_sender.setdefault(m.piece, []).append(m.version)
        assert by_sender == {i: list(range(50)) for i in hosts if i != h}
        counters = servers[h].protocol.peers.counters
        assert counters.garbage == 0 and counters.stale == 0
        assert counters.datagrams_in > 0


def test_heard_since_counts_data_and_acks_not_silence(vloop):
    """What the DHT's bucket freshness reads: a peer is heard from when its DATA or ACK arrives, not otherwise."""
    net = SimNetwork(vloop, latency=0.05)
    a, b, c = (Node(vloop, net, h, seed=5) for h in net.add_hosts(3))
    assert not a.peers.heard_since(b.addr, 0.0)  # no state for b
    vloop.call_at(1.0, a.peers.send, b.addr, msg(a.host, 0))
    vloop.run_until(2.0)
    assert a.peers.heard_since(b.addr, 1.0)  # b's ACK arrived after 1.0 s
    assert not a.peers.heard_since(b.addr, 1.2)
    assert b.peers.heard_since(a.addr, 1.0) and not b.peers.heard_since(a.addr, 1.1)  # a's DATA at 1.05 s
    net.crash(b.host)
    vloop.call_at(3.0, a.peers.send, b.addr, msg(a.host, 1))
    vloop.run_until(3.5)
    assert not a.peers.heard_since(b.addr, 2.0)  # sent to, but nothing came back
    assert not a.peers.heard_since(c.addr, 0.0)
