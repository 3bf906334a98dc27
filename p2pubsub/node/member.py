"""A Kademlia DHT member: what the DHT node (:class:`~.runtime.Node`) and the SCOT node's DHT side
(:class:`p2pubsub.scot.keyed.KeyedPeer`) share (thesis §3.4, §3.6).

Life cycle (listen on the shared UDP socket, join by taking over the keys' state from the closest neighbours
before serving, leave by handing everything over), the work queue that keeps local sends from recursing, the
schema requests to the node responsible for a schema's key, and membership upkeep (joins, goodbyes, failures,
new contacts). Routing, what arrives at the responsible node, hand-offs and ticks stay with the subclasses:
they differ in what they keep.

A subclass provides ``_error`` (the exception class a failed command raises), ``_handle(kind, item)`` (one queued
item), ``_dispatch``, ``_route``, ``_send``, ``_handoff``, ``_on_peer_message``, ``_on_undeliverable`` and
``_on_tick``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

from ..api.service import SchemaConflict, UnknownSchema
from ..model import Schema, ValidationError
from .config import NodeConfig
from .dht import Contact, DhtServer, new_node_id
from .keys import schema_key
from .messages import Goodbye, JoinReply, JoinRequest, Resolved, SchemaGet, SchemaHandoff, SchemaPut
from .neighbourhood import Neighbourhood
from .observer import Observer
from .schemas import SchemaStore
from .transport import PeerTransport
from .wire import REGISTRY, Registry

log = logging.getLogger(__name__)

Host = tuple  # (node_id: bytes, ip: str, port: int)


class DhtMember:
    _error: type[Exception] = RuntimeError  # what a command that cannot be carried out raises (the API: 503)
    _no_answer = "no answer from the node responsible for the key"

    def __init__(self, config: NodeConfig | None, rng: random.Random | None, node_id: bytes | None,
                 observer: Observer) -> None:
        self.config = config or NodeConfig()
        self.rng = rng or random.Random()
        self.id = node_id or new_node_id(self.rng)
        self.observer = observer
        self._cause: int | None = None  # trace id of the message whose consequences are being handled
        self.host: Host | None = None
        self.ready = False
        self.counters: Counter = Counter()
        self.schemas = SchemaStore()
        self._schema_cache: dict[str, Schema] = {}
        self._inbox: deque = deque()
        self._pumping = False
        self._parked: list[tuple] = []  # routed messages that reached us before we were ready
        self._requests: dict[int, asyncio.Future] = {}
        self._req = 0
        self._told: set[tuple[Host, bytes]] = set()  # (origin, key) pairs we sent a Resolved hint for
        self._join_waiting: set[tuple] = set()
        self._join_done: asyncio.Event | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._handoff_due = False
        self.peers: PeerTransport | None = None
        self.dht: DhtServer | None = None
        self.hood: Neighbourhood | None = None

    # --- life cycle ---

    async def _listen(self, registry: Registry = REGISTRY) -> tuple[str, int]:
        """Open the DHT's UDP socket (shared with the peer transport); learn our address. Returns ``(ip, port)``."""
        loop = self._loop = asyncio.get_running_loop()
        self.peers = PeerTransport(
            on_message=self._on_peer_message,
            on_undeliverable=self._on_undeliverable,
            clock=loop,
            rng=random.Random(self.rng.getrandbits(64)),
            config=self.config.transport,
            registry=registry,
        )
        self.dht = DhtServer(
            node_id=self.id,
            peers=self.peers,
            on_contact=self._on_contact,
            ksize=self.config.ksize,
            alpha=self.config.alpha,
            rpc_timeout=self.config.rpc_timeout,
        )
        await self.dht.listen(self.config.dht_port, interface=self.config.host)
        ip, port = self.dht.transport.get_extra_info("sockname")[:2]
        if self.config.advertise:
            ip = self.config.advertise
        elif ip in ("0.0.0.0", "::"):
            ip = await self._stun(ip)
        self.host = (self.id, ip, port)
        self.hood = Neighbourhood(self.host)
        return ip, port

    async def _stun(self, wildcard: str) -> str:
        """Our address as a bootstrap node sees it (kademlia's ``stun`` RPC), for a node bound to a wildcard."""
        for host, port in self.config.bootstrap:
            ok, addr = await self.dht.protocol.stun((host, port))
            if ok and addr:
                return addr[0]
        return "127.0.0.1" if wildcard == "0.0.0.0" else "::1"

    async def _enter(self, handoffs: tuple[type, ...]) -> None:
        """Bootstrap and join (if there is anyone to join), then serve: the messages parked meanwhile first
        (hand-offs, of types ``handoffs``, before the rest: a message that overtook its state must find it here),
        and start ticking."""
        if self.config.bootstrap:
            await self.dht.bootstrap(list(self.config.bootstrap))
            await self._join()
        self.ready = True
        parked, self._parked = self._parked, []
        for item in sorted(parked, key=lambda p: not isinstance(p[1], handoffs)):
            self._inbox.append(("routed", item, None))
        self._pump()
        self._tick = self._loop.call_later(self.config.tick_interval, self._on_tick)

    async def _join(self) -> None:
        """Ask the closest neighbours for what we are now responsible for; ready once they have sent it all
        (thesis §3.6: a joining node is not ready until its transfer is done; messages wait meanwhile)."""
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
            log.warning("join: %d neighbours did not answer", len(self._join_waiting))

    async def _leave(self) -> None:
        """Say goodbye to every contact, hand everything over to the nodes now responsible for it, and wait
        (a while) until the transport has delivered it."""
        self.hood.leaving = True
        for c in self.hood.contacts:  # first, so that nobody routes our hand-offs back to us
            self._send(c, Goodbye(self.host))
        self._handoff()
        self._release_waiting()
        await self._drained(self.config.join_timeout)

    def _release_waiting(self) -> None:
        """Leaving: send on what waits here for something that will not come now (Node: responsibility look-ups)."""

    async def _drained(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline and any(s.queue_length for s in self.peers.all_stats().values()):
            await asyncio.sleep(0.01)

    def _close(self, pending: Iterable[asyncio.Future]) -> None:
        """Close the sockets; the commands still waiting (``pending``) fail."""
        if self.peers is not None:
            self.peers.close()
        if self.dht is not None:
            self.dht.stop()
        for fut in pending:
            if not fut.done():
                fut.set_exception(self._error("node stopped"))
        self.ready = False

    def _now(self) -> float:
        return self._loop.time()

    # --- schemas ---

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

    # --- keyed requests ---

    def _require_ready(self) -> None:
        if not self.ready:
            raise self._error("the node has not joined the network yet")

    async def _request(self, key: bytes, make: Callable[[int], Any], timeout: float | None = None) -> Any:
        """Route ``make(req)`` to the node responsible for ``key``; its reply (``req`` matches it)."""
        self._req += 1
        req = self._req
        fut = self._requests[req] = asyncio.get_running_loop().create_future()
        self._cause = None
        self._route(key, make(req), self.host, 0, forwarded=False)
        self._pump()
        try:
            return await asyncio.wait_for(fut, timeout or self.config.request_timeout)
        except TimeoutError:
            raise self._error(self._no_answer) from None
        finally:
            self._requests.pop(req, None)

    def _on_reply(self, msg: Any) -> None:
        """The answer to our request ``msg.req`` (if still waited for)."""
        fut = self._requests.get(msg.req)
        if fut is not None and not fut.done():
            fut.set_result(msg)

    # --- the work queue ---

    def _pump(self) -> None:
        """Handle queued work iteratively: local sends never recurse, whatever the chain of actions."""
        if self._pumping:
            return
        self._pumping = True
        try:
            while self._inbox:
                kind, item, self._cause = self._inbox.popleft()
                try:
                    self._handle(kind, item)
                except Exception:
                    self.counters["handler_errors"] += 1
                    log.exception("error handling %s", type(item).__name__)
        finally:
            self._pumping = False

    # --- membership ---

    def _on_member_message(self, msg: Any) -> bool:
        """Resolution hints, schema replicas, goodbyes and joins (a ``_dispatch`` step); False: none of these."""
        if isinstance(msg, Resolved):
            self.hood.learn(msg.key, msg.host)
        elif isinstance(msg, SchemaHandoff):  # a replica of a schema (routed hand-offs arrive via _arrive)
            self.schemas.adopt(msg.name, msg.doc)
        elif isinstance(msg, Goodbye):
            self.dht.protocol.depart(msg.host[0])  # our own lookups must not bring it back while it drains
            self._forget(tuple(msg.host))
        elif isinstance(msg, JoinRequest):
            self._on_join_request(msg)
        elif isinstance(msg, JoinReply):
            self._on_join_reply(msg)
        else:
            return False
        return True

    def _forget(self, host: Host) -> None:
        """``host`` is gone: out of the routing table and the resolution cache."""
        self.dht.protocol.contact_failed(*host)
        self.hood.forget_host(host)
        self._sync()

    def _on_contact(self, contact: Contact) -> None:
        """kademlia learned a new node: it may now be responsible for keys we hold."""
        if self.hood is None or self._handoff_due:
            return
        self._handoff_due = True
        asyncio.get_running_loop().call_soon(self._handoff)

    def _on_join_request(self, msg: JoinRequest) -> None:
        node_id, ip, port = msg.host
        self.dht.protocol.rejoin(node_id)  # a node that said goodbye may come back
        self.dht.protocol.welcome_if_new(Contact(node_id, ip, port))
        self._sync()
        moved = self._handoff()
        self._send(msg.host, JoinReply(self.host, moved))  # after the hand-offs: the transport keeps order

    def _on_join_reply(self, msg: JoinReply) -> None:
        self.counters["joined_with"] += msg.moved
        self._join_waiting.discard(tuple(msg.host))
        if self._join_done is not None and not self._join_waiting:
            self._join_done.set()


__all__ = ["DhtMember", "Host"]
