"""The DHT side of a SCOT node: Kademlia membership, keyed requests, and what the responsible nodes store.

A :class:`p2pubsub.node.member.DhtMember`, as :class:`p2pubsub.node.runtime.Node` is: ``DhtServer`` (one UDP
socket shared with the reliable FIFO ``PeerTransport``), ``Neighbourhood`` (who is responsible for a key, next
hops, resolution cache), the same schema requests, the same greedy routing (``Routed`` hop by hop to the closest
node known, ``Resolved`` hints so that steady state costs one hop), the same join protocol (a joining node takes
over its keys' records before it serves them) and hand-offs on join, leave and tick.

What the node responsible for a key keeps (and copies to the next ``replicas - 1`` closest nodes):

* schemas (``SchemaPut`` / ``SchemaGet``, the DHT mode's messages and compare-and-set store);
* overlay definitions (:class:`~.messages.OverlayPut` / :class:`~.messages.OverlayGet`, compare-and-set);
* slot leases (:class:`~.messages.SlotClaim` / ``SlotRelease`` / ``SlotGet``, :class:`~.store.SlotStore`). A slot
  change is answered only after every replica holder acknowledged its copy (or ``ack_timeout`` passed), so a
  node that takes over a crashed responsible node's keys holds every lease its predecessor granted.

Responsibility is verified. "The closest node I know" is a local view: in a young network a node may know no
node of the key's half of the ID space and believe itself responsible while a closer node, elsewhere, believes
the same — two compare-and-set stores, two grants of one slot (this happened when 56 nodes joined one by one).
So before a node serves a keyed request for a key it has not verified within ``verify_ttl``, it runs Kademlia's
iterative node lookup for the key (``NodeSpiderCrawl``: the network's closest nodes, not our view of them) and
serves only if none is closer; otherwise it forwards the request to the closest one found (strictly closer at
each step: no loop). Requests for the key wait meanwhile, in order.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kademlia.crawling import NodeSpiderCrawl, RPCFindResponse

from overlays import BrokerId

from ..api.service import UnknownSchema
from ..model import Schema
from ..node.config import NodeConfig
from ..node.dht import Contact, contact_tuple
from ..node.keys import schema_key
from ..node.member import DhtMember, Host
from ..node.messages import (
    Resolved,
    Routed,
    SchemaGet,
    SchemaHandoff,
    SchemaPut,
    SchemaReply,
)
from ..node.observer import NULL_OBSERVER, Observer
from ..node.wire import WireError
from .definition import overlay_key, slot_key
from .errors import NodeError
from .messages import (
    OverlayGet,
    OverlayPut,
    RecordQuery,
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

REPLIES = (SchemaReply, StoreReply, SlotReply)
VERIFIED = (SchemaPut, SchemaGet, OverlayPut, OverlayGet, SlotClaim, SlotRelease, SlotGet)  # served after a look-up


@dataclass(slots=True)
class _AckWait:
    waiting: set
    then: Callable[[], None]
    timer: asyncio.TimerHandle | None = None


class _Lookup(NodeSpiderCrawl):
    """Kademlia's iterative node look-up, remembering which nodes answered."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.alive: set[bytes] = set()

    async def _nodes_found(self, responses: dict) -> Any:
        self.alive.update(peer for peer, r in responses.items() if RPCFindResponse(r).happened())
        return await super()._nodes_found(responses)


def key_of(kind: str, name: str) -> bytes:
    if kind == "schema":
        return schema_key(name)
    if kind == "overlay":
        return overlay_key(name)
    overlay, region, cluster = name.split("/")
    return slot_key(overlay, BrokerId(region, int(cluster)))


