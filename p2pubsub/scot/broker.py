"""One tenure of a broker position: its routing core, its links to the direct SCOT neighbours, echoes.

A thin adapter around a pure core (``OctopiaBroker``, or ``PadresBroker.on_scot``): client commands and peer
messages go in, ``Send`` actions go out on the peer transport to the neighbour's current holder (one reliable FIFO
stream per peer: exactly the per-link FIFO the cores require), ``Deliver`` actions go to the node's subscribers.

Links. Each neighbour position is *bound* to the address of its holder (from the slot directory) or unbound.
Binding sends ``Hello`` and then a snapshot (:mod:`.repair`) to the holder, after forgetting what the position's
ended tenures left behind (purge); a ``Hello`` from an address is believed only once the directory confirms that
address holds that position in that tenure (messages after it wait meanwhile, in order). Messages to an unbound
position are dropped (the snapshot at the next binding carries the state they would have changed); messages from
an address bound to no neighbour are dropped and counted. The sender of a message is always taken from the
transport, never from the payload.

Schemas. A core message that names a schema this broker has not met yet waits (with the rest of its link, so the
link stays FIFO) until the schema is fetched from the DHT: the cores need each schema's ``absent`` mode.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from overlays import (
    BrokerId,
    Deliver,
    FromNeighbour,
    LinkSample,
    LinkStats,
    OctopiaBroker,
    PadresBroker,
    Rejected,
    Send,
)
from overlays.padres.messages import TidUnadvertisement

from ..model import Schema
from .definition import OverlayDefinition, seq_base, slot_name
from .echo import Echo
from .errors import NodeError, rejection
from .messages import Bye, Echoed, Hello, Tracked
from .repair import hosted_adverts, purge, snapshot

if TYPE_CHECKING:
    from .runtime import ScotNode

log = logging.getLogger(__name__)

Host = tuple


@dataclass(slots=True)
class Link:
    position: BrokerId
    host: Host | None = None  # the bound holder (node_id, ip, port)
    epoch: int = 0  # its tenure
    purged: int = 0  # the position's tenures below this are forgotten here
    synced: bool = False  # our snapshot to the holder is fully handled
    inbox: deque = field(default_factory=deque)  # (message, cause) from the holder, in order
    blocked: bool = False  # waiting for a schema
    checking: bool = False  # a directory look-up is in flight

    @property
    def addr(self) -> tuple | None:
        return None if self.host is None else (self.host[1], self.host[2])


def required_schema(msg: Any) -> str | None:
    """The schema a core message needs known before it is handled."""
    if isinstance(msg, Tracked):
        msg = msg.msg
    flt = getattr(msg, "filter", None)
    if flt is not None:
        return flt.schema
    pub = getattr(msg, "publication", None)
    return pub.event.schema if pub is not None else None


class Broker:
    def __init__(self, node: ScotNode, definition: OverlayDefinition, position: BrokerId, epoch: int) -> None:
        self.node = node
        self.definition = definition
        self.position = position
        self.epoch = epoch
        self.slot = slot_name(node.scot.name, position)
        scot = definition.scot
        schemas = dict(node._schema_cache)
        if definition.routing == "octopia":
            self.core: Any = OctopiaBroker(scot, position, schemas, dynamic=definition.dynamic,
                                           congestion=definition.congestion)
            self.core._adv_seq = seq_base(epoch)  # advertisement uids never repeat across tenures
        else:
            self.core = PadresBroker.on_scot(scot, position, schemas, dynamic=definition.dynamic,
                                             congestion=definition.congestion)
            self.core._seq = seq_base(epoch)  # tree ids never repeat across tenures (tombstones stay valid)
        self.links: dict[BrokerId, Link] = {q: Link(q) for q in sorted(scot.neighbours(position))}
        self.by_addr: dict[tuple, Link] = {}
        self.unverified: dict[tuple, deque] = {}  # address -> messages after its Hello, until verified
        self.echo = Echo()
        self.closed = False
        self.readvertising = 0
        self.stable = asyncio.Event()  # no re-advertisement in progress (PADRES)
        self.stable.set()
        self._fetching: set[str] = set()
        self._stats: asyncio.TimerHandle | None = None
        if definition.dynamic:
            self._stats = node._loop.call_later(definition.t_w, self._on_stats)

    # --- outbound ---

    def _send(self, q: BrokerId, msg: Any, token: int | None, cause: int | None = None) -> None:
        link = self.links[q]
        if link.host is None:
            self.node.counters["dropped_unbound"] += 1
            return
        wire = msg if token is None else Tracked(msg, token)
        self.node._cause = cause
        if self.node._send(link.host, wire) and token is not None:
            self.echo.sent(token, q)

    def execute(self, actions: list[Any], parent: Any = None, cause: int | None = None) -> list[Rejected]:
        """Carry out a core's actions; with ``parent``, the sends are tracked and ``parent`` completes once their
        consequences are all handled. Returns the rejections."""
        token = self.echo.open(parent) if parent is not None else None
        rejected = []
        for a in actions:
            if isinstance(a, Send):
                self._send(a.neighbour, a.message, token, cause)
            elif isinstance(a, Deliver):
                self.node._deliver(a, cause)
            elif isinstance(a, Rejected):
                rejected.append(a)
        if token is not None:
            done, p = self.echo.settle(token)
            if done:
                self._complete(p)
        return rejected

    def _complete(self, parent: Any) -> None:
        kind = parent[0]
        if kind == "link":
            _, q, epoch, token = parent
            link = self.links[q]
            if link.host is not None and link.epoch == epoch:
                self._send(q, Echoed(token), None)
        elif kind == "local":
            fut = parent[1]
            if not fut.done():
                fut.set_result(True)
        elif kind == "call":
            parent[1]()

    def command(self, cmd: Any) -> asyncio.Future:
        """Hand a client command to the core now; the future completes once its consequences are all handled.
        Raises :class:`~.runtime.CommandRejected` at once if the core refuses it."""
        fut = self.node._loop.create_future()
        actions = self.core.handle(cmd, self.node._now())
        if any(isinstance(a, Rejected) for a in actions):
            self.execute([a for a in actions if not isinstance(a, Send)])
            raise rejection(next(a for a in actions if isinstance(a, Rejected)))
        self.execute(actions, ("local", fut), self.node._cause)
        return fut

    def handle_now(self, cmd: Any) -> list[Rejected]:
        """An untracked client command (publications)."""
        return self.execute(self.core.handle(cmd, self.node._now()), None, self.node._cause)

    def learn_schema(self, schema: Schema) -> None:
        self.core.schemas[schema.name] = schema

    # --- inbound ---

    def on_message(self, addr: tuple, msg: Any, cause: int | None) -> None:
        if isinstance(msg, Hello):
            self._on_hello(addr, msg)
            return
        link = self.by_addr.get(addr)
        if link is None:
            held = self.unverified.get(addr)
            if held is not None:
                held.append((msg, cause))
            else:
                self.node.refuse(addr, msg, "dropped_from_non_neighbour")
            return
        if isinstance(msg, Bye):
            if msg.position == link.position and msg.epoch == link.epoch:
                self.unbind(link.position, purge_below=msg.epoch + 1)
            return
        link.inbox.append((msg, cause))
        self._drain(link)

    def _drain(self, link: Link) -> None:
        while link.inbox and not link.blocked and not self.closed:
            msg, cause = link.inbox[0]
            name = required_schema(msg)
            if name is not None and name not in self.core.schemas:
                link.blocked = True
                self.node._spawn(self._fetch_schema(link, name))
                return
            link.inbox.popleft()
            try:
                self._handle_from(link, msg, cause)
            except Exception:
                self.node.counters["handler_errors"] += 1
                log.exception("broker %s: error handling %s", self.position, type(msg).__name__)

    async def _fetch_schema(self, link: Link, name: str) -> None:
        while not self.closed and link.blocked:
            try:
                schema = await self.node.get_schema(name)
            except Exception:  # the DHT did not answer: try again
                schema = None
                await asyncio.sleep(0.5)
                continue
            if schema is None:  # no such schema anywhere: the message cannot be handled
                if link.inbox:
                    self.node.refuse(link.addr, link.inbox.popleft()[0], "dropped_unknown_schema")
            else:
                self.learn_schema(schema)
            link.blocked = False
            self._drain(link)
            for other in self.links.values():  # other links may wait for the same schema
                if other.blocked and other is not link and name in self.core.schemas:
                    other.blocked = False
                    self._drain(other)

    def _handle_from(self, link: Link, msg: Any, cause: int | None) -> None:
        if isinstance(msg, Echoed):
            done, parent = self.echo.answered(msg.token, link.position)
            if done:
                self._complete(parent)
            return
        parent = None
        if isinstance(msg, Tracked):
            parent = ("link", link.position, link.epoch, msg.token)
            msg = msg.msg
        actions = self.core.handle(FromNeighbour(link.position, msg), self.node._now())
        self.execute(actions, parent, cause)
        if isinstance(msg, TidUnadvertisement):
            self._check_hosted()

    # --- links ---

    def _on_hello(self, addr: tuple, msg: Hello) -> None:
        q = msg.position
        link = self.links.get(q)
        if link is None:
            self.node.counters["hello_from_non_neighbour"] += 1
            return
        if link.addr == addr and link.epoch == msg.epoch:
            if msg.resync:
                self._send_snapshot(link)
            return
        old = self.by_addr.get(addr)
        if old is not None:  # this address starts a new tenure (or another position): the old binding ends
            self.unbind(old.position)
        self.unverified[addr] = deque()
        self.check(q, hello=(addr, msg.epoch))

    def check(self, q: BrokerId, hello: tuple | None = None) -> None:
        """Look ``q`` up in the directory and bind, rebind or unbind it accordingly."""
        link = self.links[q]
        if link.checking and hello is None:
            return
        link.checking = True
        self.node._spawn(self._check(link, hello))

    async def _check(self, link: Link, hello: tuple | None) -> None:
        for attempt in range(5 if hello is not None else 1):  # a Hello's sender waits for our answer: retry
            try:
                reply = await self.node.lookup_slot(slot_name(self.node.scot.name, link.position))
                break
            except Exception:
                reply = None
                if attempt < 4 and hello is not None:
                    await asyncio.sleep(0.2 * (attempt + 1))
        link.checking = False
        if self.closed:
            return
        if reply is not None:
            self.apply_directory(link.position, reply.holder, reply.epoch, from_hello=hello)
        if hello is not None and hello[0] in self.unverified and link.addr != hello[0]:
            for msg, _cause in self.unverified.pop(hello[0]):
                self.node.refuse(hello[0], msg, "dropped_unverified")

    def apply_directory(self, q: BrokerId, holder: Any, epoch: int, from_hello: tuple | None = None) -> None:
        link = self.links[q]
        if epoch < link.epoch:
            return  # an older answer than what we know
        if holder is None:
            if link.host is not None and epoch >= link.epoch:
                self.unbind(q, purge_below=epoch + 1)
            elif epoch + 1 > link.purged:
                self._purge(link, epoch + 1)
            return
        if epoch < link.purged:
            return  # a late answer about a tenure we know has ended
        holder = tuple(holder)
        if link.host == holder and link.epoch == epoch:
            return
        resync = from_hello is None or from_hello != ((holder[1], holder[2]), epoch)
        self.bind(q, holder, epoch, resync)

    def bind(self, q: BrokerId, holder: Host, epoch: int, resync: bool) -> None:
        link = self.links[q]
        addr = (holder[1], holder[2])
        if link.host is not None:
            self.unbind(q)
        other = self.by_addr.get(addr)
        if other is not None:
            self.unbind(other.position)
        if epoch > link.purged:
            self._purge(link, epoch)
        link.host, link.epoch, link.synced = holder, epoch, False
        self.by_addr[addr] = link
        self.node.counters["links_bound"] += 1
        self._send(q, Hello(self.position, self.epoch, resync), None)
        self._send_snapshot(link)
        held = self.unverified.pop(addr, None)
        if held:
            link.inbox.extend(held)
            self._drain(link)

    def _send_snapshot(self, link: Link) -> None:
        def synced(link: Link = link, epoch: int = link.epoch) -> None:
            if link.epoch == epoch and link.host is not None:
                link.synced = True

        token = self.echo.open(("call", synced))
        for m in snapshot(self.core, link.position):
            self._send(link.position, m, token)
        done, parent = self.echo.settle(token)
        if done:
            self._complete(parent)

    def unbind(self, q: BrokerId, purge_below: int | None = None) -> None:
        link = self.links[q]
        if link.host is not None:
            self.by_addr.pop(link.addr, None)
            self.node.counters["links_unbound"] += 1
        link.host, link.synced, link.blocked = None, False, False
        link.inbox.clear()
        for parent in self.echo.release(q):
            self._complete(parent)
        if purge_below is not None and purge_below > link.purged:
            self._purge(link, purge_below)

    def _purge(self, link: Link, below: int) -> None:
        """The position's tenures before ``below`` are over: forget what their clients installed."""
        link.purged = below
        msgs = purge(self.core, link.position, below)
        for m in msgs:
            self.execute(self.core.handle(FromNeighbour(link.position, m), self.node._now()))
        if msgs:
            self.node.counters["purged"] += len(msgs)
            self._check_hosted()

    def on_undeliverable(self, addr: tuple, messages: list) -> None:
        link = self.by_addr.get(addr)
        self.node.counters["undeliverable_broker_messages"] += len(messages)
        if link is not None:
            self.unbind(link.position)
            self.check(link.position)

    # --- PADRES: trees retired under our own advertisements are advertised again ---

    def _check_hosted(self) -> None:
        if not isinstance(self.core, PadresBroker):
            return
        live = hosted_adverts(self.core)
        lost = [a for a in self.node.adverts if a not in live]
        if lost:
            self.node._spawn(self._readvertise(lost))

    async def _readvertise(self, adv_ids: list[str]) -> None:
        from overlays import Advertise, Unadvertise

        self.readvertising += 1
        self.stable.clear()
        try:
            futs = []
            for adv_id in adv_ids:
                flt = self.node.adverts.get(adv_id)
                if flt is None or adv_id in hosted_adverts(self.core):
                    continue
                self.execute(self.core.handle(Unadvertise(self.node.client, adv_id), self.node._now()))
                try:
                    futs.append(self.command(Advertise(self.node.client, adv_id, flt)))
                except Exception:
                    self.node.counters["readvertise_failed"] += 1
                    continue
                self.node.counters["readvertised"] += 1
            if futs:
                await asyncio.wait(futs, timeout=self.node.config.install_timeout)
        finally:
            self.readvertising -= 1
            if not self.readvertising:
                self.stable.set()

    # --- link statistics (OctopiA §9.2, Eq. 3) ---

    def _on_stats(self) -> None:
        if self.closed:
            return
        peers = self.node.peers
        samples = []
        for link in self.links.values():
            if link.host is not None:
                s = peers.stats(link.addr)
                samples.append(LinkSample(link.position, s.queue_length, s.q_in, s.q_out))
        self.core.handle(LinkStats(tuple(samples)), self.node._now())
        self._stats = self.node._loop.call_later(self.definition.t_w, self._on_stats)

    # --- the end of the tenure ---

    def close(self, graceful: bool) -> None:
        if self.closed:
            return
        if graceful:
            for link in self.links.values():
                if link.host is not None:
                    self._send(link.position, Bye(self.position, self.epoch), None)
        self.closed = True
        if self._stats is not None:
            self._stats.cancel()
        for p in list(self.echo.pending.values()):
            if p.parent[0] == "local" and not p.parent[1].done():
                p.parent[1].set_exception(NodeError("the broker stopped"))
        self.echo.pending.clear()
        self.stable.set()

    # --- views ---

    def links_view(self) -> dict[str, Any]:
        return {
            str(q): {"holder": None if link.host is None else f"{link.host[1]}:{link.host[2]}",
                     "node": None if link.host is None else link.host[0].hex()[:16],
                     "epoch": link.epoch, "synced": link.synced}
            for q, link in self.links.items()
        }

    def all_synced(self) -> bool:
        return all(link.host is not None and link.synced for link in self.links.values())


Callback = Callable[[], None]

__all__ = ["Broker", "Link", "required_schema"]
