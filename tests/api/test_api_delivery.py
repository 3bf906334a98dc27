"""End to end through HTTP and the real tree core: every client receives exactly the events its filter matches.

Several API nodes sit on hosts of one in-memory cluster whose tree has split across hosts (background
subscriptions). Random subscriptions are made over HTTP (some with a webhook), random events are published over
HTTP at random nodes, and a brute-force oracle (the model's exact ``matches`` on every pair) decides what each
subscription is owed. Each subscription is then read three ways, and each must equal the oracle's list, in
publication order, without duplicates: by long poll (paged), by an SSE stream opened before the first event, and
by webhook (a test server that fails the first attempts of every subscription).
"""

from __future__ import annotations

import asyncio
import random

from aiohttp import web
from aiohttp.test_utils import TestServer
from apihelpers import QUOTES, SENSORS, Collector, body_of, until

from p2pubsub.api import DeliveryPolicy, LocalCluster
from p2pubsub.client import SseParser
from p2pubsub.model import Schema, parse_event, parse_filter

SYMS = ["AAPL", "AMZN", "IBM", "INTC", "MSFT", "I"]
PRICES = [0.0, 10.0, 20.0, 250.0, 500.0, 999.5, 1000.0]


def random_filter(rng: random.Random, schema: str) -> dict:
    if schema == "sensors":
        lo = rng.choice([-50.0, -10.0, 0.0, 12.5])
        return {"temp": {"ge": lo, "lt": min(50.0, lo + rng.choice([5.0, 20.0, 100.0]))}}
    f: dict = {}
    while not f:
        if rng.random() < 0.7:
            lo = rng.choice(PRICES[:-1]) if rng.random() < 0.3 else rng.uniform(0, 900)
            kind = rng.choice(["range", "range", "ge", "lt", "eq"])
            f["price"] = {"range": {"ge": lo, "le": min(1000.0, lo + rng.uniform(1, 300))}, "ge": {"ge": lo},
                          "lt": {"lt": max(lo, 1.0)}, "eq": {"eq": lo}}[kind]
        if rng.random() < 0.5:
            f["sym"] = rng.choice([{"eq": s} for s in SYMS] + [{"prefix": "I"}, {"prefix": "A"}])
        if rng.random() < 0.3:
            lo = rng.randrange(0, 900_000)
            f["volume"] = {"gt": lo, "le": min(1_000_000, lo + rng.randrange(1, 200_000))}
    return f


def random_event(rng: random.Random, schema: str) -> dict:
    if schema == "sensors":
        return {"temp": rng.choice([-50.0, 0.0, 12.5, 50.0, rng.uniform(-50, 50)])}
    ev = {
        "price": rng.choice(PRICES) if rng.random() < 0.3 else round(rng.uniform(0, 1000), 2),
        "sym": rng.choice(SYMS),
        "volume": rng.randrange(0, 1_000_001),
    }
    for name in list(ev):  # sometimes an attribute is left out (absent: no_match)
        if len(ev) > 1 and rng.random() < 0.15:
            del ev[name]
    return ev


async def read_sse(client, sub_id: str, sink: Collector, after: str | None = None) -> None:
    headers = {"Accept": "text/event-stream"}
    if after is not None:
        headers["Last-Event-ID"] = after
    resp = await client.get(f"/v1/subscriptions/{sub_id}/events", headers=headers)
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    parser = SseParser()
    import json

    while True:
        line = await resp.content.readline()
        if not line:
            return
        item = parser.feed(line.decode().rstrip("\r\n"))
        if item is None:
            continue
        kind, data, last_id = item
        if kind == "message":
            await sink.add(sub_id, [(last_id, json.loads(data)["id"])])
        elif kind == "closed":
            await sink.add("closed", [sub_id])
            return


async def webhook_target(fail_first: int) -> tuple[TestServer, Collector, dict]:
    """A webhook receiver that answers 503 to the first ``fail_first`` posts of every subscription."""
    got = Collector()
    attempts: dict[str, int] = {}

    async def hook(request: web.Request) -> web.Response:
        sub_id = request.headers["X-P2pubsub-Subscription"]
        attempts[sub_id] = attempts.get(sub_id, 0) + 1
        if attempts[sub_id] <= fail_first:
            return web.Response(status=503)
        body = await request.json()
        assert body["subscription"] == sub_id
        await got.add(sub_id, [e["id"] for e in body["events"]])
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    server = TestServer(app)
    await server.start_server()
    return server, got, attempts