class KeyedPeer(DhtMember):
    """A DHT member that routes keyed requests and stores schemas, overlay definitions and slot leases."""

    _error = NodeError

    def __init__(self, config: NodeConfig | None = None, *, rng: random.Random | None = None,
                 node_id: bytes | None = None, observer: Observer = NULL_OBSERVER, replicas: int = 3,
                 ack_timeout: float = 1.0, verify_ttl: float = 30.0) -> None:
        super().__init__(config, rng, node_id, observer)
        self.replicas = replicas
        self.ack_timeout = ack_timeout
        self.verify_ttl = verify_ttl
        self._owners: dict[bytes, tuple[float, Any, tuple]] = {}  # key -> (valid until, "me" | closer host, found)
        self._verifying: dict[bytes, list[tuple]] = {}  # key -> routed items waiting for the look-up
        self._crawls: set[asyncio.Task] = set()
        self._recovering: dict[str, list[tuple]] = {}  # slot -> requests waiting for the other copies
        self._recovered: dict[str, float] = {}  # slot -> until when "no copy anywhere" stands
        self.overlays = OverlayStore()
        self.slots = SlotStore()
        self._acks: dict[int, _AckWait] = {}
        self._rep_sets: dict[tuple[str, str], frozenset] = {}

    # --- life cycle ---

    async def _start_dht(self) -> None:
        await self._listen(registry=SCOT_REGISTRY)
        await self._enter(handoffs=(Replica,))

    async def _stop_dht(self, graceful: bool) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        if graceful and self.hood is not None and self.hood.contacts:
            await self._leave()
        for task in list(self._crawls):
            task.cancel()
        for wait in self._acks.values():
            if wait.timer is not None:
                wait.timer.cancel()
        self._acks.clear()
        self._close(self._requests.values())

    # --- requests ---

    async def _request(self, key: bytes, make: Callable[[int], Any], timeout: float | None = None) -> Any:
        self._require_ready()  # unlike the DHT node's schema requests: a SCOT node asks only once joined
        return await super()._request(key, make, timeout)

    async def _schema(self, name: str, body: Any, parse: Callable) -> tuple[Schema, Any]:
        if not isinstance(name, str):
            raise UnknownSchema(str(name))
        return await super()._schema(name, body, parse)

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

    def _handle(self, kind: str, item: Any) -> None:
        """One item of the work queue (see ``DhtMember._pump``)."""
        if kind == "peer":
            self._dispatch(*item)
        elif kind == "routed":
            self._arrive(*item)
        else:
            item()

    def _later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` from the pump (after what is being handled now), with the current cause."""
        self._inbox.append(("call", fn, self._cause))

    def _dispatch(self, addr: tuple, msg: Any) -> None:
        if isinstance(msg, Routed):
            self._route(msg.key, msg.msg, msg.origin, msg.hops, forwarded=True)
        elif isinstance(msg, REPLIES):
            self._on_reply(msg)
        elif isinstance(msg, Replica):
            self._adopt(msg.kind, msg.name, msg.doc)
            if msg.req:
                self._send(msg.reply_to, ReplicaAck(msg.req))
        elif isinstance(msg, ReplicaAck):
            self._acked(msg.req, tuple(addr))
        elif isinstance(msg, RecordQuery):
            doc = self._doc(msg.kind, msg.name)
            self._send(msg.reply_to, StoreReply(msg.req, "found" if doc else "missing", doc))
        elif not self._on_member_message(msg):
            self._on_overlay_message(tuple(addr), msg)

    def _on_overlay_message(self, addr: tuple, msg: Any) -> None:
        """Broker messages: the SCOT node handles them."""
        self.counters["unexpected_messages"] += 1

    # --- routing ---

    # _sync, _route, _arrive, _reply and _send stay apart from Node's on purpose:
    # - _sync copies the whole table where Node._sync catches up incrementally: the same contacts, in another
    #   order of ``hood.contacts`` (goodbyes, retries), which seeded SCOT simulations may see;
    # - _route counts a message dropped for want of a next hop as dropped only (Node's as routed too) and logs
    #   nothing; Node's routing is being fixed on another branch: join the two once that has landed;
    # - _arrive verifies responsibility first and stores more kinds of record (its Resolved hint and schema
    #   lines are Node._arrive's: the same follow-up);
    # - _reply hands _dispatch the sender's address, and _send counts what the wire refuses instead of raising.

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
        if isinstance(msg, VERIFIED) and not self._serve(key, msg, origin, hops):
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
        elif isinstance(msg, SlotClaim | SlotRelease) and not self._slot_known(key, msg, origin, hops):
            return
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

    # --- verified responsibility ---

    def _serve(self, key: bytes, msg: Any, origin: Host, hops: int) -> bool:
        """Whether to handle a keyed request here now; else it waits for a look-up or goes to a closer node."""
        entry = self._owners.get(key)
        if entry is not None and entry[1] is not None:
            if entry[0] <= self._now() and key not in self._verifying:  # stale: use it, look up again meanwhile
                self._verifying[key] = []
                self._lookup(key)
            owner = entry[1]
            if owner == "me":
                return True
            if hops < self.config.max_hops:
                self.counters["forwarded_after_lookup"] += 1
                self._send(owner, Routed(key, msg, origin, hops + 1))
            return False
        waiting = self._verifying.get(key)
        if waiting is None:
            waiting = self._verifying[key] = []
            self._lookup(key)
        waiting.append((key, msg, origin, hops))
        return False

    def _lookup(self, key: bytes) -> None:
        task = self._loop.create_task(self._verify(key))
        self._crawls.add(task)
        task.add_done_callback(self._crawls.discard)

    async def _verify(self, key: bytes) -> None:
        found: list = []
        try:
            target = Contact(key)
            nearest = self.dht.protocol.router.find_neighbors(target, k=self.config.alpha)
            if nearest:
                spider = _Lookup(self.dht.protocol, target, nearest, self.config.ksize, self.config.alpha)
                # the crawl's result may still name nodes that did not answer (pushed back by a later reply)
                found = [contact_tuple(c) for c in await spider.find() if c.id in spider.alive]
        except Exception:  # the look-up failed: decide on our view, as an unverified node would
            self.counters["lookup_errors"] += 1
        self.counters["lookups"] += 1
        self._sync()  # the look-up's replies put the nodes near the key into our routing table
        owner = None  # our view now knows a closer node: route as usual (failures are handled there)
        if self.hood.responsible(key):
            k = int.from_bytes(key, "big")
            mine = int.from_bytes(self.id, "big") ^ k
            closer = sorted((int.from_bytes(c[0], "big") ^ k, c) for c in found if c[0] != self.id)
            # a closer node the routing table could not take (a full bucket) gets the requests directly
            owner = closer[0][1] if closer and closer[0][0] < mine else "me"
        self._owners[key] = (self._now() + self.verify_ttl, owner, tuple(found))
        if len(self._owners) > 65_536:
            self._owners.clear()
        for item in self._verifying.pop(key, []):
            self._route(item[0], item[1], item[2], item[3], forwarded=True)
        self._pump()

    def _drop_owner(self, gone: Callable[[Host], bool]) -> None:
        """A node is gone: keys it was found to own are looked up again; it leaves the other look-ups' results."""
        for key, (until, owner, found) in list(self._owners.items()):
            if owner not in ("me", None) and gone(owner):
                del self._owners[key]
            elif any(gone(h) for h in found):
                self._owners[key] = (until, owner, tuple(h for h in found if not gone(h)))

    def _nearest(self, key: bytes, n: int) -> list:
        """The ``n`` nodes closest to ``key`` we know of, ourselves included: our view plus the last look-up."""
        entry = self._owners.get(key)
        pool = set(self.hood.nearest(key, n))
        if entry is not None:
            pool.update(entry[2])
        k = int.from_bytes(key, "big")
        return sorted(pool, key=lambda c: int.from_bytes(c[0], "big") ^ k)[:n]

    def _slot_known(self, key: bytes, msg: Any, origin: Host, hops: int) -> bool:
        """Before deciding on a slot we keep no record of (we may have just become responsible for it, and our
        predecessor's copy may not have reached us), ask the key's other closest nodes for theirs."""
        name = msg.slot
        if name in self.slots.records or self._recovered.get(name, 0.0) > self._now():
            return True
        waiting = self._recovering.get(name)
        if waiting is None:
            waiting = self._recovering[name] = []
            task = self._loop.create_task(self._recover(key, name))
            self._crawls.add(task)
            task.add_done_callback(self._crawls.discard)
        waiting.append((key, msg, origin, hops))
        return False

    async def _recover(self, key: bytes, name: str) -> None:
        futs = []
        for h in self._nearest(key, self.replicas):
            if h == self.host:
                continue
            self._req += 1
            fut = self._requests[self._req] = self._loop.create_future()
            futs.append(fut)
            self._send(h, RecordQuery("slot", name, self.host, self._req))
        if futs:
            await asyncio.wait(futs, timeout=self.ack_timeout)
        now = self._now()
        for fut in futs:
            found = fut.done() and not fut.cancelled() and fut.exception() is None and fut.result().doc
            if found and self.slots.adopt(name, fut.result().doc, now):
                self.counters["slot_records_recovered"] += 1
        for req in [r for r, f in self._requests.items() if f in futs]:
            del self._requests[req]
        self._recovered[name] = now + self.verify_ttl
        if len(self._recovered) > 65_536:
            self._recovered.clear()
        for item in self._recovering.pop(name, []):
            self._inbox.append(("routed", item, None))
        self._pump()

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
        return frozenset(h for h in self._nearest(key, self.replicas) if h != self.host)

    def _replicate(self, kind: str, name: str, doc: str, then: Callable[[], None] | None = None) -> None:
        """Copy a record to its replica holders; ``then`` runs once they all acknowledged (or after the timeout)."""
        holders = self._holders(key_of(kind, name)) if self.replicas > 1 else frozenset()
        self._rep_sets[(kind, name)] = holders
        if then is None or not holders:
            for h in sorted(holders):  # sorted: a set's order depends on the process's hash seed
                self._send(h, Replica(kind, name, doc, self.host, 0))
            if then is not None:
                then()
            return
        self._req += 1
        req = self._req
        wait = self._acks[req] = _AckWait({(h[1], h[2]) for h in holders}, then)
        wait.timer = self._loop.call_later(self.ack_timeout, self._ack_timeout, req)
        for h in sorted(holders):
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
        """Spread every record we keep to the nodes that should keep it, as we see them now: the ``replicas``
        nodes closest to its key (the responsible one first) get a copy unless we sent them one already; a record
        we should no longer keep ourselves goes to all of them, and then we forget it. Runs on every tick, when a
        contact appears, and for a joining node before it is answered (so it holds what it is responsible for,
        and its replica copies, before it serves)."""
        self._handoff_due = False
        self._sync()
        moved = 0
        for kind, name in self._names():
            key = key_of(kind, name)
            nearest = self._nearest(key, self.replicas)
            keep = self.host in nearest
            sent = self._rep_sets.get((kind, name), frozenset())
            targets = [h for h in nearest if h != self.host and (h not in sent or not keep)]
            if targets:
                doc = self._doc(kind, name)
                for h in targets:
                    self._send(h, Replica(kind, name, doc, self.host, 0))
                self._rep_sets[(kind, name)] = sent | frozenset(targets)
            if not keep:
                self._drop(kind, name)
                moved += 1
        self.counters["handed_off"] += moved
        self._pump()
        return moved

    def _on_tick(self) -> None:
        if self.ready:
            self._handoff()
        self._tick = self._loop.call_later(self.config.tick_interval, self._on_tick)

    # --- membership ---

    def _forget(self, host: Host) -> None:
        self._drop_owner(lambda h: h == host)
        super()._forget(host)

    def _on_undeliverable(self, addr: tuple, messages: list) -> None:
        addr = tuple(addr)
        for c in [c for c in self.hood.contacts if (c[1], c[2]) == addr]:
            self._forget(c)
        self._drop_owner(lambda h: (h[1], h[2]) == addr)
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
