"""One DHT node's whole pub/sub core: its tree nodes and its home (subscriber/publisher side).

``PubSubCore.handle(message, now) -> actions`` is the single entry for messages; ``subscribe``, ``publish``,
``unsubscribe`` and ``update`` are the client commands. The node runtime and the in-memory harness both drive
exactly this object.

With ``inline`` (the runtime's choice; the in-memory harness leaves it off to exercise every interleaving), what
the core would send to itself is handled at once instead of returned: messages to tree nodes this host holds
(`TreeHost.handle`) and notifications, install and removal acknowledgements for this host's own home. Either way
the same messages are handled; a hop that stays on the host just costs no runtime round trip.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable

from ..model import Event, Schema, Subscription
from .config import TreeConfig
from .home import Home
from .host import TreeHost
from .messages import (
    Action,
    EventDelivery,
    Message,
    NodeInfo,
    PubEvent,
    ReplicaUpdate,
    SendHost,
    SendTree,
    SubInstalled,
    Unsubscribed,
)

_OWN_HOME = (EventDelivery, SubInstalled, Unsubscribed)  # what a host's tree nodes tell its own home


class PubSubCore:
    def __init__(
        self,
        host: Hashable,
        capacity: int,
        config: TreeConfig,
        rng: random.Random,
        inline: bool = False,
        replicate: bool = False,
    ) -> None:
        self.host = host
        self.inline = inline
        self.tree = TreeHost(host, capacity, config, inline, replicate)
        self.home = Home(host, config, rng)

    def handle(self, msg: Message, now: float) -> list[Action]:
        out = self._handle(msg, now)
        return self._local(out, now) if self.inline else out

    def _local(self, out: list[Action], now: float) -> list[Action]:
        """``out`` with the actions addressed to this host itself carried out (see the module docstring)."""
        nodes, host = self.tree.nodes, self.host
        for a in out:
            t = type(a)
            if (t is SendHost and a.to == host and type(a.msg) in _OWN_HOME) or (t is SendTree and a.to in nodes):
                break
        else:
            return out
        done: list[Action] = []
        queue = deque(out)
        while queue:
            a = queue.popleft()
            t = type(a)
            if t is SendHost and a.to == host and type(a.msg) in _OWN_HOME:
                msg = a.msg
                if type(msg) is EventDelivery:  # matched exactly by our own leaf: no second check
                    queue.extend(self.home.on_delivery(msg, now, check=False))
                else:
                    queue.extend(self._handle(msg, now))
            elif t is SendTree and a.to in nodes:
                queue.extend(self.tree.handle(a.msg, now))
            else:
                done.append(a)
        return done

    def _handle(self, msg: Message, now: float) -> list[Action]:
        if isinstance(msg, EventDelivery):
            return self.home.on_delivery(msg, now)
        if isinstance(msg, SubInstalled):
            return self.home.on_installed(msg, now)
        if isinstance(msg, Unsubscribed):
            return self.home.on_unsubscribed(msg, now)
        if isinstance(msg, ReplicaUpdate):
            return self.tree.apply_replica(msg, now)
        if isinstance(msg, NodeInfo):
            return self.tree.on_node_info(msg, now)
        return self.tree.handle(msg, now)

    def subscribe(self, schema: Schema, sub: Subscription, now: float, sub_id: str | None = None):
        sub_id, out = self.home.subscribe(schema, sub, now, sub_id)
        return sub_id, (self._local(out, now) if self.inline else out)

    def update(self, sub_id: str, sub: Subscription, now: float) -> list[Action]:
        out = self.home.update(sub_id, sub, now)
        return self._local(out, now) if self.inline else out

    def unsubscribe(self, sub_id: str, now: float) -> list[Action]:
        out = self.home.unsubscribe(sub_id, now)
        return self._local(out, now) if self.inline else out

    def publish(
        self, schema: Schema, event: Event, now: float, event_id: str | None = None, published_at: float | None = None
    ) -> tuple[PubEvent, list]:
        holds = self.tree.nodes.__contains__ if self.inline else (lambda tid: False)
        pub, out = self.home.publish(schema, event, now, event_id, published_at, holds)
        return pub, (self._local(out, now) if self.inline else out)

    def tick(self, now: float) -> list[Action]:
        out = self.home.tick(now) + self.tree.tick(now)
        return self._local(out, now) if self.inline else out
