"""Test helpers: SCOT nodes on loopback (port 0), in one process, seeded; waiting on conditions, never sleeping."""

from __future__ import annotations

import random
from collections import defaultdict

from conditions import until

from p2pubsub.node.config import NodeConfig
from p2pubsub.node.transport import TransportConfig
from p2pubsub.scot.config import ScotConfig
from p2pubsub.scot.definition import OverlayDefinition, id_in_cluster
from p2pubsub.scot.runtime import ScotNode

TREE4 = (("A", "B"), ("B", "C"), ("B", "D"))  # a 4-broker acyclic factor: B inner, A, C, D edge brokers


def node_config(**kw) -> NodeConfig:
    base = dict(dht_port=0, http_port=None, tick_interval=0.5, request_timeout=5.0, install_timeout=10.0,
                rpc_timeout=0.5,
                join_timeout=2.0, transport=TransportConfig(max_retries=3, max_rto=0.5, initial_rto=0.2))
    base.update(kw)
    return NodeConfig(**base)


class ScotCluster:
    """In-process SCOT nodes; ``got[(node index, sub_id)]`` lists the event ids delivered."""

    def __init__(self, definition: OverlayDefinition, *, name: str = "ov", seed: int = 0, lease: float = 1.0,
                 **node_kw) -> None:
        self.definition = definition
        self.name = name
        self.rng = random.Random(seed)
        self.seed = seed
        self.lease = lease
        self.node_kw = node_kw
        self.nodes: list[ScotNode] = []
        self.got: dict[tuple[int, str], list[str]] = defaultdict(list)

    async def add(self, cluster: int, *, define: bool = True, **scot_kw) -> ScotNode:
        i = len(self.nodes)
        boot = () if not self.nodes else (("127.0.0.1", self.nodes[0].host[2]),)
        node_id = id_in_cluster(self.rng.getrandbits(160), cluster, self.definition.clusters)
        scot = ScotConfig(self.name, self.definition if define else None, lease=self.lease, **scot_kw)
        node = ScotNode(node_config(bootstrap=boot, **self.node_kw), scot, rng=random.Random(self.seed * 1000 + i),
                        node_id=node_id, on_deliver=lambda s, e, i=i: self.got[(i, s)].append(e.event_id))
        await node.start()
        self.nodes.append(node)
        return node

    async def form(self, extra_per_cluster: int = 0) -> None:
        """One node per slot, then ``extra_per_cluster`` standby nodes per cluster; wait until every link is up."""
        regions = len(self.definition.vertices)
        for c in range(self.definition.clusters):
            for _ in range(regions + extra_per_cluster):
                await self.add(c)
        await self.wait_formed()

    def active(self) -> list[ScotNode]:
        return [n for n in self.nodes if n.broker is not None and n.state == "active"]

    def formed(self) -> bool:
        act = self.active()
        return len(act) == self.definition.positions and all(n.broker.all_synced() for n in act)

    async def wait_formed(self, timeout: float = 15.0) -> None:
        await until(self.formed, timeout, "every slot taken and every link bound and synced")
        await self.settle()

    def busy(self) -> list[str]:
        """What keeps the network from being quiescent (empty: idle)."""
        out = []
        for i, n in enumerate(self.nodes):
            if n.state == "stopped" or n.peers is None:
                continue
            out += [f"node {i}: {s.queue_length} queued to {a[0]}:{a[1]}"
                    for a, s in n.peers.all_stats().items() if s.queue_length]
            b = n.broker
            if b is not None:
                if len(b.echo):
                    out.append(f"node {i}: {len(b.echo)} echoes pending")
                out += [f"node {i}: inbox of {q}" for q, link in b.links.items() if link.inbox]
                if not b.stable.is_set():
                    out.append(f"node {i}: re-advertising")
        return out

    def idle(self) -> bool:
        return not self.busy()

    async def settle(self, timeout: float = 10.0) -> None:
        try:
            await until(self.idle, timeout, "every queue to drain and every echo to return")
        except AssertionError as e:
            raise AssertionError(f"{e}: {self.busy()[:8]}") from None

    def by_position(self):
        return {n.broker.position: n for n in self.active()}

    async def close(self) -> None:
        for n in reversed(self.nodes):
            if n.state != "stopped":
                await n.stop(graceful=False)


class RestScot:
    """A :class:`ScotCluster` whose nodes each serve the REST API (port 0); ``clients[i]`` talks to node i."""

    def __init__(self, cluster: ScotCluster) -> None:
        self.cluster = cluster
        self.apis = []
        self.registries = []
        self.clients = []

    async def serve_all(self) -> None:
        from p2pubsub.api import SubscriptionRegistry, make_app, start_api
        from p2pubsub.client import AsyncClient
        from p2pubsub.scot.service import ScotApiService

        for node in self.cluster.nodes[len(self.apis):]:
            registry = SubscriptionRegistry()
            service = ScotApiService(node, registry)
            api = await start_api(make_app(service, registry), "127.0.0.1", 0)
            self.apis.append(api)
            self.registries.append(registry)
            self.clients.append(AsyncClient(api.url))

    async def close(self) -> None:
        for c in self.clients:
            await c.close()
        for api in self.apis:
            await api.close()
        for r in self.registries:
            await r.aclose()
        await self.cluster.close()
