"""Bad input on every endpoint: a 4xx with the JSON (or CBOR) error shape whose code names the problem; and fuzzing
(random JSON/CBOR values and bytes as bodies, random query strings) that never gets a 5xx."""

from __future__ import annotations

import datetime
import http.client
import json
from urllib.parse import quote, urlsplit

import cbor2
import pytest
from apihelpers import QUOTES, ServerThread, body_of
from hypothesis import given, settings
from hypothesis import strategies as st

from p2pubsub.api import ERROR_CODES

CB = {"Content-Type": "application/cbor"}
JS = {"Content-Type": "application/json"}
BIG = 64 * 1024 + 1


def js(value) -> dict:
    return {"data": json.dumps(value), "headers": JS}


def cb(value) -> dict:
    return {"data": cbor2.dumps(value), "headers": CB}


def raw(data: bytes, ctype: str = "application/json") -> dict:
    return {"data": data, "headers": {"Content-Type": ctype}}


NAN_PRICE = cb({"schema": "quotes", "attributes": {"price": float("nan")}})
SUB = {"schema": "quotes", "filter": {"price": {"ge": 1}}}
EV = {"schema": "quotes", "attributes": {"price": 1.5}}

CASES = [
    # --- PUT /v1/schemas/{name} ---
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": {'), 400, "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b"", "application/json"), 400, "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": {}, "attributes": {}}'), 400, "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": {"x": {"type": "float", "min": NaN, "max": 1}}}'), 400,
     "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": {"x": {"type": "float", "min": 0, "max": 1e999}}}'), 400,
     "not_finite"),
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": "\xff\xfe"}'), 400, "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b'{"attributes": {"\\ud800": {"type": "string"}}}'), 400, "invalid_string"),
    ("PUT", "/v1/schemas/s2", raw(b"[" * 5000 + b"]" * 5000), 400, "malformed_json"),
    ("PUT", "/v1/schemas/s2", raw(b"[" * 40 + b"]" * 40), 400, "too_deep"),
    ("PUT", "/v1/schemas/s2", raw(b"\xbf\x61", "application/cbor"), 400, "malformed_cbor"),
    ("PUT", "/v1/schemas/s2", raw(cbor2.dumps({"attributes": {}}) + b"\x00", "application/cbor"), 400,
     "malformed_cbor"),
    ("PUT", "/v1/schemas/s2", raw(b"\x81" * 100 + b"\x01", "application/cbor"), 400, "malformed_cbor"),
    ("PUT", "/v1/schemas/s2", raw(b"\xa2\x61a\x01\x61a\x02", "application/cbor"), 400, "malformed_cbor"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": {"x": {"type": "float", "min": float("nan"), "max": 1}}}), 400,
     "not_finite"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": {"x": {"type": "float", "min": 0, "max": float("inf")}}}), 400,
     "not_finite"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": {1: {"type": "string"}}}), 400, "invalid_key"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": {"x": {"type": b"string"}}}), 400, "unsupported_value"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)}), 400,
     "unsupported_value"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": cbor2.CBORTag(999, 1)}), 400, "unsupported_value"),
    ("PUT", "/v1/schemas/s2", cb({"attributes": cbor2.undefined}), 400, "unsupported_value"),
    ("PUT", "/v1/schemas/s2", js([1, 2]), 400, "invalid_schema"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {}}), 400, "invalid_schema"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {"x": {"type": "bool"}}}), 400, "invalid_schema"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {"x": {"type": "int", "min": "0", "max": 5}}}), 400, "wrong_type"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {"x": {"type": "int", "min": 5, "max": 0}}}), 400, "invalid_schema"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {"bad name": {"type": "string"}}}), 400, "invalid_name"),
    ("PUT", "/v1/schemas/s2", js({"attributes": {"x": {"type": "string"}}, "extra": 1}), 400, "invalid_schema"),
    ("PUT", "/v1/schemas/" + quote("bad name!"), js(QUOTES), 400, "invalid_name"),
    ("PUT", "/v1/schemas/quotes", js({"attributes": {"price": {"type": "string"}}}), 409, "schema_conflict"),
    ("PUT", "/v1/schemas/s2", raw(b"attributes=1", "application/x-www-form-urlencoded"), 415,
     "unsupported_media_type"),
    ("PUT", "/v1/schemas/s2", raw(b"{}", "text/plain"), 415, "unsupported_media_type"),
    ("PUT", "/v1/schemas/s2", raw(b" " * BIG), 413, "body_too_large"),
    # --- GET /v1/schemas/{name} ---
    ("GET", "/v1/schemas/nope", {}, 404, "unknown_schema"),
    ("GET", "/v1/schemas/" + quote("no/pe", safe=""), {}, 400, "invalid_name"),
    # --- POST /v1/subscriptions ---
    ("POST", "/v1/subscriptions", raw(b"{'schema': 'quotes'}"), 400, "malformed_json"),
    ("POST", "/v1/subscriptions", raw(b"\x1c", "application/cbor"), 400, "malformed_cbor"),
    ("POST", "/v1/subscriptions", js("quotes"), 400, "invalid_body"),
    ("POST", "/v1/subscriptions", js({"filter": {"price": {"ge": 1}}}), 400, "missing_field"),
    ("POST", "/v1/subscriptions", js({**SUB, "limit": 3}), 400, "unknown_field"),
    ("POST", "/v1/subscriptions", js({"schema": 7, "filter": {}}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": [1]}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", js({"schema": "nope", "filter": {"price": {"ge": 1}}}), 400, "unknown_schema"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"cost": {"ge": 1}}}), 400, "unknown_attribute"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {}}), 400, "empty_filter"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"price": 3}}), 400, "invalid_filter"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"price": {"near": 3}}}), 400,
     "unknown_operator"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"sym": {"ge": "A"}}}), 400, "unknown_operator"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"price": {"ge": 5, "lt": 5}}}), 400,
     "empty_range"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"price": {"ge": -1}}}), 400, "out_of_domain"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"price": {"ge": "1"}}}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"volume": {"eq": True}}}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"volume": {"eq": 1.5}}}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", js({"schema": "quotes", "filter": {"sym": {"eq": "x" * 1025}}}), 400, "too_long"),
    ("POST", "/v1/subscriptions", cb({"schema": "quotes", "filter": {"price": {"le": float("nan")}}}), 400,
     "not_finite"),
    ("POST", "/v1/subscriptions", cb({"schema": "quotes", "filter": {"price": {"le": 2**70}}}), 400,
     "out_of_domain"),
    ("POST", "/v1/subscriptions", js({**SUB, "deliver_to": "ftp://x/"}), 400, "invalid_deliver_to"),
    ("POST", "/v1/subscriptions", js({**SUB, "deliver_to": "http://"}), 400, "invalid_deliver_to"),
    ("POST", "/v1/subscriptions", js({**SUB, "deliver_to": "http://h:99999/"}), 400, "invalid_deliver_to"),
    ("POST", "/v1/subscriptions", js({**SUB, "deliver_to": 5}), 400, "wrong_type"),
    ("POST", "/v1/subscriptions", raw(b"x", "multipart/form-data; boundary=x"), 415, "unsupported_media_type"),
    ("POST", "/v1/subscriptions", raw(b'{"a":"' + b"x" * BIG + b'"}'), 413, "body_too_large"),
    # --- GET/DELETE /v1/subscriptions/{id} ---
    ("GET", "/v1/subscriptions/nope", {}, 404, "unknown_subscription"),
    ("DELETE", "/v1/subscriptions/nope", {}, 404, "unknown_subscription"),
    ("GET", "/v1/subscriptions/" + "x" * 3000, {}, 404, "unknown_subscription"),
    # --- GET /v1/subscriptions/{id}/events ---
    ("GET", "/v1/subscriptions/nope/events", {}, 404, "unknown_subscription"),
    ("GET", "/v1/subscriptions/{sub}/events?after=abc", {}, 400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events?after=-1", {}, 400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events?after=1e3", {}, 400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events?after=99", {}, 400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events?after=" + "9" * 40, {}, 400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events", {"headers": {"Accept": "text/event-stream", "Last-Event-ID": "x"}},
     400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events", {"headers": {"Accept": "text/event-stream", "Last-Event-ID": "7"}},
     400, "invalid_cursor"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=abc", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=-1", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=61", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=nan", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=inf", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?wait=1_0", {}, 400, "invalid_wait"),
    ("GET", "/v1/subscriptions/{sub}/events?limit=0", {}, 400, "invalid_limit"),
    ("GET", "/v1/subscriptions/{sub}/events?limit=1001", {}, 400, "invalid_limit"),
    ("GET", "/v1/subscriptions/{sub}/events?limit=ten", {}, 400, "invalid_limit"),
    # --- POST /v1/events ---
    ("POST", "/v1/events", raw(b'{"schema": "quotes", "attributes": {"price": 1.5}'), 400, "malformed_json"),
    ("POST", "/v1/events", raw(b'{"schema": "quotes", "attributes": {"price": Infinity}}'), 400, "malformed_json"),
    ("POST", "/v1/events", raw(b'{"schema": "quotes", "attributes": {"volume": ' + b"9" * 5000 + b"}}"), 400,
     "malformed_json"),
    ("POST", "/v1/events", raw(b"\xff", "application/cbor"), 400, "malformed_cbor"),
    ("POST", "/v1/events", NAN_PRICE, 400, "not_finite"),
    ("POST", "/v1/events", cb({"schema": "quotes", "attributes": {"volume": cbor2.CBORTag(2, b"\x01" * 40)}}), 400,
     "out_of_domain"),
    ("POST", "/v1/events", cb({"schema": "quotes", "attributes": {"sym": b"AAPL"}}), 400, "unsupported_value"),
    ("POST", "/v1/events", js({"schema": "quotes"}), 400, "missing_field"),
    ("POST", "/v1/events", js({**EV, "id": "x"}), 400, "unknown_field"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": [1]}), 400, "wrong_type"),
    ("POST", "/v1/events", js({"schema": "nope", "attributes": {"price": 1}}), 400, "unknown_schema"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"cost": 1}}), 400, "unknown_attribute"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {}}), 400, "empty_event"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"price": 1000.01}}), 400, "out_of_domain"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"price": "1"}}), 400, "wrong_type"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"price": None}}), 400, "wrong_type"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"volume": 2**80}}), 400, "out_of_domain"),
    ("POST", "/v1/events", js({"schema": "quotes", "attributes": {"sym": "é" * 600}}), 400, "too_long"),
    ("POST", "/v1/events", raw(b"<event/>", "application/xml"), 415, "unsupported_media_type"),
    ("POST", "/v1/events", raw(b"[" + b"1," * (BIG // 2) + b"1]"), 413, "body_too_large"),
    # --- advertisements: the DHT mode has none (the SCOT / PADRES modes: tests/scot) ---
    ("POST", "/v1/advertisements", js({"schema": "quotes", "filter": {"price": {"ge": 1}}}), 404, "not_supported"),
    ("GET", "/v1/advertisements/a1", {}, 404, "not_supported"),
    ("DELETE", "/v1/advertisements/a1", {}, 404, "not_supported"),
    ("PUT", "/v1/advertisements/a1", js({}), 405, "method_not_allowed"),
    # --- routes and methods ---
    ("GET", "/v2/events", {}, 404, "not_found"),
    ("GET", "/", {}, 404, "not_found"),
    ("POST", "/v1/node", js({}), 405, "method_not_allowed"),
    ("PUT", "/healthz", {}, 405, "method_not_allowed"),
    ("DELETE", "/v1/schemas/quotes", {}, 405, "method_not_allowed"),
    ("GET", "/v1/events", {}, 405, "method_not_allowed"),
    ("PATCH", "/v1/subscriptions/{sub}", js({}), 405, "method_not_allowed"),
    ("POST", "/metrics", {}, 405, "method_not_allowed"),
]


@pytest.fixture
async def node(make_nodes):
    (node,) = await make_nodes(1)
    assert (await node.client.put("/v1/schemas/quotes", json=QUOTES)).status == 201
    resp = await node.client.post("/v1/subscriptions", json=SUB)
    node.sub = (await resp.json())["id"]
    return node


async def test_every_endpoint_refuses_bad_input_with_a_named_error(node):
    seen_codes = set()
    for method, path, kwargs, status, code in CASES:
        resp = await node.client.request(method, path.format(sub=node.sub), **kwargs)
        body = await body_of(resp)
        where = f"{method} {path[:60]} {str(kwargs)[:80]}"
        assert resp.status == status, f"{where}: {resp.status} {body}"
        assert body["error"]["code"] == code, f"{where}: {body}"
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
        documented = ERROR_CODES[code][0]
        assert documented == status or (code, status) == ("unknown_schema", 404), f"{code} documented as {documented}"
        seen_codes.add(code)
    # every 4xx code the API documents is exercised above, except those only an overlay-mode node can cause
    # (tests/scot/test_scot_api.py exercises them)
    documented = {c for c, (s, _) in ERROR_CODES.items() if 400 <= s < 500}
    assert documented - seen_codes == {"no_advertisement", "unsatisfiable", "unknown_advertisement"}
    # the node survived all of it
    resp = await node.client.post("/v1/events", json=EV)
    assert resp.status == 202
    page = await (await node.client.get(f"/v1/subscriptions/{node.sub}/events")).json()
    assert len(page["events"]) == 1
    metrics = await (await node.client.get("/metrics")).text()
    assert 'status="500"' not in metrics


async def test_errors_name_the_offending_field_and_allowed_methods(node):
    c = node.client
    body = await (await c.post("/v1/subscriptions", json={"schema": "quotes", "filter": {"price": {"ge": -1}}})).json()
    assert body["error"]["path"] == "filter.price.ge" and "outside its domain" in body["error"]["message"]
    body = await body_of(await c.post("/v1/events", **NAN_PRICE))
    assert body["error"]["path"] == "attributes.price"
    resp = await c.delete("/v1/schemas/quotes")
    assert set(resp.headers["Allow"].split(",")) >= {"GET", "PUT"}
    conflict = await (await c.put("/v1/schemas/quotes", json={"attributes": {"x": {"type": "string"}}})).json()
    assert conflict["error"]["existing"]["attributes"]["price"]["max"] == 1000


async def test_identical_schema_is_200_and_conflict_is_409(node):
    c = node.client
    same = {"attributes": dict(reversed(list(QUOTES["attributes"].items())))}  # order does not matter
    resp = await c.put("/v1/schemas/quotes", json=same)
    assert resp.status == 200 and "Location" not in resp.headers
    resp = await c.put("/v1/schemas/quotes", json={**QUOTES, "absent": "match"})
    assert resp.status == 409


async def test_error_answers_in_cbor_when_the_client_asked_for_cbor(node):
    c = node.client
    resp = await c.post("/v1/events", data=NAN_PRICE["data"], headers={**CB, "Accept": "application/cbor"})
    assert resp.status == 400 and resp.content_type == "application/cbor"
    assert cbor2.loads(await resp.read())["error"]["code"] == "not_finite"
    resp = await c.get("/v1/nowhere", headers={"Accept": "application/cbor"})
    assert resp.status == 404 and cbor2.loads(await resp.read())["error"]["code"] == "not_found"
    resp = await c.post("/v1/events", data=b"\xff", headers=CB)  # no Accept: the request's own format
    assert resp.content_type == "application/cbor"
    resp = await c.post("/v1/events", data=b"\xff", headers={**CB, "Accept": "application/json"})
    assert resp.content_type == "application/json"


async def test_body_limit_is_configurable(make_nodes):
    (node,) = await make_nodes(1, max_body=256)
    resp = await node.client.put("/v1/schemas/s", json={"attributes": {f"a{i}": {"type": "string"} for i in range(20)}})
    assert resp.status == 413 and (await resp.json())["error"]["code"] == "body_too_large"
    assert "256" in (await resp.json())["error"]["message"]
    resp = await node.client.put("/v1/schemas/s", json={"attributes": {"a": {"type": "string"}}})
    assert resp.status == 201


# --- fuzzing: nothing a client sends gets a 5xx ---

KEYS = st.sampled_from(["schema", "filter", "attributes", "deliver_to", "price", "sym", "volume", "ge", "gt", "le",
                        "lt", "eq", "prefix", "type", "min", "max", "absent", "name"])
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70) | st.floats()
           | st.text(max_size=20) | st.sampled_from(["quotes", "float", "int", "string", "AAPL", "match"]))
