"""A small Python client for a node's HTTP API, synchronous (:class:`Client`) and asynchronous (:class:`AsyncClient`).

Both have the same methods; the async ones are coroutines::

    with Client("http://127.0.0.1:8080") as c:
        c.put_schema("quotes", {"price": {"type": "float", "min": 0, "max": 1000}, "sym": {"type": "string"}})
        sub = c.subscribe("quotes", {"price": {"ge": 10, "le": 20}, "sym": {"eq": "AAPL"}})
        c.publish("quotes", {"price": 15.5, "sym": "AAPL"})   # a SCOT/PADRES node: c.advertise(...) first
        page = c.events(sub["id"], wait=5)            # long poll: page.events, page.cursor, page.dropped
        for event in c.stream(sub["id"], after=page.cursor):   # Server-Sent Events
            ...

Errors the node reports raise :class:`ApiError` (``status``, ``code``, ``message``, ``path``); a missing schema or
subscription reads as ``None`` (``get_schema``, ``subscription``) or ``False`` (``unsubscribe``). ``cbor=True``
sends and asks for CBOR. The sync client keeps one keep-alive connection and is not thread-safe; the async one
uses an aiohttp session (its own, or one passed in).
"""

from __future__ import annotations

import http.client
import json
import select
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import cbor2

JSON = "application/json"
CBOR = "application/cbor"