async def test_every_client_receives_exactly_its_matches(make_nodes):
    rng = random.Random(7)
    cluster = LocalCluster(16, seed=7)
    policy = DeliveryPolicy(webhook_backoff=0.002, webhook_backoff_max=0.02, webhook_batch=5)
    nodes = await make_nodes(3, cluster=cluster, policy=policy, seed=7)
    target, hooked, attempts = await webhook_target(fail_first=2)
    schemas = {"quotes": QUOTES, "sensors": SENSORS}
    try:
        for name, body in schemas.items():
            resp = await nodes[0].client.put(f"/v1/schemas/{name}", json=body)
            assert resp.status == 201
        for node in nodes[1:]:  # any node serves any schema
            resp = await node.client.get("/v1/schemas/quotes")
            assert resp.status == 200 and (await resp.json())["attributes"]["sym"] == {"type": "string"}
        parsed = {n: Schema.from_dict(n, b) for n, b in schemas.items()}

        # background subscribers on the other hosts make the tree split across hosts
        api_hosts = {n.host for n in nodes}
        others = [h for h in range(cluster.hosts) if h not in api_hosts]
        for _ in range(300):
            lo = rng.uniform(0, 990)
            sub = parse_filter(parsed["quotes"], {"price": {"ge": lo, "le": lo + 10}})
            cluster.oracle.subscribe(rng.choice(others), parsed["quotes"], sub)
        cluster.settle()
        assert sum(n.is_leaf for n in cluster.net.tree_nodes().values()) > 10

        subs: dict[str, tuple] = {}  # id -> (node, schema, filter, webhook?)
        for i in range(36):
            node = nodes[i % len(nodes)]
            schema = "sensors" if i % 6 == 5 else "quotes"
            f = random_filter(rng, schema)
            body = {"schema": schema, "filter": f}
            if i % 3 == 0:
                body["deliver_to"] = str(target.make_url("/hook"))
            resp = await node.client.post("/v1/subscriptions", json=body)
            assert resp.status == 201, await resp.text()
            info = await resp.json()
            assert resp.headers["Location"] == f"/v1/subscriptions/{info['id']}"
            subs[info["id"]] = (node, schema, f, "deliver_to" in body)

        streamed = Collector()
        readers = [asyncio.create_task(read_sse(node.client, sub_id, streamed)) for sub_id, (node, *_) in subs.items()]

        events: list[tuple[str, str, dict]] = []
        for _ in range(80):
            schema = "sensors" if rng.random() < 0.15 else "quotes"
            attrs = random_event(rng, schema)
            resp = await rng.choice(nodes).client.post("/v1/events", json={"schema": schema, "attributes": attrs})
            assert resp.status == 202
            events.append(((await resp.json())["id"], schema, attrs))

        owed = {
            sub_id: [eid for eid, s, attrs in events if s == schema and parse_filter(parsed[s], f).matches(
                parse_event(parsed[s], attrs).values, parsed[s].absent)]
            for sub_id, (_node, schema, f, _hook) in subs.items()
        }
        assert sum(map(len, owed.values())) > 50, "the workload should match often"

        # 1. long poll, in pages of 7
        for sub_id, (node, *_rest) in subs.items():
            got, cursor = [], None
            while True:
                params = {"limit": "7"} if cursor is None else {"limit": "7", "after": cursor}
                resp = await node.client.get(f"/v1/subscriptions/{sub_id}/events", params=params)
                page = await resp.json()
                assert resp.status == 200 and page["dropped"] == 0
                if not page["events"]:
                    break
                got += [e["id"] for e in page["events"]]
                cursor = page["cursor"]
            assert got == owed[sub_id], f"long poll of {sub_id}"

        # 2. SSE, streams opened before the first event
        await streamed.wait_for(lambda: all(len(streamed.items.get(s, [])) == len(owed[s]) for s in subs))
        for sub_id in subs:
            pairs = streamed.items.get(sub_id, [])
            assert [eid for _, eid in pairs] == owed[sub_id], f"SSE of {sub_id}"
            assert [cur for cur, _ in pairs] == [str(n) for n in range(1, len(pairs) + 1)]

        # 3. webhooks, through failures
        hooked_subs = [s for s, (*_x, hook) in subs.items() if hook]
        await hooked.wait_for(lambda: all(len(hooked.items.get(s, [])) == len(owed[s]) for s in hooked_subs))
        for sub_id in hooked_subs:
            assert hooked.items.get(sub_id, []) == owed[sub_id], f"webhook of {sub_id}"
            if owed[sub_id]:
                assert attempts[sub_id] >= 3  # two failures, then success
                info = await (await subs[sub_id][0].client.get(f"/v1/subscriptions/{sub_id}")).json()
                assert info["delivery"]["webhook"]["failures"] == 2
                assert info["delivery"]["webhook"]["pending"] == 0

        # the tree itself delivered exactly what was owed
        assert cluster.oracle.verdict() == {"missing": [], "false_positive": [], "duplicate": [], "misrouted": []}

        # unsubscribing ends the SSE streams with a "closed" event, and later events reach nobody there
        for sub_id, (node, *_rest) in subs.items():
            resp = await node.client.delete(f"/v1/subscriptions/{sub_id}")
            assert resp.status == 204
        await streamed.wait_for(lambda: len(streamed.items.get("closed", [])) == len(subs))
        await asyncio.gather(*readers)
        resp = await nodes[0].client.post("/v1/events", json={"schema": "quotes", "attributes": {"price": 1.0}})
        assert resp.status == 202
        assert all(n.registry.stats()["subscriptions"] == 0 for n in nodes)
    finally:
        await target.close()


