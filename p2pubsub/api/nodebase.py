"""What the HTTP API's view of a running node shares in both modes (DHT: :class:`p2pubsub.node.service.NodeApiService`,
SCOT: :class:`p2pubsub.scot.service.ScotApiService`).

Only translation: schemas, subscriptions and events are the node's own commands; a subscription's client-side
record (schema, ``deliver_to``, creation time) and its registry stream are kept here. A subclass provides
``_deliver`` (the node's ``on_deliver``: per subscription in the SCOT mode, per notification message with its
subscriptions in the DHT mode), ``subscription`` and ``metrics``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..model import Schema
from .delivery import SubscriptionRegistry
from .service import SubscriptionInfo


@dataclass(slots=True)
class SubscriptionMeta:
    schema: str
    deliver_to: str | None
    created_at: float


class NodeServiceBase:
    def __init__(self, node: Any, registry: SubscriptionRegistry) -> None:
        self.node = node
        self.registry = registry
        self._meta: dict[str, SubscriptionMeta] = {}
        node.on_deliver = self._deliver

    async def put_schema(self, name: str, body: dict) -> tuple[Schema, bool]:
        return await self.node.put_schema(name, body)

    async def get_schema(self, name: str) -> Schema | None:
        return await self.node.get_schema(name)

    async def subscribe(self, schema: str, filter: dict, deliver_to: str | None) -> SubscriptionInfo:
        sub_id = await self.node.subscribe(schema, filter)
        self._meta[sub_id] = SubscriptionMeta(schema, deliver_to, time.time())
        self.registry.open(sub_id, deliver_to)
        return self.subscription(sub_id)

    async def unsubscribe(self, sub_id: str) -> bool:
        removed = await self.node.unsubscribe(sub_id)
        if removed:
            self.registry.close(sub_id)
            self._meta.pop(sub_id, None)
        return removed

    async def publish(self, schema: str, attributes: dict) -> str:
        return await self.node.publish(schema, attributes)

    def info(self) -> dict[str, Any]:
        info = self.node.info()
        info["http_port"] = getattr(self, "http_port", None)
        info["queues"] = {
            f"{addr[0]}:{addr[1]}": {"length": s.queue_length, "in": s.q_in, "out": s.q_out}
            for addr, s in (self.node.peers.all_stats().items() if self.node.peers else ())
        }
        return info


__all__ = ["NodeServiceBase", "SubscriptionMeta"]
