"""``POST /v1/events`` throughput of one node running its whole pipeline against a bare aiohttp handler, side by
side in one run.

Three servers run in their own processes on loopback (port 0): the *ceiling*, an aiohttp app whose POST handler
does nothing but answer 202; the *node*: a real ``p2pubsub`` node (a one-node network: DHT socket, tree core,
routing, multicast, matching, delivery into its subscribers' buffers) behind the full REST app; and the same node
whose ``publish`` only validates the event, which separates the API layer from the pub/sub pipeline. One
keep-alive aiohttp client with ``--concurrency`` requests in flight posts the same pre-encoded events to each, in
alternating rounds (these machines are noisy), and the medians are compared. The issue's target: the node reaches
at least 50% of the ceiling. Besides req/s (which the client process, other load and the two cores blur) the
servers' own CPU time per request is reported, and both ratios.

    python bench/api_throughput.py [--requests 4000] [--rounds 3] [--concurrency 32] [--hosts 1000] [--subs 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import statistics
import sys
import time

QUOTES = {
    "attributes": {
        "price": {"type": "float", "min": 0, "max": 1000},
        "sym": {"type": "string"},
        "volume": {"type": "int", "min": 0, "max": 1_000_000_000},
    }
}
SYMBOLS = ["AAPL", "MSFT", "IBM", "INTC", "ORCL", "YHOO", "AMZN", "GOOG"]


def _serve(kind: str, hosts: int, subs: int, seed: int, conn) -> None:
    asyncio.run(_serve_async(kind, hosts, subs, seed, conn))


async def _serve_async(kind: str, hosts: int, subs: int, seed: int, conn) -> None:
    from aiohttp import web

    from p2pubsub.api import SubscriptionRegistry, make_app, start_api
    from p2pubsub.model import parse_event
    from p2pubsub.node.config import NodeConfig
    from p2pubsub.node.runtime import Node
    from p2pubsub.node.service import NodeApiService

    registry = node = None
    if kind == "bare":
        async def nothing(request: web.Request) -> web.Response:
            return web.Response(status=202)

        app = web.Application()
        app.router.add_post("/v1/events", nothing)
        stats = lambda: {}  # noqa: E731
    else:
        rng = random.Random(seed)
        node = Node(NodeConfig(dht_port=0, http_port=None, capacity=hosts), rng=random.Random(seed))
        await node.start()
        registry = SubscriptionRegistry(rng=random.Random(seed))
        service = NodeApiService(node, registry)
        await service.put_schema("quotes", QUOTES)
        for i in range(subs):
            lo = rng.uniform(0, 990)
            f = {"price": {"ge": lo, "le": min(1000.0, lo + 20)}}
            if i % 4 == 0:
                f["sym"] = {"eq": rng.choice(SYMBOLS)}
            await service.subscribe("quotes", f, None)
        if kind == "null":  # the API layer alone: events are validated, then dropped
            schema = await node.get_schema("quotes")

            async def publish(name: str, attributes: dict) -> str:
                parse_event(schema, attributes)
                return "0" * 16

            service.publish = publish
        app = make_app(service, registry)

        def stats():
            info = node.info()
            return {"leaves": info["leaves"], "tree_nodes": info["tree_nodes"],
                    "notifications": registry.stats()["delivered_total"], "published": node.counters["published"]}

    server = await start_api(app, "127.0.0.1", 0)
    conn.send(server.port)
    loop = asyncio.get_running_loop()
    while True:
        msg = await loop.run_in_executor(None, conn.recv)
        if msg == "stats":
            conn.send(stats())
        elif msg == "cpu":
            conn.send(time.process_time())
        else:
            break
    await server.close()
    if registry is not None:
        await registry.aclose()
    if node is not None:
        await node.stop(graceful=False)


def _payloads(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        attrs = {"price": round(rng.uniform(0, 1000), 2), "sym": rng.choice(SYMBOLS),
                 "volume": rng.randrange(0, 10**8)}
        out.append(json.dumps({"schema": "quotes", "attributes": attrs}).encode())
    return out


async def _round(url: str, payloads: list[bytes], concurrency: int) -> tuple[float, list[float]]:
    import aiohttp

    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:
        async def warm() -> None:
            async with session.post(url, data=payloads[0], headers=headers) as r:
                await r.read()

        await asyncio.gather(*(warm() for _ in range(concurrency)))  # open the keep-alive connections first
        queue = iter(payloads)

        async def worker() -> None:
            for body in queue:
                t0 = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as r:
                    await r.read()
                    if r.status != 202:
                        raise RuntimeError(f"{r.status}: {await r.text()}")
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    return len(payloads) / elapsed, latencies


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=4000, help="events per round (default 4000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per server (default 3)")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight (default 32)")
    ap.add_argument("--hosts", type=int, default=1000,
                    help="the node's leaf capacity (default 1000, the node's default; the thesis draws 10-30)")
    ap.add_argument("--subs", type=int, default=1000, help="subscriptions installed (default 1000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    ctx = mp.get_context("spawn")
    servers = {}
    kinds = ("bare", "null", "node")
    for kind in kinds:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(kind, args.hosts, args.subs, args.seed, child), daemon=True)
        proc.start()
        servers[kind] = (proc, parent, f"http://127.0.0.1:{parent.recv()}/v1/events")
    payloads = _payloads(args.requests, args.seed)
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    lats: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}  # server CPU seconds per request
    def server_cpu(kind: str) -> float:
        servers[kind][1].send("cpu")
        return servers[kind][1].recv()

    try:
        for kind in kinds:  # warm-up round, not counted
            asyncio.run(_round(servers[kind][2], payloads[: args.requests // 4], args.concurrency))
        for r in range(args.rounds):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                before = server_cpu(kind)
                rate, lat = asyncio.run(_round(servers[kind][2], payloads, args.concurrency))
                after = server_cpu(kind)
                cpu[kind].append((after - before) / len(payloads))
                rates[kind].append(rate)
                lats[kind] += lat
        servers["node"][1].send("stats")
        stats = servers["node"][1].recv()
    finally:
        for proc, conn, _ in servers.values():
            conn.send("stop")
            proc.join(10)
            if proc.is_alive():
                proc.terminate()

    def p(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000

    print(f"POST /v1/events, {args.rounds} rounds x {args.requests} requests, concurrency {args.concurrency}, "
          f"keep-alive aiohttp client; the node: leaf capacity {args.hosts}, {args.subs} subscriptions homed "
          f"there, {stats['tree_nodes']} tree nodes")
    print(f"{'server':<38} {'req/s (median)':>14} {'rounds':>24} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}")
    for kind, label in (("bare", "bare aiohttp handler (ceiling)"), ("null", "node's API, no-op publish"),
                        ("node", "node, whole pipeline")):
        med = statistics.median(rates[kind])
        rounds = " ".join(f"{x:,.0f}" for x in rates[kind])
        print(f"{label:<38} {med:>14,.0f} {rounds:>24} {p(lats[kind], 0.5):>7.2f} {p(lats[kind], 0.99):>7.2f} "
              f"{statistics.median(cpu[kind]) * 1e6:>10.0f}")
    for kind in ("node", "null"):
        ratio = statistics.median(rates[kind]) / statistics.median(rates["bare"])
        cpu_ratio = statistics.median(cpu["bare"]) / statistics.median(cpu[kind])
        print(f"ratio {kind}/bare: {ratio:.2f} in req/s, {cpu_ratio:.2f} in server CPU per request"
              + (" (target >= 0.50)" if kind == "node" else ""))
    print(f"the node published {stats['published']:,} events; {stats['notifications']:,} notifications were "
          f"buffered for its subscribers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
