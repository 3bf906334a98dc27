"""SimNetwork: exact latency, capacity queueing, seeded loss, crashes, ports, transport API, trace rows."""

import asyncio
import errno

import pytest

from p2pubsub.sim import Backlog, SimNetwork, host_ip
from p2pubsub.sim.network import EPHEMERAL_PORTS, MAX_DATAGRAM


class Recorder(asyncio.DatagramProtocol):
    """Keeps what it receives with the virtual arrival time; optionally echoes it back."""

    def __init__(self, loop, echo=False):
        self.loop = loop
        self.echo = echo
        self.received = []
        self.errors = []
        self.lost = []
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.received.append((self.loop.time(), data, addr))
        if self.echo:
            self.transport.sendto(data, addr)

    def error_received(self, exc):
        self.errors.append(exc)

    def connection_lost(self, exc):
        self.lost.append((self.loop.time(), exc))


def open_endpoint(loop, net, host, port=0, **kwargs):
    echo = kwargs.pop("echo", False)
    transport, protocol = loop.run_until_complete(
        loop.create_datagram_endpoint(
            lambda: Recorder(loop, echo), local_addr=(net.ip_of(host), port), **kwargs
        )
    )
    return transport, protocol


def addr(transport):
    return transport.get_extra_info("sockname")


# Binary fractions keep every sum exact, so times can be compared with ==.
LATENCY = {(0, 1): 0.25, (1, 0): 0.125, (0, 2): 0.5, (2, 0): 0.5, (1, 2): 0.0625, (2, 1): 0.0625}


def latency(src, dst):
    return LATENCY.get((src, dst), 0.0)


@pytest.fixture
def net(vloop):
    network = SimNetwork(vloop, latency)
    network.add_hosts(3)
    return network


def test_host_addresses():
    assert host_ip(0) == "10.0.0.0"
    assert host_ip(258) == "10.0.1.2"
    assert host_ip((1 << 24) - 1) == "10.255.255.255"
    with pytest.raises(ValueError):
        host_ip(1 << 24)


def test_one_way_latency_is_exact_and_source_address_is_the_senders(vloop, net):
    a, _pa = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    vloop.run_until(1.0)
    a.sendto(b"hello", addr(b))
    vloop.run_until(5.0)
    assert pb.received == [(1.25, b"hello", addr(a))]
    assert addr(a) == ("10.0.0.0", EPHEMERAL_PORTS[0])


def test_request_response_rtt_is_sum_of_one_way_delays(vloop, net):
    a, pa = open_endpoint(vloop, net, 0)
    b, _ = open_endpoint(vloop, net, 1, echo=True)
    vloop.run_until(2.0)
    a.sendto(b"ping", addr(b))
    vloop.run_until(10.0)
    ((arrived, data, source),) = pa.received
    assert (data, source) == (b"ping", addr(b))
    assert arrived - 2.0 == LATENCY[(0, 1)] + LATENCY[(1, 0)] == 0.375


def test_port_allocation_binding_and_close(vloop, net):
    first, p1 = open_endpoint(vloop, net, 0)
    second, _ = open_endpoint(vloop, net, 0)
    other_host, _ = open_endpoint(vloop, net, 1)
    fixed, _ = open_endpoint(vloop, net, 0, port=8468)
    assert [addr(first)[1], addr(second)[1]] == [EPHEMERAL_PORTS[0], EPHEMERAL_PORTS[0] + 1]
    assert addr(other_host) == ("10.0.0.1", EPHEMERAL_PORTS[0])  # ports are per host
    assert addr(fixed) == ("10.0.0.0", 8468)
    assert first.get_extra_info("peername") is None
    assert net.endpoints(0) == [fixed, first, second]
    with pytest.raises(OSError) as busy:
        open_endpoint(vloop, net, 0, port=8468)
    assert busy.value.errno == errno.EADDRINUSE

    assert p1.transport is first and not first.is_closing()
    first.close()
    assert first.is_closing() and p1.lost == []  # connection_lost comes on the next iteration
    vloop.run_until(0.5)
    assert p1.lost == [(0.0, None)]
    first.close()  # idempotent
    vloop.run_until(1.0)
    assert len(p1.lost) == 1
    again, _ = open_endpoint(vloop, net, 0, port=EPHEMERAL_PORTS[0])  # freed by close
    assert addr(again)[1] == EPHEMERAL_PORTS[0]