VALUES = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(KEYS | st.text(max_size=8),
                                                                                          kids, max_size=5),
                      max_leaves=25)
# mostly valid names and numbers, so that requests get past the first checks into the model and the tree
NAMES = st.sampled_from(["price", "sym", "volume"])
ATTRS = st.one_of(NAMES, NAMES, NAMES, st.text(max_size=6))
OPS = st.one_of(*[st.sampled_from(["eq", "ge", "gt", "le", "lt", "prefix"])] * 3, st.text(max_size=4))
QUOTES_ = st.one_of(st.just("quotes"), st.just("quotes"), st.just("quotes"), SCALARS)
NUMBERS = (st.integers(-10, 1_100_000) | st.floats(-10, 1100) | st.sampled_from([0, 1000, 1_000_000, 0.0, 1000.0])
           | st.floats() | st.integers())
PRIMS = st.one_of(NUMBERS, NUMBERS, st.sampled_from(["AAPL", "A", "", "IBM"]), SCALARS)
SHAPED = st.one_of(
    st.tuples(st.just(("POST", "/v1/events")), st.fixed_dictionaries(
        {"schema": QUOTES_, "attributes": st.dictionaries(ATTRS, PRIMS, max_size=4)})),
    st.tuples(st.just(("POST", "/v1/subscriptions")), st.fixed_dictionaries(
        {"schema": QUOTES_,
         "filter": st.dictionaries(ATTRS, st.dictionaries(OPS, PRIMS, min_size=1, max_size=3) | PRIMS, max_size=3)},
        optional={"deliver_to": st.sampled_from(["http://127.0.0.1:9/", "https://x", "http://[::1]:1/a"]) | SCALARS})),
    st.tuples(st.sampled_from([("PUT", "/v1/schemas/fz"), ("PUT", "/v1/schemas/quotes")]), st.fixed_dictionaries(
        {"attributes": st.dictionaries(ATTRS, st.fixed_dictionaries(
            {"type": st.sampled_from(["int", "float", "string"]) | SCALARS},
            optional={"min": PRIMS, "max": PRIMS}) | VALUES, max_size=3)},
        optional={"absent": st.sampled_from(["match", "no_match"]) | SCALARS, "name": SCALARS})),
)
ENDPOINTS = st.sampled_from([("POST", "/v1/subscriptions"), ("POST", "/v1/events"), ("PUT", "/v1/schemas/fz"),
                             ("PUT", "/v1/schemas/quotes")])
