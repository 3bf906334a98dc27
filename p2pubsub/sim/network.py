"""The simulated datagram network: hosts, addresses, latency, capacity, loss, crashes and a trace hook.

Hosts are numbered 0, 1, 2, ... and host `i` owns the fake IPv4 address `10.a.b.c` with `i = a·2¹⁶ + b·2⁸ + c`
(`host_ip`). Once a `SimNetwork` is attached to a `VirtualTimeLoop`, the loop's `create_datagram_endpoint`
binds in-memory endpoints on those addresses, so unmodified asyncio protocols (rpcudp, kademlia, ours) talk
to each other in virtual time.

A datagram sent at `now` from host `s` to host `d` is delivered at

    max(now, link free) + size / capacity   (for each capacity-limited queue it passes: uplink of s, link s→d)
    + latency(s, d)

or dropped (random loss, full queue, sender or receiver down, no such host or port, too large). The delivery
instant is fixed at send time, so a receiver that crashes meanwhile loses it, as on the Internet.
"""

from __future__ import annotations

import asyncio
import errno
import random
from collections.abc import Callable
from dataclasses import dataclass, fields

from p2pubsub.sim.links import Backlog, TransmitQueue
from p2pubsub.sim.transport import Address, SimDatagramTransport
from p2pubsub.sim.vloop import VirtualTimeLoop

__all__ = [
    "LatencyModel",
    "NetStats",
    "SimNetwork",
    "TraceHook",
    "host_ip",
]

#: `latency(src_host, dst_host) -> one-way delay in seconds` (>= 0).
LatencyModel = Callable[[int, int], float]
#: `hook(src_host, dst_host, nbytes, sent_at, received_at, payload)`, once per datagram; `received_at` is
#: None if the datagram was dropped, `dst_host` is None if its address belongs to no simulated host.
TraceHook = Callable[[int, "int | None", int, float, "float | None", bytes], None]

MAX_HOSTS = 1 << 24
#: Largest UDP payload over IPv4; bigger datagrams fail with EMSGSIZE, as with a real socket.
MAX_DATAGRAM = 65507
EPHEMERAL_PORTS = (49152, 65535)


def host_ip(host: int) -> str:
    """The fake IPv4 address of host number `host` (0 -> 10.0.0.0, 258 -> 10.0.1.2)."""
    if not 0 <= host < MAX_HOSTS:
        raise ValueError(f"host index out of range: {host}")
    return f"10.{host >> 16}.{(host >> 8) & 0xFF}.{host & 0xFF}"


@dataclass
class NetStats:
    """Datagram counters since the network was created."""

    sent: int = 0
    bytes_sent: int = 0
    delivered: int = 0
    bytes_delivered: int = 0
    lost: int = 0  # random loss
    queue_full: int = 0  # drop-tail on a full link buffer
    sender_down: int = 0
    receiver_down: int = 0
    unroutable: int = 0  # destination address is no simulated host
    no_listener: int = 0  # host up, nothing bound on the port
    oversize: int = 0  # larger than MAX_DATAGRAM

    @property
    def dropped(self) -> int:
        counted = ("sent", "bytes_sent", "delivered", "bytes_delivered")
        return sum(getattr(self, f.name) for f in fields(self) if f.name not in counted)


class _Host:
    __slots__ = ("index", "ip", "next_port", "ports", "up")

    def __init__(self, index: int) -> None:
        self.index = index
        self.ip = host_ip(index)
        self.up = True
        self.ports: dict[int, SimDatagramTransport] = {}
        self.next_port = EPHEMERAL_PORTS[0]


def _per_host(value):
    return value if value is None or callable(value) else (lambda _host: value)


def _per_link(value):
    return value if value is None or callable(value) else (lambda _src, _dst: value)


