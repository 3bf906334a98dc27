"""``p2pubsub demo``: a small local network of real nodes, used through its REST API as a user would.

It starts ``nodes`` real nodes in this process, each as ``p2pubsub node`` runs it (kademlia DHT, 2d-tree core, peer
transport, REST API) on 127.0.0.1 with ports from the OS, node 0 alone and the others joining through it. Then,
with the project's own client (:class:`p2pubsub.client.AsyncClient`) over HTTP only: it registers the stock schema
through node 0, subscribes through seeded-random nodes (each ``POST /v1/subscriptions`` answers once the
subscription is installed), starts one long-poll reader per subscription, publishes stock quotes through
seeded-random nodes, waits until every notification the brute-force oracle expects has been read (or the
timeout passes), waits for the network to go quiet (no peer message queued on any node, ``GET /v1/node``), reads
each subscription once more, and judges: exactly the matching events, none missing, none twice.

Exit status: 0 when every subscriber got exactly its events, 1 on a wrong delivery (missing, false positive,
duplicate, unknown or dropped notification), 2 when the demo could not run (a node did not start, a request failed
or timed out). Every step (a node's start, a request, the wait for notifications, the shutdown) has a deadline,
``timeout``, so the demo never hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

import aiohttp

from ..client import ApiError, AsyncClient
from ..model import parse_event, parse_filter
from ..node.config import NodeConfig
from ..node.main import RunningNode, StartError, start_node
from .stocks import ATTRIBUTES, FILTERS, SCHEMA, describe_filter, describe_quote, quote_source, quotes

POLL_S = 10.0  # a reader's long-poll wait; readers are cancelled once everything is read
PHASES = 6


@dataclass
class LiveOptions:
    nodes: int = 5
    events: int = 24
    seed: int = 1
    capacity: int = 4  # subscriptions a leaf holds before it splits: small, so the tree spreads over the nodes
    timeout: float = 20.0  # seconds any one step may take: a node's start, a request, the wait for notifications
    keep_running: bool = False  # leave the network up (curl examples) until SIGINT/SIGTERM

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.events < 1 or self.capacity < 1 or not self.timeout > 0:
            raise ValueError("--nodes, --events and --capacity must be at least 1 and --timeout positive")


class DemoError(Exception):
    """The demo could not run; the message says what failed."""


@dataclass
class Sub:
    number: int  # s1, s2, ... in the output
    node: int
    body: dict
    id: str = ""
    install_ms: float = 0.0
    got: list[tuple[str, float]] = field(default_factory=list)  # (event id, receipt time) per notification read
    cursor: str | None = None
    dropped: int = 0
    error: str | None = None

    @property
    def label(self) -> str:
        return f"s{self.number}"


@dataclass
class Pub:
    node: int
    values: dict
    id: str = ""
    sent: float = 0.0  # time.monotonic() when the POST /v1/events went out


# The demo's own tally, not the oracles' `p2pubsub.matchmatrix.PairCounts`: every subscription is installed before
# the first quote, so nothing is "unexpected"; it counts the readers' buffer drops and keeps the latencies.
@dataclass
class Verdict:
    expected: int = 0
    delivered: int = 0
    missing: int = 0
    false_positive: int = 0
    duplicate: int = 0
    unknown: int = 0
    dropped: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.false_positive or self.duplicate or self.unknown or self.dropped)


class LiveDemo:
    def __init__(self, options: LiveOptions, out: TextIO | None = None) -> None:
        self.o = options
        self.out = out or sys.stdout
        self.rng = random.Random(options.seed)  # which node subscribes and publishes
        self.quotes = quotes(random.Random(options.seed + 1), options.events)  # fewer if the data has fewer
        self.running: list[RunningNode] = []
        self.clients: list[AsyncClient] = []
        self.subs: list[Sub] = []
        self.pubs: list[Pub] = []
        self.expected: dict[str, set[str]] = {}  # sub id -> event ids the oracle says it must get
        self.readers: list[asyncio.Task] = []
        self._progress = asyncio.Event()
        self._phase = 0
        self._started = time.monotonic()

    # --- output ---

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def phase(self, text: str) -> None:
        self._phase += 1
        self.say(f"[{self._phase}/{PHASES}] {text}")

    async def within(self, what: str, aw: Any) -> Any:
        """``aw`` with the step deadline; a timeout or API error becomes a :class:`DemoError` naming ``what``."""
        try:
            return await asyncio.wait_for(aw, self.o.timeout)
        except TimeoutError:
            raise DemoError(f"timed out after {self.o.timeout:g} s {what}") from None
        except ApiError as e:
            raise DemoError(f"{what}: the node answered {e}") from None
        except (aiohttp.ClientError, OSError) as e:
            raise DemoError(f"{what}: {e!r}") from None

    # --- the run ---

    async def run(self) -> int:
        o = self.o
        self.say(f"p2pubsub demo: {o.nodes} real node{'s' * (o.nodes > 1)} on 127.0.0.1, {len(FILTERS)} subscriptions, "
                 f"{len(self.quotes)} quotes from {quote_source()}, seed {o.seed}")
        try:
            await self.start_nodes()
            await self.register_schema()
            await self.subscribe()
            late = await self.publish_and_collect()
            verdict = self.judge()
            self.print_notifications()
            self.print_verdict(verdict, late)
            await self.print_nodes()
            if o.keep_running:
                await self.serve_until_signal()
        finally:
            await self.close()
        self.say(f"demo {'OK' if verdict.ok else 'FAILED'} in {time.monotonic() - self._started:.1f} s")
        return 0 if verdict.ok else 1

    async def start_nodes(self) -> None:
        n = self.o.nodes
        self.phase(f"starting {n} node{'s' * (n > 1)} (DHT on UDP, REST API on TCP, ports from the OS)"
                   + (f"; nodes 1-{n - 1} join through node 0" if n > 1 else ""))
        t0 = time.monotonic()
        for i in range(n):
            boot = () if i == 0 else (("127.0.0.1", self.running[0].node.host[2]),)
            config = NodeConfig(host="127.0.0.1", dht_port=0, http_port=0, bootstrap=boot, capacity=self.o.capacity)
            try:
                running = await self.within(f"starting node {i}",
                                            start_node(config, rng=random.Random(self.o.seed * 1000 + i)))
            except StartError as e:
                raise DemoError(f"node {i}: {e}") from None
            self.running.append(running)
            self.clients.append(AsyncClient(running.api.url, timeout=self.o.timeout))
        self.say(f"      {n} nodes up in {_ms(time.monotonic() - t0)}: REST APIs on "
                 + ", ".join(f":{r.api.port}" for r in self.running))

    async def register_schema(self) -> None:
        self.phase(f"registering schema {SCHEMA.name!r} through node 0: "
                   + ", ".join(f"{a} ({d['type']})" for a, d in ATTRIBUTES.items()))
        _, created = await self.within("registering the schema", self.clients[0].put_schema(SCHEMA.name, ATTRIBUTES))
        if not created:
            raise DemoError(f"schema {SCHEMA.name!r} already existed in a brand-new network")

    async def subscribe(self) -> None:
        self.phase(f"subscribing through {'random nodes' if self.o.nodes > 1 else 'the node'} (each POST answers once "
                   "installed in the 2d-tree), one long-poll reader each")
        for body in FILTERS:
            sub = Sub(len(self.subs) + 1, self.rng.randrange(self.o.nodes), body)
            t0 = time.monotonic()
            info = await self.within(f"subscribing {sub.label} through node {sub.node}",
                                     self.clients[sub.node].subscribe(SCHEMA.name, body))
            sub.id, sub.install_ms = info["id"], (time.monotonic() - t0) * 1000
            self.subs.append(sub)
            self.readers.append(asyncio.create_task(self._read(sub)))
            self.say(f"      {sub.label:<3} node {sub.node}  {describe_filter(body):<44} installed in "
                     f"{sub.install_ms:5.1f} ms  id {sub.id[:8]}")

    async def _read(self, sub: Sub) -> None:
        """Long-poll the subscription's notifications at its node until cancelled, noting when each came."""
        client = self.clients[sub.node]
        try:
            while True:
                page = await client.events(sub.id, after=sub.cursor, wait=POLL_S)
                self._record(sub, page)
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as e:
            sub.error = f"reader of {sub.label} failed: {e!r}"
            self._progress.set()

    def _record(self, sub: Sub, page: Any) -> None:
        now = time.monotonic()
        sub.got += [(ev["id"], now) for ev in page.events]
        sub.dropped += page.dropped
        sub.cursor = page.cursor
        if page.events:
            self._progress.set()

    async def publish_and_collect(self) -> str | None:
        """Publish, then wait for every expected notification; the timeout's message if some never came."""
        self.phase(f"publishing {len(self.quotes)} quotes through random nodes; waiting for every notification the "
                   "oracle expects")
        parsed = [(s, parse_filter(SCHEMA, s.body)) for s in self.subs]
        for values in self.quotes:
            pub = Pub(self.rng.randrange(self.o.nodes), values)
            pub.sent = time.monotonic()
            pub.id = await self.within(f"publishing through node {pub.node}",
                                       self.clients[pub.node].publish(SCHEMA.name, values))
            self.pubs.append(pub)
            event = parse_event(SCHEMA, values)
            for s, f in parsed:  # the brute-force oracle: every (event, subscription) pair
                if f.matches(event.values, SCHEMA.absent):
                    self.expected.setdefault(s.id, set()).add(pub.id)
        t0 = time.monotonic()
        late = await self._wait_for_expected()
        try:
            await self.within("waiting for the network to go quiet", self._quiet())
        except DemoError as e:  # still judged on what was read
            self.say(f"      {e}")
        for t in self.readers:
            t.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)
        for sub in self.subs:  # whatever came after the readers' last page: extras and duplicates show here
            if sub.error is None:
                self._record(sub, await self.within(f"reading {sub.label}", self.clients[sub.node].events(
                    sub.id, after=sub.cursor)))
        self.say(f"      {sum(len(s.got) for s in self.subs)} notifications read "
                 f"({_ms(time.monotonic() - t0)} after the last publish)")
        return late

    def _complete(self) -> bool:
        return all(self.expected.get(s.id, set()) <= {e for e, _ in s.got} for s in self.subs)

    async def _wait_for_expected(self) -> str | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.o.timeout
        while True:
            self._progress.clear()
            if self._complete():
                return None
            if errors := [s.error for s in self.subs if s.error]:
                return "; ".join(errors)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return f"timed out after {self.o.timeout:g} s waiting for the expected notifications"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), remaining)

    async def _quiet(self) -> None:
        """Until no node has a peer message queued or unacknowledged (GET /v1/node), checked twice in a row."""
        calm = 0
        while calm < 2:
            infos = await asyncio.gather(*(c.node() for c in self.clients))
            busy = any(q["length"] for info in infos for q in info["queues"].values())
            calm = 0 if busy else calm + 1
            await asyncio.sleep(0.01)

    def judge(self) -> Verdict:
        v = Verdict()
        published = {p.id: p for p in self.pubs}
        for s in self.subs:
            expected = self.expected.get(s.id, set())
            ids = [e for e, _ in s.got]
            v.expected += len(expected)
            v.delivered += len(expected & set(ids))
            v.missing += len(expected - set(ids))
            v.false_positive += len({e for e in ids if e in published} - expected)
            v.unknown += len({e for e in ids if e not in published})
            v.duplicate += len(ids) - len(set(ids))
            v.dropped += s.dropped
            first: dict[str, float] = {}
            for e, at in s.got:
                first.setdefault(e, at)
            v.latencies_ms += [(at - published[e].sent) * 1000 for e, at in first.items() if e in expected]
        return v

    def print_notifications(self) -> None:
        self.phase("notifications by quote: publisher -> subscription (its node) and latency from the publish "
                   "request to the long-poll read")
        for p in self.pubs:
            parts = []
            for s in self.subs:
                times = [at for e, at in s.got if e == p.id]
                expected = p.id in self.expected.get(s.id, set())
                if not times and expected:
                    parts.append(f"{s.label} (node {s.node}) MISSING")
                elif times:
                    part = f"{s.label} (node {s.node}) {(times[0] - p.sent) * 1000:.1f} ms"
                    if not expected:
                        part += " WRONG: does not match"
                    if len(times) > 1:
                        part += f" DUPLICATE x{len(times)}"
                    parts.append(part)
            self.say(f"      node {p.node} publishes {describe_quote(p.values)} -> {', '.join(parts) or 'nobody'}")

    def print_verdict(self, v: Verdict, late: str | None) -> None:
        lat = sorted(v.latencies_ms)
        figures = f"latency p50 {lat[len(lat) // 2]:.1f} ms, max {lat[-1]:.1f} ms" if lat else "no latency figures"
        if v.ok:
            self.say(f"verdict: OK, every quote reached exactly its subscribers: {v.delivered} of {v.expected} "
                     f"expected notifications, no false positive, no duplicate ({figures})")
        else:
            self.say(f"verdict: WRONG DELIVERY: {v.delivered} of {v.expected} expected notifications; missing "
                     f"{v.missing}, false positives {v.false_positive}, duplicates {v.duplicate}, unknown events "
                     f"{v.unknown}, dropped {v.dropped} ({figures})")
        if late:
            self.say(f"      {late}")

    async def print_nodes(self) -> None:
        infos = await self.within("asking the nodes how they are", asyncio.gather(*(c.node() for c in self.clients)))
        self.say("nodes (GET /v1/node):")
        for i, (r, info) in enumerate(zip(self.running, infos, strict=True)):
            leaves = info["leaves"]
            self.say(f"      node {i}  {info['id'][:8]}  dht udp {info['address']}:{info['dht_port']:<5}  api "
                     f"{r.api.url:<22}  {info['peers']} peers  {info['home_subscriptions']} subscriptions  "
                     f"{info['counters'].get('published', 0):>2} published  {info['tree_nodes']:>2} tree nodes "
                     f"({leaves} lea{'f' if leaves == 1 else 'ves'})")

    async def serve_until_signal(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        self.say("the network stays up; try its REST API (Ctrl-C stops it):")
        for line in curl_examples([r.api.url for r in self.running], self.subs[0].node, self.subs[0].id):
            self.say(f"  {line}")
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)

    async def close(self) -> None:
        """Cancel the readers, close the clients, stop every node; bounded, so shutting down never hangs."""
        for t in self.readers:
            t.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)
        for c in self.clients:
            await c.close()
        if not self.running:
            return
        self._phase = PHASES - 1
        self.phase(f"stopping {len(self.running)} nodes (the whole network ends: nothing to hand over)")
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(asyncio.gather(*(r.close(graceful=False) for r in reversed(self.running))),
                                   self.o.timeout)
        except TimeoutError:
            self.say(f"      some nodes did not stop within {self.o.timeout:g} s")
        else:
            self.say(f"      stopped in {_ms(time.monotonic() - t0)}")
        self.running = []


