"""The OpenAPI document, /metrics, /healthz, /v1/node and the runner that binds the app to a real socket."""

from __future__ import annotations

import asyncio
import random

import pytest
from apihelpers import QUOTES, until

from p2pubsub.api import ERROR_CODES, LocalCluster, SubscriptionRegistry, make_app, start_api
from p2pubsub.api.app import API
from p2pubsub.client import AsyncClient

METHODS = {"get", "put", "post", "delete", "patch"}


async def test_openapi_documents_every_route_and_only_those(make_nodes):
    (node,) = await make_nodes(1)
    doc = await (await node.client.get("/v1/openapi.json")).json()
    assert doc["openapi"] == "3.1.0"
    served = {(r.resource.canonical, r.method.lower()) for r in node.app.router.routes()
              if r.method.lower() in METHODS}
    documented = {(path, m) for path, item in doc["paths"].items() for m in item if m in METHODS}
    assert served == documented
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            assert op["operationId"] and op["summary"] and "405" in op["responses"], (path, method)
            params = {p["name"] for p in item.get("parameters", []) + op.get("parameters", []) if p["in"] == "path"}
            assert params == {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}, path
            for ref in _refs(op):
                assert ref.split("/")[-1] in doc["components"]["schemas"], ref
    assert set(doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]) == set(
        ERROR_CODES)


def _refs(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _refs(v)


async def test_openapi_passes_the_validator(make_nodes):
    validator = pytest.importorskip("openapi_spec_validator")
    (node,) = await make_nodes(1)
    validator.validate(await (await node.client.get("/v1/openapi.json")).json())


async def test_metrics_export_requests_by_route_and_status_and_node_figures(make_nodes):
    parser = pytest.importorskip("prometheus_client.parser")
    (node,) = await make_nodes(1)
    c = node.client
    await c.put("/v1/schemas/quotes", json=QUOTES)
    sub = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"price": {"ge": 0}}})).json()
    for _ in range(3):
        await c.post("/v1/events", json={"schema": "quotes", "attributes": {"price": 1}})
    await c.post("/v1/events", json={"schema": "quotes", "attributes": {"price": -1}})
    await c.get(f"/v1/subscriptions/{sub['id']}/events")
    await c.get("/nowhere/at/all")
    resp = await c.get("/metrics")
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in parser.text_string_to_metric_families(await resp.text())}

    def sample(family, suffix="", **labels):
        return next(s.value for s in families[family].samples
                    if s.name == family + suffix and all(s.labels.get(k) == v for k, v in labels.items()))

    requests = "p2pubsub_http_requests"
    assert sample(requests, "_total", route="/v1/events", method="POST", status="202") == 3
    assert sample(requests, "_total", route="/v1/events", method="POST", status="400") == 1
    assert sample(requests, "_total", route="unmatched", method="GET", status="404") == 1
    assert sample(requests, "_total", route="/v1/subscriptions/{id}/events", method="GET", status="200") == 1
    latency = "p2pubsub_http_request_duration_seconds"
    assert sample(latency, "_count", route="/v1/events", status="202") == 3
    assert sample(latency, "_bucket", route="/v1/events", status="202", le="+Inf") == 3
    assert sample("p2pubsub_delivery_delivered", "_total") == 3
    assert sample("p2pubsub_delivery_subscriptions") == 1
    assert sample("p2pubsub_node_published", "_total") == 3
    assert sample("p2pubsub_node_messages", "_total", key="ProbePub") > 0
    assert sample("p2pubsub_http_sse_streams") == 0


async def test_health_and_node_status(make_nodes):
    (node,) = await make_nodes(1, hosts=5)
    assert await (await node.client.get("/healthz")).json() == {"status": "ok"}
    info = await (await node.client.get("/v1/node")).json()
    assert info["id"] == f"local-{node.host}" and info["ready"] is True and info["peers"] == 4
    assert {"tree_nodes", "subscriptions", "queue", "http", "delivery"} <= set(info)


async def test_runner_binds_port_zero_and_stops_with_streams_open():
    cluster = LocalCluster(4, seed=1)
    registry = SubscriptionRegistry(rng=random.Random(0))
    service = cluster.service(0, registry)
    app = make_app(service, registry, sse_keepalive=3600)
    server = await start_api(app, "127.0.0.1", 0, shutdown_timeout=60)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        async with AsyncClient(server.url) as c:
            assert (await c.node())["http"]["addresses"] == [f"127.0.0.1:{server.port}"]
            await c.put_schema("quotes", QUOTES["attributes"])
            sub = await c.subscribe("quotes", {"price": {"ge": 0}})
            stream = c.stream(sub["id"])
            await stream.__aenter__()
            poll = asyncio.create_task(c.events(sub["id"], wait=60))
            await until(lambda: app[API].metrics.polls == 1)
            # closing answers the stream and the long poll at once instead of waiting out shutdown_timeout
            async with asyncio.timeout(20):
                await server.close()
                page = await poll
            assert page.events == []
            assert [e async for e in stream] == []
    finally:
        await server.close()
        await registry.aclose()


def test_local_service_implements_the_protocol():
    from p2pubsub.api import NodeService

    cluster = LocalCluster(2)
    assert isinstance(cluster.service(0, SubscriptionRegistry()), NodeService)
