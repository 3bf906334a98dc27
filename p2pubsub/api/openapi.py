"""The OpenAPI 3.1 document of the HTTP API, served at ``/v1/openapi.json``. Written by hand, tested against the
routes (every route documented, every documented route served) and, where installed, openapi-spec-validator."""

from __future__ import annotations

from typing import Any

import p2pubsub


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}, "application/cbor": {"schema": schema}}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": _content(_ref("Error"))}


def _ok(description: str, schema: dict[str, Any] | None = None, headers: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if schema is not None:
        out["content"] = _content(schema)
    if headers:
        out["headers"] = headers
    return out


BAD = _error("Bad input: malformed JSON/CBOR or a value the schema refuses; error.code names the problem")
TOO_LARGE = _error("The body exceeds the node's limit (body_too_large)")
MEDIA = _error("The body is neither application/json nor application/cbor (unsupported_media_type)")
UNAVAILABLE = _error("The node cannot serve this now (unavailable); see Retry-After")
SUB_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
          "description": "A subscription id returned by POST /v1/subscriptions"}
ADV_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
          "description": "An advertisement id returned by POST /v1/advertisements"}
NOT_SUPPORTED = _error("No advertisements on this node's overlay (not_supported: the DHT mode)")
SCHEMA_NAME = {"name": "name", "in": "path", "required": True,
               "schema": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_-]{0,63}$"}}


def _components(codes: dict[str, tuple[int, str]]) -> dict[str, Any]:
    number = {"type": "number"}
    scalar = {"oneOf": [{"type": "number"}, {"type": "string"}]}
    return {
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string", "enum": sorted(codes),
                                 "description": "; ".join(f"{c} ({s}): {m}" for c, (s, m) in sorted(codes.items()))},
                        "message": {"type": "string"},
                        "path": {"type": "string", "description": "the offending field, e.g. filter.price.ge"},
                        "existing": _ref("Schema"),
                    },
                }},
            },
            "Attribute": {
                "type": "object",
                "required": ["type"],
                "additionalProperties": False,
                "properties": {
                    "type": {"type": "string", "enum": ["int", "float", "string"]},
                    "min": number,
                    "max": number,
                },
                "description": "int and float take a closed domain [min, max]; string takes neither",
            },
            "SchemaBody": {
                "type": "object",
                "required": ["attributes"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "attributes": {"type": "object", "minProperties": 1, "maxProperties": 64,
                                   "additionalProperties": _ref("Attribute")},
                    "absent": {"type": "string", "enum": ["no_match", "match"], "default": "no_match",
                               "description": "whether a subscription matches an event that omits an attribute "
                                              "it constrains"},
                },
            },
            "Schema": {
                "type": "object",
                "required": ["name", "attributes", "absent"],
                "properties": {
                    "name": {"type": "string"},
                    "attributes": {"type": "object", "additionalProperties": _ref("Attribute")},
                    "absent": {"type": "string", "enum": ["no_match", "match"]},
                },
            },
            "Predicates": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": False,
                "properties": {"eq": scalar, "ge": number, "gt": number, "le": number, "lt": number,
                               "prefix": {"type": "string"}},
                "description": "numbers: any of eq ge gt le lt (intersected); strings: exactly one of eq, prefix",
            },
            "Filter": {"type": "object", "minProperties": 1, "additionalProperties": _ref("Predicates")},
            "SubscriptionRequest": {
                "type": "object",
                "required": ["schema", "filter"],
                "additionalProperties": False,
                "properties": {
                    "schema": {"type": "string"},
                    "filter": _ref("Filter"),
                    "deliver_to": {"type": ["string", "null"], "format": "uri",
                                   "description": "webhook: notifications are POSTed here in batches, retried "
                                                  "with exponential backoff"},
                },
            },
            "Delivery": {
                "type": "object",
                "properties": {
                    "cursor": {"type": "string", "description": "cursor of the newest notification"},
                    "oldest": {"type": "string"},
                    "buffered": {"type": "integer"},
                    "capacity": {"type": "integer"},
                    "dropped": {"type": "integer", "description": "notifications lost to overflow, in all"},
                    "webhook": {"type": "object"},
                },
            },
            "Subscription": {
                "type": "object",
                "required": ["id", "schema", "filter", "events"],
                "properties": {
                    "id": {"type": "string"},
                    "schema": {"type": "string"},
                    "filter": _ref("Filter"),
                    "deliver_to": {"type": ["string", "null"]},
                    "created_at": {"type": ["number", "null"]},
                    "events": {"type": "string", "description": "path of the notification stream"},
                    "delivery": _ref("Delivery"),
                    "node": {"type": "object"},
                },
            },
            "Event": {
                "type": "object",
                "required": ["id", "schema", "attributes", "published_at"],
                "properties": {
                    "id": {"type": "string"},
                    "schema": {"type": "string"},
                    "attributes": {"type": "object", "additionalProperties": scalar},
                    "published_at": {"type": "number", "description": "the publishing node's clock, seconds"},
                },
            },
            "EventPage": {
                "type": "object",
                "required": ["events", "cursor", "dropped"],
                "properties": {
                    "events": {"type": "array", "items": _ref("Event")},
                    "cursor": {"type": "string", "description": "pass as ?after= to read on"},
                    "dropped": {"type": "integer", "description": "notifications after your cursor lost to "
                                                                  "overflow (the buffer keeps the newest)"},
                },
            },
            "AdvertisementRequest": {
                "type": "object",
                "required": ["schema", "filter"],
                "additionalProperties": False,
                "properties": {"schema": {"type": "string"}, "filter": _ref("Filter")},
                "description": "what this node's clients will publish: an event must carry exactly the filter's "
                               "attributes, each inside its predicates",
            },
            "Advertisement": {
                "type": "object",
                "required": ["id", "schema", "filter"],
                "properties": {
                    "id": {"type": "string"},
                    "schema": {"type": "string"},
                    "filter": _ref("Filter"),
                    "created_at": {"type": ["number", "null"]},
                    "node": {"type": "object", "description": "overlay, broker position and tenure"},
                },
            },
            "PublishRequest": {
                "type": "object",
                "required": ["schema", "attributes"],
                "additionalProperties": False,
                "properties": {"schema": {"type": "string"},
                               "attributes": {"type": "object", "minProperties": 1, "additionalProperties": scalar}},
            },
            "Published": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            "Node": {
                "type": "object",
                "description": "node status from the runtime (id, addresses and ports, ready, peers, hosted tree "
                               "nodes, stored subscriptions, queue stats) plus http and delivery figures",
                "properties": {
                    "id": {"type": "string"},
                    "ready": {"type": "boolean"},
                    "http": {"type": "object"},
                    "delivery": {"type": "object"},
                },
            },
            "Health": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
        }
    }


