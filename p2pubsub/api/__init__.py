"""The HTTP REST API of a p2pubsub node and its client-facing notification delivery.

- :mod:`.service`: the :class:`NodeService` protocol the node runtime implements (the API calls only this).
- :mod:`.delivery`: :class:`SubscriptionRegistry`, per-subscription bounded buffers read by cursor (long poll,
  SSE) and webhook workers; the node feeds it with ``registry.deliver(sub_id, event)``.
- :mod:`.app`: ``make_app(service, registry, ...)``, the aiohttp application; :mod:`.server`: ``start_api``.
- :mod:`.nodebase`: :class:`NodeServiceBase`, what the services of a running node (either mode) share.
- :mod:`.local`: :class:`LocalCluster`/:class:`LocalService`, the service over the in-memory network.
"""

from .app import ERROR_CODES, make_app
from .delivery import DeliveryPolicy, SubscriptionRegistry, check_webhook_url
from .local import LocalCluster, LocalService
from .server import ApiServer, start_api
from .service import (
    NodeService,
    SchemaConflict,
    ServiceError,
    ServiceUnavailable,
    SubscriptionInfo,
    UnknownSchema,
)

__all__ = [
    "ERROR_CODES",
    "ApiServer",
    "DeliveryPolicy",
    "LocalCluster",
    "LocalService",
    "NodeService",
    "SchemaConflict",
    "ServiceError",
    "ServiceUnavailable",
    "SubscriptionInfo",
    "SubscriptionRegistry",
    "UnknownSchema",
    "check_webhook_url",
    "make_app",
    "start_api",
]