REQUESTS = SHAPED | st.tuples(ENDPOINTS, VALUES)


@pytest.fixture(scope="module")
def server():
    with ServerThread(hosts=4, seed=5) as srv:
        srv.call(srv.service.put_schema("quotes", QUOTES))
        yield srv


def _send(server: ServerThread, method: str, path: str, body: bytes | None, headers: dict) -> tuple[int, object]:
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        ctype = resp.getheader("Content-Type", "")
    finally:
        conn.close()
    if resp.status >= 400:
        decoded = cbor2.loads(data) if ctype.startswith("application/cbor") else json.loads(data)
        assert isinstance(decoded["error"]["code"], str), decoded
    return resp.status, data


def _ok(status: int, what: str) -> None:
    assert status < 500, f"{status} for {what}"


@settings(max_examples=400)
@given(REQUESTS, st.booleans())
def test_fuzzed_bodies_never_get_a_5xx(server, request_, as_cbor):
    (method, path), body = request_
    if as_cbor:
        payload, headers = cbor2.dumps(body), CB
    else:
        payload, headers = json.dumps(body).encode(), JS  # NaN/Infinity go out as JSON would never have them
    status, _ = _send(server, method, path, payload, headers)
    _ok(status, f"{method} {path} {body!r}")


@settings(max_examples=150)
@given(ENDPOINTS, st.binary(max_size=64), st.sampled_from(["application/json", "application/cbor", "text/plain",
                                                           "", "application/cbor; charset=x", "*/*"]))