class ApiError(Exception):
    """The node answered with an error (or something that is not the API's answer)."""

    def __init__(self, status: int, code: str, message: str, path: str | None = None, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.body = body


@dataclass(slots=True)
class EventPage:
    events: list[dict]
    cursor: str
    dropped: int = 0


@dataclass(slots=True)
class _Call:
    method: str
    path: str
    body: Any = None
    params: dict[str, Any] | None = None
    result: Callable[[int, Any], Any] = lambda _status, data: data
    missing: tuple[str, ...] = ()  # error codes (on 404) that mean "not there" rather than an error
    if_missing: Any = None
    timeout_extra: float = 0.0  # a long poll's wait


def _encode(body: Any, cbor: bool) -> tuple[bytes | None, dict[str, str]]:
    headers = {"Accept": f"{CBOR}, {JSON};q=0.5" if cbor else JSON}
    if body is None:
        return None, headers
    headers["Content-Type"] = CBOR if cbor else JSON
    if cbor:
        return cbor2.dumps(body), headers
    return json.dumps(body, separators=(",", ":"), allow_nan=True).encode(), headers


def _decode(status: int, content_type: str, raw: bytes) -> Any:
    ctype = content_type.split(";")[0].strip().lower()
    if not raw:
        return None
    try:
        if ctype == CBOR:
            return cbor2.loads(raw)
        if ctype == JSON or ctype.endswith("+json"):
            return json.loads(raw)
    except ValueError as exc:
        raise ApiError(status, "bad_response", f"undecodable {ctype} answer: {exc}") from None
    return raw.decode("utf-8", "replace")


def _finish(call: _Call, status: int, content_type: str, raw: bytes) -> Any:
    data = _decode(status, content_type, raw)
    if status < 400:
        return call.result(status, data)
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        raise ApiError(status, f"http_{status}", str(data)[:200] if data else http.client.responses.get(status, ""),
                       body=data)
    code = str(err.get("code", f"http_{status}"))
    if status == 404 and code in call.missing:
        return call.if_missing
    raise ApiError(status, code, str(err.get("message", "")), err.get("path"), data)


def _page(_status: int, data: Any) -> EventPage:
    return EventPage(list(data["events"]), str(data["cursor"]), int(data.get("dropped", 0)))


def _adv_path(adv_id: str) -> str:
    return f"/v1/advertisements/{quote(str(adv_id), safe='')}"


def _sub_path(sub_id: str, tail: str = "") -> str:
    return f"/v1/subscriptions/{quote(str(sub_id), safe='')}{tail}"


class _Endpoints:
    """Every endpoint, once: each method builds a :class:`_Call` and hands it to ``_do`` (sync or async)."""

    def _do(self, call: _Call) -> Any:  # pragma: no cover - defined by the subclasses
        raise NotImplementedError

    def put_schema(self, name: str, attributes: dict[str, dict], *, absent: str | None = None) -> Any:
        """Register a schema; returns ``(schema, created)``."""
        body: dict[str, Any] = {"attributes": attributes}
        if absent is not None:
            body["absent"] = absent
        return self._do(_Call("PUT", f"/v1/schemas/{quote(name, safe='')}", body,
                              result=lambda status, data: (data, status == 201)))

    def get_schema(self, name: str) -> Any:
        """The schema, or None."""
        return self._do(_Call("GET", f"/v1/schemas/{quote(name, safe='')}", missing=("unknown_schema",)))

    def subscribe(self, schema: str, filter: dict[str, dict], deliver_to: str | None = None) -> Any:
        """Subscribe; returns the subscription (``["id"]``) once it is installed."""
        body: dict[str, Any] = {"schema": schema, "filter": filter}
        if deliver_to is not None:
            body["deliver_to"] = deliver_to
        return self._do(_Call("POST", "/v1/subscriptions", body))

    def subscription(self, sub_id: str) -> Any:
        """The subscription with its delivery state, or None."""
        return self._do(_Call("GET", _sub_path(sub_id), missing=("unknown_subscription",)))

    def unsubscribe(self, sub_id: str) -> Any:
        """True when removed, False when there was no such subscription."""
        return self._do(_Call("DELETE", _sub_path(sub_id), result=lambda _s, _d: True,
                              missing=("unknown_subscription",), if_missing=False))

    def events(self, sub_id: str, after: str | None = None, wait: float = 0, limit: int | None = None) -> Any:
        """Notifications after ``after`` (an :class:`EventPage`), waiting up to ``wait`` seconds for one."""
        params: dict[str, Any] = {}
        if after is not None:
            params["after"] = after
        if wait:
            params["wait"] = f"{wait:.3f}".rstrip("0").rstrip(".")
        if limit is not None:
            params["limit"] = limit
        return self._do(_Call("GET", _sub_path(sub_id, "/events"), params=params, result=_page, timeout_extra=wait))

    def publish(self, schema: str, attributes: dict[str, Any]) -> Any:
        """Publish; returns the event id."""
        return self._do(_Call("POST", "/v1/events", {"schema": schema, "attributes": attributes},
                              result=lambda _s, data: data["id"]))

    def advertise(self, schema: str, filter: dict[str, dict]) -> Any:
        """Advertise what this client will publish (overlay modes); returns the advertisement (``["id"]``) once
        installed. A node in the DHT mode answers 404 ``not_supported``."""
        return self._do(_Call("POST", "/v1/advertisements", {"schema": schema, "filter": filter}))

    def advertisement(self, adv_id: str) -> Any:
        """The advertisement, or None."""
        return self._do(_Call("GET", _adv_path(adv_id), missing=("unknown_advertisement",)))

    def unadvertise(self, adv_id: str) -> Any:
        """Withdraw an advertisement; False if there was none."""
        return self._do(_Call("DELETE", _adv_path(adv_id), result=lambda _s, _d: True,
                              missing=("unknown_advertisement",), if_missing=False))

    def node(self) -> Any:
        return self._do(_Call("GET", "/v1/node"))

    def health(self) -> Any:
        return self._do(_Call("GET", "/healthz"))

    def metrics(self) -> Any:
        """The Prometheus text."""
        return self._do(_Call("GET", "/metrics"))

    def openapi(self) -> Any:
        return self._do(_Call("GET", "/v1/openapi.json"))


# --- Server-Sent Events ---


@dataclass(slots=True)
class SseParser:
    """The text/event-stream format, line by line (WHATWG HTML, "Server-sent events")."""

    data: list[str] = field(default_factory=list)
    event: str = ""
    last_id: str | None = None

    def feed(self, line: str) -> tuple[str, str, str | None] | None:
        """One line without its end; returns ``(event type, data, last event id)`` when an event completes."""
        if not line:
            if not self.data:
                self.event = ""
                return None
            out = (self.event or "message", "\n".join(self.data), self.last_id)
            self.data, self.event = [], ""
            return out
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        return None


class _StreamState:
    """What a stream has seen: ``cursor`` to resume from, ``dropped`` notifications, ``closed`` by the node."""

    def __init__(self, after: str | None) -> None:
        self.cursor = after
        self.dropped = 0
        self.closed = False
        self.parser = SseParser(last_id=after)

    def line(self, line: str) -> dict | None:
        item = self.parser.feed(line)
        if item is None:
            return None
        kind, data, last_id = item
        if kind == "message":
            self.cursor = last_id
            return json.loads(data)
        if kind == "dropped":
            self.dropped += int(json.loads(data).get("dropped", 0))
        elif kind == "closed":
            self.closed = True
        return None


def _stream_request(sub_id: str, after: str | None) -> tuple[str, dict[str, str]]:
    headers = {"Accept": "text/event-stream"}
    if after is not None:
        headers["Last-Event-ID"] = str(after)
    return _sub_path(sub_id, "/events"), headers


# --- synchronous ---


class EventStream(_StreamState):
    """An SSE stream as an iterator of event dicts; ends when the node closes the subscription or the connection."""

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse, after: str | None):
        super().__init__(after)
        self._conn = conn
        self._response = response

    def __iter__(self) -> Iterator[dict]:
        while not self.closed:
            raw = self._response.readline()
            if not raw:
                return
            event = self.line(raw.decode("utf-8").rstrip("\r\n"))
            if event is not None:
                yield event

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """An idle connection is readable only when the peer closed it (or sent what nobody asked for)."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class Client(_Endpoints):
    """Synchronous client over one keep-alive ``http.client`` connection (not thread-safe)."""

    def __init__(self, base_url: str, *, cbor: bool = False, timeout: float = 30.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port], got {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.cbor = cbor
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def _url(self, path: str, params: dict[str, Any] | None) -> str:
        return self._prefix + path + (f"?{urlencode(params)}" if params else "")

    def _do(self, call: _Call) -> Any:
        payload, headers = _encode(call.body, self.cbor)
        url = self._url(call.path, call.params)
        timeout = self.timeout + call.timeout_extra
        for attempt in (0, 1):
            if self._conn is not None and _dropped(self._conn):
                self.close()  # the node closed the idle kept-alive connection: do not send on it
            if self._conn is None:
                self._conn = self._connect(timeout)
            conn = self._conn
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(call.method, url, body=payload, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except TimeoutError:
                self.close()
                raise
            except (http.client.HTTPException, OSError):
                self.close()
                # most likely a kept-alive connection the server had closed: retry once on a new one, unless that
                # could repeat a POST the node may have acted on
                if attempt == 0 and call.method != "POST":
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if response.will_close:
                self.close()
            return _finish(call, response.status, response.getheader("Content-Type", ""), raw)
        raise AssertionError("unreachable")

    def stream(self, sub_id: str, after: str | None = None, *, timeout: float | None = None) -> EventStream:
        """Server-Sent Events from ``after`` (resumes with Last-Event-ID); ``timeout`` bounds each read."""
        path, headers = _stream_request(sub_id, after)
        conn = self._connect(timeout)
        try:
            conn.request("GET", self._url(path, None), headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                _finish(_Call("GET", path), response.status, response.getheader("Content-Type", ""), response.read())
                raise ApiError(response.status, "bad_response", "the node did not open an event stream")
        except BaseException:
            conn.close()
            raise
        return EventStream(conn, response, after)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- asynchronous ---


class AsyncEventStream(_StreamState):
    """An SSE stream as an async iterator of event dicts (``async with`` closes it)."""

    def __init__(self, client: AsyncClient, sub_id: str, after: str | None) -> None:
        super().__init__(after)
        self._client = client
        self._sub_id = sub_id
        self._response: Any = None

    async def _open(self) -> None:
        import aiohttp

        session = await self._client._get_session()
        path, headers = _stream_request(self._sub_id, self.cursor)
        response = await session.get(self._client.base_url + path, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=None, sock_read=None))
        if response.status != 200:
            raw = await response.read()
            response.release()
            _finish(_Call("GET", path), response.status, response.headers.get("Content-Type", ""), raw)
            raise ApiError(response.status, "bad_response", "the node did not open an event stream")
        self._response = response

    async def __aiter__(self) -> AsyncIterator[dict]:
        if self._response is None:
            await self._open()
        content = self._response.content
        while not self.closed:
            raw = await content.readline()
            if not raw:
                return
            event = self.line(raw.decode("utf-8").rstrip("\r\n"))
            if event is not None:
                yield event

    async def close(self) -> None:
        if self._response is not None:
            self._response.close()

    async def __aenter__(self) -> AsyncEventStream:
        await self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncClient(_Endpoints):
    """Asynchronous client on aiohttp; pass ``session`` to share one, else it makes (and closes) its own."""

    def __init__(self, base_url: str, *, cbor: bool = False, timeout: float = 30.0, session: Any = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port], got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.cbor = cbor
        self.timeout = timeout
        self._session = session
        self._own = session is None

    async def _get_session(self) -> Any:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession()
        return self._session

    async def _do(self, call: _Call) -> Any:
        import aiohttp

        session = await self._get_session()
        payload, headers = _encode(call.body, self.cbor)
        timeout = aiohttp.ClientTimeout(total=self.timeout + call.timeout_extra)
        async with session.request(call.method, self.base_url + call.path, data=payload, headers=headers,
                                   params=call.params, timeout=timeout) as response:
            raw = await response.read()
            return _finish(call, response.status, response.headers.get("Content-Type", ""), raw)

    def stream(self, sub_id: str, after: str | None = None) -> AsyncEventStream:
        """Server-Sent Events from ``after``: ``async for event in client.stream(id)`` (or ``async with``)."""
        return AsyncEventStream(self, sub_id, after)

    async def close(self) -> None:
        if self._own and self._session is not None:
            await self._session.close()
        self._session = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["ApiError", "AsyncClient", "AsyncEventStream", "Client", "EventPage", "EventStream", "SseParser"]

