"""The node runtime: the pure pub/sub core on a Kademlia DHT, driven by asyncio (thesis §3.4, §3.6).

A thin adapter, as ARCHITECTURE.md asks: arrivals and timers go into the core, the core's actions go out as peer
messages. Tree messages are routed to the node responsible for the hash of their tree node's identifier (greedy
XOR routing, one hop once the resolution is cached); the probes of one event travel grouped (multicast); a joining
node takes over its keys' state before it serves them, and a node hands over whatever a closer node has become
responsible for.

The same class runs under ``p2pubsub node`` (real sockets) and inside the simulator (virtual time, in-memory
datagrams): it reads time only from the loop and randomness only from its ``rng``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..api.service import SchemaConflict, ServiceUnavailable, UnknownSchema
from ..model import parse_event, parse_filter
from ..tree import (
    AdoptNode,
    Deliver,
    Dropped,
    EventDelivery,
    InsertSub,
    NodeInfo,
    ProbePub,
    ProbeSub,
    PubEvent,
    PubSubCore,
    Ready,
    Removed,
    Replicate,
    ReplicaUpdate,
    SendHost,
    SendTree,
    SubInstalled,
    TreeId,
    Unsubscribed,
)
from .config import NodeConfig
from .dht import Contact
from .keys import schema_key, tree_key
from .member import DhtMember, Host
from .messages import (
    Probe,
    ProbePubMulticast,
    Resolved,
    Routed,
    SchemaGet,
    SchemaHandoff,
    SchemaPut,
    SchemaReply,
)
from .observer import NULL_OBSERVER, Observer
from .replication import Replication

log = logging.getLogger(__name__)

HOME_MESSAGES = (SubInstalled, Unsubscribed, EventDelivery, NodeInfo, ReplicaUpdate)  # for this node itself


class NodeError(ServiceUnavailable):
    """A command could not be carried out now (not joined, timed out, stopped): the API answers 503."""


class Node(DhtMember):
    _error = NodeError
    _no_answer = "no answer from the node responsible for the schema"

    def __init__(
        self,
        config: NodeConfig | None = None,
        *,
        rng: random.Random | None = None,
        node_id: bytes | None = None,
        on_deliver: Callable[[tuple[str, ...], PubEvent], None] | None = None,
        observer: Observer = NULL_OBSERVER,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(config, rng, node_id, observer)
        # once per notification: the subscriptions of this node's clients that ``event`` reaches (each pair once)
        self.on_deliver = on_deliver or (lambda sub_ids, event: None)
        self._wall = wall_clock  # what ``published_at`` reads (default: the loop's clock)
        self._installs: dict[str, asyncio.Future] = {}
        self._removals: dict[str, asyncio.Future] = {}
        # keys a lookup confirmed we are responsible for, and the routed messages waiting for a lookup (see _arrive)
        self._confirmed: set[bytes] = set()
        self._confirming: dict[bytes, list[tuple[tuple, int | None]]] = {}
        self._lookups: set[asyncio.Task] = set()
        self._settled: tuple | None = None  # what _on_tick last found nothing to hand off from
        self.core: PubSubCore | None = None

    # --- life cycle ---

    async def start(self) -> None:
        ip, port = await self._listen()
        core_rng = random.Random(self.rng.getrandbits(64))
        self.replication = Replication(self, self.config.replicas)
        self.core = PubSubCore(
            self.host, self.config.capacity, self.config.tree, core_rng, inline=True, replicate=self.replication.on
        )
        await self._enter(handoffs=(AdoptNode, SchemaHandoff))
        log.info("node %s ready on %s:%d (udp), %d contacts", self.id.hex()[:12], ip, port, len(self.hood.contacts))

    async def stop(self, graceful: bool = True) -> None:
        """Leave: hand everything over to the nodes now responsible for it (graceful), then close."""
        if self._tick is not None:
            self._tick.cancel()
        for task in list(self._lookups):
            task.cancel()
        if graceful and self.core is not None and self.hood.contacts:
            await self._leave()
        self._close([*self._requests.values(), *self._installs.values(), *self._removals.values()])

    def _release_waiting(self) -> None:
        for (key, msg, origin, hops), cause in [w for q in self._confirming.values() for w in q]:
            self._cause = cause  # waiting for a lookup: on to whoever is responsible now that we leave
            self._route(key, msg, origin, hops, forwarded=True)
        self._confirming.clear()
        self._pump()

    # --- client commands ---

    async def subscribe(self, schema_name: str, filter_body: Any) -> str:
        """Install a subscription; returns its id once every piece is stored in the tree."""
        self._require_ready()
        schema, sub = await self._schema(schema_name, filter_body, parse_filter)
        loop = asyncio.get_running_loop()
        sub_id, actions = self.core.subscribe(schema, sub, loop.time())
        fut = self._installs[sub_id] = loop.create_future()
        self.observer.subscribed(self, sub_id, loop.time())
        self._cause = None
        self._execute(actions)
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.config.install_timeout)
        except TimeoutError:
            self._execute(self.core.unsubscribe(sub_id, loop.time()))
            raise NodeError(f"subscription not installed within {self.config.install_timeout} s") from None
        finally:
            self._installs.pop(sub_id, None)
        return sub_id

    async def unsubscribe(self, sub_id: str) -> bool:
        """Remove a subscription: nothing more is delivered from this moment; returns False if unknown."""
        if sub_id not in self.core.home.subs or not self.core.home.subs[sub_id].active:
            return False
        loop = asyncio.get_running_loop()
        fut = self._removals[sub_id] = loop.create_future()
        self._execute(self.core.unsubscribe(sub_id, loop.time()))
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.config.install_timeout)
        except TimeoutError:
            self.counters["unsubscribe_timeouts"] += 1  # delivery has stopped already; leaves expire it later
        finally:
            self._removals.pop(sub_id, None)
        return True

    async def publish(self, schema_name: str, attributes: Any) -> str:
        self._require_ready()
        schema, event = await self._schema(schema_name, attributes, parse_event)
        now = asyncio.get_running_loop().time()
        published_at = self._wall() if self._wall is not None else now
        pub, actions = self.core.publish(schema, event, now, published_at=published_at)
        self.counters["published"] += 1
        self.observer.published(self, pub.event_id, now)
        self._cause = None
        self._execute(actions)
        return pub.event_id

    # --- inbound ---

    def _on_peer_message(self, addr, msg) -> None:
        self._inbox.append(("peer", msg, self.observer.received(self, addr, msg)))
        self._pump()

    def _handle(self, kind: str, item) -> None:
        """One item of the work queue (see ``DhtMember._pump``)."""
        if kind == "peer":
            self._dispatch(item)
        elif kind == "routed":
            self._arrive(*item)
        elif kind == "home":
            self._execute(self.core.handle(item, self._now()))

    def _dispatch(self, msg) -> None:
        if isinstance(msg, Routed):
            self._route(msg.key, msg.msg, msg.origin, msg.hops, forwarded=True)
        elif isinstance(msg, ProbePubMulticast):
            probes = [(tree_key(p.target), p) for p in msg.probes]
            self._multicast(msg.event, probes, msg.origin, msg.hops, forwarded=True)
        elif isinstance(msg, HOME_MESSAGES):
            self._execute(self.core.handle(msg, self._now()))
        elif isinstance(msg, SchemaReply):
            self._on_reply(msg)
        elif not self._on_member_message(msg):
            self.counters["unexpected_messages"] += 1

    # --- routing ---

    def _sync(self) -> None:
        if self.dht is not None and self.dht.protocol is not None and self.hood.version != self.dht.version:
            added = self.dht.added_since(self.hood.version)
            if added is None:
                self.hood.update_pairs(self.dht.contact_pairs(), self.dht.version)
            else:
                self.hood.add_pairs(added, self.dht.version)

    def _route(self, key: bytes, msg, origin: Host, hops: int, forwarded: bool) -> None:
        """Hand a keyed message to the node responsible for ``key``: us, or the next hop toward it.

        ``hops`` counts the nodes that passed the message on; ``forwarded``: we received it from another node
        (False when it starts here, or comes back to us undelivered)."""
        self._sync()
        if self.hood.responsible(key):
            self._inbox.append(("routed", (key, msg, origin, hops), self._cause))
            return
        if hops >= self.config.max_hops:
            self.counters["dropped_max_hops"] += 1
            log.warning("dropped %s after %d hops", type(msg).__name__, hops)
            return
        nxt = self.hood.next_hop(key)
        self.counters["forwarded" if forwarded else "routed"] += 1
        if nxt is None:  # leaving, and nobody left to hand it to
            self.counters["dropped_no_route"] += 1
            log.warning("dropped %s: no node left to route it to", type(msg).__name__)
            return
        self._send(nxt, Routed(key, msg, origin, hops + forwarded))

    def _arrive(self, key: bytes, msg, origin: Host, hops: int) -> None:
        if not self.ready:
            self._parked.append((key, msg, origin, hops))
            return
        if self._unconfirmed(key, msg):
            self._confirm_key(key, ((key, msg, origin, hops), self._cause))
            return
        if hops > 0 and origin != self.host and (origin, key) not in self._told:
            # the origin did not know we are responsible: tell it once, and it sends straight here next time
            if len(self._told) > 100_000:
                self._told.clear()
            self._told.add((origin, key))
            self._send(origin, Resolved(key, self.host))
        if isinstance(msg, SchemaPut):
            status, doc = self.schemas.put(msg.name, msg.doc, self.config.tree_defaults)
            if status == "created" and self.replication.on:
                self.replication.send_schema(msg.name, doc)
            self._reply(msg.reply_to, SchemaReply(msg.req, status, doc))
        elif isinstance(msg, SchemaGet):
            doc = self.schemas.get(msg.name)
            self._reply(msg.reply_to, SchemaReply(msg.req, "found" if doc else "missing", doc))
        elif isinstance(msg, SchemaHandoff):
            self.schemas.adopt(msg.name, msg.doc)
        else:
            tree = self.core.tree
            if msg.target not in tree.nodes and msg.target in tree.replicas:
                # its node is gone and we are responsible now: our copy becomes the node (thesis §3.6)
                self._execute(tree.promote(msg.target, self._now()))
            self._execute(self.core.handle(msg, self._now()))

    # --- confirming responsibility ---

    def _unconfirmed(self, key: bytes, msg) -> bool:
        """Whether ``msg`` would make us answer for a key we hold nothing for, unconfirmed by a lookup.

        We decide we are responsible for a key when no contact in our routing table is closer to it. That is
        right only if the table holds a node of every non-empty level of the id space (ids sharing exactly ``j``
        leading bits with ours), and Kademlia's tables are not guaranteed complete: a node that misses one level
        takes every key of that level for its own. Acting on that creates a second copy of a tree node (a child
        from a split, a root, a node "lost" and brought back after messages waited for it, a promoted replica)
        or a schema, on a host the rest of the network never routes to, and whatever is stored there is missed
        by every probe that goes to the real one. The thesis relies on the DHT (§3.6: Pastry's leaf set knows the
        numerically closest nodes); with Kademlia we ask (`_confirm_key`). Messages for a node we hold need no
        lookup, nor guesses at a non-root node we do not hold (a ProbeSub, a RndRegionProbe's ProbePub, a lease
        renewal): those are answered by a jump to an ancestor, which is right whoever holds the node."""
        if key in self._confirmed:
            return False
        if isinstance(msg, SchemaGet | SchemaPut | SchemaHandoff):
            return msg.name not in self.schemas.docs
        tree = self.core.tree
        target = msg.target
        if target in tree.nodes:
            return False
        if target in tree.replicas or target.is_root:
            return True
        guess = isinstance(msg, ProbeSub) or (isinstance(msg, ProbePub) and not msg.known)
        return not (guess or (isinstance(msg, InsertSub) and msg.renew))

    def _confirm_key(self, key: bytes, waiting: tuple | None = None) -> None:
        """Look ``key`` up before we answer for it; ``waiting`` (a routed message and its cause) waits for the
        answer and then goes to the core (confirmed) or on toward the closer node the lookup found."""
        queue = self._confirming.get(key)
        if queue is None:
            queue = self._confirming[key] = []
            task = asyncio.get_running_loop().create_task(self._confirm(key))
            self._lookups.add(task)
            task.add_done_callback(self._lookups.discard)
        if waiting is not None:
            queue.append(waiting)

    def confirmed(self, key: bytes) -> bool:
        return key in self._confirmed

    async def _confirm(self, key: bytes) -> None:
        try:
            await self._learn_closer(key)
        except Exception:  # a lookup that fails teaches nothing: the table decides as it is
            self.counters["lookup_errors"] += 1
            log.exception("confirming key %s", key.hex()[:12])
        waiting = self._confirming.pop(key, [])
        self._sync()
        if self.hood.responsible(key):
            self.counters["keys_confirmed"] += 1
            if len(self._confirmed) > 1_000_000:
                self._confirmed.clear()
            self._confirmed.add(key)
            for item, cause in waiting:
                self._inbox.append(("routed", item, cause))
            self.replication.recheck()  # a replica of this key may be ours to promote now
        else:
            self.counters["keys_declined"] += 1
            for (k, msg, origin, hops), cause in waiting:
                self._cause = cause
                self._route(k, msg, origin, hops, forwarded=True)
        self._pump()

    async def _learn_closer(self, key: bytes) -> None:
        """Kademlia's node lookup for ``key``, cut short: FIND_NODE to the ``alpha`` closest nodes heard of, round
        after round while a round brings nodes closer to the key than those already asked, and over as soon as a
        node closer to the key than we are turns up (it goes into our table by a ping, which also hands it
        whatever we hold of its keys: `_on_contact`). One round to our own closest contacts is not enough: in
        thesis-1000 it let node 29 keep a tree node of node 455 (each blind to the other's level) for hours.
        Far cheaper than the library's full crawl, which asks every one of the ``k`` closest (~20 RPCs per key)
        and was too much for the 256 kbit/s links of test_link_capacity_shows_queueing_delay."""
        protocol = self.dht.protocol
        alpha, rounds = self.config.alpha, self.config.lookup_rounds
        k = int.from_bytes(key, "big")
        mine = int.from_bytes(self.id, "big") ^ k
        target = Contact(key)
        heard = {c[0]: Contact(*c) for c in self.hood.nearest(key, alpha + 1) if c != self.host}
        asked: set[bytes] = set()
        best_asked: int | None = None  # distance to the key of the closest node asked so far
        for _ in range(rounds):
            ask = sorted((c for i, c in heard.items() if i not in asked), key=lambda c: c.long_id ^ k)[:alpha]
            if not ask or (best_asked is not None and ask[0].long_id ^ k >= best_asked):
                return  # nothing closer to ask: no node closer to the key than the ones that answered
            asked.update(c.id for c in ask)
            best_asked = ask[0].long_id ^ k
            replies = await asyncio.gather(*(protocol.call_find_node(c, target) for c in ask))
            for ok, nodes in replies:
                if ok and isinstance(nodes, list):
                    for t in nodes:
                        c = Contact(*t)
                        if c.id != self.id:
                            heard.setdefault(c.id, c)
            closer = sorted((c for c in heard.values() if c.long_id ^ k < mine), key=lambda c: c.long_id ^ k)
            if closer:
                self.counters["closer_nodes_found"] += 1
                fresh = [c for c in closer if protocol.router.is_new_node(c)][:alpha]
                await asyncio.gather(*(protocol.call_ping(c) for c in fresh))
                return

    def _reply(self, to: Host, msg) -> None:
        if to == self.host:
            self._dispatch(msg)
        else:
            self._send(to, msg)

    def _multicast(
        self, event: PubEvent, probes: list[tuple[bytes, Probe]], origin: Host, hops: int, forwarded: bool
    ) -> None:
        """Application-layer multicast (Program 3.4 on Kademlia): keep the probes we are responsible for,
        regroup the others by next hop; one message per group carries the event once."""
        self._sync()
        groups: dict[Host, list[Probe]] = defaultdict(list)
        for key, p in probes:
            if self.hood.responsible(key):
                msg = ProbePub(p.target, p.space, p.scope, p.probe, event, p.known)
                self._inbox.append(("routed", (key, msg, origin, hops), self._cause))
            else:
                nxt = self.hood.next_hop(key)
                if nxt is None:
                    self.counters["dropped_no_route"] += 1
                    continue
                groups[nxt].append(p)
        for nxt, group in groups.items():
            self._send(nxt, ProbePubMulticast(event, tuple(group), origin, hops + forwarded))

    def _send(self, to: Host, msg) -> None:
        self.counters["sent"] += 1
        nbytes = self.peers.send((to[1], to[2]), msg)
        self.observer.sent(self, to, msg, nbytes, self._cause)

    def _execute(self, actions) -> None:
        """Carry out the core's actions."""
        probes: dict[str, tuple[PubEvent, list]] = {}
        now = self._loop.time()  # the actions of one step share its instant
        for a in actions:
            if isinstance(a, SendTree):
                if self.config.multicast and isinstance(a.msg, ProbePub):
                    m = a.msg
                    group = probes.setdefault(m.event.event_id, (m.event, []))[1]
                    group.append((tree_key(a.to), Probe(m.target, m.space, m.scope, m.probe, m.known)))
                else:
                    self._route(tree_key(a.to), a.msg, self.host, 0, forwarded=False)
            elif isinstance(a, SendHost):
                if a.to == self.host:
                    self._inbox.append(("home", a.msg, self._cause))
                else:
                    self._send(a.to, a.msg)
            elif isinstance(a, Deliver):
                event, cause = a.event, self._cause
                self.counters["delivered"] += len(a.sub_ids)
                if self.observer is not NULL_OBSERVER:
                    for sub_id in a.sub_ids:
                        self.observer.delivered(self, sub_id, event, now, cause)
                self.on_deliver(a.sub_ids, event)
            elif isinstance(a, Ready):
                self.observer.installed(self, a.sub_id, now, self._cause)
                fut = self._installs.get(a.sub_id)
                if fut is not None and not fut.done():
                    fut.set_result(a.version)
            elif isinstance(a, Removed):
                fut = self._removals.get(a.sub_id)
                if fut is not None and not fut.done():
                    fut.set_result(True)
            elif isinstance(a, Replicate):
                self.replication.send(a.update)
            elif isinstance(a, Dropped):
                self.counters["dropped"] += 1
                log.warning("dropped %s: %s", type(a.msg).__name__, a.reason)
        for event, group in probes.values():
            self._multicast(event, group, self.host, 0, forwarded=False)
        self._pump()

    # --- failures, joins and hand-offs ---

    def _on_undeliverable(self, addr, messages: list) -> None:
        """A peer stopped answering: forget it, and send what it did not acknowledge to whoever is now
        responsible (tree and schema messages); notifications for a home that is gone are counted, not kept."""
        for c in [c for c in self.hood.contacts if (c[1], c[2]) == tuple(addr)]:
            self._forget(c)
        for m in messages:
            if isinstance(m, Routed):
                self.hood.forget_key(m.key)
                self._route(m.key, m.msg, m.origin, m.hops, forwarded=False)
            elif isinstance(m, ProbePubMulticast):
                probes = [(tree_key(p.target), p) for p in m.probes]
                self._multicast(m.event, probes, m.origin, m.hops, forwarded=False)
            else:
                self.counters[f"undeliverable_{type(m).__name__}"] += 1
        self._pump()

    def _handoff(self) -> int:
        """Send every tree node and schema we are no longer responsible for to the node that is."""
        self._handoff_due = False
        self._sync()
        moved = 0
        now = self._now()
        actions = self.core.tree.release(lambda t: not self.hood.responsible(tree_key(t)), now)
        moved += sum(isinstance(a.msg, AdoptNode) and a.msg.part == 0 for a in actions)
        for name in [n for n in self.schemas.docs if not self.hood.responsible(schema_key(n))]:
            key = schema_key(name)
            doc = self.schemas.docs[name]
            if self.host not in self.hood.nearest(key, self.config.replicas):
                del self.schemas.docs[name]  # not even a replica holder any more
            self._route(key, SchemaHandoff(name, doc), self.host, 0, forwarded=False)
            moved += 1
        self.counters["handed_off"] += moved
        self._execute(actions)
        return moved

    def _on_contact(self, contact: Contact) -> None:
        """kademlia learned a new node: only one closer than us to a key we hold takes anything over."""
        if self.hood is not None and not self._handoff_due and self._takes_over([int.from_bytes(contact.id, "big")]):
            super()._on_contact(contact)

    def _takes_over(self, ids: list[int]) -> bool:
        """Whether a node of ``ids`` is closer (XOR) than we are to a key we hold: a tree node, a transfer or
        waiting messages, a schema. Far cheaper than asking the neighbourhood who is responsible for every key."""
        keys = [tree_key(t) for t in self.core.tree.held()]
        keys += [schema_key(name) for name in self.schemas.docs]
        me = self.hood._me_int
        for key in keys:
            k = int.from_bytes(key, "big")
            mine = me ^ k
            if any(c ^ k < mine for c in ids):
                return True
        return False

    def _on_tick(self) -> None:
        now = self._now()
        self._execute(self.core.tick(now))
        if self.ready:
            # nothing to hand off while neither the neighbourhood nor what we hold has changed since a hand-off
            # check that moved nothing (tree nodes appear only where we were responsible, and leave only here);
            # contacts added since, none of them closer to what we hold, change nothing either
            self._sync()
            tree = self.core.tree
            state = (self.hood.version, len(tree.nodes), len(tree._partial), len(tree._parked), len(self.schemas.docs))
            if state != self._settled:
                added = None
                if self._settled is not None and state[1:] == self._settled[1:]:
                    added = self.dht.added_since(self._settled[0])
                unmoved = added is not None and not self._takes_over([cid for cid, _ in added])
                if unmoved or self._handoff() == 0:
                    self._settled = state
            self.replication.reconcile(now)
        self._tick = asyncio.get_running_loop().call_later(self.config.tick_interval, self._on_tick)

    # --- views ---

    def info(self) -> dict[str, Any]:
        tree_nodes = self.core.tree.nodes if self.core else {}
        leaves = [n for n in tree_nodes.values() if n.is_leaf]
        return {
            "id": self.id.hex(),
            "address": self.host[1] if self.host else None,
            "dht_port": self.host[2] if self.host else None,
            "ready": self.ready,
            "peers": len(self.hood.contacts) if self.host else 0,
            "tree_nodes": len(tree_nodes),
            "leaves": len(leaves),
            "stored_subscriptions": sum(len(n.store) for n in leaves),
            "home_subscriptions": len(self.core.home.subs) if self.core else 0,
            "schemas": len(self.schemas.docs),
            "cached_resolutions": self.hood.cached() if self.host else 0,
            "counters": dict(self.counters),
        }

    def hosted(self) -> list[str]:
        return sorted(str(t) for t in self.core.tree.nodes) if self.core else []


__all__ = ["Node", "NodeConfig", "NodeError", "SchemaConflict", "TreeId", "UnknownSchema"]
