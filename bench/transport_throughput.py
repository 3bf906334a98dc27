"""Throughput of PeerTransport on loopback: one sender -> one receiver, against raw `sendto` of the same payloads.

Three runs per message kind, side by side in one process and one event loop (so the ratios are fair even on a
noisy machine):

- raw sendto: the encoded frames, one per datagram, no decoding; the sender waits for each batch (64 datagrams, or
  fewer big ones: at most ~100 kB) to be read before sending the next (in-process flow control, no ACK datagrams),
  so nothing overflows the receiver's socket buffer;
- raw + wire: the same, plus `wire.encode` at the sender and `wire.decode` at the receiver;
- PeerTransport: `send()` -> `on_message`, reliable and ordered, with ACKs, packing and the window.

MB/s counts encoded message bytes (the wire frames), not datagram headers or ACKs. Both ends share one CPU here,
and the wire codec (pure Python around cbor2) dominates: compare PeerTransport with "raw + wire".

Usage: python bench/transport_throughput.py [--count N] [--repeat R]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from p2pubsub.model import Schema, parse_event, parse_filter
from p2pubsub.node import wire
from p2pubsub.node.transport import PeerTransport
from p2pubsub.tree import LeafUpdate, ProbePub, PubEvent, TransferSub, TreeConfig, TreeId
from p2pubsub.tree.pieces import make_entries, probe_target, space_of

BATCH = 64
BATCH_BYTES = 100_000  # well under the default socket receive buffer (~208 kB on Linux)


def typical_messages() -> dict[str, object]:
    schema = Schema.from_dict(
        "stocks",
        {
            "attributes": {
                "price": {"type": "float", "min": 0, "max": 1000},
                "high": {"type": "float", "min": 0, "max": 1000},
                "volume": {"type": "int", "min": 0, "max": 10**10},
                "sym": {"type": "string"},
            }
        },
    )
    config = TreeConfig()
    host = (bytes(range(20)), "192.168.17.120", 8468)
    event = parse_event(schema, {"sym": "AAPL", "price": 63.3, "high": 64.25, "volume": 10924200})
    pub = PubEvent("9f3c2a1be07d4c55", "stocks", event.values, schema.absent, 1718000000.123, host)
    price = space_of(schema, "price", config)
    sub = parse_filter(schema, {"price": {"ge": 60, "le": 65.5}, "sym": {"eq": "AAPL"}})
    space, entries = make_entries(sub, schema, "5b7e0d4c1a2f9e83", 1, host, config, random.Random(1))
    node = TreeId(price.root, "0110100")
    return {
        "LeafUpdate": LeafUpdate(node, "0110100"),
        "ProbePub": ProbePub(node, price, "0110", probe_target(price, 63.3), pub),
        "TransferSub x64": TransferSub(node, space, tuple(entries) * 64, (), 0, 1),
    }


class _Sink(asyncio.DatagramProtocol):
    def __init__(self, on_datagram) -> None:
        self.on_datagram = on_datagram

    def datagram_received(self, data, addr) -> None:
        self.on_datagram(data, addr)


async def _endpoint(on_datagram):
    loop = asyncio.get_running_loop()
    udp, proto = await loop.create_datagram_endpoint(lambda: _Sink(on_datagram), local_addr=("127.0.0.1", 0))
    return udp, proto


async def run_raw(message: object, count: int, codec: bool) -> tuple[float, int]:
    """Seconds to move ``count`` copies through raw sendto (in awaited batches); datagrams sent."""
    loop = asyncio.get_running_loop()
    frame = wire.encode(message)
    batch = max(1, min(BATCH, BATCH_BYTES // len(frame)))
    state = {"got": 0, "batch": None}

    def received(data, addr):
        if codec:
            wire.decode(data)
        state["got"] += 1
        if state["got"] % batch == 0 or state["got"] == count:
            state["batch"].set_result(None)

    rx, _ = await _endpoint(received)
    tx, _ = await _endpoint(lambda data, addr: None)
    target = rx.get_extra_info("sockname")
    start = time.perf_counter()
    sent = 0
    while sent < count:
        state["batch"] = loop.create_future()
        for _ in range(min(batch, count - sent)):
            tx.sendto(wire.encode(message) if codec else frame, target)
            sent += 1
        await asyncio.wait_for(state["batch"], 10)
    elapsed = time.perf_counter() - start
    rx.close()
    tx.close()
    return elapsed, sent


async def run_transport(message: object, count: int) -> tuple[float, int]:
    """Seconds to deliver ``count`` copies through PeerTransport; datagrams the sender sent."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    got = 0

    def on_message(addr, m):
        nonlocal got
        got += 1
        if got == count:
            done.set_result(None)

    def undeliverable(addr, ms):
        done.set_exception(RuntimeError(f"{len(ms)} messages undeliverable"))

    receiver = PeerTransport(on_message=on_message, on_undeliverable=undeliverable, rng=random.Random(1))
    sender = PeerTransport(on_message=lambda *a: None, on_undeliverable=undeliverable, rng=random.Random(2))
    rx, _ = await _endpoint(receiver.datagram_received)
    tx, _ = await _endpoint(sender.datagram_received)
    receiver.attach(rx)
    sender.attach(tx)
    target = rx.get_extra_info("sockname")
    start = time.perf_counter()
    for _ in range(count):
        sender.send(target, message)
    await asyncio.wait_for(done, 60)
    elapsed = time.perf_counter() - start
    datagrams = sender.counters.datagrams_out
    sender.close()
    receiver.close()
    rx.close()
    tx.close()
    return elapsed, datagrams


async def main(count: int, repeat: int) -> None:
    print(f"one sender -> one receiver on 127.0.0.1, one process; best of {repeat}")
    header = f"{'message':<16} {'bytes':>6} {'run':<14} {'msgs/s':>9} {'MB/s':>7} {'datagrams':>9}"
    print(f"{header} {'vs raw':>7} {'vs raw+wire':>11}")
    for name, message in typical_messages().items():
        size = len(wire.encode(message))
        n = max(200, count * 216 // max(size, 216))  # fewer of the big ones
        results = {}
        for _ in range(repeat):
            for run, coro in (
                ("raw sendto", run_raw(message, n, codec=False)),
                ("raw + wire", run_raw(message, n, codec=True)),
                ("PeerTransport", run_transport(message, n)),
            ):
                elapsed, datagrams = await coro
                best = results.get(run)
                if best is None or elapsed < best[0]:
                    results[run] = (elapsed, datagrams)
        raw = n / results["raw sendto"][0]
        codec = n / results["raw + wire"][0]
        for run, (elapsed, datagrams) in results.items():
            rate = n / elapsed
            print(
                f"{name:<16} {size:>6} {run:<14} {rate:>9.0f} {rate * size / 1e6:>7.1f} {datagrams:>9} "
                f"{rate / raw:>7.2f} {rate / codec:>11.2f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="messages of the ProbePub size per run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.count, args.repeat))