class SimNetwork:
    """In-memory datagram network for one `VirtualTimeLoop`.

    Args:
        loop: the virtual-time loop; the network attaches itself to it.
        latency: one-way delay model, `latency(src_host, dst_host) -> seconds`, or a constant.
        loss: probability that a datagram is lost, drawn from a RNG seeded with `seed`.
        uplink_capacity: bytes/s of each host's uplink (a constant or `f(host) -> bytes/s | None`);
            None means unlimited. Every datagram a host sends goes through one FIFO queue.
        link_capacity: bytes/s per directed pair (a constant or `f(src, dst) -> bytes/s | None`).
        queue_limit_bytes: drop-tail buffer of every capacity-limited queue; None means unbounded.
        trace: the per-datagram `TraceHook`; may be set later through the `trace` attribute.
    """

    def __init__(
        self,
        loop: VirtualTimeLoop,
        latency: LatencyModel | float,
        *,
        loss: float = 0.0,
        seed: int = 0,
        uplink_capacity: float | Callable[[int], float | None] | None = None,
        link_capacity: float | Callable[[int, int], float | None] | None = None,
        queue_limit_bytes: int | None = None,
        trace: TraceHook | None = None,
    ) -> None:
        if not 0.0 <= loss <= 1.0:
            raise ValueError(f"loss must be a probability, got {loss}")
        self.loop = loop
        self._latency: LatencyModel = latency if callable(latency) else (lambda _s, _d: float(latency))
        self.loss = loss
        self._rng = random.Random(seed)
        self._uplink_capacity = _per_host(uplink_capacity)
        self._link_capacity = _per_link(link_capacity)
        self._queue_limit = queue_limit_bytes
        self._uplinks: dict[int, TransmitQueue | None] = {}
        self._links: dict[tuple[int, int], TransmitQueue | None] = {}
        self._in_flight: dict[tuple[int, int], list[int]] = {}
        self.trace = trace
        self.stats = NetStats()
        self._hosts: list[_Host] = []
        self._by_ip: dict[str, int] = {}
        loop.attach_network(self)

    # -- hosts -------------------------------------------------------------------------------------------

    def add_host(self) -> int:
        """Add a host (up, nothing bound) and return its index; hosts may join at any virtual time."""
        host = _Host(len(self._hosts))
        self._hosts.append(host)
        self._by_ip[host.ip] = host.index
        return host.index

    def add_hosts(self, count: int) -> list[int]:
        """Add `count` hosts; return their indices."""
        return [self.add_host() for _ in range(count)]

    @property
    def host_count(self) -> int:
        return len(self._hosts)

    def ip_of(self, host: int) -> str:
        """The address of an existing host."""
        return self._hosts[host].ip

    def host_of(self, ip: str) -> int | None:
        """The host owning `ip`, or None."""
        return self._by_ip.get(ip)

    def crash(self, host: int) -> None:
        """Take `host` off the network: it sends nothing, and datagrams arriving for it vanish.

        Its endpoints stay bound and its code keeps running (stopping the node is the runtime's job), so
        `recover` brings it back as it was.
        """
        self._hosts[host].up = False

    def recover(self, host: int) -> None:
        """Put a crashed host back on the network."""
        self._hosts[host].up = True

    def is_up(self, host: int) -> bool:
        return self._hosts[host].up

    def endpoints(self, host: int) -> list[SimDatagramTransport]:
        """The open endpoints of `host`, in port order."""
        ports = self._hosts[host].ports
        return [ports[p] for p in sorted(ports)]

    def close(self) -> None:
        """Close every open endpoint."""
        for host in self._hosts:
            for transport in list(host.ports.values()):
                transport.close()

    # -- queues ------------------------------------------------------------------------------------------

    def uplink_backlog(self, host: int) -> Backlog:
        """Datagrams queued or being transmitted on `host`'s uplink now."""
        queue = self._uplinks.get(host)
        return queue.backlog(self.loop.time()) if queue is not None else Backlog(0, 0)

    def link_backlog(self, src: int, dst: int) -> Backlog:
        """Datagrams queued or being transmitted on the link `src`→`dst` now."""
        queue = self._links.get((src, dst))
        return queue.backlog(self.loop.time()) if queue is not None else Backlog(0, 0)

    def in_flight(self, src: int, dst: int) -> Backlog:
        """Datagrams sent from `src` to `dst` and not yet delivered or dropped (queued ones included)."""
        entry = self._in_flight.get((src, dst))
        return Backlog(entry[0], entry[1]) if entry else Backlog(0, 0)

    def _uplink_queue(self, host: int) -> TransmitQueue | None:
        try:
            return self._uplinks[host]
        except KeyError:
            capacity = self._uplink_capacity(host)
            queue = TransmitQueue(capacity, self._queue_limit) if capacity is not None else None
            self._uplinks[host] = queue
            return queue

    def _link_queue(self, src: int, dst: int) -> TransmitQueue | None:
        key = (src, dst)
        try:
            return self._links[key]
        except KeyError:
            capacity = self._link_capacity(src, dst)
            queue = TransmitQueue(capacity, self._queue_limit) if capacity is not None else None
            self._links[key] = queue
            return queue

    # -- endpoints ---------------------------------------------------------------------------------------

    async def create_datagram_endpoint(
        self, protocol_factory, local_addr: Address | None, remote_addr: Address | None = None
    ) -> tuple[SimDatagramTransport, asyncio.BaseProtocol]:
        """Bind an endpoint on `local_addr = (host ip, port)`; port 0 picks a free ephemeral port."""
        if local_addr is None:
            raise ValueError("a simulated endpoint needs local_addr=(net.ip_of(host), port)")
        ip, port = local_addr
        index = self._by_ip.get(ip)
        if index is None:
            raise OSError(
                errno.EADDRNOTAVAIL,
                f"{ip!r} is not a simulated host address: bind to net.ip_of(host) (e.g. {host_ip(0)!r}), "
                "not a wildcard such as 0.0.0.0",
            )
        host = self._hosts[index]
        if port == 0:
            port = self._free_port(host)
        elif not 0 < port <= 65535:
            raise OverflowError(f"port must be 0-65535, got {port}")
        elif port in host.ports:
            raise OSError(errno.EADDRINUSE, f"address already in use: {ip}:{port}")
        peer = (str(remote_addr[0]), int(remote_addr[1])) if remote_addr is not None else None
        protocol = protocol_factory()
        transport = SimDatagramTransport(self, index, (ip, port), protocol, peer)
        host.ports[port] = transport
        protocol.connection_made(transport)
        return transport, protocol

    def _free_port(self, host: _Host) -> int:
        low, high = EPHEMERAL_PORTS
        for _ in range(high - low + 1):
            port = host.next_port
            host.next_port = low if port == high else port + 1
            if port not in host.ports:
                return port
        raise OSError(errno.EADDRNOTAVAIL, f"no free port on {host.ip}")

    def _unbind(self, transport: SimDatagramTransport) -> None:
        ports = self._hosts[transport.host].ports
        if ports.get(transport.sockname[1]) is transport:
            del ports[transport.sockname[1]]

    # -- datagrams ---------------------------------------------------------------------------------------

    def _send(self, transport: SimDatagramTransport, data: bytes, addr: Address) -> None:
        now = self.loop.time()
        stats = self.stats
        nbytes = len(data)
        stats.sent += 1
        stats.bytes_sent += nbytes
        src = transport.host
        ip, port = addr
        dst = self._by_ip.get(ip)

        if nbytes > MAX_DATAGRAM:
            stats.oversize += 1
            # What a real socket reports; asyncio's transport forwards it to error_received.
            exc = OSError(errno.EMSGSIZE, f"Message too long ({nbytes} bytes)")
            self.loop.call_soon(transport.get_protocol().error_received, exc)
            return self._dropped(src, dst, nbytes, now, data)
        if not self._hosts[src].up:
            stats.sender_down += 1
            return self._dropped(src, dst, nbytes, now, data)
        if dst is None:
            stats.unroutable += 1
            return self._dropped(src, dst, nbytes, now, data)

        done = now
        if self._uplink_capacity is not None:
            queue = self._uplink_queue(src)
            if queue is not None and (done := queue.admit(done, nbytes)) is None:
                stats.queue_full += 1
                return self._dropped(src, dst, nbytes, now, data)
        if self._link_capacity is not None:
            queue = self._link_queue(src, dst)
            if queue is not None and (done := queue.admit(done, nbytes)) is None:
                stats.queue_full += 1
                return self._dropped(src, dst, nbytes, now, data)
        delay = self._latency(src, dst)
        if delay < 0:
            raise ValueError(f"latency({src}, {dst}) is negative: {delay}")
        # Draw only when loss is on: a lossless run consumes no randomness.
        if self.loss and self._rng.random() < self.loss:
            stats.lost += 1
            return self._dropped(src, dst, nbytes, now, data)

        key = (src, dst)
        entry = self._in_flight.get(key)
        if entry is None:
            self._in_flight[key] = [1, nbytes]
        else:
            entry[0] += 1
            entry[1] += nbytes
        self.loop.call_at(done + delay, self._arrive, src, dst, port, data, transport.sockname, now)
        return None

    def _arrive(self, src: int, dst: int, port: int, data: bytes, src_addr: Address, sent_at: float) -> None:
        nbytes = len(data)
        key = (src, dst)
        entry = self._in_flight[key]
        if entry[0] == 1:
            del self._in_flight[key]
        else:
            entry[0] -= 1
            entry[1] -= nbytes

        host = self._hosts[dst]
        if not host.up:
            self.stats.receiver_down += 1
            return self._dropped(src, dst, nbytes, sent_at, data)
        transport = host.ports.get(port)
        if transport is None:
            self.stats.no_listener += 1
            return self._dropped(src, dst, nbytes, sent_at, data)
        self.stats.delivered += 1
        self.stats.bytes_delivered += nbytes
        if self.trace is not None:
            self.trace(src, dst, nbytes, sent_at, self.loop.time(), data)
        transport._deliver(data, src_addr)
        return None

    def _dropped(self, src: int, dst: int | None, nbytes: int, sent_at: float, data: bytes) -> None:
        if self.trace is not None:
            self.trace(src, dst, nbytes, sent_at, None, data)
