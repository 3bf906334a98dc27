"""The REST API of SCOT nodes: advertisements (and their bad input), a publication without advertisement (409), a
standby node (503), the DHT mode's 404 not_supported, and ``p2pubsub node --overlay scot`` as real processes."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys

import cbor2
import pytest
from scothelpers import RestScot, ScotCluster, node_config, until

from p2pubsub.api import SubscriptionRegistry, make_app, start_api
from p2pubsub.cli import main as cli_main
from p2pubsub.client import ApiError, AsyncClient, Client
from p2pubsub.node.runtime import Node
from p2pubsub.node.service import NodeApiService
from p2pubsub.scot.definition import OverlayDefinition

T = {"x": {"type": "int", "min": 0, "max": 20}, "y": {"type": "float", "min": 0, "max": 10},
     "s": {"type": "string"}}
ADV = "/v1/advertisements"


def js(body):
    return {"json": body}


def raw(data: bytes, ctype: str = "application/json"):
    return {"data": data, "headers": {"Content-Type": ctype}}


BAD = [
    (raw(b""), 400, "malformed_json"),
    (js([]), 400, "invalid_body"),
    (js({"schema": "T"}), 400, "missing_field"),
    (js({"schema": "T", "filter": {"x": {"ge": 1}}, "publisher": "me"}), 400, "unknown_field"),
    (js({"schema": 1, "filter": {"x": {"ge": 1}}}), 400, "wrong_type"),
    (js({"schema": "T", "filter": [1]}), 400, "wrong_type"),
    (js({"schema": "nope", "filter": {"x": {"ge": 1}}}), 400, "unknown_schema"),
    (js({"schema": "T", "filter": {"zz": {"eq": 1}}}), 400, "unknown_attribute"),
    (js({"schema": "T", "filter": {}}), 400, "empty_filter"),
    (js({"schema": "T", "filter": {"x": {"ge": 500}}}), 400, "out_of_domain"),
    (js({"schema": "T", "filter": {"x": {"ge": 5, "le": 1}}}), 400, "empty_range"),
    (js({"schema": "T", "filter": {"x": {"near": 1}}}), 400, "unknown_operator"),
    (js({"schema": "T", "filter": {"y": {"gt": 5.0, "lt": math.nextafter(5.0, 6)}}}), 400, "unsatisfiable"),
    (raw(b"<adv/>", "application/xml"), 415, "unsupported_media_type"),
    (raw(b"[" + b"1," * 40_000 + b"1]"), 413, "body_too_large"),
]


@pytest.fixture
async def one():
    """A one-broker overlay (plus a standby node) with the REST API on both nodes."""
    rest = RestScot(ScotCluster(OverlayDefinition.build((), 1, vertices=("A",)), seed=2, lease=2.0))
    await rest.cluster.form(extra_per_cluster=1)
    await rest.serve_all()
    yield rest
    await rest.close()


async def test_advertisement_endpoints_refuse_bad_input_precisely(one):
    import aiohttp

    api = one.clients[0]
    await api.put_schema("T", T)
    async with aiohttp.ClientSession(one.apis[0].url) as http:
        for kwargs, status, code in BAD:
            resp = await http.post(ADV, **kwargs)
            body = await resp.json()
            assert (resp.status, body["error"]["code"]) == (status, code), (kwargs, body)
        for method, path, status, code in [("GET", f"{ADV}/nope", 404, "unknown_advertisement"),
                                           ("DELETE", f"{ADV}/nope", 404, "unknown_advertisement"),
                                           ("PUT", f"{ADV}/nope", 405, "method_not_allowed"),
                                           ("GET", ADV, 405, "method_not_allowed")]:
            resp = await http.request(method, path)
            assert (resp.status, (await resp.json())["error"]["code"]) == (status, code), (method, path)
        # publish needs an advertisement of this node's clients that the event conforms to
        resp = await http.post("/v1/events", json={"schema": "T", "attributes": {"x": 3}})
        assert resp.status == 409 and (await resp.json())["error"]["code"] == "no_advertisement"
        resp = await http.post(ADV, data=cbor2.dumps({"schema": "T", "filter": {"x": {"le": 5}}}),
                               headers={"Content-Type": "application/cbor"})
        assert resp.status == 201 and resp.content_type == "application/cbor"
        adv = cbor2.loads(await resp.read())
        assert resp.headers["Location"] == f"{ADV}/{adv['id']}"
        assert adv["filter"] == {"x": {"ge": 0, "le": 5}} and adv["node"]["broker"] == "B(A,0)"
    assert await api.advertisement(adv["id"]) == adv
    sub = await api.subscribe("T", {"x": {"ge": 2}})
    await api.publish("T", {"x": 3})
    for attrs in ({"x": 6}, {"x": 3, "y": 1.0}, {"y": 1.0}):  # outside, or not exactly the advertised attributes
        with pytest.raises(ApiError) as e:
            await api.publish("T", attrs)
        assert (e.value.status, e.value.code) == (409, "no_advertisement")
    page = await api.events(sub["id"], wait=5)
    assert [ev["attributes"] for ev in page.events] == [{"x": 3}]
    assert await api.unadvertise(adv["id"]) is True
    assert await api.unadvertise(adv["id"]) is False
    assert await api.advertisement(adv["id"]) is None
    with pytest.raises(ApiError) as e:
        await api.publish("T", {"x": 3})
    assert e.value.code == "no_advertisement"
    info = await api.node()
    assert info["overlay"]["state"] == "active" and info["overlay"]["position"] == {"region": "A", "cluster": 0}
    metrics = await api.metrics()
    assert "p2pubsub_node_active 1.0" in metrics and 'status="500"' not in metrics


async def test_a_standby_node_serves_schemas_but_no_client_commands(one):
    standby = one.clients[1]
    assert (await standby.node())["overlay"]["state"] == "standby"
    await standby.put_schema("T", T)
    assert (await one.clients[0].get_schema("T"))["name"] == "T"
    for call in (standby.advertise("T", {"x": {"ge": 1}}), standby.subscribe("T", {"x": {"ge": 1}}),
                 standby.publish("T", {"x": 1})):
        with pytest.raises(ApiError) as e:
            await call
        assert (e.value.status, e.value.code) == (503, "unavailable") and "standby" in e.value.message


async def test_a_dht_mode_node_has_no_advertisements():
    node = Node(node_config(), )
    await node.start()
    registry = SubscriptionRegistry()
    api = await start_api(make_app(NodeApiService(node, registry), registry), "127.0.0.1", 0)
    client = AsyncClient(api.url)
    try:
        for call in (client.advertise("T", {"x": {"ge": 1}}), client.advertisement("a"), client.unadvertise("a")):
            with pytest.raises(ApiError) as e:
                await call
            assert (e.value.status, e.value.code) == (404, "not_supported") and "--overlay" in e.value.message
    finally:
        await client.close()
        await api.close()
        await registry.aclose()
        await node.stop(graceful=False)


def test_node_command_line_refuses_inconsistent_overlay_options(capsys):
    for argv, words in [
        (["--overlay", "scot"], "--scot NAME"),
        (["--scot", "ov"], "--overlay scot"),
        (["--overlay", "scot", "--scot", "ov", "--scot-tree", "A-B"], "--scot-clusters"),
        (["--overlay", "padres", "--scot", "ov", "--scot-tree", "A-B,B-A", "--scot-clusters", "2"], "appears twice"),
        (["--overlay", "scot", "--scot", "bad name"], "overlay name"),
    ]:
        assert cli_main(["node", "--dht-port", "0", "--http-port", "0", *argv]) == 2
        assert words in capsys.readouterr().err, argv


def _start(*args: str) -> tuple[subprocess.Popen, str, int]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "p2pubsub", "node", "--dht-port", "0", "--http-port", "0",
                             "--log-level", "warning", "--scot-lease", "2", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    url = line.rsplit("api ", 1)[1].strip()
    port = int(line.split("dht udp ", 1)[1].split(",")[0].rsplit(":", 1)[1])
    return proc, url, port


async def test_the_node_command_runs_a_scot_overlay_of_processes():
    procs = []
    try:
        first, url1, port1 = _start("--overlay", "scot", "--scot", "ov", "--scot-tree", "A-B", "--scot-clusters", "1")
        procs.append(first)
        second, url2, _ = _start("--overlay", "scot", "--scot", "ov", "--bootstrap", f"127.0.0.1:{port1}")
        procs.append(second)
        # a node that brings a different definition of "ov" does not start
        other = subprocess.run([sys.executable, "-m", "p2pubsub", "node", "--dht-port", "0", "--http-port", "0",
                                "--overlay", "scot", "--scot", "ov", "--scot-tree", "A-B", "--scot-clusters", "2",
                                "--bootstrap", f"127.0.0.1:{port1}"], capture_output=True, text=True, timeout=30)
        assert other.returncode == 2 and "defined differently" in other.stderr
        with Client(url1) as c1, Client(url2) as c2:

            def formed() -> bool:
                return all(all(link["synced"] for link in c.node()["overlay"].get("links", {}).values())
                           and c.node()["overlay"]["state"] == "active" for c in (c1, c2))

            await until(formed, 15, "both brokers active and linked")
            assert {c1.node()["overlay"]["position"]["region"], c2.node()["overlay"]["position"]["region"]} == {
                "A", "B"}
            c1.put_schema("T", T)
            c1.advertise("T", {"s": {"prefix": "a"}})
            sub = c2.subscribe("T", {"s": {"eq": "ab"}})
            c1.publish("T", {"s": "ab"})
            c1.publish("T", {"s": "ac"})
            page = c2.events(sub["id"], wait=5)
            assert [e["attributes"] for e in page.events] == [{"s": "ab"}]
        for p in procs:
            p.send_signal(signal.SIGTERM)
        assert [p.wait(timeout=20) for p in procs] == [0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
