"""``ScotNode``: a p2pubsub node that takes a position in a named SCOT overlay through the DHT and runs a broker
core there (OctopiA, or the PADRES-style baseline), for its local clients.

Life of a node (``p2pubsub node --overlay scot|padres --scot NAME``):

1. It joins the DHT (:class:`~.keyed.KeyedPeer`) and reads the overlay's definition under ``NAME`` (or stores
   it, compare-and-set: an identical one is fine, a different one stops the node with both named).
2. Its cluster is ``cluster_of(node id)``; it tries the region slots of that cluster in ``region_order`` and
   claims the first free one at the slot's responsible DHT node. A granted claim opens a *tenure* (an epoch
   number, increasing per slot) with a lease that the node renews every ``lease / 3``; if a renewal is refused
   or the lease runs out before one succeeds, the broker stops at once (the node believes it holds the slot
   only until ``time of the last successful renewal request + lease``, which is never later than the store's
   own expiry). A node that finds no free slot is on *standby*: it tries again every ``standby_interval`` and
   so takes over a slot released by a leaving holder, or freed by the lease of a crashed one.
3. While active, its :class:`~.broker.Broker` binds the neighbour positions to their holders (directory look-ups
   every ``check_interval``, ``Hello`` on binding) and talks only to them, over the peer transport.

Clients (the REST API via :class:`~.service.ScotApiService`): all of a node's clients are one client of its
broker (``client`` = node id @ address). ``advertise``/``subscribe``/``unadvertise``/``unsubscribe`` return once
the command is *installed*: every broker its messages reached has handled them and everything they caused
(termination detection, :mod:`.echo`). For a subscription in OctopiA that is the paper's requirement for
exactness: the subscription is in the PRT of every broker of its cluster (Alg. 2) and every CIV_SET it caused is
applied at the advertisements' hosts (§8), so every later publication conforming to an overlapping advertisement
reaches it (SPR, Alg. 3; IDR, Alg. 4). In the baseline: it is bound at every broker on the reverse paths of the
overlapping advertisement trees. An advertisement is installed when its secondary brokers (OctopiA) or every
broker (baseline, flooding) holds it and the CIV_SETs / subscriptions it pulled are applied at its host.
``publish`` needs a live advertisement of the node's client that the event conforms to (409 otherwise).

Standby nodes serve schemas and answer client commands with 503 (retry later). When a node loses its broker,
its clients' subscriptions and advertisements end (``on_lost``).

Like :class:`p2pubsub.node.runtime.Node`: ``start()``, ``stop(graceful)``, ``put_schema``, ``subscribe``,
``publish`` (+ ``advertise``, ``unadvertise``), ``info()``, ``counters``; time only from the loop, randomness only
from the injected ``rng``; the same observer hooks (``sent``/``received`` with causal ids, ``subscribed``,
``installed``, ``published``, ``delivered``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Callable, Coroutine
from typing import Any

from overlays import Advertise, BrokerId, Publish, Subscribe, Unadvertise, Unsubscribe
from overlays import Deliver as CoreDeliver

from ..model import Subscription, parse_event, parse_filter
from ..node.config import NodeConfig
from ..node.observer import NULL_OBSERVER, Observer
from ..tree import PubEvent
from .broker import Broker
from .config import ScotConfig
from .definition import DefinitionError, OverlayDefinition, cluster_of, region_order, slot_name, sub_id
from .errors import NodeError, rejection
from .keyed import KeyedPeer
from .messages import Echoed, Tracked
from .store import GRANTED, LOST, RENEWED, TAKEN

log = logging.getLogger(__name__)


class ScotNode(KeyedPeer):
    def __init__(
        self,
        config: NodeConfig | None = None,
        scot: ScotConfig | None = None,
        *,
        rng: random.Random | None = None,
        node_id: bytes | None = None,
        on_deliver: Callable[[str, PubEvent], None] | None = None,
        on_lost: Callable[[list[str]], None] | None = None,
        observer: Observer = NULL_OBSERVER,
        wall_clock: Callable[[], float] | None = None,
    ) -> None:
        if scot is None:
            raise ValueError("a ScotNode needs a ScotConfig (the overlay's name, at least)")
        super().__init__(config, rng=rng, node_id=node_id, observer=observer, replicas=scot.replicas,
                         ack_timeout=scot.ack_timeout)
        self.scot = scot
        self.on_deliver = on_deliver or (lambda sub_id, event: None)
        self.on_lost = on_lost or (lambda sub_ids: None)
        self._wall = wall_clock
        self.definition: OverlayDefinition | None = None
        self.cluster: int | None = None
        self.broker: Broker | None = None
        self.state = "new"  # new | standby | active | stopped
        self.client = ""
        self.subs: dict[str, Subscription] = {}  # this node's clients' live subscriptions
        self.adverts: dict[str, Subscription] = {}  # ... and advertisements
        self.held_until = 0.0
        self.tenures = 0
        self._seq = 0
        self._tasks: set[asyncio.Task] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._renewing = False
        self._claiming = False
        self._due: dict[str, float] = {}
        self._stopping = False

    # --- life cycle ---

    async def start(self) -> None:
        await self._start_dht()
        self.definition = await self._overlay()
        self.cluster = cluster_of(self.id, self.definition.clusters)
        self.client = f"{self.id.hex()[:16]}@{self.host[1]}:{self.host[2]}"
        if self.definition.dynamic:  # q_in / q_out over windows of t_w (OctopiA §9.2)
            self.peers.config = dataclasses.replace(self.peers.config, stats_window=self.definition.t_w)
        self.state = "standby"
        await self._claim_round()
        self._timer = self._loop.call_later(self._period(), self._on_timer)
        log.info("scot node %s: %s, cluster %d, %s", self.id.hex()[:12], self.scot.name, self.cluster,
                 f"broker {self.broker.position} epoch {self.broker.epoch}" if self.broker else "standby")

    async def _overlay(self) -> OverlayDefinition:
        name, mine = self.scot.name, self.scot.definition
        if mine is not None:
            reply = await self.put_overlay(name, mine.to_json())
            stored = OverlayDefinition.from_json(reply.doc)
            if reply.status == "conflict":
                raise DefinitionError(f"overlay {name!r} is defined differently: stored {stored.to_json()}, "
                                      f"this node's {mine.to_json()}", "overlay_conflict")
        else:
            deadline = self._now() + self.scot.max_overlay_wait
            while True:
                reply = await self.get_overlay(name)
                if reply.doc is not None:
                    stored = OverlayDefinition.from_json(reply.doc)
                    break
                if self._now() > deadline:
                    raise DefinitionError(f"no overlay named {name!r} is defined; give its definition",
                                          "unknown_overlay")
                await asyncio.sleep(0.2)
        if self.scot.routing is not None and stored.routing != self.scot.routing:
            raise DefinitionError(f"overlay {name!r} routes with {stored.routing}, not {self.scot.routing}",
                                  "overlay_conflict")
        return stored

    async def stop(self, graceful: bool = True) -> None:
        """Leave. Graceful: withdraw the clients' subscriptions and advertisements, release the slot, say ``Bye``
        to the neighbours, hand the DHT records over. Otherwise (a crash, in tests): just close."""
        self._stopping = True
        for handle in (self._timer, self._expiry):
            if handle is not None:
                handle.cancel()
        b = self.broker
        if graceful and b is not None and self.ready:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._withdraw(b), self.config.join_timeout)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.release_slot(b.slot, b.epoch), self.config.join_timeout)
        self._deactivate("stopped", graceful)
        for t in list(self._tasks):
            t.cancel()
        await self._stop_dht(graceful)
        self.state = "stopped"

    async def _withdraw(self, b: Broker) -> None:
        futs = []
        for sid in list(self.subs):
            with contextlib.suppress(Exception):
                futs.append(b.command(Unsubscribe(self.client, sid)))
        for adv_id in list(self.adverts):
            with contextlib.suppress(Exception):
                futs.append(b.command(Unadvertise(self.client, adv_id)))
        if futs:
            await asyncio.wait(futs)

    def _spawn(self, coro: Coroutine) -> asyncio.Task:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- slots: claims, renewals, standby ---

    def _period(self) -> float:
        return min(self.scot.renew_interval, self.scot.standby_every, self.scot.check_every) / 2

    def _on_timer(self) -> None:
        if self._stopping:
            return
        now = self._now()
        if self.broker is not None:
            if now >= self._due.get("renew", 0) and not self._renewing:
                self._due["renew"] = now + self.scot.renew_interval
                self._spawn(self._renew(self.broker))
            if now >= self._due.get("check", 0):
                self._due["check"] = now + self.scot.check_every
                for q in self.broker.links:
                    self.broker.check(q)
        elif now >= self._due.get("claim", 0) and not self._claiming:
            self._due["claim"] = now + self.scot.standby_every
            self._spawn(self._claim_round())
        self._timer = self._loop.call_later(self._period(), self._on_timer)

    async def _claim_round(self) -> bool:
        """Try the slots of our cluster, in our order; activate the first granted."""
        if self._claiming or self.broker is not None:
            return False
        self._claiming = True
        try:
            for region in region_order(self.id, self.definition.vertices):
                position = BrokerId(region, self.cluster)
                sent_at = self._now()
                try:
                    reply = await self.claim_slot(slot_name(self.scot.name, position), 0, self.scot.lease)
                except NodeError:
                    self.counters["claim_timeouts"] += 1
                    continue
                if self._stopping or self.broker is not None:
                    return False
                if reply.status == GRANTED:
                    if self._now() > sent_at + self.scot.lease / 2:  # the grant took long: renew before using it
                        sent_at = self._now()
                        try:
                            again = await self.claim_slot(slot_name(self.scot.name, position), reply.epoch,
                                                          self.scot.lease)
                        except NodeError:
                            continue
                        if self._stopping or self.broker is not None or again.status != RENEWED:
                            continue
                    self._activate(position, reply.epoch, sent_at + self.scot.lease)
                    return True
            self.counters["standby_rounds"] += 1
            return False
        finally:
            self._claiming = False

    async def _renew(self, b: Broker) -> None:
        self._renewing = True
        try:
            sent_at = self._now()
            try:
                reply = await self.claim_slot(b.slot, b.epoch, self.scot.lease)
            except NodeError:
                self.counters["renew_timeouts"] += 1
                return
            if self.broker is not b:
                return
            if reply.status == RENEWED:
                self._arm_expiry(sent_at + self.scot.lease)
            elif reply.status in (LOST, TAKEN):
                log.warning("broker %s lost its slot (tenure %d over)", b.position, b.epoch)
                self._deactivate("lost", graceful=True)
        finally:
            self._renewing = False

    def _arm_expiry(self, until: float) -> None:
        self.held_until = max(self.held_until, until)
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = self._loop.call_at(self.held_until, self._on_expiry)

    def _on_expiry(self) -> None:
        self._expiry = None
        if self.broker is not None and self._now() >= self.held_until:
            log.warning("broker %s: lease ran out before a renewal succeeded", self.broker.position)
            self._deactivate("expired", graceful=True)

    def _activate(self, position: BrokerId, epoch: int, held_until: float) -> None:
        self.broker = b = Broker(self, self.definition, position, epoch)
        self.state = "active"
        self.tenures += 1
        self._seq = 0
        self.held_until = 0.0
        self._arm_expiry(held_until)
        now = self._now()
        self._due["renew"] = now + self.scot.renew_interval
        self._due["check"] = now + self.scot.check_every
        self.counters["activated"] += 1
        for q in b.links:
            b.check(q)

    def _deactivate(self, reason: str, graceful: bool) -> None:
        b = self.broker
        if b is None:
            return
        self.broker = None
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        b.close(graceful)
        lost = list(self.subs)
        self.subs.clear()
        self.adverts.clear()
        self.state = "stopped" if self._stopping else "standby"
        self._due["claim"] = 0.0
        self.counters[f"deactivated_{reason}"] += 1
        if lost:
            self.on_lost(lost)

    def _active(self) -> Broker:
        if self.broker is None:
            if self.state == "standby":
                raise NodeError("this node is on standby: it holds no broker position of overlay "
                                f"{self.scot.name!r} (every slot of its cluster is taken)", retry_after=self.scot.lease)
            raise NodeError(f"this node is {self.state}")
        return self.broker

    # --- client commands ---

    async def subscribe(self, schema_name: str, filter_body: Any) -> str:
        """Install a subscription; returns its id once installed (see the module docstring)."""
        self._active()
        schema, flt = await self._schema(schema_name, filter_body, parse_filter)
        b = self._active()
        b.learn_schema(schema)
        self._seq += 1
        sid = sub_id(b.position, b.epoch, self._seq)
        now = self._now()
        self.observer.subscribed(self, sid, now)
        self._cause = None
        fut = b.command(Subscribe(self.client, sid, flt))
        self.subs[sid] = flt
        await self._installed(fut, f"subscription {sid}", lambda: self._undo(b, Unsubscribe(self.client, sid)))
        self.observer.installed(self, sid, self._now(), None)
        return sid

    async def unsubscribe(self, sid: str) -> bool:
        b = self.broker
        if b is None or self.subs.pop(sid, None) is None:
            return False
        self._cause = None
        fut = b.command(Unsubscribe(self.client, sid))
        await self._settled(fut)
        return True

    async def advertise(self, schema_name: str, filter_body: Any) -> str:
        """Advertise what this node's clients will publish; returns the advertisement's id once installed."""
        self._active()
        schema, flt = await self._schema(schema_name, filter_body, parse_filter)
        b = self._active()
        b.learn_schema(schema)
        self._seq += 1
        adv_id = f"{self.id.hex()[:8]}.{self.tenures}.{self._seq}"
        self._cause = None
        fut = b.command(Advertise(self.client, adv_id, flt))
        self.adverts[adv_id] = flt
        await self._installed(fut, f"advertisement {adv_id}",
                              lambda: self._undo(b, Unadvertise(self.client, adv_id)))
        return adv_id

    async def unadvertise(self, adv_id: str) -> bool:
        b = self.broker
        if b is None or self.adverts.pop(adv_id, None) is None:
            return False
        self._cause = None
        fut = b.command(Unadvertise(self.client, adv_id))
        await self._settled(fut)
        return True

    async def publish(self, schema_name: str, attributes: Any) -> str:
        """Publish; needs a live advertisement of this node's that the event conforms to."""
        self._active()
        schema, event = await self._schema(schema_name, attributes, parse_event)
        b = self._active()
        b.learn_schema(schema)
        if not b.stable.is_set():  # the baseline re-advertises after a repair: publish on the new trees
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(b.stable.wait(), self.config.install_timeout)
            b = self._active()
        self._seq += 1
        now = self._now()
        event_id = f"{self.id.hex()[:16]}.{self.tenures}.{self._seq}"
        published_at = self._wall() if self._wall is not None else now
        self._cause = None
        self.observer.published(self, event_id, now)
        rejected = b.handle_now(Publish(self.client, f"{event_id}@{published_at!r}", event))
        if rejected:
            raise rejection(rejected[0])
        self.counters["published"] += 1
        return event_id

    async def _installed(self, fut: asyncio.Future, what: str, undo: Callable[[], None]) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.config.install_timeout)
        except TimeoutError:
            undo()
            raise NodeError(f"{what} not installed within {self.config.install_timeout} s") from None

    async def _settled(self, fut: asyncio.Future) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.config.install_timeout)
        except TimeoutError:
            self.counters["withdraw_timeouts"] += 1
        except NodeError:
            pass

    def _undo(self, b: Broker, cmd: Any) -> None:
        self.subs.pop(getattr(cmd, "sub_id", ""), None)
        self.adverts.pop(getattr(cmd, "adv_id", ""), None)
        if self.broker is b:
            with contextlib.suppress(Exception):
                b.command(cmd)

    # --- from the broker ---

    def _deliver(self, a: CoreDeliver, cause: int | None) -> None:
        pub = a.publication
        event_id, _, at = pub.pub_id.partition("@")
        try:
            published_at = float(at)
            node_hex, _, addr = pub.publisher.partition("@")
            ip, _, port = addr.rpartition(":")
            publisher = (bytes.fromhex(node_hex), ip, int(port))
        except ValueError:
            published_at, publisher = 0.0, (b"", "", 0)
        absent = self.broker.core.absent(pub.event.schema) if self.broker is not None else None
        event = PubEvent(event_id, pub.event.schema, pub.event.values, absent, published_at, publisher)
        self.counters["delivered"] += 1
        self.observer.delivered(self, a.subscription_id, event, self._now(), cause)
        self.on_deliver(a.subscription_id, event)

    def _on_overlay_message(self, addr: tuple, msg: Any) -> None:
        if self.broker is None:
            self.refuse(addr, msg, "broker_messages_while_standby")
            return
        self.broker.on_message(addr, msg, self._cause)

    def refuse(self, addr: tuple, msg: Any, why: str) -> None:
        """Drop a broker message (counted under ``why``); its sender stops waiting for a tracked one."""
        self.counters[why] += 1
        if isinstance(msg, Tracked):
            self._send((b"", addr[0], addr[1]), Echoed(msg.token))

    def _on_overlay_undeliverable(self, addr: tuple, messages: list) -> None:
        if self.broker is not None:
            self.broker.on_undeliverable(addr, messages)

    # --- views ---

    def info(self) -> dict[str, Any]:
        b = self.broker
        out: dict[str, Any] = {
            "id": self.id.hex(),
            "address": self.host[1] if self.host else None,
            "dht_port": self.host[2] if self.host else None,
            "ready": self.ready,
            "peers": len(self.hood.contacts) if self.hood else 0,
            "overlay": {
                "name": self.scot.name,
                "definition": self.definition.to_doc() if self.definition else None,
                "cluster": self.cluster,
                "state": self.state,
                "position": None if b is None else {"region": b.position.region, "cluster": b.position.cluster},
                "epoch": None if b is None else b.epoch,
                "lease_left": max(0.0, self.held_until - self._now()) if b is not None else None,
                "tenures": self.tenures,
            },
            "subscriptions": len(self.subs),
            "advertisements": len(self.adverts),
            "schemas": len(self.schemas.docs),
            "slot_records": len(self.slots.records),
            "counters": dict(self.counters),
        }
        if b is not None:
            sizes = b.core.table_sizes()
            out["overlay"]["links"] = b.links_view()
            out["overlay"]["tables"] = {"advertisements": sizes.advertisements,
                                        "subscriptions": sizes.subscriptions, "prt_entries": sizes.prt_entries}
            c = b.core.counters
            out["overlay"]["core"] = {"sent": {str(k): v for k, v in c.sent.items()},
                                      "dropped": c.dropped, "duplicates_discarded": c.duplicates_discarded,
                                      "deliveries": c.deliveries, "rejected": c.rejected,
                                      "dynamic_diversions": c.dynamic_diversions}
        return out


__all__ = ["ScotNode"]
