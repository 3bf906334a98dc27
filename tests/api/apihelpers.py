"""Helpers for the API tests (imported by name: the tests folders are not packages)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

import cbor2
from aiohttp import web
from aiohttp.test_utils import TestClient

QUOTES = {
    "attributes": {
        "price": {"type": "float", "min": 0, "max": 1000},
        "sym": {"type": "string"},
        "volume": {"type": "int", "min": 0, "max": 1_000_000},
    }
}
SENSORS = {"absent": "match", "attributes": {"temp": {"type": "float", "min": -50, "max": 50}}}


@dataclass
class Node:
    host: int
    registry: object
    service: object
    app: web.Application
    client: TestClient

    @property
    def api(self):
        from p2pubsub.api.app import API

        return self.app[API]


async def body_of(resp) -> object:
    raw = await resp.read()
    if resp.content_type == "application/cbor":
        return cbor2.loads(raw)
    return json.loads(raw) if raw else None


async def until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Wait for ``predicate`` with a deadline, yielding to the loop (for states no event announces)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.001)
    assert predicate(), what


class Collector:
    """Things arriving from other tasks (SSE readers, webhook posts), with a condition to wait on."""

    def __init__(self) -> None:
        self.items: dict[str, list] = {}
        self.changed = asyncio.Condition()

    async def add(self, key: str, values: list) -> None:
        async with self.changed:
            self.items.setdefault(key, []).extend(values)
            self.changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(predicate)


class ServerThread:
    """A node's API on a real loopback socket (port 0), served by an event loop in a background thread, for the
    synchronous client and for fuzzing from plain (non-async) tests."""

    def __init__(self, hosts: int = 8, seed: int = 0, **options) -> None:
        import threading

        self.hosts, self.seed, self.options = hosts, seed, options
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="api-server", daemon=True)
        self.url = ""

    def call(self, coro, timeout: float = 30.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        self.call(self._start())
        return self

    async def _start(self) -> None:
        import random

        from p2pubsub.api import LocalCluster, SubscriptionRegistry, make_app, start_api

        self.cluster = LocalCluster(self.hosts, seed=self.seed)
        self.registry = SubscriptionRegistry(rng=random.Random(self.seed))
        self.service = self.cluster.service(0, self.registry)
        self.app = make_app(self.service, self.registry, **self.options)
        self.server = await start_api(self.app, "127.0.0.1", 0)
        self.url = self.server.url

    async def _stop(self) -> None:
        await self.server.close()
        await self.registry.aclose()

    def __exit__(self, *exc: object) -> None:
        try:
            self.call(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
