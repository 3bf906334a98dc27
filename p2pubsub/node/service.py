"""The HTTP API's view of a node: :class:`p2pubsub.api.service.NodeService` over :class:`Node`.

Only translation: the API calls these, they call the node; the node's deliveries go to the client-facing
:class:`~p2pubsub.api.delivery.SubscriptionRegistry` (buffers, long polls, SSE, webhooks).
"""

from __future__ import annotations

from typing import Any

from ..api.delivery import SubscriptionRegistry
from ..api.nodebase import NodeServiceBase
from ..api.service import SubscriptionInfo, notification
from ..tree import PubEvent
from .runtime import Node


class NodeApiService(NodeServiceBase):
    def __init__(self, node: Node, registry: SubscriptionRegistry) -> None:
        self._last: dict | None = None  # the notification body of the event delivered last
        super().__init__(node, registry)

    def _deliver(self, sub_ids: tuple[str, ...], event: PubEvent) -> None:
        # the subscribers of one event share its (never mutated) notification body, also across the notifications
        # of several leaves that arrive in a row
        body = self._last
        if body is None or body["id"] != event.event_id:
            body = self._last = notification(event)
        self.registry.deliver_many(sub_ids, body)

    def subscription(self, sub_id: str) -> SubscriptionInfo | None:
        meta = self._meta.get(sub_id)
        state = self.node.core.home.subs.get(sub_id) if self.node.core else None
        if meta is None or state is None or not state.active:
            return None
        version = state.versions[state.current]
        return SubscriptionInfo(
            sub_id,
            meta.schema,
            version.sub.to_filter(),
            meta.deliver_to,
            meta.created_at,
            {"pieces": len(version.entries), "base": version.entries[0].base,
             "leaves": sorted({str(t) for t in version.leaves.values()})},
        )

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["hosted"] = self.node.hosted()[:100]
        return info

    def metrics(self) -> dict[str, Any]:
        info = self.node.info()
        stats = self.node.core.home.stats if self.node.core else None
        out: dict[str, Any] = {
            "ready": int(info["ready"]),
            "peers": info["peers"],
            "tree_nodes": info["tree_nodes"],
            "leaves": info["leaves"],
            "stored_subscriptions": info["stored_subscriptions"],
            "home_subscriptions": info["home_subscriptions"],
            "counters_total": {k: v for k, v in self.node.counters.items()},
        }
        if stats is not None:
            out["home_delivered_total"] = stats.delivered
            out["home_duplicates_total"] = stats.duplicates
            out["home_late_total"] = stats.late
        if self.node.peers is not None:
            c = self.node.peers.counters
            out["transport_garbage_total"] = c.garbage
        if self.node.dht is not None and self.node.dht.protocol is not None:
            out["dht_garbage_total"] = self.node.dht.protocol.garbage
        return out


