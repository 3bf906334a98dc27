"""The node commands the HTTP layer needs, as a protocol the node runtime implements.

The HTTP layer only translates requests into these calls (ARCHITECTURE.md, "Thin runtime adapters"); it never
reaches into the tree core. Notifications flow the other way: for every ``Deliver`` action of its home, the node
calls :meth:`p2pubsub.api.delivery.SubscriptionRegistry.deliver` with an *event dict*::

    {"id": "<event id>", "schema": "<schema name>", "attributes": {...}, "published_at": <seconds>}

where ``published_at`` is the publishing node's clock reading (seconds; the node decides which clock), and
``attributes`` holds the validated values (floats as floats). The node should also call
``registry.open(sub_id, deliver_to)`` when it creates a subscription and ``registry.close(sub_id)`` when one goes
away on its own; both are idempotent, and the HTTP layer calls them too.

Errors: content errors are :class:`p2pubsub.model.ValidationError` (``.code``, ``.message``, ``.path``); the
exceptions below cover the rest. Anything else a service raises is a bug and becomes a 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..model import Schema, ValidationError


class ServiceError(Exception):
    """Base of the errors a :class:`NodeService` raises besides :class:`ValidationError`."""

    code = "service_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SchemaConflict(ServiceError):
    """A schema of that name exists and differs from the one offered (``existing`` is the stored one)."""

    code = "schema_conflict"

    def __init__(self, existing: Schema, message: str | None = None) -> None:
        super().__init__(message or f"schema {existing.name!r} exists with a different definition")
        self.existing = existing


class UnknownSchema(ServiceError):
    """No schema of that name is registered (anywhere in the DHT)."""

    code = "unknown_schema"

    def __init__(self, name: str) -> None:
        super().__init__(f"no schema named {name!r} is registered")
        self.name = name


class ServiceUnavailable(ServiceError):
    """The node cannot serve the request now (not joined yet, a DHT look-up or an installation timed out, ...).

    ``retry_after`` (seconds), when known, becomes the HTTP ``Retry-After`` header.
    """

    code = "unavailable"

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    """A subscription homed at this node, as the HTTP API shows it.

    ``filter`` is the normalised filter the tree matches (``Subscription.to_filter()``: e.g. ``gt 5`` on an int
    reads ``ge 6``); ``created_at`` is the node's clock reading when it was made; ``extra`` holds whatever else
    the node wants to show (pieces, leaves, ...), passed through as JSON.
    """

    id: str
    schema: str
    filter: dict[str, dict[str, Any]]
    deliver_to: str | None = None
    created_at: float | None = None
    extra: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "schema": self.schema,
            "filter": self.filter,
            "deliver_to": self.deliver_to,
            "created_at": self.created_at,
        }
        if self.extra:
            out["node"] = self.extra
        return out


def notification(event: Any) -> dict[str, Any]:
    """The event dict (see above) of a delivered :class:`p2pubsub.tree.PubEvent`."""
    return {"id": event.event_id, "schema": event.schema, "attributes": dict(event.values),
            "published_at": event.published_at}


@runtime_checkable
class NodeService(Protocol):
    """What a node offers its local clients. All coroutines run on the node's event loop."""

    async def put_schema(self, name: str, body: dict) -> tuple[Schema, bool]:
        """Register schema ``name`` from its JSON form; returns ``(schema, created)``: ``created`` is False when an
        identical schema already exists. Raises :class:`SchemaConflict` (a different one exists) or
        :class:`ValidationError`."""
        ...

    async def get_schema(self, name: str) -> Schema | None:
        """Any node serves any schema (schemas live in the DHT). None when there is none; may raise
        :class:`ServiceUnavailable` when the DHT cannot be asked."""
        ...

    async def subscribe(self, schema: str, filter: dict, deliver_to: str | None) -> SubscriptionInfo:
        """Install a subscription homed at this node. Returns only once every piece is installed in the tree, so
        every event published after the answer can reach it. Raises :class:`UnknownSchema`,
        :class:`ValidationError`, :class:`ServiceUnavailable` (not joined yet, installation timed out)."""
        ...

    async def unsubscribe(self, sub_id: str) -> bool:
        """Remove a subscription homed here; False when there is none. Delivery stops at once."""
        ...

    def subscription(self, sub_id: str) -> SubscriptionInfo | None:
        """A live subscription homed at this node, or None."""
        ...

    async def publish(self, schema: str, attributes: dict) -> str:
        """Publish an event; returns its id. Raises :class:`UnknownSchema`, :class:`ValidationError`,
        :class:`ServiceUnavailable`."""
        ...

    def info(self) -> dict:
        """JSON-able node status: id, addresses and ports, ready, peers, hosted tree nodes, stored
        subscriptions, queue stats, ..."""
        ...

    def metrics(self) -> dict:
        """Numbers the node wants exported on ``/metrics``: ``{name: number}`` (a gauge; a name ending in
        ``_total`` is a counter) or ``{name: {label_value: number}}`` (one family with a ``key`` label)."""
        ...


__all__ = [
    "NodeService",
    "SchemaConflict",
    "ServiceError",
    "ServiceUnavailable",
    "SubscriptionInfo",
    "UnknownSchema",
    "ValidationError",
]