def test_binding_a_wildcard_or_foreign_address_is_refused(vloop, net):
    async def bind(ip):
        await vloop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=(ip, 0))

    for ip in ("0.0.0.0", "127.0.0.1", host_ip(3)):
        with pytest.raises(OSError, match="not a simulated host address"):
            vloop.run_until_complete(bind(ip))


def test_closed_endpoint_neither_sends_nor_receives(vloop, net):
    a, _ = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    b_addr = addr(b)
    a.sendto(b"in flight", b_addr)
    b.close()
    b.sendto(b"after close", addr(a))  # silently ignored, as asyncio does
    vloop.run_until(5.0)
    assert pb.received == []
    assert net.stats.no_listener == 1
    assert net.stats.sent == 1


def test_transport_argument_checks(vloop, net):
    a, _pa = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    with pytest.raises(TypeError):
        a.sendto("text", addr(b))
    with pytest.raises(ValueError):
        a.sendto(b"x")  # unconnected endpoint needs an address
    a.sendto(b"", addr(b))  # empty datagrams are ignored, like asyncio's transport
    a.sendto(bytearray(b"buf"), addr(b))
    a.sendto(memoryview(b"view"), list(addr(b)))
    vloop.run_until(1.0)
    assert [d for _, d, _ in pb.received] == [b"buf", b"view"]
    assert all(type(d) is bytes for _, d, _ in pb.received)


def test_connected_endpoint_sends_only_to_its_peer(vloop, net):
    b, pb = open_endpoint(vloop, net, 1)
    c, _ = open_endpoint(vloop, net, 2)
    a, _ = open_endpoint(vloop, net, 0, remote_addr=addr(b))
    assert a.get_extra_info("peername") == addr(b)
    a.sendto(b"one")
    a.sendto(b"two", addr(b))
    with pytest.raises(ValueError):
        a.sendto(b"three", addr(c))
    vloop.run_until(1.0)
    assert [d for _, d, _ in pb.received] == [b"one", b"two"]


def test_oversize_datagram_reports_emsgsize(vloop, net):
    a, pa = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    a.sendto(b"x" * MAX_DATAGRAM, addr(b))
    a.sendto(b"x" * (MAX_DATAGRAM + 1), addr(b))
    vloop.run_until(1.0)
    assert len(pb.received) == 1
    assert [e.errno for e in pa.errors] == [errno.EMSGSIZE]
    assert net.stats.oversize == 1


def test_uplink_capacity_queues_fifo(vloop):
    net = SimNetwork(vloop, 0.1, uplink_capacity=1000.0)
    net.add_hosts(3)
    a, _ = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    c, pc = open_endpoint(vloop, net, 2)
    # Three 100-byte datagrams at t=0 share host 0's uplink: each takes 0.1 s to transmit.
    a.sendto(b"1" * 100, addr(b))
    a.sendto(b"2" * 100, addr(c))
    a.sendto(b"3" * 100, addr(b))
    assert net.uplink_backlog(0) == Backlog(3, 300)
    assert net.in_flight(0, 1) == Backlog(2, 200)
    vloop.run_until(0.15)
    assert net.uplink_backlog(0) == Backlog(2, 200)
    vloop.run_until(1.0)
    assert net.uplink_backlog(0) == Backlog(0, 0)
    assert net.in_flight(0, 1) == Backlog(0, 0)
    assert [t for t, _, _ in pb.received] == pytest.approx([0.2, 0.4])
    assert [t for t, _, _ in pc.received] == pytest.approx([0.3])
    # Once the link is idle again, a datagram only pays its own transmission time.
    a.sendto(b"4" * 50, addr(b))
    vloop.run_until(2.0)
    assert pb.received[-1][0] == pytest.approx(1.0 + 0.05 + 0.1)
    assert net.uplink_backlog(1) == Backlog(0, 0)  # unlimited hosts keep no queue


def test_link_capacity_after_uplink_is_a_tandem_queue(vloop):
    net = SimNetwork(vloop, 0.5, uplink_capacity=lambda h: 1000.0 if h == 0 else None, link_capacity=500.0)
    net.add_hosts(2)
    a, _ = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    for _ in range(2):
        a.sendto(b"x" * 100, addr(b))
    # Uplink done at 0.1 and 0.2; link (0.2 s each) done at 0.3 and 0.5; plus 0.5 s latency.
    assert net.link_backlog(0, 1) == Backlog(2, 200)
    vloop.run_until(2.0)
    assert [t for t, _, _ in pb.received] == pytest.approx([0.8, 1.0])