def build_openapi(options: Any, codes: dict[str, tuple[int, str]]) -> dict[str, Any]:
    body = {"application/json": {}, "application/cbor": {}}

    def request_body(name: str) -> dict[str, Any]:
        return {"required": True, "content": {k: {"schema": _ref(name)} for k in body}}

    paths = {
        "/v1/schemas/{name}": {
            "parameters": [SCHEMA_NAME],
            "put": {
                "operationId": "putSchema",
                "summary": "Register a schema (stored in the DHT: any node serves any schema)",
                "requestBody": request_body("SchemaBody"),
                "responses": {
                    "201": _ok("Created", _ref("Schema"), {"Location": {"schema": {"type": "string"}}}),
                    "200": _ok("An identical schema exists", _ref("Schema")),
                    "400": BAD,
                    "409": _error("A different schema of that name exists (schema_conflict, error.existing)"),
                    "413": TOO_LARGE, "415": MEDIA, "503": UNAVAILABLE,
                },
            },
            "get": {
                "operationId": "getSchema",
                "summary": "A schema by name",
                "responses": {"200": _ok("The schema", _ref("Schema")), "400": BAD,
                              "404": _error("No such schema (unknown_schema)"), "503": UNAVAILABLE},
            },
        },
        "/v1/subscriptions": {
            "post": {
                "operationId": "subscribe",
                "summary": "Subscribe; answered once the subscription is installed in the tree, so every event "
                           "published after the answer can reach it",
                "requestBody": request_body("SubscriptionRequest"),
                "responses": {
                    "201": _ok("Installed", _ref("Subscription"), {"Location": {"schema": {"type": "string"}}}),
                    "400": BAD, "413": TOO_LARGE, "415": MEDIA, "503": UNAVAILABLE,
                },
            },
        },
        "/v1/subscriptions/{id}": {
            "parameters": [SUB_ID],
            "get": {
                "operationId": "getSubscription",
                "summary": "A subscription homed at this node, with its delivery state",
                "responses": {"200": _ok("The subscription", _ref("Subscription")),
                              "404": _error("No such subscription (unknown_subscription)")},
            },
            "delete": {
                "operationId": "unsubscribe",
                "summary": "Unsubscribe: delivery stops at once, the tree forgets the subscription",
                "responses": {"204": {"description": "Removed"},
                              "404": _error("No such subscription (unknown_subscription)"),
                              "503": UNAVAILABLE},
            },
        },
        "/v1/subscriptions/{id}/events": {
            "parameters": [SUB_ID],
            "get": {
                "operationId": "events",
                "summary": "Notifications after a cursor: a long poll, or Server-Sent Events with "
                           "Accept: text/event-stream",
                "description": (
                    f"Each subscription buffers its newest notifications (bounded; on overflow the oldest are "
                    f"dropped and reported in `dropped`). A long poll answers at once when notifications after "
                    f"`after` exist, else waits up to `wait` seconds (at most {options.max_wait:g}). As SSE: "
                    f"`id: <cursor>` and `data: <Event JSON>` per notification, `event: dropped` after an "
                    f"overflow, `event: closed` when the subscription is deleted, a `: keep-alive` comment every "
                    f"{options.sse_keepalive:g} s while idle; reconnect with `Last-Event-ID` to resume."
                ),
                "parameters": [
                    {"name": "after", "in": "query", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
                     "description": "cursor of the last notification seen; omitted: from the oldest buffered"},
                    {"name": "wait", "in": "query",
                     "schema": {"type": "number", "minimum": 0, "maximum": options.max_wait, "default": 0},
                     "description": "seconds to wait for a notification when none is there"},
                    {"name": "limit", "in": "query",
                     "schema": {"type": "integer", "minimum": 1, "maximum": options.max_page_limit,
                                "default": options.page_limit}},
                    {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"},
                     "description": "SSE resumption; takes precedence over `after`"},
                ],
                "responses": {
                    "200": {
                        "description": "A page of notifications, or an event stream",
                        "content": _content(_ref("EventPage")) | {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    "400": _error("Bad cursor, wait or limit (invalid_cursor, invalid_wait, invalid_limit)"),
                    "404": _error("No such subscription, or deleted while waiting (unknown_subscription)"),
                },
            },
        },
        "/v1/events": {
            "post": {
                "operationId": "publish",
                "summary": "Publish an event",
                "requestBody": request_body("PublishRequest"),
                "responses": {"202": _ok("Accepted for delivery", _ref("Published")), "400": BAD,
                              "409": _error("Overlay modes: the event conforms to no live advertisement of this "
                                            "node's clients (no_advertisement)"),
                              "413": TOO_LARGE, "415": MEDIA, "503": UNAVAILABLE},
            },
        },
        "/v1/advertisements": {
            "post": {
                "operationId": "advertise",
                "summary": "Advertise (SCOT / PADRES overlay modes); answered once installed, so events published "
                           "after the answer reach every matching subscription installed before",
                "requestBody": request_body("AdvertisementRequest"),
                "responses": {
                    "201": _ok("Installed", _ref("Advertisement"), {"Location": {"schema": {"type": "string"}}}),
                    "400": BAD, "404": NOT_SUPPORTED, "413": TOO_LARGE, "415": MEDIA, "503": UNAVAILABLE,
                },
            },
        },
        "/v1/advertisements/{id}": {
            "parameters": [ADV_ID],
            "get": {
                "operationId": "getAdvertisement",
                "summary": "A live advertisement of this node's clients",
                "responses": {"200": _ok("The advertisement", _ref("Advertisement")),
                              "404": _error("No such advertisement (unknown_advertisement), or none on this "
                                            "overlay (not_supported)")},
            },
            "delete": {
                "operationId": "unadvertise",
                "summary": "Withdraw an advertisement: this node's events conforming only to it are refused from "
                           "now on",
                "responses": {"204": {"description": "Withdrawn"},
                              "404": _error("No such advertisement (unknown_advertisement), or none on this "
                                            "overlay (not_supported)"),
                              "503": UNAVAILABLE},
            },
        },
        "/v1/node": {
            "get": {"operationId": "node", "summary": "This node's status",
                    "responses": {"200": _ok("Status", _ref("Node"))}},
        },
        "/healthz": {
            "get": {"operationId": "health", "summary": "Liveness (cheap: does not ask the node)",
                    "responses": {"200": _ok("Alive", _ref("Health"))}},
        },
        "/metrics": {
            "get": {
                "operationId": "metrics",
                "summary": "Prometheus text format: HTTP requests and latency by route and status, delivery and "
                           "node figures",
                "responses": {"200": {"description": "Metrics",
                                      "content": {"text/plain": {"schema": {"type": "string"}}}},
                              "501": _error("prometheus-client is not installed (metrics_unavailable)")},
            },
        },
        "/v1/openapi.json": {
            "get": {"operationId": "openapi", "summary": "This document",
                    "responses": {"200": {"description": "OpenAPI 3.1",
                                          "content": {"application/json": {"schema": {"type": "object"}}}}}},
        },
    }
    common = {"404": _error("No such route (not_found)"), "405": _error("Method not allowed (method_not_allowed)")}
    for item in paths.values():
        for method, op in item.items():
            if method != "parameters":
                op["responses"].setdefault("405", common["405"])
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "p2pubsub node API",
            "version": p2pubsub.__version__,
            "description": "Content-based publish/subscribe over a Kademlia DHT (a distributed 2d-tree), or "
                           "on a SCOT overlay (OctopiA, or a PADRES-style baseline) whose brokers take their "
                           "positions through the DHT. Each client talks to its local node. Bodies are JSON, or CBOR "
                           f"with Content-Type/Accept: application/cbor; at most {options.max_body} bytes.",
        },
        "paths": paths,
        "components": _components(codes),
    }


__all__ = ["build_openapi"]
