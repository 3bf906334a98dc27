"""A :class:`NodeService` over the deterministic in-memory network: the real tree core, no sockets.

:class:`LocalCluster` holds an :class:`~p2pubsub.inmemory.InMemoryNetwork` of many hosts and a schema store that
stands in for the DHT (every host sees every schema). :meth:`LocalCluster.service` gives one host's service; its
home's ``Deliver`` actions go to that host's :class:`SubscriptionRegistry`. Every call runs the network until no
message is in flight, so a subscription is installed in the tree (its ``Ready`` seen) before ``subscribe``
answers, and an event has reached every matching subscription before ``publish`` answers.

With ``checked=True`` (the default) the cluster drives the network through the brute-force
:class:`~p2pubsub.inmemory.Oracle` and checks the tree's invariants after each call; ``cluster.oracle.verdict()``
then tells whether the tree delivered exactly what was owed. The benchmark turns that off.
"""

from __future__ import annotations

from typing import Any

from ..inmemory import InMemoryNetwork, Oracle
from ..model import Schema, parse_event, parse_filter
from ..tree import Action, Deliver, TreeConfig
from .delivery import SubscriptionRegistry
from .service import SchemaConflict, ServiceUnavailable, SubscriptionInfo, UnknownSchema, notification


class _DeliveringNetwork(InMemoryNetwork):
    """The in-memory network, plus: a host's ``Deliver`` actions are handed to its registry."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.registries: dict[int, SubscriptionRegistry] = {}

    def _apply(self, host: int, actions: list[Action]) -> None:
        super()._apply(host, actions)
        registry = self.registries.get(host)
        if registry is None:
            return
        for a in actions:
            if isinstance(a, Deliver):
                body = notification(a.event)
                for sub_id in a.sub_ids:
                    registry.deliver(sub_id, body)


class LocalCluster:
    """``hosts`` in-memory pub/sub hosts sharing one schema store."""

    def __init__(self, hosts: int = 8, *, seed: int = 0, config: TreeConfig | None = None,
                 capacity: tuple[int, int] = (10, 30), checked: bool = True) -> None:
        self.net = _DeliveringNetwork(hosts, config, seed=seed, capacity=capacity)
        self.oracle = Oracle(self.net)
        self.checked = checked
        self.schemas: dict[str, Schema] = {}

    @property
    def hosts(self) -> int:
        return len(self.net.cores)

    def service(self, host: int, registry: SubscriptionRegistry) -> LocalService:
        if not 0 <= host < self.hosts:
            raise ValueError(f"host {host} is not one of 0..{self.hosts - 1}")
        if host in self.net.registries:
            raise ValueError(f"host {host} already has a service")
        self.net.registries[host] = registry
        return LocalService(self, host, registry)

    def settle(self) -> int:
        if self.checked:
            return self.oracle.settle()
        steps = 0
        while self.net.step():
            steps += 1
        return steps


def _same(a: Schema, b: Schema) -> bool:
    """Equal up to attribute order."""
    return a.absent is b.absent and sorted(a.attributes, key=lambda x: x.name) == sorted(
        b.attributes, key=lambda x: x.name)


class LocalService:
    """One in-memory host as a :class:`~p2pubsub.api.service.NodeService`."""

    def __init__(self, cluster: LocalCluster, host: int, registry: SubscriptionRegistry) -> None:
        self.cluster = cluster
        self.host = host
        self.registry = registry
        self.subs: dict[str, SubscriptionInfo] = {}
        self.published = 0

    @property
    def core(self):
        return self.cluster.net.cores[self.host]

    def _schema(self, name: str) -> Schema:
        schema = self.cluster.schemas.get(name) if isinstance(name, str) else None
        if schema is None:
            raise UnknownSchema(str(name))
        return schema

    async def put_schema(self, name: str, body: dict) -> tuple[Schema, bool]:
        schema = Schema.from_dict(name, body)
        existing = self.cluster.schemas.get(name)
        if existing is None:
            self.cluster.schemas[name] = schema
            return schema, True
        if _same(existing, schema):
            return existing, False
        raise SchemaConflict(existing)

    async def get_schema(self, name: str) -> Schema | None:
        return self.cluster.schemas.get(name)

    async def subscribe(self, schema: str, filter: dict, deliver_to: str | None) -> SubscriptionInfo:
        s = self._schema(schema)
        sub = parse_filter(s, filter)
        net = self.cluster.net
        sub_id = (self.cluster.oracle.subscribe(self.host, s, sub) if self.cluster.checked
                  else net.subscribe(self.host, s, sub))
        self.registry.open(sub_id, deliver_to)  # before any notification can arrive
        self.cluster.settle()
        if (sub_id, 0) not in net.record.ready:
            if self.cluster.checked:
                self.cluster.oracle.unsubscribe(sub_id)
            else:
                net.unsubscribe(self.host, sub_id)
            self.cluster.settle()
            self.registry.close(sub_id)
            raise ServiceUnavailable(f"subscription {sub_id} was not installed", retry_after=1)
        info = SubscriptionInfo(sub_id, s.name, sub.to_filter(), deliver_to, net.now,
                                {"host": self.host, "pieces": len(self.core.home.subs[sub_id].versions[0].entries)})
        self.subs[sub_id] = info
        return info

    async def unsubscribe(self, sub_id: str) -> bool:
        if self.subs.pop(sub_id, None) is None:
            return False
        if self.cluster.checked:
            self.cluster.oracle.unsubscribe(sub_id)
        else:
            self.cluster.net.unsubscribe(self.host, sub_id)
        self.registry.close(sub_id)
        self.cluster.settle()
        return True

    def subscription(self, sub_id: str) -> SubscriptionInfo | None:
        return self.subs.get(sub_id)

    async def publish(self, schema: str, attributes: dict) -> str:
        s = self._schema(schema)
        event = parse_event(s, attributes)
        net = self.cluster.net
        event_id = (self.cluster.oracle.publish(self.host, s, event) if self.cluster.checked
                    else net.publish(self.host, s, event))
        self.cluster.settle()
        self.published += 1
        return event_id

    def _tree(self) -> tuple[int, int, int]:
        nodes = self.core.tree.nodes
        leaves = [n for n in nodes.values() if n.is_leaf]
        return len(nodes), len(leaves), sum(len(n.store) for n in leaves)

    def info(self) -> dict:
        nodes, leaves, stored = self._tree()
        return {
            "id": f"local-{self.host}",
            "kind": "in-memory",
            "addresses": {"peer": None},
            "ready": True,
            "peers": self.cluster.hosts - 1,
            "tree_nodes": {"hosted": nodes, "leaves": leaves},
            "subscriptions": {"stored_pieces": stored, "homed": len(self.subs), "capacity": self.core.tree.capacity},
            "queue": {"in_flight": len(self.cluster.net.pool)},
            "schemas": len(self.cluster.schemas),
        }

    def metrics(self) -> dict:
        nodes, leaves, stored = self._tree()
        stats = self.core.home.stats
        return {
            "tree_nodes": nodes,
            "leaves": leaves,
            "stored_pieces": stored,
            "home_subscriptions": len(self.subs),
            "published_total": self.published,
            "home_delivered_total": stats.delivered,
            "home_duplicates_total": stats.duplicates,
            "home_late_total": stats.late,
            "messages_total": dict(self.cluster.net.record.messages),
        }


__all__ = ["LocalCluster", "LocalService"]
