"""API test fixtures: nodes of one in-memory cluster, each with its own app behind aiohttp's test server (port 0)."""

from __future__ import annotations

import random

import pytest
from aiohttp.test_utils import TestClient, TestServer
from apihelpers import Node

from p2pubsub.api import DeliveryPolicy, LocalCluster, SubscriptionRegistry, make_app


@pytest.fixture
async def make_nodes():
    """``await make_nodes(k, hosts=8, seed=0, policy=..., cluster=..., **app_options)`` -> k nodes on distinct hosts
    of one cluster, each with its own registry, app and test client; all are closed at the end."""
    opened: list[Node] = []

    async def make(count: int = 1, *, hosts: int = 8, seed: int = 0, policy: DeliveryPolicy | None = None,
                   cluster: LocalCluster | None = None, **options) -> list[Node]:
        cluster = cluster or LocalCluster(hosts, seed=seed)
        picks = sorted(random.Random(seed).sample(range(cluster.hosts), count))
        nodes = []
        for host in picks:
            registry = SubscriptionRegistry(policy, rng=random.Random(host))
            service = cluster.service(host, registry)
            app = make_app(service, registry, **options)
            client = TestClient(TestServer(app))
            await client.start_server()
            node = Node(host, registry, service, app, client)
            opened.append(node)
            nodes.append(node)
        return nodes

    yield make
    for node in opened:
        await node.client.close()
        await node.registry.aclose()