def test_drop_tail_buffer(vloop):
    net = SimNetwork(vloop, 0.0, uplink_capacity=1000.0, queue_limit_bytes=250)
    net.add_hosts(2)
    a, _ = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    for i in range(4):
        a.sendto(bytes([i]) * 100, addr(b))
    vloop.run_until(1.0)
    assert [d[:1] for _, d, _ in pb.received] == [b"\x00", b"\x01"]
    assert net.stats.queue_full == 2


def _delivered_under_loss(seed):
    from p2pubsub.sim import VirtualTimeLoop

    loop = VirtualTimeLoop()
    net = SimNetwork(loop, 0.01, loss=0.3, seed=seed)
    net.add_hosts(2)
    a, _ = open_endpoint(loop, net, 0)
    b, pb = open_endpoint(loop, net, 1)
    for i in range(1000):
        a.sendto(i.to_bytes(2, "big"), addr(b))
    loop.run_until(1.0)
    loop.close()
    assert net.stats.lost + net.stats.delivered == 1000
    return [int.from_bytes(d, "big") for _, d, _ in pb.received]


def test_loss_is_seeded():
    first = _delivered_under_loss(7)
    assert first == _delivered_under_loss(7)
    assert first != _delivered_under_loss(8)
    assert 600 < len(first) < 800


def test_crash_drops_traffic_both_ways_and_recover_restores_it(vloop, net):
    a, pa = open_endpoint(vloop, net, 0)
    b, pb = open_endpoint(vloop, net, 1)
    a.sendto(b"before", addr(b))  # arrives at 0.25, after the crash below
    vloop.run_until(0.1)
    net.crash(1)
    assert not net.is_up(1)
    b.sendto(b"from crashed", addr(a))
    a.sendto(b"to crashed", addr(b))
    vloop.run_until(1.0)
    assert pb.received == [] and pa.received == []
    assert (net.stats.receiver_down, net.stats.sender_down) == (2, 1)

    net.recover(1)
    a.sendto(b"after", addr(b))
    b.sendto(b"back", addr(a))
    vloop.run_until(2.0)
    assert [d for _, d, _ in pb.received] == [b"after"]
    assert [d for _, d, _ in pa.received] == [b"back"]


def test_hosts_can_join_at_runtime(vloop, net):
    a, _ = open_endpoint(vloop, net, 0)
    vloop.run_until(3.0)
    newcomer = net.add_host()
    assert newcomer == 3 and net.ip_of(newcomer) == "10.0.0.3" and net.host_of("10.0.0.3") == 3
    n, pn = open_endpoint(vloop, net, newcomer)
    a.sendto(b"welcome", addr(n))
    vloop.run_until(4.0)
    assert [(t, d) for t, d, _ in pn.received] == [(3.0, b"welcome")]


def test_trace_hook_sees_every_datagram_once(vloop, net):
    rows = []
    net.trace = lambda *row: rows.append(row)
    a, _ = open_endpoint(vloop, net, 0)
    b, _ = open_endpoint(vloop, net, 1, echo=True)
    vloop.run_until(1.0)
    a.sendto(b"ping", addr(b))  # delivered, echoed back
    a.sendto(b"nobody", ("10.0.0.2", 9))  # host up, nothing bound
    a.sendto(b"nowhere", ("192.0.2.1", 9))  # not a simulated host
    vloop.run_until(5.0)
    # Rows come when each datagram's fate is known: at send for unroutable, at arrival otherwise.
    assert rows == [
        (0, None, 7, 1.0, None, b"nowhere"),
        (0, 1, 4, 1.0, 1.25, b"ping"),
        (1, 0, 4, 1.25, 1.375, b"ping"),
        (0, 2, 6, 1.0, None, b"nobody"),
    ]
    assert net.stats.sent == 4 and net.stats.delivered == 2 and net.stats.dropped == 2


def test_negative_latency_is_rejected(vloop):
    net = SimNetwork(vloop, lambda s, d: -1.0)
    net.add_hosts(2)
    a, _ = open_endpoint(vloop, net, 0)
    b, _ = open_endpoint(vloop, net, 1)
    with pytest.raises(ValueError, match="negative"):
        a.sendto(b"x", addr(b))


def test_network_close_closes_all_endpoints(vloop, net):
    endpoints = [open_endpoint(vloop, net, h) for h in range(3)]
    net.close()
    vloop.run_until(0.1)
    assert all(t.is_closing() and p.lost == [(0.0, None)] for t, p in endpoints)
    assert net.endpoints(0) == []
