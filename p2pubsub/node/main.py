"""``p2pubsub node``: one node with its HTTP API, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys

from ..api import SubscriptionRegistry, make_app, start_api
from .config import NodeConfig
from .dht import BootstrapError
from .runtime import Node
from .service import NodeApiService

log = logging.getLogger("p2pubsub.node")


async def serve(config: NodeConfig, stop: asyncio.Event | None = None, started=None, *, scot=None) -> int:
    """Run a node (and its API unless ``http_port`` is None) until ``stop`` is set or a signal arrives.
    ``started(node, api)`` is called once both listen. Returns an exit status.

    ``scot`` (a :class:`p2pubsub.scot.ScotConfig`): run a SCOT overlay node instead (``--overlay scot|padres``)."""
    if scot is not None:
        from ..scot.main import serve_scot

        return await serve_scot(config, scot, stop, started)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    trace = None
    if config.trace:
        from .tracefile import TraceFile

        trace = TraceFile(config.trace)
    node = Node(config, observer=trace) if trace is not None else Node(config)
    registry = SubscriptionRegistry()
    service = NodeApiService(node, registry)
    try:
        await node.start()
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
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            loop.add_signal_handler(sig, stop.set)
    host = node.host
    log.info("node %s: dht udp %s:%d, http %s", node.id.hex(), host[1], host[2],
             f"tcp {config.host}:{api.port}" if api else "off")
    print(f"p2pubsub node {node.id.hex()[:16]} ready: dht udp {host[1]}:{host[2]}"
          + (f", api {api.url}" if api else ""), flush=True)
    if started is not None:
        started(node, api)
    await stop.wait()
    log.info("shutting down: handing over to the network")
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


def run(config: NodeConfig, scot=None) -> int:
    try:
        return asyncio.run(serve(config, scot=scot))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run(NodeConfig()))
