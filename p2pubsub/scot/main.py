"""``p2pubsub node --overlay scot|padres --scot NAME``: one SCOT node with its HTTP API, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from ..api import SubscriptionRegistry, make_app, start_api
from ..node.config import NodeConfig
from ..node.dht import BootstrapError
from .config import ScotConfig
from .definition import DefinitionError
from .errors import NodeError
from .runtime import ScotNode
from .service import ScotApiService

log = logging.getLogger("p2pubsub.scot")


async def serve_scot(config: NodeConfig, scot: ScotConfig, stop: asyncio.Event | None = None, started=None) -> int:
    """Run a SCOT node (and its API unless ``http_port`` is None) until ``stop`` is set or a signal arrives.
    ``started(node, api)`` is called once both listen. Returns an exit status (2: could not start)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    trace = None
    if config.trace:
        from ..node.tracefile import TraceFile

        trace = TraceFile(config.trace)
    node = ScotNode(config, scot, observer=trace) if trace is not None else ScotNode(config, scot)
    registry = SubscriptionRegistry()
    service = ScotApiService(node, registry)
    try:
        await node.start()
    except (DefinitionError, NodeError) as e:  # joined the DHT, but cannot take part in this overlay: leave it
        log.error("cannot start: %s", e)
        await node.stop(graceful=True)
        return 2
    except (BootstrapError, OSError) as e:
        log.error("cannot start: %s", e)
        await node.stop(graceful=False)
        return 2
    api = None
    if config.http_port is not None:
        try:
            api = await start_api(make_app(service, registry), config.host, config.http_port)
        except OSError as e:
            log.error("cannot serve the HTTP API on %s:%s: %s", config.host, config.http_port, e)
            await node.stop(graceful=False)
            return 2
        service.http_port = api.port
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    host = node.host
    where = f"broker {node.broker.position} (tenure {node.broker.epoch})" if node.broker else "standby"
    print(f"p2pubsub node {node.id.hex()[:16]} ready: overlay {scot.name} ({node.definition.describe()}), "
          f"cluster {node.cluster}, {where}; dht udp {host[1]}:{host[2]}" + (f", api {api.url}" if api else ""),
          flush=True)
    if started is not None:
        started(node, api)
    await stop.wait()
    log.info("shutting down: withdrawing, releasing the slot, handing over to the network")
    if api is not None:
        await api.close()
    await node.stop(graceful=True)
    await registry.aclose()
    if trace is not None:
        trace.close()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(sig)
    return 0


__all__ = ["serve_scot"]
