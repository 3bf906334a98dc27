"""``POST /v1/events`` throughput of the full API app against a bare aiohttp handler, side by side in one run.

Two servers run in their own processes on loopback (port 0): the *ceiling*, an aiohttp app whose POST handler
does nothing but answer 202, and the *full* app (``make_app`` over a :class:`LocalService`: JSON decoding and
checks, model validation, the real tree core publishing through an in-memory network with subscriptions installed,
delivery into the subscribers' buffers, metrics). One keep-alive aiohttp client with ``--concurrency`` requests in
flight posts the same pre-encoded events to each, in alternating rounds (these machines are noisy), and the
medians are compared. The issue's target: the full app reaches at least 50% of the ceiling.

    python bench/api_throughput.py [--requests 4000] [--rounds 3] [--concurrency 32] [--subs 200]

A third server, the full app over a service whose ``publish`` only validates the event, separates the cost of the
API layer from that of the in-memory tree. Besides req/s (which the client process, other load and the two cores
of these machines blur) the servers' own CPU time per request is reported, and both ratios. (The real node's
pipeline will later replace ``LocalService`` here.)
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

    from p2pubsub.api import LocalCluster, SubscriptionRegistry, make_app, start_api

    registry = None
    if kind == "bare":
        async def nothing(request: web.Request) -> web.Response:
            return web.Response(status=202)

        app = web.Application()
        app.router.add_post("/v1/events", nothing)
        stats = lambda: {}  # noqa: E731
    else:
        rng = random.Random(seed)
        cluster = LocalCluster(hosts if kind == "full" else 1, seed=seed, checked=False)
        registry = SubscriptionRegistry(rng=random.Random(seed))
        service = cluster.service(0, registry)
        await service.put_schema("quotes", QUOTES)
        # subscribers all over the cluster (the tree splits across hosts), some homed at this node
        if kind == "null":  # the API layer alone: events are validated, then dropped
            from p2pubsub.model import parse_event

            async def publish(schema: str, attributes: dict) -> str:
                parse_event(cluster.schemas[schema], attributes)
                return "0" * 16

            service.publish = publish
        for i in range(subs if kind == "full" else 0):
            lo = rng.uniform(0, 990)
            f = {"price": {"ge": lo, "le": min(1000.0, lo + 20)}}
            if i % 4 == 0:
                f["sym"] = {"eq": rng.choice(SYMBOLS)}
            if i % 10 == 0:
                await service.subscribe("quotes", f, None)
            else:
                from p2pubsub.model import parse_filter

                schema = cluster.schemas["quotes"]
                cluster.net.subscribe(rng.randrange(1, hosts), schema, parse_filter(schema, f))
        cluster.settle()
        app = make_app(service, registry)
        # CPU seconds in the tree core: the home's publish (RndRegionProbe: this node's own tree work) and settling
        # the in-memory network (every host's handling of the probes: on a real network, other machines' work)
        spent = {"home": 0.0, "settle": 0.0}

        def timed(key: str, fn):
            def run(*a):
                t0 = time.process_time()
                try:
                    return fn(*a)
                finally:
                    spent[key] += time.process_time() - t0
            return run

        cluster.settle = timed("settle", cluster.settle)
        cluster.net.publish = timed("home", cluster.net.publish)

        def stats():
            leaves = sum(n.is_leaf for n in cluster.net.tree_nodes().values())
            return {"leaves": leaves, "notifications": registry.stats()["delivered_total"],
                    "published": service.published, "tree_cpu": dict(spent),
                    "messages": sum(cluster.net.record.messages.values())}

    server = await start_api(app, "127.0.0.1", 0)
    conn.send(server.port)
    loop = asyncio.get_running_loop()
    while True:
        msg = await loop.run_in_executor(None, conn.recv)
        if msg == "stats":
            conn.send(stats())
        elif msg == "cpu":
            conn.send((time.process_time(), stats().get("tree_cpu", {"home": 0.0, "settle": 0.0})))
        else:
            break
    await server.close()
    if registry is not None:
        await registry.aclose()


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
    ap.add_argument("--hosts", type=int, default=32, help="in-memory hosts behind the full app (default 32)")
    ap.add_argument("--subs", type=int, default=200, help="subscriptions installed (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    ctx = mp.get_context("spawn")
    servers = {}
    kinds = ("bare", "null", "full")
    for kind in kinds:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(kind, args.hosts, args.subs, args.seed, child), daemon=True)
        proc.start()
        servers[kind] = (proc, parent, f"http://127.0.0.1:{parent.recv()}/v1/events")
    payloads = _payloads(args.requests, args.seed)
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    lats: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}  # server CPU seconds per request
    tree_cpu = {"home": 0.0, "settle": 0.0}  # of which in the tree core, in the full app (seconds, all rounds)

    def server_cpu(kind: str) -> tuple[float, dict]:
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
                cpu[kind].append((after[0] - before[0]) / len(payloads))
                if kind == "full":
                    for key in tree_cpu:
                        tree_cpu[key] += after[1][key] - before[1][key]
                rates[kind].append(rate)
                lats[kind] += lat
        servers["full"][1].send("stats")
        stats = servers["full"][1].recv()
    finally:
        for proc, conn, _ in servers.values():
            conn.send("stop")
            proc.join(10)
            if proc.is_alive():
                proc.terminate()

    def p(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000

    print(f"POST /v1/events, {args.rounds} rounds x {args.requests} requests, concurrency {args.concurrency}, "
          f"keep-alive aiohttp client; full app: {args.hosts} in-memory hosts, {args.subs} subscriptions, "
          f"{stats['leaves']} leaves")
    print(f"{'server':<34} {'req/s (median)':>14} {'rounds':>24} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}")
    for kind, label in (("bare", "bare aiohttp handler (ceiling)"), ("null", "full app, no-op publish (API only)"),
                        ("full", "full app over LocalService")):
        med = statistics.median(rates[kind])
        rounds = " ".join(f"{x:,.0f}" for x in rates[kind])
        print(f"{label:<34} {med:>14,.0f} {rounds:>24} {p(lats[kind], 0.5):>7.2f} {p(lats[kind], 0.99):>7.2f} "
              f"{statistics.median(cpu[kind]) * 1e6:>10.0f}")
    for kind in ("full", "null"):
        ratio = statistics.median(rates[kind]) / statistics.median(rates["bare"])
        cpu_ratio = statistics.median(cpu["bare"]) / statistics.median(cpu[kind])
        print(f"ratio {kind}/bare: {ratio:.2f} in req/s, {cpu_ratio:.2f} in server CPU per request"
              + (" (target >= 0.50)" if kind == "full" else ""))
    measured = sum(cpu["full"]) * args.requests
    home, settle = (tree_cpu[k] / measured for k in ("home", "settle"))
    print(f"the full app published {stats['published']:,} events ({stats['messages'] / stats['published']:.1f} "
          f"in-memory messages each); {stats['notifications']:,} notifications were buffered at its node")
    print(f"full app CPU: {settle:.0%} settling the in-memory network (all {args.hosts} hosts' tree work, in this one "
          f"process), {home:.0%} in the home's publish (RndRegionProbe), {1 - home - settle:.0%} HTTP and API layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
