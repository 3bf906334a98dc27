"""One DHT node's whole pub/sub core: its tree nodes and its home (subscriber/publisher side).

``PubSubCore.handle(message, now) -> actions`` is the single entry for messages; ``subscribe``, ``publish``,
``unsubscribe`` and ``update`` are the client commands. The node runtime and the in-memory harness both drive
exactly this object.
"""

from __future__ import annotations

import random
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
    SubInstalled,
    Unsubscribed,
)


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
        self.tree = TreeHost(host, capacity, config, inline, replicate)
        self.home = Home(host, config, rng)

    def handle(self, msg: Message, now: float) -> list[Action]:
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
        return self.home.subscribe(schema, sub, now, sub_id)

    def update(self, sub_id: str, sub: Subscription, now: float) -> list[Action]:
        return self.home.update(sub_id, sub, now)

    def unsubscribe(self, sub_id: str, now: float) -> list[Action]:
        return self.home.unsubscribe(sub_id, now)

    def publish(
        self, schema: Schema, event: Event, now: float, event_id: str | None = None, published_at: float | None = None
    ) -> tuple[PubEvent, list]:
        holds = self.tree.nodes.__contains__ if self.tree.inline else (lambda tid: False)
        return self.home.publish(schema, event, now, event_id, published_at, holds)

    def tick(self, now: float) -> list[Action]:
        return self.home.tick(now) + self.tree.tick(now)
