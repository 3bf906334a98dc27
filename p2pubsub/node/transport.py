"""Reliable, FIFO-per-peer delivery of peer messages over the node's one UDP socket, shared with the DHT.

`PeerTransport` is not a protocol of its own: the node's datagram protocol (a kademlia protocol subclass) hands it
every datagram whose first byte is `MAGIC` and gives the rest to kademlia (rpcudp frames start with 0x00 or 0x01):

    def connection_made(self, transport):
        super().connection_made(transport)
        self.peers.attach(transport)

    def datagram_received(self, data, addr):
        if not self.peers.datagram_received(data, addr):
            super().datagram_received(data, addr)

What it guarantees, per peer address: messages are delivered in the order they were sent, exactly once while
both ends keep their state (across a restart of either, what was not acknowledged is sent again: it may arrive
twice, never out of order). Or, after ``max_retries`` resends without progress, every message still queued or
unacknowledged is handed back through ``on_undeliverable(addr, messages)`` (the peer may have received some of
them: their acknowledgement is what went missing). ``send`` raises `MessageTooLarge` (or `WireError`) at once for
a message that cannot travel. Nothing is dropped without one of these.

How: sequence numbers per stream (below); the receiver buffers out-of-order datagrams (at most `WINDOW` ahead), drops
duplicates and sends cumulative ACKs with a selective-ACK bitmap; the sender keeps at most ``window`` datagrams
(and about ``window_bytes``) unacknowledged, packs queued small messages into one datagram, retransmits on a
timeout computed from an RTT estimate (Jacobson/Karels, RFC 6298, plus the peer's ACK delay as in QUIC; Karn's
rule; exponential backoff) and early when ACKs show a hole behind later datagrams (fast retransmit). There is no
congestion control beyond the fixed window.

Streams: each direction of a link is a stream with a random id (its epoch, drawn from the injected RNG) and
sequence numbers from 0. While nothing of a stream has been acknowledged, its DATA carry the FIRST flag, which
lets a receiver without state for it start at seq 0; a receiver without state that gets DATA without FIRST (it
restarted, or forgot the peer) answers RESET, and the sender starts a new stream: a new epoch, everything not
acknowledged renumbered from 0 and resent (so a message may arrive twice across a peer's restart, never out of
order). A restarted peer is therefore recognised by its new epochs, and its old streams' stragglers are ignored
(the last few epochs are remembered). After giving up on a peer, the next message opens a new stream too.

Datagrams (big-endian)::

    DATA   magic u8 (0x50) | version << 4 | FIRST 0x08 | 1 | epoch u32 | seq u32 | (length u16 | frame)+
    ACK    magic u8 | version << 4 | 2 | epoch u32 | next expected seq u32 [| sack u64]
    RESET  magic u8 | version << 4 | 3 | epoch u32

DATA cost 10 bytes plus 2 per message, ACK 10 (18 with the selective-ACK bitmap: bit i = seq next+1+i held),
RESET 6 ("no such stream here: start over").

Time comes only from the event loop (``loop.time()``, ``call_at``) and randomness only from the injected
``random.Random``, so the transport is deterministic on the simulator's virtual-time loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .wire import REGISTRY, MessageTooLarge, Registry, WireError

__all__ = [
    "MAGIC",
    "WINDOW",
    "MessageTooLarge",
    "PeerTransport",
    "QueueStats",
    "TransportClosed",
    "TransportConfig",
    "TransportCounters",
    "WireError",
]

log = logging.getLogger(__name__)

MAGIC = 0x50  # b"P": neither of rpcudp's request (0x00) and response (0x01) markers
VERSION = 1
DATA, ACK, RESET = 1, 2, 3
FIRST = 0x08  # in the kind byte of DATA: nothing of this stream is acknowledged yet, start it at seq 0
#: Receive window and selective-ACK span, in datagrams: the most any sender may have unacknowledged.
WINDOW = 64

_HEAD = struct.Struct("!BBI")  # magic, version << 4 | flags | kind, epoch
_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_LEN = struct.Struct("!H")
_HEAD_SIZE = _HEAD.size  # 6
_BODY = _HEAD_SIZE + 4  # 10: DATA and ACK carry a sequence number after the header
_SEQ_MASK = (1 << 32) - 1
_HALF = 1 << 31
_GRANULARITY = 0.001  # timer granularity G of RFC 6298

Address = tuple[str, int]


class TransportClosed(RuntimeError):
    """`send` after `close`."""


@dataclass(frozen=True, slots=True)
class TransportConfig:
    """Tuning of the reliable transport; the defaults suit loopback up to Internet RTTs."""

    window: int = 64  # datagrams unacknowledged per peer (at most WINDOW)
    # ... and their bytes: no new datagram while this many are unacknowledged (one may overshoot), so that a
    # burst of big messages does not overflow the receiver's socket buffer (~208 kB by default on Linux)
    window_bytes: int = 64_000
    pack_bytes: int = 1400  # small queued messages share a datagram up to this payload (no IP fragmentation)
    initial_rto: float = 0.5  # before any RTT sample
    min_rto: float = 0.05
    max_rto: float = 3.0
    # retransmission rounds in a row without progress; the timeout after the last declares the peer unreachable
    # (with the defaults: ~6 s once the RTT is known to be short, ~15 s before any RTT sample)
    max_retries: int = 6
    ack_every: int = 4  # in-order datagrams acknowledged together ...
    ack_delay: float = 0.01  # ... or after this long; anything out of order is acknowledged at once
    dupack_threshold: int = 3  # ACKs showing a hole before the missing datagram is resent early
    stats_window: float = 1.0  # q_in / q_out / received count over windows of this length
    retired_streams: int = 8  # epochs of a peer's past streams remembered, to ignore their stragglers

    def __post_init__(self) -> None:
        if not 1 <= self.window <= WINDOW:
            raise ValueError(f"window must lie in [1, {WINDOW}]")
        if not 0 < self.min_rto <= self.initial_rto <= self.max_rto:
            raise ValueError("need 0 < min_rto <= initial_rto <= max_rto")
        if self.max_retries < 0 or self.ack_every < 1 or self.dupack_threshold < 1:
            raise ValueError("max_retries >= 0, ack_every >= 1 and dupack_threshold >= 1 are required")
        if self.ack_delay < 0 or self.stats_window <= 0:
            raise ValueError("ack_delay must be >= 0 and stats_window > 0")
        if not 0 < self.pack_bytes <= 65_000:
            raise ValueError("pack_bytes must lie in (0, 65000]")
        if self.window_bytes < 1:
            raise ValueError("window_bytes must be positive")
        if self.retired_streams < 0:
            raise ValueError("retired_streams must be >= 0")


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One peer's link as the node sees it.

    ``queue_length``, ``q_in`` and ``q_out`` are OctopiA's Q, q_in and q_out of the output queue towards the peer
    (§9.2, Eq. 3): ``LinkSample(neighbour, s.queue_length, s.q_in, s.q_out)``. A message enters the queue at
    `send` and leaves it when acknowledged; the window counts are those of the last complete ``stats_window``.
    """

    addr: Address
    queue_length: int  # messages waiting + sent and unacknowledged
    waiting: int  # messages not sent yet (window full)
    unacked: int  # messages sent, not yet acknowledged
    in_flight: int  # datagrams sent, not yet acknowledged
    q_in: int  # messages queued during the last window
    q_out: int  # messages acknowledged during the last window
    received: int  # messages delivered from this peer during the last window
    sent_total: int
    acked_total: int
    received_total: int
    retransmits: int  # datagrams sent again (timeouts and fast retransmits)
    timeouts: int
    srtt: float | None  # smoothed round-trip time, seconds (None before the first sample)
    rto: float
    duplicates: int  # datagrams received again and dropped
    garbage: int  # datagrams from this peer dropped as malformed
    restarts: int  # streams started over: ours refused by the peer (RESET), or a new one from it after the first