async def test_long_poll_waits_for_the_next_notification(make_nodes):
    (node,) = await make_nodes(1)
    c = node.client
    assert (await c.put("/v1/schemas/quotes", json=QUOTES)).status == 201
    sub = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"sym": {"eq": "X"}}})).json()
    url = f"/v1/subscriptions/{sub['id']}/events"

    poll = asyncio.create_task(c.get(url, params={"wait": "30"}))


    await until(lambda: node.api.metrics.polls == 1, what="the long poll is waiting")
    await c.post("/v1/events", json={"schema": "quotes", "attributes": {"sym": "Y"}})  # not a match
    assert not poll.done()
    await c.post("/v1/events", json={"schema": "quotes", "attributes": {"sym": "X", "price": 3}})
    page = await (await poll).json()
    assert [e["attributes"] for e in page["events"]] == [{"sym": "X", "price": 3.0}]
    assert page["cursor"] == "1" and page["dropped"] == 0
    event = page["events"][0]
    assert set(event) == {"id", "schema", "attributes", "published_at"} and event["schema"] == "quotes"

    # nothing new: a short wait times out with an empty page and the same cursor
    page = await (await c.get(url, params={"after": "1", "wait": "0.05"})).json()
    assert page == {"events": [], "cursor": "1", "dropped": 0}

    # a poll waiting when its subscription is deleted answers 404
    poll = asyncio.create_task(c.get(url, params={"after": "1", "wait": "30"}))
    await until(lambda: node.api.metrics.polls == 1)
    assert (await c.delete(f"/v1/subscriptions/{sub['id']}")).status == 204
    resp = await poll
    assert resp.status == 404 and (await resp.json())["error"]["code"] == "unknown_subscription"


