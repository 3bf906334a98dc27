"""The DHT side of a SCOT node: Kademlia membership, keyed requests, and what the responsible nodes store.

Built by composition from the DHT node's parts, as :class:`p2pubsub.node.runtime.Node` is: ``DhtServer`` (one
UDP socket shared with the reliable FIFO ``PeerTransport``), ``Neighbourhood`` (who is responsible for a key,
next hops, resolution cache) and the same greedy routing (``Routed`` hop by hop to the closest node known,
``Resolved`` hints so that steady state costs one hop), the same join protocol (a joining node takes over its
keys' records before it serves them) and hand-offs on join, leave and tick.

What the node responsible for a key keeps (and copies to the next ``replicas - 1`` closest nodes):

* schemas (``SchemaPut`` / ``SchemaGet``, the DHT mode's messages and compare-and-set store);
* overlay definitions (:class:`~.messages.OverlayPut` / :class:`~.messages.OverlayGet`, compare-and-set);
* slot leases (:class:`~.messages.SlotClaim` / ``SlotRelease`` / ``SlotGet``, :class:`~.store.SlotStore`). A slot
  change is answered only after every replica holder acknowledged its copy (or ``ack_timeout`` passed), so a
  node that takes over a crashed responsible node's keys holds every lease its predecessor granted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from overlays import BrokerId

from ..api.service import SchemaConflict, UnknownSchema
from ..model import Schema, ValidationError
from ..node.config import NodeConfig
from ..node.dht import Contact, DhtServer, contact_tuple, new_node_id
from ..node.keys import schema_key
from ..node.messages import (
    Goodbye,
    JoinReply,
    JoinRequest,
    Resolved,
    Routed,
    SchemaGet,
    SchemaHandoff,
    SchemaPut,
    SchemaReply,
)
from ..node.neighbourhood import Neighbourhood
from ..node.observer import NULL_OBSERVER, Observer
from ..node.schemas import SchemaStore
from ..node.transport import PeerTransport
from ..node.wire import WireError
from .definition import overlay_key, slot_key
from .errors import NodeError
from .messages import (
    OverlayGet,
    OverlayPut,
    Replica,
    ReplicaAck,
    SlotClaim,
    SlotGet,
    SlotRelease,
    SlotReply,
    StoreReply,
)
from .store import GRANTED, RELEASED, RENEWED, OverlayStore, SlotStore, record_view
from .wire import SCOT_REGISTRY

log = logging.getLogger(__name__)

Host = tuple  # (node_id: bytes, ip: str, port: int)
REPLIES = (SchemaReply, StoreReply, SlotReply)


@dataclass(slots=True)
class _AckWait:
    waiting: set
    then: Callable[[], None]
    timer: asyncio.TimerHandle | None = None


def key_of(kind: str, name: str) -> bytes:
    if kind == "schema":
        return schema_key(name)
    if kind == "overlay":
        return overlay_key(name)
    overlay, region, cluster = name.split("/")
    return slot_key(overlay, BrokerId(region, int(cluster)))


class KeyedPeer:
    """A DHT member that routes keyed requests and stores schemas, overlay definitions and slot leases."""

    def __init__(self, config: NodeConfig | None = None, *, rng: random.Random | None = None,
                 node_id: bytes | None = None, observer: Observer = NULL_OBSERVER, replicas: int = 3,
                 ack_timeout: float = 1.0) -> None:
        self.config = config or NodeConfig()
        self.rng = rng or random.Random()
        self.id = node_id or new_node_id(self.rng)
        self.observer = observer
        self.replicas = replicas
        self.ack_timeout = ack_timeout
        self.host: Host | None = None
        self.ready = False
        self.counters: Counter = Counter()
        self.schemas = SchemaStore()
        self.overlays = OverlayStore()
        self.slots = SlotStore()
        self._schema_cache: dict[str, Schema] = {}
        self._cause: int | None = None
        self._inbox: deque = deque()
        self._pumping = False
        self._parked: list[tuple] = []
        self._requests: dict[int, asyncio.Future] = {}
        self._acks: dict[int, _AckWait] = {}
        self._req = 0
        self._told: set[tuple[Host, bytes]] = set()
        self._rep_sets: dict[tuple[str, str], frozenset] = {}
        self._join_waiting: set[tuple] = set()
        self._join_done: asyncio.Event | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._handoff_due = False
        self.peers: PeerTransport | None = None
        self.dht: DhtServer | None = None
        self.hood: Neighbourhood | None = None

    # --- life cycle ---

    async def _start_dht(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        self.peers = PeerTransport(
            on_message=self._on_peer_message,
            on_undeliverable=self._on_undeliverable,
            clock=loop,
            rng=random.Random(self.rng.getrandbits(64)),
            config=self.config.transport,
            registry=SCOT_REGISTRY,
        )
        self.dht = DhtServer(node_id=self.id, peers=self.peers, on_contact=self._on_contact,
                             ksize=self.config.ksize, alpha=self.config.alpha, rpc_timeout=self.config.rpc_timeout)
        await self.dht.listen(self.config.dht_port, interface=self.config.host)
        ip, port = self.dht.transport.get_extra_info("sockname")[:2]
        if self.config.advertise:
            ip = self.config.advertise
        elif ip in ("0.0.0.0", "::"):
            ip = await self._stun(ip)
        self.host = (self.id, ip, port)
        self.hood = Neighbourhood(self.host)
        if self.config.bootstrap:
            await self.dht.bootstrap(list(self.config.bootstrap))
            await self._join()
        self.ready = True
        parked, self._parked = self._parked, []
        for item in sorted(parked, key=lambda p: not isinstance(p[1], Replica)):  # hand-offs first
            self._inbox.append(("routed", item, None))
        self._pump()
        self._tick = loop.call_later(self.config.tick_interval, self._on_tick)

    async def _stun(self, wildcard: str) -> str:
        for host, port in self.config.bootstrap:
            ok, addr = await self.dht.protocol.stun((host, port))
            if ok and addr:
                return addr[0]
        return "127.0.0.1" if wildcard == "0.0.0.0" else "::1"

    async def _join(self) -> None:
        """Ask the closest neighbours for the records we are now responsible for; ready once they sent them."""
        self._sync()
        me = int.from_bytes(self.id, "big")
        closest = sorted(self.hood.contacts, key=lambda c: int.from_bytes(c[0], "big") ^ me)[: self.config.ksize]
        if not closest:
            return
        self._join_waiting = set(closest)
        self._join_done = asyncio.Event()
        for c in closest:
            self._send(c, JoinRequest(self.host))
        try:
            await asyncio.wait_for(self._join_done.wait(), self.config.join_timeout)
        except TimeoutError:
            self.counters["join_timeouts"] += len(self._join_waiting)

    async def _stop_dht(self, graceful: bool) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        if graceful and self.hood is not None and self.hood.contacts:
            self.hood.leaving = True
            for c in self.hood.contacts:
                self._send(c, Goodbye(self.host))
            self._handoff()
            await self._drained(self.config.join_timeout)
        for wait in self._acks.values():
            if wait.timer is not None:
                wait.timer.cancel()
        self._acks.clear()
        if self.peers is not None:
            self.peers.close()
        if self.dht is not None:
            self.dht.stop()
        for fut in self._requests.values():
            if not fut.done():
                fut.set_exception(NodeError("node stopped"))
        self.ready = False

    async def _drained(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline and any(s.queue_length for s in self.peers.all_stats().values()):
            await asyncio.sleep(0.01)

    def _now(self) -> float:
        return self._loop.time()

    # --- requests ---

    async def _request(self, key: bytes, make: Callable[[int], Any], timeout: float | None = None) -> Any:
        if not self.ready:
            raise NodeError("the node has not joined the network yet")
        self._req += 1
        req = self._req
        fut = self._requests[req] = asyncio.get_running_loop().create_future()
        self._cause = None
        self._route(key, make(req), self.host, 0, forwarded=False)
        self._pump()
        try:
            return await asyncio.wait_for(fut, timeout or self.config.request_timeout)
        except TimeoutError:
            raise NodeError("no answer from the node responsible for the key") from None
        finally:
            self._requests.pop(req, None)

    async def put_schema(self, name: str, body: Any) -> tuple[Schema, bool]:
        """Create schema ``name``; ``(schema, created)``. Raises ValidationError or SchemaConflict."""
        schema = Schema.from_dict(name, body)
        doc = json.dumps(schema.to_dict())
        reply = await self._request(schema_key(name), lambda req: SchemaPut(name, doc, self.host, req))
        stored = Schema.from_dict(name, json.loads(reply.doc))
        self._schema_cache[name] = stored
        if reply.status == "conflict":
            raise SchemaConflict(stored)
        return stored, reply.status == "created"

    async def get_schema(self, name: str, fresh: bool = False) -> Schema | None:
        if not fresh and name in self._schema_cache:
            return self._schema_cache[name]
        reply = await self._request(schema_key(name), lambda req: SchemaGet(name, self.host, req))
        if reply.doc is None:
            return None
        schema = self._schema_cache[name] = Schema.from_dict(name, json.loads(reply.doc))
        return schema

    async def _schema(self, name: str, body: Any, parse: Callable) -> tuple[Schema, Any]:
        """The schema and the parsed body; a schema grown since we cached it is fetched again once."""
        if not isinstance(name, str):
            raise UnknownSchema(str(name))
        schema = await self.get_schema(name)
        if schema is None:
            raise UnknownSchema(name)
        try:
            return schema, parse(schema, body)
        except ValidationError as e:
            if e.code != "unknown_attribute":
                raise
        schema = await self.get_schema(name, fresh=True)
        return schema, parse(schema, body)

    async def put_overlay(self, name: str, doc: str) -> StoreReply:
        return await self._request(overlay_key(name), lambda req: OverlayPut(name, doc, self.host, req))

    async def get_overlay(self, name: str) -> StoreReply:
        return await self._request(overlay_key(name), lambda req: OverlayGet(name, self.host, req))

    async def claim_slot(self, slot: str, epoch: int, lease: float) -> SlotReply:
        return await self._request(key_of("slot", slot), lambda req: SlotClaim(slot, self.host, epoch, lease, req))

    async def release_slot(self, slot: str, epoch: int) -> SlotReply:
        return await self._request(key_of("slot", slot), lambda req: SlotRelease(slot, self.host, epoch, req))

    async def lookup_slot(self, slot: str) -> SlotReply:
        """The directory: who holds ``slot`` now (``holder`` None: free), and its tenure's epoch."""
        return await self._request(key_of("slot", slot), lambda req: SlotGet(slot, self.host, req))

    # --- inbound ---

    def _on_peer_message(self, addr: tuple, msg: Any) -> None:
        self._inbox.append(("peer", (addr, msg), self.observer.received(self, addr, msg)))
        self._pump()

    def _pump(self) -> None:
        if self._pumping:
            return
        self._pumping = True
        try:
            while self._inbox:
                kind, item, self._cause = self._inbox.popleft()
                try:
                    if kind == "peer":
                        self._dispatch(*item)
                    elif kind == "routed":
                        self._arrive(*item)
                    else:
                        item()
                except Exception:
                    self.counters["handler_errors"] += 1
                    log.exception("error handling %s", type(item).__name__)
        finally:
            self._pumping = False

    def _later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` from the pump (after what is being handled now), with the current cause."""
        self._inbox.append(("call", fn, self._cause))

    def _dispatch(self, addr: tuple, msg: Any) -> None:
        if isinstance(msg, Routed):
            self._route(msg.key, msg.msg, msg.origin, msg.hops, forwarded=True)
        elif isinstance(msg, REPLIES):
            fut = self._requests.get(msg.req)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif isinstance(msg, Resolved):
            self.hood.learn(msg.key, msg.host)
        elif isinstance(msg, Replica):
            self._adopt(msg.kind, msg.name, msg.doc)
            if msg.req:
                self._send(msg.reply_to, ReplicaAck(msg.req))
        elif isinstance(msg, ReplicaAck):
            self._acked(msg.req, tuple(addr))
        elif isinstance(msg, SchemaHandoff):
            self.schemas.adopt(msg.name, msg.doc)
        elif isinstance(msg, Goodbye):
            self._forget(tuple(msg.host))
        elif isinstance(msg, JoinRequest):
            self._on_join_request(msg)
        elif isinstance(msg, JoinReply):
            self.counters["joined_with"] += msg.moved
            self._join_waiting.discard(tuple(msg.host))
            if self._join_done is not None and not self._join_waiting:
                self._join_done.set()
        else:
            self._on_overlay_message(tuple(addr), msg)

    def _on_overlay_message(self, addr: tuple, msg: Any) -> None:
        """Broker messages: the SCOT node handles them."""
        self.counters["unexpected_messages"] += 1

    # --- routing ---

    def _sync(self) -> None:
        if self.dht is not None and self.dht.protocol is not None and self.hood.version != self.dht.version:
            self.hood.update((contact_tuple(c) for c in self.dht.contacts()), self.dht.version)

    def _route(self, key: bytes, msg: Any, origin: Host, hops: int, forwarded: bool) -> None:
        self._sync()
        if self.hood.responsible(key):
            self._inbox.append(("routed", (key, msg, origin, hops), self._cause))
            return
        if hops >= self.config.max_hops:
            self.counters["dropped_max_hops"] += 1
            return
        nxt = self.hood.next_hop(key)
        if nxt is None:
            self.counters["dropped_no_route"] += 1
            return
        self.counters["forwarded" if forwarded else "routed"] += 1
        self._send(nxt, Routed(key, msg, origin, hops + forwarded))

    def _arrive(self, key: bytes, msg: Any, origin: Host, hops: int) -> None:
        if not self.ready:
            self._parked.append((key, msg, origin, hops))
            return
        if hops > 0 and origin != self.host and (origin, key) not in self._told:
            if len(self._told) > 100_000:
                self._told.clear()
            self._told.add((origin, key))
            self._send(origin, Resolved(key, self.host))
        now = self._now()
        if isinstance(msg, SchemaPut):
            status, doc = self.schemas.put(msg.name, msg.doc, self.config.tree_defaults)
            if status == "created":
                self._replicate("schema", msg.name, doc)
            self._reply(msg.reply_to, SchemaReply(msg.req, status, doc))
        elif isinstance(msg, SchemaGet):
            doc = self.schemas.get(msg.name)
            self._reply(msg.reply_to, SchemaReply(msg.req, "found" if doc else "missing", doc))
        elif isinstance(msg, OverlayPut):
            status, doc = self.overlays.put(msg.name, msg.doc)
            if status == "created":
                self._replicate("overlay", msg.name, doc)
            self._reply(msg.reply_to, StoreReply(msg.req, status, doc))
        elif isinstance(msg, OverlayGet):
            doc = self.overlays.get(msg.name)
            self._reply(msg.reply_to, StoreReply(msg.req, "found" if doc else "missing", doc))
        elif isinstance(msg, SlotClaim):
            status, rec = self.slots.claim(msg.slot, tuple(msg.claimant), msg.epoch, msg.lease, now)
            self.counters[f"slot_{status}"] += 1
            self._slot_answer(msg.slot, msg.claimant, msg.req, status, rec, replicate=status in (GRANTED, RENEWED))
        elif isinstance(msg, SlotRelease):
            status, rec = self.slots.release(msg.slot, msg.holder[0], msg.epoch, now)
            self._slot_answer(msg.slot, msg.holder, msg.req, status, rec, replicate=status == RELEASED)
        elif isinstance(msg, SlotGet):
            rec = self.slots.get(msg.slot)
            view = record_view(rec, now)
            self._reply(msg.reply_to, SlotReply(msg.req, "found", view["holder"], view["epoch"], view["remaining"]))
        elif isinstance(msg, Replica):  # a hand-off to the node now responsible
            self._adopt(msg.kind, msg.name, msg.doc)
        elif isinstance(msg, SchemaHandoff):
            self.schemas.adopt(msg.name, msg.doc)
        else:
            self.counters["unexpected_routed"] += 1

    def _slot_answer(self, slot: str, to: Host, req: int, status: str, rec: Any, replicate: bool) -> None:
        def answer() -> None:
            view = record_view(rec, self._now())
            self._reply(to, SlotReply(req, status, view["holder"], view["epoch"], view["remaining"]))

        if replicate:
            self._replicate("slot", slot, rec.to_doc(self._now()), then=answer)
        else:
            answer()

    def _reply(self, to: Host, msg: Any) -> None:
        if tuple(to) == self.host:
            self._dispatch(to[1:], msg)
        else:
            self._send(to, msg)

    def _send(self, to: Host, msg: Any) -> bool:
        try:
            nbytes = self.peers.send((to[1], to[2]), msg)
        except WireError as e:
            self.counters["unsendable"] += 1
            log.warning("cannot send %s: %s", type(msg).__name__, e.reason)
            return False
        self.counters["sent"] += 1
        self.observer.sent(self, to, msg, nbytes, self._cause)
        return True

    # --- replication and hand-offs ---

    def _doc(self, kind: str, name: str) -> str | None:
        if kind == "schema":
            return self.schemas.docs.get(name)
        if kind == "overlay":
            return self.overlays.docs.get(name)
        rec = self.slots.records.get(name)
        return None if rec is None else rec.to_doc(self._now())

    def _names(self) -> list[tuple[str, str]]:
        return ([("schema", n) for n in self.schemas.docs] + [("overlay", n) for n in self.overlays.docs]
                + [("slot", n) for n in self.slots.records])

    def _adopt(self, kind: str, name: str, doc: str) -> None:
        if kind == "schema":
            self.schemas.adopt(name, doc)
        elif kind == "overlay":
            self.overlays.adopt(name, doc)
        elif kind == "slot":
            self.slots.adopt(name, doc, self._now())

    def _drop(self, kind: str, name: str) -> None:
        {"schema": self.schemas.docs, "overlay": self.overlays.docs, "slot": self.slots.records}[kind].pop(name, None)
        self._rep_sets.pop((kind, name), None)

    def _holders(self, key: bytes) -> frozenset:
        return frozenset(h for h in self.hood.nearest(key, self.replicas) if h != self.host)

    def _replicate(self, kind: str, name: str, doc: str, then: Callable[[], None] | None = None) -> None:
        """Copy a record to its replica holders; ``then`` runs once they all acknowledged (or after the timeout)."""
        holders = self._holders(key_of(kind, name)) if self.replicas > 1 else frozenset()
        self._rep_sets[(kind, name)] = holders
        if then is None or not holders:
            for h in holders:
                self._send(h, Replica(kind, name, doc, self.host, 0))
            if then is not None:
                then()
            return
        self._req += 1
        req = self._req
        wait = self._acks[req] = _AckWait({(h[1], h[2]) for h in holders}, then)
        wait.timer = self._loop.call_later(self.ack_timeout, self._ack_timeout, req)
        for h in holders:
            self._send(h, Replica(kind, name, doc, self.host, req))

    def _acked(self, req: int, addr: tuple) -> None:
        wait = self._acks.get(req)
        if wait is None:
            return
        wait.waiting.discard(addr)
        if not wait.waiting:
            del self._acks[req]
            wait.timer.cancel()
            wait.then()

    def _ack_timeout(self, req: int) -> None:
        wait = self._acks.pop(req, None)
        if wait is not None:
            self.counters["replica_ack_timeouts"] += len(wait.waiting)
            self._inbox.append(("call", wait.then, None))
            self._pump()

    def _handoff(self) -> int:
        """Send every record we are no longer responsible for to the node that is; forget the copies we need not
        keep as a replica holder either."""
        self._handoff_due = False
        self._sync()
        moved = 0
        for kind, name in self._names():
            key = key_of(kind, name)
            if self.hood.responsible(key):
                continue
            doc = self._doc(kind, name)
            if self.host not in self.hood.nearest(key, self.replicas):
                self._drop(kind, name)
            self._route(key, Replica(kind, name, doc, self.host, 0), self.host, 0, forwarded=False)
            moved += 1
        self.counters["handed_off"] += moved
        self._pump()
        return moved

    def _reconcile(self) -> None:
        """New replica holders of the records we are responsible for get a copy."""
        if self.replicas <= 1:
            return
        for kind, name in self._names():
            key = key_of(kind, name)
            if not self.hood.responsible(key):
                continue
            want = self._holders(key)
            new = want - self._rep_sets.get((kind, name), frozenset())
            if new:
                doc = self._doc(kind, name)
                for h in new:
                    self._send(h, Replica(kind, name, doc, self.host, 0))
            self._rep_sets[(kind, name)] = want

    def _on_tick(self) -> None:
        if self.ready:
            self._handoff()
            self._reconcile()
        self._tick = self._loop.call_later(self.config.tick_interval, self._on_tick)

    # --- membership ---

    def _on_contact(self, contact: Contact) -> None:
        if self.hood is None or self._handoff_due:
            return
        self._handoff_due = True
        asyncio.get_running_loop().call_soon(self._handoff)

    def _on_join_request(self, msg: JoinRequest) -> None:
        node_id, ip, port = msg.host
        self.dht.protocol.welcome_if_new(Contact(node_id, ip, port))
        self._sync()
        moved = self._handoff()
        self._send(msg.host, JoinReply(self.host, moved))

    def _forget(self, host: Host) -> None:
        self.dht.protocol.contact_failed(*host)
        self.hood.forget_host(host)
        self._sync()

    def _on_undeliverable(self, addr: tuple, messages: list) -> None:
        addr = tuple(addr)
        for c in [c for c in self.hood.contacts if (c[1], c[2]) == addr]:
            self._forget(c)
        rest = []
        for m in messages:
            if isinstance(m, Routed):
                self.hood.forget_key(m.key)
                self._route(m.key, m.msg, m.origin, m.hops, forwarded=False)
            else:
                rest.append(m)
        for req, wait in list(self._acks.items()):
            if addr in wait.waiting:
                self._acked(req, addr)
        self._on_overlay_undeliverable(addr, rest)
        self._pump()

    def _on_overlay_undeliverable(self, addr: tuple, messages: list) -> None:
        for m in messages:
            self.counters[f"undeliverable_{type(m).__name__}"] += 1


__all__ = ["KeyedPeer", "NodeError", "key_of"]