@dataclass(slots=True)
class TransportCounters:
    """Whole-transport counters (every peer, including datagrams from addresses we keep no state for)."""

    datagrams_in: int = 0
    datagrams_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    garbage: int = 0  # malformed datagrams with our magic byte
    stale: int = 0  # datagrams of a past or unknown stream, ignored (or answered with RESET)
    resets_sent: int = 0
    unreachable: int = 0  # peers given up on
    send_errors: int = 0  # sendto raised


class _Out:
    """A DATA datagram sent and not yet acknowledged."""

    __slots__ = ("body", "items", "missing", "sacked", "sends", "sent_at", "seq")

    def __init__(self, seq: int, items: list[tuple[bytes, Any]]) -> None:
        self.seq = seq
        self.items = items  # (frame, message) pairs
        self.body = b"".join(_LEN.pack(len(frame)) + frame for frame, _ in items)
        self.sent_at = 0.0
        self.sends = 0
        self.sacked = False
        self.missing = 0  # ACKs that showed it missing since it was last sent


_ZEROS = (0, 0, 0)


class _Peer:
    """Both directions of the link with one address.

    Kept small (a node keeps one for every address it ever exchanged messages with: thousands in a large network):
    lists, not deques (an empty deque costs 624 bytes), past epochs in a tuple, the last window's counts shared
    zeros until there are some."""

    __slots__ = (
        "ack_pending",
        "ack_timer",
        "acked_total",
        "addr",
        "base",
        "buffer",
        "cur",
        "duplicates",
        "epoch",
        "expected",
        "garbage",
        "heard",
        "inflight_bytes",
        "last",
        "next_seq",
        "received_total",
        "recv_epoch",
        "restarts",
        "retired",
        "retransmits",
        "retries",
        "rto",
        "rttvar",
        "sent_total",
        "srtt",
        "timeouts",
        "timer",
        "unacked",
        "unacked_msgs",
        "waiting",
        "warned",
        "win",
    )

    def __init__(self, addr: Address, epoch: int, config: TransportConfig) -> None:
        self.addr = addr
        # sending: our stream to the peer
        self.epoch = epoch
        self.next_seq = 0
        self.base = 0  # lowest unacknowledged seq
        self.waiting: list[tuple[bytes, Any]] = []  # (frame, message), oldest first
        self.unacked: dict[int, _Out] = {}  # seq -> datagram, in seq order
        self.unacked_msgs = 0
        self.inflight_bytes = 0  # DATA bodies not acknowledged
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto = config.initial_rto
        self.retries = 0
        self.timer: asyncio.TimerHandle | None = None
        # receiving: the peer's stream to us
        self.recv_epoch = 0  # none yet
        self.retired: tuple[int, ...] = ()  # its past streams, the last ``retired_streams``
        self.expected = 0
        self.buffer: dict[int, list[Any]] = {}  # seq -> decoded messages, out of order
        self.ack_pending = 0
        self.ack_timer: asyncio.TimerHandle | None = None
        # statistics: [queued, acknowledged, delivered] in the current window and the last complete one
        self.win = 0
        self.cur = [0, 0, 0]
        self.last: list[int] | tuple[int, int, int] = _ZEROS
        self.sent_total = self.acked_total = self.received_total = 0
        self.retransmits = self.timeouts = self.duplicates = self.garbage = self.restarts = 0
        self.warned = False
        self.heard = -1.0  # loop time of the last DATA or ACK of a live stream from the peer (never: -1)

    def cancel_timers(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.ack_timer is not None:
            self.ack_timer.cancel()
            self.ack_timer = None

    def pending(self) -> list[Any]:
        """Every message not acknowledged, in the order they were sent."""
        return [m for out in self.unacked.values() for _, m in out.items] + [m for _, m in self.waiting]


def _unwrap(low: int, ref: int) -> int:
    """The full sequence number closest to ``ref`` whose low 32 bits are ``low``."""
    full = (ref & ~_SEQ_MASK) | low
    if full < ref - _HALF:
        full += 1 << 32
    elif full > ref + _HALF:
        full -= 1 << 32
    return full


class PeerTransport:
    """Reliable, ordered peer-message delivery over a shared UDP socket (see the module docstring).

    Args:
        on_message: ``on_message(addr, message)`` for each message, in order, exactly once.
        on_undeliverable: ``on_undeliverable(addr, messages)`` with every message not acknowledged once a peer is
            declared unreachable, in send order.
        clock: the event loop whose ``time()`` and ``call_at()`` drive timers (default: the running loop).
        rng: source of stream ids (default: a fresh ``random.Random()``; pass a seeded one in the simulator).
        config: `TransportConfig`.
        registry: the wire registry (default: the node's `wire.REGISTRY`).
    """

    def __init__(
        self,
        *,
        on_message: Callable[[Address, Any], None],
        on_undeliverable: Callable[[Address, list[Any]], None],
        clock: asyncio.AbstractEventLoop | None = None,
        rng: random.Random | None = None,
        config: TransportConfig = TransportConfig(),
        registry: Registry = REGISTRY,
    ) -> None:
        self._on_message = on_message
        self._on_undeliverable = on_undeliverable
        self._loop = clock
        self._rng = rng if rng is not None else random.Random()
        self.config = config
        self._registry = registry
        self._udp: asyncio.DatagramTransport | None = None
        self._peers: dict[Address, _Peer] = {}
        self._closed = False
        self.counters = TransportCounters()

    # -- wiring ------------------------------------------------------------------------------------------------

    def attach(self, udp: asyncio.DatagramTransport) -> None:
        """Send through ``udp`` (the socket shared with the DHT); messages queued before are sent now."""
        if self._closed:
            raise TransportClosed("the transport is closed")
        self._udp = udp
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        for peer in list(self._peers.values()):
            self._pump(peer)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def close(self) -> dict[Address, list[Any]]:
        """Stop: cancel every timer, forget every peer, and return what was not acknowledged, per address.

        The shared socket stays open (it is the DHT's); datagrams with our magic byte are still claimed and dropped.
        """
        pending = {}
        for addr, peer in self._peers.items():
            peer.cancel_timers()
            messages = peer.pending()
            if messages:
                pending[addr] = messages
        self._peers.clear()
        self._closed = True
        self._udp = None
        return pending

    def forget(self, addr: Address) -> list[Any]:
        """Drop all state for ``addr`` and return its unacknowledged messages. Talking to it again opens new
        streams: ours starts afresh, and the peer's (which we no longer know) is refused until it starts over."""
        peer = self._peers.pop(_key(addr), None)
        if peer is None:
            return []
        peer.cancel_timers()
        return peer.pending()

    # -- sending -----------------------------------------------------------------------------------------------

    def send(self, addr: Address, message: Any) -> int:
        """Queue ``message`` for ``addr`` behind everything sent to it before; returns its encoded size.

        Raises `MessageTooLarge` or `WireError` if it cannot be encoded, `TransportClosed` after `close`.
        """
        if self._closed:
            raise TransportClosed("the transport is closed")
        frame = self._registry.encode(message)
        peer = self._peer(_key(addr))
        peer.waiting.append((frame, message))
        peer.sent_total += 1
        self._count(peer, 0, 1)
        self._pump(peer)
        return len(frame)

    def _peer(self, key: Address) -> _Peer:
        peer = self._peers.get(key)
        if peer is None:
            peer = self._peers[key] = _Peer(key, self._new_epoch(), self.config)
        return peer

    def _new_epoch(self) -> int:
        while True:
            epoch = self._rng.getrandbits(32)
            if epoch:  # 0 means "no stream"
                return epoch

    def _pump(self, peer: _Peer) -> None:
        """Send queued messages while the window allows, packing small ones together."""
        if self._udp is None or not peer.waiting:
            return
        window, window_bytes, limit = self.config.window, self.config.window_bytes, self.config.pack_bytes
        now = self.loop.time()
        waiting = peer.waiting
        taken, n = 0, len(waiting)
        while taken < n and peer.next_seq - peer.base < window and peer.inflight_bytes < window_bytes:
            items = [waiting[taken]]
            size = 2 + len(items[0][0])
            taken += 1
            while taken < n and size + 2 + len(waiting[taken][0]) <= limit:
                item = waiting[taken]
                size += 2 + len(item[0])
                items.append(item)
                taken += 1
            out = _Out(peer.next_seq, items)
            peer.unacked[out.seq] = out
            peer.unacked_msgs += len(items)
            peer.inflight_bytes += len(out.body)
            peer.next_seq += 1
            self._transmit(peer, out, now)
        del waiting[:taken]
        if peer.unacked and peer.timer is None:
            self._arm(peer, now)

    def _transmit(self, peer: _Peer, out: _Out, now: float) -> None:
        out.sent_at = now
        out.sends += 1
        out.missing = 0
        kind = VERSION << 4 | (FIRST if peer.base == 0 else 0) | DATA
        self._sendto(_HEAD.pack(MAGIC, kind, peer.epoch) + _U32.pack(out.seq & _SEQ_MASK) + out.body, peer.addr)

    def _sendto(self, data: bytes, addr: Address) -> None:
        udp = self._udp
        if udp is None:
            return
        try:
            udp.sendto(data, addr)
        except Exception as exc:  # a send failure is a lost datagram: retransmission covers it
            self.counters.send_errors += 1
            log.debug("sendto %s failed: %r", addr, exc)
            return
        self.counters.datagrams_out += 1
        self.counters.bytes_out += len(data)

    def _arm(self, peer: _Peer, now: float) -> None:
        if peer.timer is not None:
            peer.timer.cancel()
        peer.timer = self.loop.call_at(now + peer.rto, self._on_timeout, peer)

    def _on_timeout(self, peer: _Peer) -> None:
        peer.timer = None
        if self._peers.get(peer.addr) is not peer or not peer.unacked:
            return
        peer.timeouts += 1
        peer.retries += 1
        if peer.retries > self.config.max_retries:
            self._give_up(peer)
            return
        peer.rto = min(peer.rto * 2.0, self.config.max_rto)
        now = self.loop.time()
        for out in peer.unacked.values():
            if not out.sacked:
                self._transmit(peer, out, now)
                peer.retransmits += 1
        self._arm(peer, now)

    def _give_up(self, peer: _Peer) -> None:
        """The peer is unreachable: hand back everything not acknowledged; the next message opens a new stream."""
        messages = peer.pending()
        log.warning(
            "peer %s:%s unreachable after %d timeouts in a row: %d messages handed back",
            *peer.addr,
            peer.retries,
            len(messages),
        )
        self._new_stream(peer, resend=False)
        self.counters.unreachable += 1
        self._callback(self._on_undeliverable, peer.addr, messages)

    def _new_stream(self, peer: _Peer, resend: bool = True) -> None:
        """Start our stream to ``peer`` over: a new epoch from seq 0, with everything not acknowledged queued again
        in its order (``resend``) or dropped (the caller has handed it back)."""
        if resend:
            items = [item for out in peer.unacked.values() for item in out.items]
            peer.waiting[:0] = items
        else:
            peer.waiting.clear()
        peer.unacked.clear()
        peer.unacked_msgs = peer.inflight_bytes = 0
        peer.epoch = self._new_epoch()
        peer.base = peer.next_seq = 0
        peer.retries = 0
        if peer.timer is not None:
            peer.timer.cancel()
            peer.timer = None
        self._update_rto(peer)  # undo any backoff

    # -- receiving ---------------------------------------------------------------------------------------------

    def datagram_received(self, data: bytes, addr: Address) -> bool:
        """Handle ``data`` if it is ours (first byte `MAGIC`) and return True; return False for anything else."""
        if not data or data[0] != MAGIC:
            return False
        counters = self.counters
        counters.datagrams_in += 1
        counters.bytes_in += len(data)
        if self._udp is None:  # not attached, or closed: claimed and dropped
            return True
        try:
            self._receive(data, _key(addr))
        except Exception as exc:  # a bug here must not pass silently, nor reach the DHT protocol
            self.loop.call_exception_handler(
                {"message": f"PeerTransport failed on a datagram from {addr}", "exception": exc}
            )
        return True

    def _receive(self, data: bytes, key: Address) -> None:
        if len(data) < _HEAD_SIZE:
            return self._garbage(key, "short datagram")
        _magic, vk, epoch = _HEAD.unpack_from(data)
        kind, first = vk & 0x07, vk & FIRST
        if vk >> 4 != VERSION or kind not in (DATA, ACK, RESET) or epoch == 0 or (first and kind != DATA):
            return self._garbage(key, f"bad header (kind byte {vk:#04x}, epoch {epoch})")
        if kind == DATA:
            return self._on_data(key, epoch, first, data)
        peer = self._peers.get(key)
        if peer is None or epoch != peer.epoch:  # about a stream of ours that is gone: a straggler
            self.counters.stale += 1
            return None
        if kind == ACK:
            return self._on_ack(peer, data)
        if len(data) != _HEAD_SIZE:
            return self._garbage(key, "bad RESET length")
        # RESET: the peer has no state for our stream (it restarted, or forgot us): start it over
        log.info("peer %s:%s lost our stream: starting it over", *key)
        peer.restarts += 1
        self._new_stream(peer)
        self._pump(peer)
        return None

    def _garbage(self, key: Address, reason: str) -> None:
        self.counters.garbage += 1
        peer = self._peers.get(key)
        if peer is not None:
            peer.garbage += 1
            if not peer.warned:
                peer.warned = True
                log.warning("dropping malformed datagrams from %s:%s: %s", *key, reason)

    def _on_data(self, key: Address, epoch: int, first: int, data: bytes) -> None:
        if len(data) < _BODY + 3:
            return self._garbage(key, "short DATA")
        peer = self._peers.get(key)
        if peer is not None and epoch in peer.retired:
            self.counters.stale += 1
            return None
        low = _U32.unpack_from(data, _HEAD_SIZE)[0]
        new_stream = peer is None or epoch != peer.recv_epoch
        if new_stream:
            if not first:
                # a stream we have no state for (we restarted, or forgot the peer): the sender must start over
                self.counters.stale += 1
                self.counters.resets_sent += 1
                self._sendto(_HEAD.pack(MAGIC, VERSION << 4 | RESET, epoch), key)
                return None
            seq = low
            if seq >= WINDOW:  # nothing acknowledged yet, so the sender's window starts at 0
                return self._garbage(key, "first datagrams of a stream beyond the window")
        else:
            seq = _unwrap(low, peer.expected)
            if seq < peer.expected or seq in peer.buffer:
                peer.duplicates += 1
                return self._send_ack(peer)  # our ACK was lost: repeat it
            if seq >= peer.expected + WINDOW:
                return self._send_ack(peer)  # beyond what we buffer: the sender will resend
        try:
            messages = self._unpack(data)
        except WireError as exc:  # not acknowledged: the sender retries, then hands the messages back
            return self._garbage(key, exc.reason)
        if new_stream:  # only now: a malformed datagram must not disturb the stream in progress
            if peer is None:
                peer = self._peer(key)
            elif peer.recv_epoch:  # the peer started over (it restarted, or gave up on us and came back)
                keep = self.config.retired_streams
                peer.retired = (*peer.retired, peer.recv_epoch)[-keep:] if keep else ()
                peer.restarts += 1
            peer.recv_epoch = epoch
            peer.expected = 0
            peer.buffer.clear()
            peer.ack_pending = 0
        peer.buffer[seq] = messages
        peer.heard = self.loop.time()
        if seq != peer.expected:
            return self._send_ack(peer)  # a hole: tell the sender at once
        ready: list[Any] = []
        while peer.expected in peer.buffer:
            ready.extend(peer.buffer.pop(peer.expected))
            peer.expected += 1
        peer.ack_pending += 1
        if peer.buffer or peer.ack_pending >= self.config.ack_every:
            self._send_ack(peer)
        elif peer.ack_timer is None:
            peer.ack_timer = self.loop.call_at(self.loop.time() + self.config.ack_delay, self._delayed_ack, peer)
        peer.received_total += len(ready)
        self._count(peer, 2, len(ready))
        addr = peer.addr
        for message in ready:
            self._callback(self._on_message, addr, message)
        return None

    def _unpack(self, data: bytes) -> list[Any]:
        messages = []
        view = memoryview(data)
        pos, end = _BODY, len(data)
        while pos < end:
            if pos + 2 > end:
                raise WireError("truncated length")
            (size,) = _LEN.unpack_from(data, pos)
            pos += 2
            if pos + size > end:
                raise WireError("truncated frame")
            messages.append(self._registry.decode(view[pos : pos + size]))
            pos += size
        if not messages:
            raise WireError("DATA without messages")
        return messages

    def _delayed_ack(self, peer: _Peer) -> None:
        peer.ack_timer = None
        if self._peers.get(peer.addr) is peer and peer.ack_pending:
            self._send_ack(peer)

    def _send_ack(self, peer: _Peer) -> None:
        if peer.ack_timer is not None:
            peer.ack_timer.cancel()
            peer.ack_timer = None
        peer.ack_pending = 0
        sack = 0
        for seq in peer.buffer:
            sack |= 1 << (seq - peer.expected - 1)
        data = _HEAD.pack(MAGIC, VERSION << 4 | ACK, peer.recv_epoch) + _U32.pack(peer.expected & _SEQ_MASK)
        if sack:
            data += _U64.pack(sack)
        self._sendto(data, peer.addr)

    def _on_ack(self, peer: _Peer, data: bytes) -> None:
        n = len(data)
        if n not in (_BODY, _BODY + 8):
            return self._garbage(peer.addr, "bad ACK length")
        cum = _unwrap(_U32.unpack_from(data, _HEAD_SIZE)[0], peer.base)
        if cum > peer.next_seq:
            return self._garbage(peer.addr, "ACK of a datagram never sent")
        sack = _U64.unpack_from(data, _BODY)[0] if n > _BODY else 0
        now = peer.heard = self.loop.time()
        sample = None
        progress = advanced = False
        acked_msgs = 0
        while peer.base < cum:
            out = peer.unacked.pop(peer.base)
            peer.base += 1
            peer.inflight_bytes -= len(out.body)
            acked_msgs += len(out.items)
            if not out.sacked:
                progress = True
                if out.sends == 1:  # Karn: no samples from retransmitted datagrams
                    sample = now - out.sent_at
            advanced = True
        if sack:
            highest = cum + sack.bit_length()  # the highest seq the receiver holds
            latest = -1.0  # when the most recently sent datagram the receiver holds was sent
            for seq in range(cum + 1, min(highest, peer.next_seq - 1) + 1):
                if sack >> (seq - cum - 1) & 1:
                    out = peer.unacked.get(seq)
                    if out is not None:
                        latest = max(latest, out.sent_at)
                        if not out.sacked:
                            out.sacked = True
                            progress = True
                            if out.sends == 1:
                                sample = now - out.sent_at
            # fast retransmit: a datagram is presumed lost once enough ACKs show it missing while one sent after
            # it arrived (strictly after: datagrams of one burst may swap places without anything being lost)
            threshold = self.config.dupack_threshold
            for seq in range(peer.base, min(highest, peer.next_seq)):
                out = peer.unacked[seq]
                if not out.sacked and out.sent_at < latest:
                    out.missing += 1
                    if out.missing == threshold:
                        self._transmit(peer, out, now)
                        peer.retransmits += 1
        if acked_msgs:
            peer.unacked_msgs -= acked_msgs
            peer.acked_total += acked_msgs
            self._count(peer, 1, acked_msgs)
        if sample is not None:
            self._rtt_sample(peer, sample)
        if progress:
            peer.retries = 0
        if advanced:
            if peer.unacked:
                self._arm(peer, now)
            elif peer.timer is not None:
                peer.timer.cancel()
                peer.timer = None
        self._pump(peer)
        return None

    def _rtt_sample(self, peer: _Peer, r: float) -> None:
        """Jacobson/Karels (RFC 6298 §2)."""
        if peer.srtt is None:
            peer.srtt, peer.rttvar = r, r / 2.0
        else:
            peer.rttvar = 0.75 * peer.rttvar + 0.25 * abs(peer.srtt - r)
            peer.srtt = 0.875 * peer.srtt + 0.125 * r
        self._update_rto(peer)

    def _update_rto(self, peer: _Peer) -> None:
        cfg = self.config
        if peer.srtt is None:
            peer.rto = cfg.initial_rto
        else:
            # as QUIC's PTO: the peer may hold its ACK for up to ack_delay, which the variance does not show when
            # RTTs are steady (then every delayed ACK would come after a timeout and cause a useless resend)
            rto = peer.srtt + max(4.0 * peer.rttvar, _GRANULARITY) + cfg.ack_delay
            peer.rto = min(max(rto, cfg.min_rto), cfg.max_rto)

    # -- callbacks and statistics ------------------------------------------------------------------------------

    def _callback(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run an application callback; its exceptions go to the loop's exception handler, not into our state."""
        try:
            fn(*args)
        except Exception as exc:
            self.loop.call_exception_handler(
                {"message": f"PeerTransport callback {getattr(fn, '__name__', fn)!r} raised", "exception": exc}
            )

    def _count(self, peer: _Peer, which: int, n: int) -> None:
        self._roll(peer)
        peer.cur[which] += n

    def _roll(self, peer: _Peer) -> None:
        win = int(self.loop.time() // self.config.stats_window)
        if win != peer.win:
            peer.last = peer.cur if win == peer.win + 1 else _ZEROS
            peer.cur = [0, 0, 0]
            peer.win = win

    def stats(self, addr: Address) -> QueueStats:
        """The link with ``addr`` now (all zeros for an address we have no state for)."""
        key = _key(addr)
        peer = self._peers.get(key)
        if peer is None:
            peer = _Peer(key, 0, self.config)
        else:
            self._roll(peer)
        waiting = len(peer.waiting)
        q_in, q_out, received = peer.last
        return QueueStats(
            addr=key,
            queue_length=waiting + peer.unacked_msgs,
            waiting=waiting,
            unacked=peer.unacked_msgs,
            in_flight=len(peer.unacked),
            q_in=q_in,
            q_out=q_out,
            received=received,
            sent_total=peer.sent_total,
            acked_total=peer.acked_total,
            received_total=peer.received_total,
            retransmits=peer.retransmits,
            timeouts=peer.timeouts,
            srtt=peer.srtt,
            rto=peer.rto,
            duplicates=peer.duplicates,
            garbage=peer.garbage,
            restarts=peer.restarts,
        )

    def heard_since(self, addr: Address, since: float) -> bool:
        """Whether ``addr`` sent us DATA or an ACK of a live stream at loop time ``since`` or later."""
        peer = self._peers.get(addr)
        return peer is not None and peer.heard >= since

    def all_stats(self) -> dict[Address, QueueStats]:
        """`stats` of every peer with state, by address."""
        return {addr: self.stats(addr) for addr in list(self._peers)}

    @property
    def peers(self) -> list[Address]:
        return list(self._peers)


def _key(addr: Any) -> Address:
    """Peers are keyed by (host, port); IPv6 flow info and scope id are not part of the key."""
    return (addr[0], addr[1])
