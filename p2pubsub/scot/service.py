"""The HTTP API's view of a SCOT node: :class:`p2pubsub.api.service.NodeService` plus advertisements.

Only translation, as :class:`p2pubsub.node.service.NodeApiService` does for the DHT mode: the same schemas,
subscriptions, events and notification delivery (:class:`~p2pubsub.api.delivery.SubscriptionRegistry`), and
``advertise`` / ``unadvertise`` / ``advertisement`` for ``/v1/advertisements``.
"""

from __future__ import annotations

import time
from typing import Any

from ..api.delivery import SubscriptionRegistry
from ..api.nodebase import NodeServiceBase
from ..api.service import SubscriptionInfo, notification
from ..model import Subscription
from ..tree import PubEvent
from .runtime import ScotNode


class ScotApiService(NodeServiceBase):
    def __init__(self, node: ScotNode, registry: SubscriptionRegistry) -> None:
        super().__init__(node, registry)
        self._adverts: dict[str, float] = {}  # advertisement id -> created_at
        node.on_lost = self._lost

    def _deliver(self, sub_id: str, event: PubEvent) -> None:
        self.registry.deliver(sub_id, notification(event))

    def _lost(self, sub_ids: list[str]) -> None:
        """The node lost its broker: its subscriptions end (their streams say so)."""
        for sid in sub_ids:
            self._meta.pop(sid, None)
            self.registry.close(sid)
        self._adverts.clear()

    # --- NodeService ---

    def subscription(self, sub_id: str) -> SubscriptionInfo | None:
        meta = self._meta.get(sub_id)
        flt = self.node.subs.get(sub_id)
        if meta is None or flt is None:
            return None
        return SubscriptionInfo(sub_id, meta.schema, flt.to_filter(), meta.deliver_to, meta.created_at,
                                self._where())

    # --- advertisements ---

    async def advertise(self, schema: str, filter: dict) -> dict[str, Any]:
        adv_id = await self.node.advertise(schema, filter)
        self._adverts[adv_id] = time.time()
        return self.advertisement(adv_id)

    async def unadvertise(self, adv_id: str) -> bool:
        removed = await self.node.unadvertise(adv_id)
        self._adverts.pop(adv_id, None)
        return removed

    def advertisement(self, adv_id: str) -> dict[str, Any] | None:
        flt: Subscription | None = self.node.adverts.get(adv_id)
        if flt is None:
            return None
        return {"id": adv_id, "schema": flt.schema, "filter": flt.to_filter(),
                "created_at": self._adverts.get(adv_id), "node": self._where()}

    def _where(self) -> dict[str, Any]:
        b = self.node.broker
        if b is None:
            return {"overlay": self.node.scot.name}
        return {"overlay": self.node.scot.name, "broker": str(b.position), "epoch": b.epoch}

    # --- status (info: the base's) ---

    def metrics(self) -> dict[str, Any]:
        node = self.node
        b = node.broker
        out: dict[str, Any] = {
            "ready": int(node.ready),
            "active": int(b is not None),
            "peers": len(node.hood.contacts) if node.hood else 0,
            "home_subscriptions": len(node.subs),
            "advertisements": len(node.adverts),
            "counters_total": dict(node.counters),
        }
        if b is not None:
            sizes = b.core.table_sizes()
            out["routing_advertisements"] = sizes.advertisements
            out["routing_subscriptions"] = sizes.subscriptions
            out["links_bound"] = sum(link.host is not None for link in b.links.values())
            out["core_messages_total"] = {str(k): v for k, v in b.core.counters.sent.items()}
        if node.peers is not None:
            out["transport_garbage_total"] = node.peers.counters.garbage
        return out


__all__ = ["ScotApiService"]