async def test_overflow_keeps_the_newest_and_reports_what_was_dropped(make_nodes):
    (node,) = await make_nodes(1, policy=DeliveryPolicy(buffer_size=5))
    c = node.client
    await c.put("/v1/schemas/quotes", json=QUOTES)
    sub = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"price": {"ge": 0}}})).json()
    url = f"/v1/subscriptions/{sub['id']}/events"
    ids = []

    async def publish(price: float) -> None:
        resp = await c.post("/v1/events", json={"schema": "quotes", "attributes": {"price": price}})
        ids.append((await resp.json())["id"])

    for i in range(3):
        await publish(i)
    first = await (await c.get(url)).json()
    assert [e["id"] for e in first["events"]] == ids and first["cursor"] == "3"
    for i in range(3, 12):
        await publish(i)
    # 12 notifications, the newest 5 kept: a reader at cursor 3 lost 4..7
    page = await (await c.get(url, params={"after": first["cursor"]})).json()
    assert page["dropped"] == 4 and [e["id"] for e in page["events"]] == ids[7:] and page["cursor"] == "12"
    info = await (await c.get(f"/v1/subscriptions/{sub['id']}")).json()
    assert info["delivery"] == {"cursor": "12", "oldest": "8", "buffered": 5, "capacity": 5, "dropped": 7}

    # SSE from the same old cursor: a "dropped" event, then the kept ones with their cursors as ids
    resp = await c.get(url, headers={"Accept": "text/event-stream", "Last-Event-ID": "3"})
    parser, seen = SseParser(), []
    while len(seen) < 6:
        item = parser.feed((await resp.content.readline()).decode().rstrip("\r\n"))
        if item:
            seen.append(item)
    resp.close()
    assert seen[0][0] == "dropped" and '"dropped":4' in seen[0][1]
    assert [int(i) for _, _, i in seen[1:]] == [8, 9, 10, 11, 12]


async def test_sse_resumes_from_last_event_id_and_sends_keepalives(make_nodes):
    (node,) = await make_nodes(1, sse_keepalive=0.02)
    c = node.client
    await c.put("/v1/schemas/quotes", json=QUOTES)
    sub = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"price": {"le": 50}}})).json()
    for p in (1, 2, 3):
        await c.post("/v1/events", json={"schema": "quotes", "attributes": {"price": p}})
    resp = await c.get(f"/v1/subscriptions/{sub['id']}/events?after=0",
                       headers={"Accept": "text/event-stream", "Last-Event-ID": "1"})
    assert resp.headers["Cache-Control"] == "no-cache"
    lines = []
    while ": keep-alive" not in lines:
        lines.append((await resp.content.readline()).decode().rstrip("\r\n"))
    resp.close()
    assert lines[0] == "retry: 2000"
    ids = [line for line in lines if line.startswith("id: ")]
    assert ids == ["id: 2", "id: 3"]  # Last-Event-ID wins over ?after=
    data = [line for line in lines if line.startswith("data: ")]
    assert '"price":2.0' in data[0] and '"price":3.0' in data[1]


async def test_payloads_in_cbor_carry_the_same_stream(make_nodes):
    import cbor2

    (node,) = await make_nodes(1)
    c = node.client
    cb = {"Content-Type": "application/cbor", "Accept": "application/cbor"}
    resp = await c.put("/v1/schemas/quotes", data=cbor2.dumps(QUOTES), headers=cb)
    assert resp.status == 201 and resp.content_type == "application/cbor"
    resp = await c.post("/v1/subscriptions", data=cbor2.dumps({"schema": "quotes", "filter": {"sym": {"prefix": "A"}}}),
                        headers=cb)
    sub = await body_of(resp)
    resp = await c.post("/v1/events", data=cbor2.dumps({"schema": "quotes", "attributes": {"sym": "ABC", "volume": 7}}),
                        headers={"Content-Type": "application/cbor"})  # no Accept: answered in the request's format
    assert resp.status == 202 and resp.content_type == "application/cbor"
    resp = await c.get(f"/v1/subscriptions/{sub['id']}/events", headers={"Accept": "application/cbor"})
    page = await body_of(resp)
    assert page["events"][0]["attributes"] == {"sym": "ABC", "volume": 7}


async def test_a_client_that_leaves_an_sse_stream_is_noticed(make_nodes):
    (node,) = await make_nodes(1, sse_keepalive=0.01)
    c = node.client
    await c.put("/v1/schemas/quotes", json=QUOTES)
    sub = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"price": {"ge": 0}}})).json()
    resp = await c.get(f"/v1/subscriptions/{sub['id']}/events", headers={"Accept": "text/event-stream"})
    assert (await resp.content.readline()).startswith(b"retry:")
    await until(lambda: node.api.metrics.streams == 1)
    resp.close()  # the client goes away; the next keep-alive finds the connection gone
    await until(lambda: node.api.metrics.streams == 0, what="the stream handler ended")
    assert (await c.post("/v1/events", json={"schema": "quotes", "attributes": {"price": 1}})).status == 202
