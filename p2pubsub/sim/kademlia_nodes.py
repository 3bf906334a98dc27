"""Unmodified `kademlia.network.Server`s on simulated hosts: seeded ids, joining, routing snapshots."""

from __future__ import annotations

import asyncio
import hashlib
import random

from kademlia.network import Server

from p2pubsub.sim.network import SimNetwork

__all__ = ["KADEMLIA_PORT", "node_id", "routing_snapshot", "start_cluster", "start_server"]

#: Port the simulated kademlia servers listen on (every host has its own address, so one port fits all).
KADEMLIA_PORT = 8468


def node_id(seed: int | str, index: int) -> bytes:
    """A 160-bit kademlia node id for node `index` of a run seeded with `seed`.

    Derived by hashing, so ids do not depend on the order in which nodes are created.
    """
    return hashlib.sha1(f"p2pubsub.sim/node-id/{seed}/{index}".encode()).digest()


async def start_server(
    network: SimNetwork,
    host: int,
    *,
    seed: int | str,
    port: int = KADEMLIA_PORT,
    ksize: int = 20,
    alpha: int = 3,
) -> Server:
    """Create a kademlia `Server` with a seeded id and make it listen on `host`'s address."""
    server = Server(ksize=ksize, alpha=alpha, node_id=node_id(seed, host))
    await server.listen(port, interface=network.ip_of(host))
    return server


async def start_cluster(
    network: SimNetwork,
    hosts: list[int],
    *,
    seed: int | str,
    join_interval: float = 0.05,
    port: int = KADEMLIA_PORT,
    ksize: int = 20,
    alpha: int = 3,
) -> list[Server]:
    """Start a server on every host, then let them join one by one; return once all bootstraps are done.

    The server on `hosts[k]` (k >= 1) starts bootstrapping at `k * join_interval` virtual seconds from now,
    through the server of a seeded-random earlier host. Earlier joins may still be running when later ones
    start, as in a real deployment.
    """
    servers = [await start_server(network, h, seed=seed, port=port, ksize=ksize, alpha=alpha) for h in hosts]
    rng = random.Random(f"p2pubsub.sim/bootstrap/{seed}")
    contacts = [None] + [hosts[rng.randrange(k)] for k in range(1, len(hosts))]

    async def join(k: int) -> None:
        await asyncio.sleep(k * join_interval)
        await servers[k].bootstrap([(network.ip_of(contacts[k]), port)])

    await asyncio.gather(*(join(k) for k in range(1, len(hosts))))
    return servers


def routing_snapshot(server: Server) -> tuple[tuple[tuple[bytes, str, int], ...], ...]:
    """The server's routing table: per bucket, its contacts `(id, ip, port)` in the bucket's own order."""
    return tuple(
        tuple((n.id, n.ip, n.port) for n in bucket.get_nodes()) for bucket in server.protocol.router.buckets
    )
