"""Real nodes with their REST API on loopback (port 0): clients subscribe through some nodes and publish through
others; every client gets exactly the events its filter matches, by long poll and by SSE."""

import asyncio
import os
import random
import signal
import subprocess
import sys

import pytest
from nodecluster import until

from p2pubsub.client import ApiError, AsyncClient, Client
from p2pubsub.model import Schema, parse_event, parse_filter
from p2pubsub.node.config import NodeConfig
from p2pubsub.node.main import serve

SCHEMA = {"price": {"type": "float", "min": 0, "max": 100}, "sym": {"type": "string"},
          "vol": {"type": "int", "min": 0, "max": 1000}}


class ApiCluster:
    def __init__(self) -> None:
        self.stops: list[asyncio.Event] = []
        self.tasks: list[asyncio.Task] = []
        self.urls: list[str] = []
        self.nodes = []

    async def add(self) -> str:
        boot = () if not self.nodes else (("127.0.0.1", self.nodes[0].host[2]),)
        config = NodeConfig(dht_port=0, http_port=0, capacity=4, bootstrap=boot, tick_interval=0.5)
        stop, started = asyncio.Event(), asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(config, stop, lambda node, api: started.set_result((node, api))))
        node, api = await asyncio.wait_for(started, 10)
        self.stops.append(stop)
        self.tasks.append(task)
        self.nodes.append(node)
        self.urls.append(api.url)
        return api.url

    async def close(self) -> list[int]:
        for stop in reversed(self.stops):
            stop.set()
        return list(await asyncio.gather(*self.tasks))


async def test_clients_get_exactly_their_events_by_long_poll_and_sse():
    cluster = ApiCluster()
    clients = []
    try:
        for _ in range(5):
            clients.append(AsyncClient(await cluster.add()))
        _, created = await clients[0].put_schema("stocks", SCHEMA)
        assert created
        assert (await clients[4].get_schema("stocks"))["attributes"]["vol"]["max"] == 1000  # any node serves it
        with pytest.raises(ApiError) as conflict:
            await clients[2].put_schema("stocks", {"price": {"type": "float", "min": 0, "max": 5}})
        assert conflict.value.status == 409 and conflict.value.code == "schema_conflict"
        schema = Schema.from_dict("stocks", {"attributes": SCHEMA})
        rng = random.Random(7)
        subs = {}  # sub id -> (client index, parsed filter)
        for _ in range(24):
            i = rng.randrange(1, 5)
            lo = rng.uniform(0, 100)
            body = {"price": {"ge": lo, "le": min(100, lo + rng.uniform(5, 60))}}
            if rng.random() < 0.3:
                body["sym"] = {"eq": rng.choice(["A", "B"])}
            sub = await clients[i].subscribe("stocks", body)
            subs[sub["id"]] = (i, parse_filter(schema, body))
        sse_ids = list(subs)[:6]
        streamed: dict[str, list[str]] = {s: [] for s in sse_ids}

        async def follow(sub_id: str) -> None:
            async for event in clients[subs[sub_id][0]].stream(sub_id):
                streamed[sub_id].append(event["id"])

        followers = [asyncio.create_task(follow(s)) for s in sse_ids]
        published = {}
        for _ in range(25):
            values = {"price": rng.uniform(0, 100), "sym": rng.choice("ABC"), "vol": rng.randint(0, 1000)}
            event_id = await clients[rng.randrange(5)].publish("stocks", values)
            published[event_id] = parse_event(schema, values)
        expected = {s: {e for e, ev in published.items() if sub.matches(ev.values)} for s, (i, sub) in subs.items()}
        assert sum(map(len, expected.values())) > 30
        got = {}
        for sub_id, (i, _) in subs.items():
            ids, cursor = [], None
            while len(ids) < len(expected[sub_id]):
                page = await clients[i].events(sub_id, after=cursor, wait=5)
                assert page.events or len(ids) == len(expected[sub_id]), f"long poll of {sub_id} timed out"
                ids += [e["id"] for e in page.events]
                cursor = page.cursor
            tail = await clients[i].events(sub_id, after=cursor, wait=0.2)
            got[sub_id] = ids + [e["id"] for e in tail.events]
        for sub_id in subs:
            assert sorted(got[sub_id]) == sorted(expected[sub_id]), sub_id  # nothing missing, nothing extra
            assert len(set(got[sub_id])) == len(got[sub_id])  # no duplicate
        await until(lambda: all(len(streamed[s]) >= len(expected[s]) for s in sse_ids), 10, "SSE streams")
        for s in sse_ids:
            assert streamed[s] == got[s]  # the same stream, in the same order
        for f in followers:
            f.cancel()
        assert (await clients[3].node())["ready"] is True
        assert await clients[subs[sse_ids[0]][0]].unsubscribe(sse_ids[0]) is True
        assert await clients[subs[sse_ids[0]][0]].subscription(sse_ids[0]) is None
    finally:
        for c in clients:
            await c.close()
        assert await cluster.close() == [0] * len(cluster.tasks)


async def test_bad_input_never_takes_the_node_down():
    cluster = ApiCluster()
    client = AsyncClient(await cluster.add())
    try:
        for call, code in [
            (client.subscribe("nope", {"x": {"eq": 1}}), "unknown_schema"),
            (client.publish("nope", {"x": 1}), "unknown_schema"),
            (client.put_schema("bad name", SCHEMA), "invalid_name"),
            (client.put_schema("s", {"p": {"type": "float", "min": 1, "max": 0}}), "invalid_schema"),
        ]:
            with pytest.raises(ApiError) as e:
                await call
            assert e.value.code == code and 400 <= e.value.status < 500
        await client.put_schema("s", SCHEMA)
        for body, code in [({"price": {"ge": 200}}, "out_of_domain"), ({"zzz": {"eq": 1}}, "unknown_attribute"),
                           ({"price": {"eq": "x"}}, "wrong_type"), ({}, "empty_filter")]:
            with pytest.raises(ApiError) as e:
                await client.subscribe("s", body)
            assert e.value.code == code
        with pytest.raises(ApiError) as e:
            await client.publish("s", {"price": float("nan")})
        assert e.value.status == 400
        assert (await client.node())["ready"] is True
    finally:
        await client.close()
        await cluster.close()


def test_the_node_command_starts_reports_its_ports_and_stops_cleanly_on_sigterm():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "p2pubsub", "node", "--dht-port", "0", "--http-port", "0", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = proc.stdout.readline()
        assert "ready" in line, line + proc.stderr.read()
        url = line.rsplit("api ", 1)[1].strip()
        with Client(url) as c:
            info = c.node()
            assert info["ready"] is True and info["dht_port"] > 0 and info["http_port"] == int(url.rsplit(":", 1)[1])
            c.put_schema("s", SCHEMA)
            sub = c.subscribe("s", {"price": {"ge": 1}})
            c.publish("s", {"price": 2.0})
            page = c.events(sub["id"], wait=5)
            assert [e["attributes"]["price"] for e in page.events] == [2.0]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
