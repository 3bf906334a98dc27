"""``p2pubsub node``: one node with its HTTP API, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import sys
from dataclasses import dataclass
from typing import Any

from ..api import ApiServer, SubscriptionRegistry, make_app, start_api
from .config import NodeConfig
from .dht import BootstrapError
from .runtime import Node
from .service import NodeApiService

log = logging.getLogger("p2pubsub.node")


class StartError(RuntimeError):
    """A node could not start: its DHT could not bind or bootstrap, or its API could not bind."""


@dataclass(slots=True)
class RunningNode:
    """A node and its REST API as ``p2pubsub node`` runs them (``api`` None without HTTP)."""

    node: Node
    api: ApiServer | None
    registry: SubscriptionRegistry
    trace: Any = None

    async def close(self, graceful: bool = True) -> None:
        """Stop serving (open long polls and streams are answered), hand over to the network if ``graceful``."""
        if self.api is not None:
            await self.api.close()
        await self.node.stop(graceful=graceful)
        await self.registry.aclose()
        if self.trace is not None:
            self.trace.close()


async def start_node(config: NodeConfig, *, rng: random.Random | None = None) -> RunningNode:
    """Start a node (it joins ``config.bootstrap`` or starts a network) and its API unless ``http_port`` is None.
    Raises :class:`StartError` with what failed; nothing is left running then."""
    trace = None
    if config.trace:
        from .tracefile import TraceFile

        trace = TraceFile(config.trace)
    node = Node(config, rng=rng, observer=trace) if trace is not None else Node(config, rng=rng)
    registry = SubscriptionRegistry()
    service = NodeApiService(node, registry)
    try:
        await node.start()
    except (BootstrapError, OSError) as e:
        await node.stop(graceful=False)
        if trace is not None:
            trace.close()
        raise StartError(f"cannot start: {e}") from e
    api = None
    if config.http_port is not None:
        try:
            api = await start_api(make_app(service, registry), config.host, config.http_port)
        except OSError as e:
            await node.stop(graceful=False)
            if trace is not None:
                trace.close()
            raise StartError(f"cannot serve the HTTP API on {config.host}:{config.http_port}: {e}") from e
        service.http_port = api.port
    return RunningNode(node, api, registry, trace)


async def serve(config: NodeConfig, stop: asyncio.Event | None = None, started=None, *, scot=None) -> int:
    """Run a node (and its API unless ``http_port`` is None) until ``stop`` is set or a signal arrives.
    ``started(node, api)`` is called once both listen. Returns an exit status.

    ``scot`` (a :class:`p2pubsub.scot.ScotConfig`): run a SCOT overlay node instead (``--overlay scot|padres``)."""
    if scot is not None:
        from ..scot.main import serve_scot

        return await serve_scot(config, scot, stop, started)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        running = await start_node(config)
    except StartError as e:
        log.error("%s", e)
        return 2
    node, api = running.node, running.api
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
    await running.close(graceful=True)
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