def test_fuzzed_bytes_never_get_a_5xx(server, endpoint, payload, ctype):
    method, path = endpoint
    headers = {"Content-Type": ctype} if ctype else {}
    status, _ = _send(server, method, path, payload, headers)
    _ok(status, f"{method} {path} {payload!r} {ctype}")


@settings(max_examples=150)
@given(st.dictionaries(st.sampled_from(["after", "wait", "limit", "x"]), st.text(max_size=12), max_size=3),
       st.sampled_from(["application/json", "text/event-stream;q=0", "application/cbor", "*/*"]),
       st.text(max_size=10))
def test_fuzzed_event_queries_never_get_a_5xx(server, query, accept, name):
    from urllib.parse import urlencode

    sub = server.call(server.service.subscribe("quotes", {"price": {"ge": 0}}, None)).id
    query = {k: v for k, v in query.items() if k != "wait" or not v.replace(".", "").isdigit()}  # no long waits
    status, _ = _send(server, "GET", f"/v1/subscriptions/{sub}/events?{urlencode(query)}", None, {"Accept": accept})
    _ok(status, f"events {query} {accept}")
    status, _ = _send(server, "GET", f"/v1/schemas/{quote(name, safe='')}", None, {"Accept": accept})
    _ok(status, f"schema {name!r}")
    server.call(server.service.unsubscribe(sub))