def curl_examples(urls: list[str], sub_node: int, sub_id: str) -> list[str]:
    """Commands that use the running network: read, subscribe, publish, follow."""
    a, b = urls[sub_node], urls[(sub_node + 1) % len(urls)]
    json_header = "-H 'Content-Type: application/json'"
    sub = json.dumps({"schema": "stocks", "filter": {"symbol": {"eq": "IBM"}}})
    pub = json.dumps({"schema": "stocks", "attributes": {"symbol": "AAPL", "price": 64.5, "volume": 1000}})
    return [
        f"curl -s {urls[0]}/v1/node",
        f"curl -s {urls[0]}/v1/schemas/stocks",
        f"curl -s {a}/v1/subscriptions/{sub_id}",
        f"curl -s -X POST {b}/v1/events {json_header} -d '{pub}'",
        f"curl -s '{a}/v1/subscriptions/{sub_id}/events?wait=30'",
        f"curl -sN {a}/v1/subscriptions/{sub_id}/events -H 'Accept: text/event-stream'",
        f"curl -s -X POST {b}/v1/subscriptions {json_header} -d '{sub}'",
    ]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


async def run_live(options: LiveOptions, out: TextIO | None = None) -> int:
    try:
        return await LiveDemo(options, out).run()
    except DemoError as e:
        print(f"p2pubsub demo: {e}", file=sys.stderr, flush=True)
        return 2


def run(options: LiveOptions, out: TextIO | None = None) -> int:
    try:
        return asyncio.run(run_live(options, out))
    except KeyboardInterrupt:
        return 130
