"""The simulator's trace observer: the node's observer hooks and the network's datagram hook, into a `TraceWriter`.

Messages of the node (tree, multicast, delivery, joins, schemas) are logged when a node sends them
(`Observer.sent`): type, ids, sender, receiver, encoded size, send time and the id of the message that caused
them. The peer transport is exactly-once and FIFO per peer address, so the k-th message one host sends to another
is the k-th that host receives from it: `received` pops the oldest open id of its (sender, receiver) pair and
stamps its receipt time. A message never received (its receiver crashed, or left) keeps a null ``received_at``.

Message types are class names; a `Routed` message is logged as what it carries (a routed ``ProbePub`` is a
``ProbePub``), a ``ProbePubMulticast`` as itself, and so is a SCOT broker's ``Tracked`` message (a tracked
``SubscriptionBroadcast`` is a ``SubscriptionBroadcast``). ``event_id`` and ``subscription_id`` come from the
message (for the broker cores' messages: their publication's id, their ``sub_id``).

What the node does not see goes through `SimNetwork`'s per-datagram hook (`datagram`): the transport's
acknowledgements (type ``Ack``, one row per ACK datagram) and Kademlia's RPCs (``dht.<rpc>`` for a request,
``dht.<rpc>.reply`` for its response, the RPC name read from the request's umsgpack header). These rows have no
parent. DATA datagrams are not logged again: their messages are.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from ..node.messages import (
    Goodbye,
    JoinReply,
    JoinRequest,
    Probe,
    ProbePubMulticast,
    Resolved,
    Routed,
    SchemaGet,
    SchemaHandoff,
    SchemaPut,
    SchemaReply,
)
from ..node.observer import Observer
from ..node.transport import ACK, MAGIC
from ..scot.messages import Tracked
from ..trace import TraceWriter
from ..tree import (
    AdoptNode,
    EventDelivery,
    InsertSub,
    LeafUpdate,
    ProbePub,
    ProbeSub,
    SubInstalled,
    TransferSub,
)
from ..tree.messages import Unsubscribe, Unsubscribed

__all__ = ["TraceObserver", "describe"]

Described = tuple[str, "str | None", "str | None"]  # (type, event_id, subscription_id)


def _entry(m: Any) -> Described:
    return (type(m).__name__, None, m.entry.sub_id)


def _event(m: Any) -> Described:
    return (type(m).__name__, m.event.event_id, None)


def _delivery(m: EventDelivery) -> Described:
    subs = m.subs
    return ("EventDelivery", m.event.event_id, subs[0][0] if len(subs) == 1 else None)


def _sub_id(m: Any) -> Described:
    return (type(m).__name__, None, m.sub_id)


def _plain(m: Any) -> Described:
    return (type(m).__name__, None, None)


def _transfer(m: TransferSub) -> Described:
    subs = {e.sub_id for e in m.entries}
    return ("TransferSub", None, next(iter(subs)) if len(subs) == 1 else None)


def _unsubscribe(m: Unsubscribe) -> Described:
    return ("Unsubscribe", None, m.key[0])


_DESCRIBE: dict[type, Callable[[Any], Described]] = {
    ProbeSub: _entry,
    InsertSub: _entry,
    SubInstalled: _sub_id,
    Unsubscribed: _sub_id,
    TransferSub: _transfer,
    Unsubscribe: _unsubscribe,
    LeafUpdate: _plain,
    AdoptNode: _plain,
    ProbePub: _event,
    ProbePubMulticast: _event,
    EventDelivery: _delivery,
    Resolved: _plain,
    JoinRequest: _plain,
    JoinReply: _plain,
    Goodbye: _plain,
    SchemaPut: _plain,
    SchemaGet: _plain,
    SchemaReply: _plain,
    SchemaHandoff: _plain,
    Probe: _plain,
}


def _core(m: Any) -> Described:
    """A broker core's message (``overlays.octopia`` / ``overlays.padres``): publication id, or ``sub_id``."""
    pub = getattr(m, "publication", None)
    event_id = pub.pub_id.partition("@")[0] if pub is not None else None  # a SCOT node's pub_id: "event@time"
    return (type(m).__name__, event_id, getattr(m, "sub_id", None))


def describe(msg: Any) -> Described:
    """``(type, event_id, subscription_id)`` of a peer message as the trace records it."""
    if type(msg) is Routed or type(msg) is Tracked:
        msg = msg.msg
    fn = _DESCRIBE.get(type(msg))
    if fn is None:
        fn = _core if hasattr(type(msg), "PHASE") else _plain
    return fn(msg)


