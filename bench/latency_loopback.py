"""Publish-to-notification latency on a loopback network of node processes (default 8).

Each node is a real ``p2pubsub node`` process (UDP DHT and peer messages, REST API) on 127.0.0.1 with ports
picked by the OS. Subscribers hold Server-Sent-Event streams on several nodes; events are posted to random nodes
at a steady rate; a notification's latency is the time from just before its ``POST /v1/events`` to its arrival on
the subscriber's stream, read from this one process's monotonic clock. The issue's target: p99 under 20 ms.

    python bench/latency_loopback.py [--nodes 8] [--subs 40] [--events 500] [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time

SCHEMA = {"price": {"type": "float", "min": 0, "max": 1000}, "sym": {"type": "string"},
          "volume": {"type": "int", "min": 0, "max": 1_000_000_000}}
SYMBOLS = ["AAPL", "MSFT", "IBM", "INTC", "ORCL", "YHOO"]


def start_node(bootstrap: int | None) -> tuple[subprocess.Popen, str, int]:
    cmd = [sys.executable, "-m", "p2pubsub", "node", "--dht-port", "0", "--http-port", "0", "--log-level", "warning",
           "--capacity", "20"]
    if bootstrap is not None:
        cmd += ["--bootstrap", f"127.0.0.1:{bootstrap}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    if "ready" not in line:
        raise RuntimeError(f"node did not start: {line!r}")
    dht = int(line.split("dht udp ")[1].split(",")[0].rsplit(":", 1)[1])
    url = line.rsplit("api ", 1)[1].strip()
    return proc, url, dht


async def run(args: argparse.Namespace) -> dict:
    from p2pubsub.client import AsyncClient

    rng = random.Random(args.seed)
    procs, urls = [], []
    try:
        first, url, dht = start_node(None)
        procs.append(first)
        urls.append(url)
        for _ in range(args.nodes - 1):
            proc, url, _ = start_node(dht)
            procs.append(proc)
            urls.append(url)
        clients = [AsyncClient(u) for u in urls]
        await clients[0].put_schema("stocks", SCHEMA)
        sent: dict[int, float] = {}  # event number (carried as its volume) -> when its POST started
        latencies: list[float] = []
        subs = []
        for _ in range(args.subs):
            lo = rng.uniform(0, 900)
            body = {"price": {"ge": lo, "le": lo + rng.uniform(20, 100)}}
            if rng.random() < 0.3:
                body["sym"] = {"eq": rng.choice(SYMBOLS)}
            i = rng.randrange(args.nodes)
            subs.append((i, (await clients[i].subscribe("stocks", body))["id"]))

        async def follow(i: int, sub_id: str) -> None:
            async for event in clients[i].stream(sub_id):
                t = time.perf_counter()  # the notification may beat the POST's own answer: key by content
                latencies.append(t - sent[event["attributes"]["volume"]])

        streams = [asyncio.create_task(follow(i, s)) for i, s in subs]
        await asyncio.sleep(0.5)  # let every stream open before the first event (a set-up pause, not a measurement)
        gap = 1.0 / args.rate
        t0 = time.perf_counter()
        for n in range(args.events):
            values = {"price": rng.uniform(0, 1000), "sym": rng.choice(SYMBOLS), "volume": n}
            client = clients[rng.randrange(args.nodes)]
            sent[n] = time.perf_counter()
            await client.publish("stocks", values)
            delay = t0 + (n + 1) * gap - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        deadline = time.perf_counter() + 10
        expected_total = None
        while time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
            if expected_total == len(latencies):
                break
            expected_total = len(latencies)
        for task in streams:
            task.cancel()
        for c in clients:
            await c.close()
        return {"latencies": latencies, "events": args.events}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--subs", type=int, default=40)
    ap.add_argument("--events", type=int, default=500)
    ap.add_argument("--rate", type=float, default=200.0, help="events per second (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    result = asyncio.run(run(args))
    lat = sorted(x * 1000 for x in result["latencies"])

    def q(p: float) -> float:
        return lat[min(len(lat) - 1, int(p * len(lat)))]

    print(f"{args.nodes} node processes on loopback, {args.subs} SSE subscribers, {args.events} events at "
          f"{args.rate:.0f}/s: {len(lat)} notifications")
    print(f"publish-to-notification latency ms: mean {statistics.fmean(lat):.2f}  p50 {q(0.5):.2f}  "
          f"p90 {q(0.9):.2f}  p99 {q(0.99):.2f}  max {lat[-1]:.2f}   (target: p99 < 20 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
