"""The Python client against the same app: every endpoint, sync (real socket, server in a thread) and async
(aiohttp's test server), JSON and CBOR."""

from __future__ import annotations

import asyncio

import pytest
from apihelpers import QUOTES, ServerThread, until

from p2pubsub.api.metrics import prom
from p2pubsub.client import ApiError, AsyncClient, Client, EventPage, SseParser

HAVE_PROMETHEUS = prom is not None  # a dependency still to be listed in pyproject.toml: /metrics is 501 without it


@pytest.mark.parametrize("cbor", [False, True])
async def test_async_client_covers_every_endpoint(make_nodes, cbor):
    (node,) = await make_nodes(1)
    async with AsyncClient(str(node.client.make_url("")), cbor=cbor) as c:
        schema, created = await c.put_schema("quotes", QUOTES["attributes"])
        assert created and schema["attributes"]["volume"] == {"type": "int", "min": 0, "max": 1_000_000}
        assert (await c.put_schema("quotes", QUOTES["attributes"]))[1] is False
        assert (await c.get_schema("quotes"))["name"] == "quotes"
        assert await c.get_schema("nope") is None
        sub = await c.subscribe("quotes", {"price": {"ge": 10, "le": 20}, "sym": {"eq": "AAPL"}})
        assert (await c.subscription(sub["id"]))["filter"] == {"price": {"ge": 10.0, "le": 20.0}, "sym": {"eq": "AAPL"}}
        assert await c.subscription("nope") is None

        stream = c.stream(sub["id"])
        streamed: list[dict] = []

        async def consume():
            async for event in stream:
                streamed.append(event)

        reader = asyncio.create_task(consume())
        ids = [await c.publish("quotes", {"price": p, "sym": "AAPL"}) for p in (5, 15, 19.5, 25)]
        page = await c.events(sub["id"])
        assert isinstance(page, EventPage) and [e["id"] for e in page.events] == ids[1:3]
        assert page.cursor == "2" and page.dropped == 0
        assert (await c.events(sub["id"], after=page.cursor, wait=0.01)).events == []
        assert [e["id"] for e in (await c.events(sub["id"], after="0", limit=1)).events] == ids[1:2]

        waiting = asyncio.create_task(c.events(sub["id"], after=page.cursor, wait=20))
        await until(lambda: node.api.metrics.polls == 1)
        later = await c.publish("quotes", {"price": 11, "sym": "AAPL"})
        assert [e["id"] for e in (await waiting).events] == [later]

        await until(lambda: len(streamed) == 3)
        assert [e["id"] for e in streamed] == [*ids[1:3], later] and stream.cursor == "3"
        assert await c.unsubscribe(sub["id"]) is True
        await asyncio.wait_for(reader, 10)  # the stream ends with the subscription
        assert stream.closed
        assert await c.unsubscribe(sub["id"]) is False

        node_info = await c.node()
        assert node_info["ready"] is True and node_info["delivery"]["subscriptions"] == 0
        assert await c.health() == {"status": "ok"}
        if HAVE_PROMETHEUS:
            assert "p2pubsub_http_requests_total" in await c.metrics()
        else:
            with pytest.raises(ApiError, match="metrics_unavailable"):
                await c.metrics()
        assert (await c.openapi())["openapi"].startswith("3.")

        with pytest.raises(ApiError) as err:
            await c.publish("quotes", {"price": -1})
        assert (err.value.status, err.value.code, err.value.path) == (400, "out_of_domain", "attributes.price")
        with pytest.raises(ApiError) as err:
            await c.subscribe("nope", {"x": {"eq": 1}})
        assert err.value.code == "unknown_schema"
        with pytest.raises(ApiError) as err:
            await c.events("nope")
        assert err.value.code == "unknown_subscription"
        with pytest.raises(ApiError) as err:
            await c.publish("quotes", {"price": float("nan")})
        assert err.value.code == ("not_finite" if cbor else "malformed_json")
        with pytest.raises(ApiError) as err:
            async for _ in c.stream("nope"):
                pass
        assert err.value.code == "unknown_subscription"


@pytest.mark.parametrize("cbor", [False, True])
def test_sync_client_covers_every_endpoint(cbor):
    with ServerThread(hosts=6, seed=2) as srv, Client(srv.url, cbor=cbor) as c:
        assert c.put_schema("quotes", QUOTES["attributes"], absent="no_match")[1] is True
        assert c.get_schema("quotes")["absent"] == "no_match" and c.get_schema("nope") is None
        sub = c.subscribe("quotes", {"sym": {"prefix": "MS"}})
        hook = c.subscribe("quotes", {"sym": {"prefix": "MS"}}, deliver_to="http://127.0.0.1:9/unreachable")
        assert c.subscription(hook["id"])["deliver_to"] == "http://127.0.0.1:9/unreachable"
        ids = [c.publish("quotes", {"sym": s, "price": 1.0}) for s in ("MSFT", "IBM", "MS")]
        page = c.events(sub["id"], wait=1)
        assert [e["id"] for e in page.events] == [ids[0], ids[2]]
        assert c.events(sub["id"], after=page.cursor, wait=0.01).events == []
        with c.stream(sub["id"], after="1", timeout=10) as stream:
            first = next(iter(stream))
        assert first["id"] == ids[2] and stream.cursor == "2"
        assert c.subscription(sub["id"])["delivery"]["cursor"] == "2"
        assert c.unsubscribe(sub["id"]) and not c.unsubscribe(sub["id"]) and c.subscription(sub["id"]) is None
        assert c.health() == {"status": "ok"}
        assert c.node()["peers"] == 5
        if HAVE_PROMETHEUS:
            assert "p2pubsub_node_tree_nodes" in c.metrics()
        else:
            with pytest.raises(ApiError, match="metrics_unavailable"):
                c.metrics()
        assert "/v1/events" in c.openapi()["paths"]
        with pytest.raises(ApiError) as err:
            c.put_schema("quotes", {"x": {"type": "string"}})
        assert err.value.status == 409 and err.value.code == "schema_conflict"
        with pytest.raises(ApiError) as err:
            c.stream("nope")
        assert err.value.code == "unknown_subscription"
        # the kept-alive connection survives being closed between requests, by the server or locally
        async def drop_connections():
            server = srv.server.runner.server
            for handler in server.connections:
                handler.force_close()
            while server.connections:  # until the sockets are closed (connection_lost ran)
                await asyncio.sleep(0)

        srv.call(drop_connections())
        assert c.health() == {"status": "ok"}
        srv.call(drop_connections())
        assert c.publish("quotes", {"price": 2.0})  # a POST too: the dropped connection is noticed before sending
        c._conn.sock.close()
        assert c.node()["ready"]


def test_clients_refuse_bad_base_urls():
    for bad in ("localhost:8080", "ftp://h/", ""):
        with pytest.raises(ValueError):
            Client(bad)
        with pytest.raises(ValueError):
            AsyncClient(bad)


def test_sse_parser_follows_the_format():
    p = SseParser()
    lines = [": comment", "retry: 10", "id: 7", "data: {\"a\":", "data: 1}", "", "event: dropped", "data:{}", "",
             "id", "data: x", "", "", "event: closed", ""]
    out = [item for line in lines if (item := p.feed(line)) is not None]
    assert out == [("message", '{"a":\n1}', "7"), ("dropped", "{}", "7"), ("message", "x", "")]