class TraceObserver(Observer):
    """Implements the node's observer hooks (and the network's trace hook) by writing trace rows.

    ``index_of_ip`` maps a host's address to its node number (the simulator gives node ``i`` host ``i``); each
    simulated `Node` carries its number as ``node.sim_index``.
    """

    def __init__(self, writer: TraceWriter, clock: Callable[[], float], index_of_ip: Callable[[str], int | None]):
        self.writer = writer
        self._now = clock
        self._index_of_ip = index_of_ip
        # (src, dst) -> ids sent and not yet received; a pair with none has no entry (millions of pairs at scale)
        self._open: dict[tuple[int, int], deque[int]] = {}
        self._rpc_names: dict[bytes, str] = {}  # kademlia request id -> rpc name, until its response arrives
        self.mismatches = 0  # a received message whose type differs from the oldest open one of its pair
        self.unmatched = 0  # a received message with no open id for its pair
        self.dht = Counter()  # rpc datagrams by row type (for the summary; the rows are in the trace)
        self._types: dict[int, str] = {}  # not used for every message: only while checking (see check_types)
        self.check_types = False
        self.installs: dict[str, float] = {}  # sub_id -> installed_at
        self.pairs: set[tuple[int, int]] = set()  # (src, dst) host pairs the trace refers to

    # --- node hooks ---

    def sent(self, node: Any, dst: tuple, msg: Any, nbytes: int, cause: int | None) -> int:
        src = node.sim_index
        d = self._index_of_ip(dst[1])
        typ, event_id, sub_id = describe(msg)
        mid = self.writer.message(typ, src, d, nbytes, self._now(), None, cause, event_id, sub_id)
        key = (src, d)
        q = self._open.get(key)
        if q is None:
            q = self._open[key] = deque()
            self.pairs.add(key)  # a set: adding a pair it holds changes nothing
        q.append(mid)
        if self.check_types:
            self._types[mid] = typ
        return mid

    def received(self, node: Any, src: tuple, msg: Any) -> int | None:
        key = (self._index_of_ip(src[0]), node.sim_index)
        q = self._open.get(key)
        if not q:
            self.unmatched += 1
            return None
        mid = q.popleft()
        if not q:
            del self._open[key]
        self.writer.received(mid, self._now())
        if self.check_types and self._types.pop(mid) != describe(msg)[0]:
            self.mismatches += 1
        return mid

    def subscribed(self, node: Any, sub_id: str, at: float) -> None:
        self.writer.subscription(sub_id, node.sim_index, at)

    def installed(self, node: Any, sub_id: str, at: float, cause: int | None) -> None:
        if sub_id not in self.installs:  # the first version's install is the subscription's
            self.installs[sub_id] = at
            self.writer.installed(sub_id, at, cause)

    def published(self, node: Any, event_id: str, at: float) -> None:
        self.writer.event(event_id, node.sim_index, at)

    def delivered(self, node: Any, sub_id: str, event: Any, at: float, cause: int | None) -> None:
        publisher = self._index_of_ip(event.publisher[1])
        self.pairs.add((publisher, node.sim_index))
        self.writer.delivery(event.event_id, sub_id, node.sim_index, publisher, event.published_at, at, cause)

    def forget_pair(self, src: int, dst: int) -> None:
        """Drop the open ids between two nodes (one of them is gone for good: nothing more will arrive)."""
        self._open.pop((src, dst), None)

    # --- network hook: datagrams the node does not report ---

    def datagram(
        self, src: int, dst: int | None, nbytes: int, sent_at: float, received_at: float | None, data: bytes
    ) -> None:
        first = data[0]
        if first == MAGIC:
            if len(data) > 1 and data[1] & 0x07 == ACK and dst is not None:
                self.pairs.add((src, dst))
                self.writer.message("Ack", src, dst, nbytes, sent_at, received_at)
            return
        if dst is None or len(data) < 23:
            return
        msg_id = data[1:21]
        if first == 0:  # request: 0x00 | id (20) | umsgpack [name, args]: fixarray(2), str header, name
            name = _rpc_name(data)
            if received_at is not None:
                self._rpc_names[msg_id] = name
            typ = f"dht.{name}"
        elif first == 1:
            name = self._rpc_names.pop(msg_id, None)
            typ = f"dht.{name}.reply" if name else "dht.reply"
        else:
            return
        self.dht[typ] += 1
        self.pairs.add((src, dst))
        self.writer.message(typ, src, dst, nbytes, sent_at, received_at)


def _rpc_name(data: bytes) -> str:
    head = data[22]
    if data[21] != 0x92 or head & 0xE0 != 0xA0:
        return "unknown"
    n = head & 0x1F
    try:
        return data[23 : 23 + n].decode("ascii")
    except UnicodeDecodeError:
        return "unknown"
