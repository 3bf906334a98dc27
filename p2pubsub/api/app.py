"""The HTTP REST API of a node (aiohttp): it only translates requests into :class:`NodeService` calls.

``make_app(service, registry)`` builds the application; :mod:`p2pubsub.api.server` binds it. Every error a client
can cause is answered with ``{"error": {"code": ..., "message": ..., "path"?: ...}}`` (CBOR when the client asked
for CBOR) and a 4xx status; the table of codes is in :data:`ERROR_CODES`.

Advertisements (``/v1/advertisements``) exist where the service has them: a service that also offers
``advertise(schema, filter) -> dict``, ``unadvertise(id) -> bool`` and ``advertisement(id) -> dict | None`` (the
SCOT / PADRES overlay modes, :class:`p2pubsub.scot.service.ScotApiService`). Elsewhere (the DHT mode) these routes
answer 404 ``not_supported``. A :class:`ServiceError` that carries an HTTP ``status`` (e.g. a broker core's
refusal of a publication without advertisement, 409 ``no_advertisement``) is answered with that status.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from ..model import ValidationError
from ..model.schema import check_name
from .codec import EVENT_STREAM, ApiError, dump_json, read_body, respond, wants_event_stream
from .delivery import CursorAhead, Page, SubscriptionBuffer, SubscriptionRegistry, check_webhook_url
from .metrics import CONTENT_TYPE, ApiMetrics
from .openapi import build_openapi
from .service import NodeService, SchemaConflict, ServiceError, ServiceUnavailable, UnknownSchema

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 64 * 1024
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
_CURSOR = re.compile(r"^[0-9]{1,18}$")
_SECONDS = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,9})?$")
_COUNT = re.compile(r"^[0-9]{1,9}$")

# status, meaning: for the docs, the OpenAPI document and the tests
ERROR_CODES: dict[str, tuple[int, str]] = {
    "malformed_json": (400, "the body is not UTF-8 JSON (or uses NaN/Infinity, repeats a key, is empty)"),
    "malformed_cbor": (400, "the body is not one well-formed CBOR item (or repeats a key, has trailing bytes)"),
    "unsupported_value": (400, "a CBOR value JSON cannot hold: tags (dates, decimals, ...), bytes, undefined"),
    "invalid_key": (400, "an object key that is not a string (CBOR)"),
    "invalid_string": (400, "a string that is not valid Unicode (lone surrogates)"),
    "not_finite": (400, "NaN or an infinity"),
    "too_deep": (400, "values nested deeper than 32 levels"),
    "invalid_body": (400, "the body is not an object of the expected shape"),
    "missing_field": (400, "a required field is absent"),
    "unknown_field": (400, "a field the endpoint does not take"),
    "wrong_type": (400, "a field or value of the wrong type"),
    "invalid_name": (400, "a schema or attribute name outside [A-Za-z_][A-Za-z0-9_-]{0,63}"),
    "invalid_schema": (400, "a schema definition the model refuses"),
    "unknown_schema": (400, "the body names a schema that is not registered (404 on GET /v1/schemas/{name})"),
    "unknown_attribute": (400, "a filter or event names an attribute the schema does not have"),
    "unknown_operator": (400, "a predicate other than eq/ge/gt/le/lt (numbers) or eq/prefix (strings)"),
    "invalid_filter": (400, "a filter that is not an object of attribute -> predicates"),
    "empty_filter": (400, "a filter that constrains no attribute"),
    "empty_range": (400, "predicates on one attribute that admit no value"),
    "out_of_domain": (400, "a value outside its attribute's [min, max]"),
    "too_long": (400, "a string value over 1024 bytes"),
    "empty_event": (400, "an event without attributes"),
    "invalid_deliver_to": (400, "deliver_to is not an absolute http(s) URL"),
    "invalid_cursor": (400, "after / Last-Event-ID is not a cursor of this subscription"),
    "invalid_wait": (400, "wait is not a number of seconds in [0, 60]"),
    "invalid_limit": (400, "limit is not an integer in [1, 1000]"),
    "unsatisfiable": (400, "an advertisement no event can conform to (an empty float range)"),
    "not_found": (404, "no such route"),
    "unknown_subscription": (404, "no such subscription at this node (or it was deleted)"),
    "unknown_advertisement": (404, "no such advertisement at this node (or it was withdrawn)"),
    "not_supported": (404, "this node's overlay has no such feature (advertisements: not in the DHT mode; run "
                           "the node with --overlay scot or padres)"),
    "method_not_allowed": (405, "the route does not take this method (see Allow)"),
    "schema_conflict": (409, "a different schema of that name exists (error.existing)"),
    "no_advertisement": (409, "the event conforms to no live advertisement of this node's clients (overlay modes: "
                              "POST /v1/advertisements first)"),
    "body_too_large": (413, "the body exceeds the configured limit"),
    "unsupported_media_type": (415, "a body that is neither application/json nor application/cbor"),
    "internal_error": (500, "a bug: never expected"),
    "metrics_unavailable": (501, "prometheus-client is not installed"),
    "unavailable": (503, "the node cannot serve this now (not joined, timed out): retry later"),
}


@dataclass(frozen=True, slots=True)
class ApiOptions:
    max_body: int = DEFAULT_MAX_BODY  # bytes of a request body (413 beyond)
    max_wait: float = 60.0  # longest long poll (seconds)
    page_limit: int = 100  # notifications per long-poll answer by default
    max_page_limit: int = 1000
    sse_keepalive: float = 15.0  # seconds between SSE keep-alive comments on an idle stream
    sse_retry_ms: int = 2000  # reconnection delay suggested to SSE clients


API = web.AppKey("p2pubsub_api", "Api")
HTTP_ADDRESSES = web.AppKey("p2pubsub_http_addresses", list)


def make_app(
    service: NodeService,
    registry: SubscriptionRegistry,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    max_wait: float = 60.0,
    page_limit: int = 100,
    max_page_limit: int = 1000,
    sse_keepalive: float = 15.0,
    sse_retry_ms: int = 2000,
) -> web.Application:
    """The node's HTTP application over ``service``; notifications are read from ``registry``.

    The app does not own the registry: whoever made it calls ``await registry.aclose()`` at the end. On shutdown
    the app wakes every long poll and SSE stream so that the server stops promptly.
    """
    options = ApiOptions(max_body, max_wait, page_limit, max_page_limit, sse_keepalive, sse_retry_ms)
    api = Api(service, registry, options)
    app = web.Application(client_max_size=max_body, middlewares=[api.middleware])
    app[API] = api
    app[HTTP_ADDRESSES] = []
    r = app.router
    r.add_put("/v1/schemas/{name}", api.put_schema, name="schema")
    r.add_get("/v1/schemas/{name}", api.get_schema)
    r.add_post("/v1/subscriptions", api.subscribe, name="subscriptions")
    r.add_get("/v1/subscriptions/{id}", api.get_subscription, name="subscription")
    r.add_delete("/v1/subscriptions/{id}", api.unsubscribe)
    r.add_get("/v1/subscriptions/{id}/events", api.events, name="events")
    r.add_post("/v1/events", api.publish, name="publish")
    r.add_post("/v1/advertisements", api.advertise, name="advertisements")
    r.add_get("/v1/advertisements/{id}", api.get_advertisement, name="advertisement")
    r.add_delete("/v1/advertisements/{id}", api.unadvertise)
    r.add_get("/v1/node", api.node, name="node")
    r.add_get("/healthz", api.healthz, name="healthz")
    r.add_get("/metrics", api.metrics_text, name="metrics")
    r.add_get("/v1/openapi.json", api.openapi, name="openapi")

    async def on_shutdown(_app: web.Application) -> None:
        registry.stop_streams()

    app.on_shutdown.append(on_shutdown)
    return app


class Api:
    def __init__(self, service: NodeService, registry: SubscriptionRegistry, options: ApiOptions) -> None:
        self.service = service
        self.registry = registry
        self.options = options
        self.metrics = ApiMetrics(service.metrics, registry.stats)
        self._openapi = build_openapi(options, ERROR_CODES)

    # --- errors and metrics, for every request ---

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        start = loop.time()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except asyncio.CancelledError:
            status = 499  # the client went away
            raise
        except Exception as exc:
            error = self._error_for(exc, request)
            status = error.status
            return respond(request, error.body(), error.status, error.headers)
        finally:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "unmatched"
            method = request.method if request.method in KNOWN_METHODS else "other"
            self.metrics.observe(route, method, status, loop.time() - start)

    def _error_for(self, exc: Exception, request: web.Request) -> ApiError:
        if isinstance(exc, ApiError):
            return exc
        if isinstance(exc, ValidationError):
            return ApiError(400, exc.code, exc.message, exc.path)
        if isinstance(exc, SchemaConflict):
            return ApiError(409, exc.code, exc.message, extra={"existing": exc.existing.to_dict()})
        if isinstance(exc, UnknownSchema):
            return ApiError(400, exc.code, exc.message, "schema")
        if isinstance(exc, ServiceError) and isinstance(getattr(exc, "status", None), int):
            return ApiError(exc.status, exc.code, exc.message)
        if isinstance(exc, ServiceUnavailable):
            headers = {} if exc.retry_after is None else {"Retry-After": str(max(1, round(exc.retry_after)))}
            return ApiError(503, exc.code, exc.message, headers=headers)
        if isinstance(exc, ServiceError):
            return ApiError(503, exc.code, exc.message)
        if isinstance(exc, web.HTTPException) and exc.status >= 400:
            if exc.status == 404:
                return ApiError(404, "not_found", f"no route {request.method} {request.path}")
            if exc.status == 405:
                allow = exc.headers.get("Allow", "")
                return ApiError(405, "method_not_allowed", f"{request.path} takes {allow or 'other methods'}, "
                                f"not {request.method}", headers={"Allow": allow})
            if exc.status == 413:
                return ApiError(413, "body_too_large", f"the body exceeds {self.options.max_body} bytes")
            return ApiError(exc.status, f"http_{exc.status}", exc.reason)
        log.exception("internal error on %s %s", request.method, request.path)
        return ApiError(500, "internal_error", f"internal error ({type(exc).__name__}); see the node's log")

    # --- schemas ---

    async def put_schema(self, request: web.Request) -> web.Response:
        name = check_name(request.match_info["name"], "schema", "name")
        body = await read_body(request)
        if not isinstance(body, dict):
            raise ValidationError("invalid_schema", "a schema must be an object such as {\"attributes\": {...}}", "")
        schema, created = await self.service.put_schema(name, body)
        headers = {"Location": f"/v1/schemas/{name}"} if created else None
        return respond(request, schema.to_dict(), 201 if created else 200, headers)

    async def get_schema(self, request: web.Request) -> web.Response:
        name = check_name(request.match_info["name"], "schema", "name")
        schema = await self.service.get_schema(name)
        if schema is None:
            raise ApiError(404, "unknown_schema", f"no schema named {name!r} is registered")
        return respond(request, schema.to_dict())

    # --- subscriptions ---

    async def subscribe(self, request: web.Request) -> web.Response:
        body = _fields(await read_body(request), {"schema": str, "filter": dict}, {"deliver_to": str})
        deliver_to = body.get("deliver_to")
        if deliver_to is not None:
            check_webhook_url(deliver_to)
        info = await self.service.subscribe(body["schema"], body["filter"], deliver_to)
        buf = self.registry.open(info.id, info.deliver_to)
        out = self._subscription(info.to_dict(), buf)
        return respond(request, out, 201, {"Location": f"/v1/subscriptions/{info.id}"})

    def _subscription(self, info: dict[str, Any], buf: SubscriptionBuffer) -> dict[str, Any]:
        info["events"] = f"/v1/subscriptions/{info['id']}/events"
        info["delivery"] = buf.stats()
        return info

    def _live(self, sub_id: str) -> tuple[Any, SubscriptionBuffer]:
        info = self.service.subscription(sub_id)
        if info is None:
            raise ApiError(404, "unknown_subscription", f"no subscription {sub_id!r} at this node")
        return info, self.registry.open(info.id, info.deliver_to)

    async def get_subscription(self, request: web.Request) -> web.Response:
        info, buf = self._live(request.match_info["id"])
        return respond(request, self._subscription(info.to_dict(), buf))

    async def unsubscribe(self, request: web.Request) -> web.Response:
        sub_id = request.match_info["id"]
        removed = await self.service.unsubscribe(sub_id)
        self.registry.close(sub_id)
        if not removed:
            raise ApiError(404, "unknown_subscription", f"no subscription {sub_id!r} at this node")
        return web.Response(status=204)

    # --- notifications: long poll and Server-Sent Events ---

    async def events(self, request: web.Request) -> web.StreamResponse:
        _info, buf = self._live(request.match_info["id"])
        stream = wants_event_stream(request)
        query = request.query
        if stream and "Last-Event-ID" in request.headers:
            after = _cursor(request.headers["Last-Event-ID"], "Last-Event-ID")
        else:
            after = _cursor(query.get("after"), "after")
        limit = _number(query.get("limit"), "limit", "invalid_limit", self.options.page_limit,
                        1, self.options.max_page_limit, _COUNT)
        _read(buf, after, 0)  # a cursor from elsewhere is refused before anything is sent
        if stream:
            return await self._stream(request, buf, after, limit)
        wait = _number(query.get("wait"), "wait", "invalid_wait", 0.0, 0.0, self.options.max_wait, _SECONDS)
        page = _read(buf, after, limit)
        if not page.events and wait > 0:
            self.metrics.polls += 1
            try:
                await buf.wait(after, wait)
            finally:
                self.metrics.polls -= 1
            if buf.closed:
                raise ApiError(404, "unknown_subscription", f"subscription {buf.sub_id!r} was deleted")
            page = _read(buf, after, limit)
        return respond(request, {"events": page.events, "cursor": str(page.cursor), "dropped": page.dropped})

    async def _stream(self, request: web.Request, buf: SubscriptionBuffer, after: int,
                      batch: int) -> web.StreamResponse:
        """SSE: ``id: <cursor>`` + ``data: <event JSON>`` per notification; ``event: dropped`` after an overflow;
        ``event: closed`` when the subscription is deleted; ``: keep-alive`` comments while idle."""
        response = web.StreamResponse(headers={
            "Content-Type": EVENT_STREAM,
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        })
        await response.prepare(request)
        self.metrics.streams += 1
        cursor = after
        try:
            await response.write(f"retry: {self.options.sse_retry_ms}\n\n".encode())
            while True:
                page = _read(buf, cursor, batch)
                chunks = []
                if page.dropped:
                    note = {"dropped": page.dropped, "cursor": str(page.first - 1)}
                    chunks.append(b"event: dropped\ndata: " + dump_json(note) + b"\n\n")
                for seq, event in enumerate(page.events, page.first):
                    chunks.append(b"id: %d\ndata: %s\n\n" % (seq, dump_json(event)))
                if chunks:
                    await response.write(b"".join(chunks))
                    cursor = page.cursor
                    continue
                if buf.closed:
                    await response.write(b'event: closed\ndata: {"reason":"unsubscribed"}\n\n')
                    break
                if buf.stopping:
                    break
                if not await buf.wait(cursor, self.options.sse_keepalive) and not (buf.closed or buf.stopping):
                    await response.write(b": keep-alive\n\n")
        except (ConnectionError, aiohttp.ClientConnectionError):
            pass  # the client went away
        finally:
            self.metrics.streams -= 1
        return response

    # --- events ---

    async def publish(self, request: web.Request) -> web.Response:
        body = _fields(await read_body(request), {"schema": str, "attributes": dict}, {})
        event_id = await self.service.publish(body["schema"], body["attributes"])
        return respond(request, {"id": event_id}, 202)

    # --- advertisements (overlay modes) ---

    def _advertising(self, request: web.Request) -> Any:
        if not callable(getattr(self.service, "advertise", None)):
            raise ApiError(404, "not_supported", f"{request.method} {request.path}: this node runs the DHT overlay, "
                           "which has no advertisements (run the node with --overlay scot or padres)")
        return self.service

    async def advertise(self, request: web.Request) -> web.Response:
        service = self._advertising(request)
        body = _fields(await read_body(request), {"schema": str, "filter": dict}, {})
        adv = await service.advertise(body["schema"], body["filter"])
        return respond(request, adv, 201, {"Location": f"/v1/advertisements/{adv['id']}"})

    async def get_advertisement(self, request: web.Request) -> web.Response:
        service = self._advertising(request)
        adv_id = request.match_info["id"]
        adv = service.advertisement(adv_id)
        if adv is None:
            raise ApiError(404, "unknown_advertisement", f"no advertisement {adv_id!r} at this node")
        return respond(request, adv)

    async def unadvertise(self, request: web.Request) -> web.Response:
        service = self._advertising(request)
        adv_id = request.match_info["id"]
        if not await service.unadvertise(adv_id):
            raise ApiError(404, "unknown_advertisement", f"no advertisement {adv_id!r} at this node")
        return web.Response(status=204)

    # --- the node ---

    async def node(self, request: web.Request) -> web.Response:
        info = dict(self.service.info())
        info["http"] = {"addresses": request.app[HTTP_ADDRESSES]}
        info["delivery"] = self.registry.stats()
        return respond(request, info)

    async def healthz(self, request: web.Request) -> web.Response:
        return respond(request, {"status": "ok"})

    async def metrics_text(self, request: web.Request) -> web.Response:
        if not self.metrics.available:
            raise ApiError(501, "metrics_unavailable", "prometheus-client is not installed on this node")
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def openapi(self, request: web.Request) -> web.Response:
        return respond(request, self._openapi)


# --- request checking ---


def _fields(body: Any, required: dict[str, type], optional: dict[str, type]) -> dict[str, Any]:
    """Check a body object's fields and their JSON types; ``None`` is allowed for optional fields."""
    names = list(required) + list(optional)
    if not isinstance(body, dict):
        raise ValidationError("invalid_body", f"the body must be an object with fields {names}", "")
    for key in body:
        if key not in required and key not in optional:
            raise ValidationError("unknown_field", f"unknown field {key!r}; this endpoint takes {names}", key)
    for key in required:
        if key not in body:
            raise ValidationError("missing_field", f"field {key!r} is required", key)
    for key, kind in (required | optional).items():
        value = body.get(key)
        if value is None and key in optional:
            continue
        if not isinstance(value, kind):
            want = {str: "a string", dict: "an object"}[kind]
            raise ValidationError("wrong_type", f"{key} must be {want}, got {_json_kind(value)}", key)
    return body


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _cursor(raw: str | None, what: str) -> int:
    if raw is None or raw == "":
        return 0
    if not _CURSOR.match(raw):
        raise ApiError(400, "invalid_cursor", f"{what} must be a cursor returned by this API, got {raw[:40]!r}", what)
    return int(raw)


def _number(raw: str | None, what: str, code: str, default: float, lo: float, hi: float, pattern: re.Pattern) -> Any:
    if raw is None:
        return default
    if not pattern.match(raw):
        raise ApiError(400, code, f"{what} must be a number in [{lo:g}, {hi:g}], got {raw[:40]!r}", what)
    value = type(default)(float(raw)) if pattern is _SECONDS else int(raw)
    if not lo <= value <= hi:
        raise ApiError(400, code, f"{what} must lie in [{lo:g}, {hi:g}], got {raw[:40]!r}", what)
    return value


def _read(buf: SubscriptionBuffer, after: int, limit: int) -> Page:
    try:
        return buf.read(after, limit)
    except CursorAhead as exc:
        raise ApiError(400, "invalid_cursor", str(exc), "after") from None


__all__ = ["API", "DEFAULT_MAX_BODY", "ERROR_CODES", "HTTP_ADDRESSES", "Api", "ApiOptions", "make_app"]
