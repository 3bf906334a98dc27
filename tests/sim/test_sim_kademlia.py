"""Unmodified kademlia 2.2.3 on the virtual-time loop and simulated network: patch, clusters, determinism."""

import asyncio
import hashlib
import os
import random
import subprocess
import sys
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import kademlia.network
import kademlia.protocol
import kademlia.routing
import kademlia.storage
import pytest
import rpcudp.protocol
from kademlia.routing import KBucket
from kademlia.storage import ForgetfulStorage

from p2pubsub.sim import SimNetwork, VirtualTimeLoop
from p2pubsub.sim.kademlia_nodes import KADEMLIA_PORT, node_id, routing_snapshot, start_cluster, start_server
from p2pubsub.sim.kademlia_patch import kademlia_on_loop


def synthetic_latency(a, b):
    """5-101 ms one way, symmetric, fixed per pair."""
    return 0.005 + ((a + b) * 7919 % 97) / 1000


def test_patch_moves_kademlia_clock_and_randomness_and_restores_them(vloop):
    with kademlia_on_loop(vloop, seed=1):
        vloop.run_until(50.0)
        assert KBucket(0, 2**160, 20).last_updated == 50.0
        storage = ForgetfulStorage()
        storage[b"k"] = "v"
        vloop.run_until(50.0 + 3600)
        assert storage.iter_older_than(3600) == [(b"k", "v")]
        ids = [rpcudp.protocol.os.urandom(32), kademlia.protocol.random.randint(0, 2**160)]
        default_id = kademlia.network.Server().node.id
        with pytest.raises(RuntimeError, match="already active"), kademlia_on_loop(vloop, seed=1):
            pass
    assert kademlia.routing.time is time and kademlia.storage.time is time
    assert kademlia.network.random is random and kademlia.protocol.random is random
    assert rpcudp.protocol.os is os

    with kademlia_on_loop(vloop, seed=1):
        assert [rpcudp.protocol.os.urandom(32), kademlia.protocol.random.randint(0, 2**160)] == ids
        assert kademlia.network.Server().node.id == default_id
    with kademlia_on_loop(vloop, seed=2):
        assert rpcudp.protocol.os.urandom(32) != ids[0]


def test_seeded_node_ids():
    assert node_id(1, 5) == node_id(1, 5)
    assert len({node_id(1, i) for i in range(1000)} | {node_id(2, 0)}) == 1001
    assert len(node_id(1, 0)) == 20


def test_one_server_pair_talks_in_virtual_time(vloop):
    net = SimNetwork(vloop, lambda a, b: 0.25)
    net.add_hosts(2)

    async def main():
        a = await start_server(net, 0, seed=0)
        b = await start_server(net, 1, seed=0)
        t0 = vloop.time()
        found = await b.bootstrap([(net.ip_of(0), KADEMLIA_PORT)])
        elapsed = vloop.time() - t0
        assert await b.set("key", "value")
        value = await a.get("key")
        a.stop()
        b.stop()
        return found, elapsed, value

    with kademlia_on_loop(vloop, seed=0):
        found, elapsed, value = vloop.run_until_complete(main())
        vloop.run_for(10)  # let the closing transports' callbacks run
    assert [n.id for n in found] == [node_id(0, 0)]
    assert elapsed == 1.0  # ping round trip, then one find_node round trip: 4 one-way hops of 0.25 s
    assert value == "value"


@dataclass(frozen=True)
class ClusterRun:
    bootstrap_done: float
    finish: float
    stored: tuple
    values: tuple
    routing: tuple
    stats: tuple
    trace_rows: int
    unhandled: int
    wall: float

    def outcome(self):
        """Everything but wall time."""
        return astuple(self)[:-1]


def run_cluster(seed, nodes, *, crashed=0, keys=20, trace=False):
    """Bootstrap `nodes` servers, crash `crashed` of them, then set and get `keys` keys from live nodes."""
    loop = VirtualTimeLoop()
    errors = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    net = SimNetwork(loop, synthetic_latency)
    rows = []
    if trace:
        net.trace = lambda *row: rows.append(row)
    rng = random.Random(f"test-cluster/{seed}")

    async def main():
        hosts = net.add_hosts(nodes)
        servers = await start_cluster(net, hosts, seed=seed)
        bootstrap_done = loop.time()
        down = set(rng.sample(hosts, crashed))
        for host in sorted(down):
            net.crash(host)
        live = [h for h in hosts if h not in down]
        items = [(f"key-{i}", f"value-{i}") for i in range(keys)]
        stored = [await servers[rng.choice(live)].set(k, v) for k, v in items]
        values = [await servers[rng.choice(live)].get(k) for k, _ in items]
        routing = tuple(routing_snapshot(s) for s in servers)
        for server in servers:
            server.stop()
        return bootstrap_done, tuple(stored), tuple(values), routing

    wall = time.perf_counter()
    with kademlia_on_loop(loop, seed=seed):
        bootstrap_done, stored, values, routing = loop.run_until_complete(main())
        finish = loop.time()
        loop.run_for(10)  # outstanding RPCs time out after 5 s; let them, so no task is left pending
    wall = time.perf_counter() - wall
    loop.close()
    return ClusterRun(
        bootstrap_done, finish, stored, values, routing, astuple(net.stats), len(rows), len(errors), wall
    )


def test_200_kademlia_nodes_bootstrap_store_and_find_deterministically():
    first = run_cluster(seed=42, nodes=200, trace=True)
    second = run_cluster(seed=42, nodes=200, trace=True)
    print(
        f"\n200 kademlia nodes: bootstrap done at {first.bootstrap_done:.3f} s virtual, all done at "
        f"{first.finish:.3f} s virtual; wall {first.wall:.2f} s and {second.wall:.2f} s; "
        f"{first.stats[0]} datagrams"
    )
    assert first.unhandled == 0
    assert all(first.stored)
    assert first.values == tuple(f"value-{i}" for i in range(20))
    # Every node learned at least k=20 contacts, and nobody missed a reply on a lossless network.
    contacts = [sum(len(bucket) for bucket in table) for table in first.routing]
    assert min(contacts) >= 20
    sent, _, delivered = first.stats[:3]
    assert sent == delivered > 1000
    assert first.trace_rows == sent
    # The last of 199 joins starts at 199 * 0.05 s; joins take a few round trips of <= 0.2 s.
    assert 199 * 0.05 < first.bootstrap_done < 199 * 0.05 + 5
    assert first.outcome() == second.outcome()


def test_lookups_survive_crashed_nodes_through_virtual_timeouts():
    run = run_cluster(seed=3, nodes=100, crashed=15, keys=10)
    healthy = run_cluster(seed=3, nodes=100, crashed=0, keys=10)
    print(f"\n100 nodes, 15 crashed: wall {run.wall:.2f} s, virtual {run.finish:.1f} s")
    assert run.values == tuple(f"value-{i}" for i in range(10))
    assert run.unhandled == 0
    receiver_down = run.stats[7]
    assert receiver_down > 0
    # Each unanswered RPC costs rpcudp's 5 s timeout, in virtual time only.
    assert run.finish - run.bootstrap_done >= (healthy.finish - healthy.bootstrap_done) + 5


def cluster_digest(seed, nodes):
    """A digest of everything a cluster run produced (but wall time), for cross-process comparison."""
    return hashlib.sha256(repr(run_cluster(seed, nodes, keys=5).outcome()).encode()).hexdigest()


def test_cluster_is_deterministic_across_processes_and_hash_seeds():
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import test_sim_kademlia as t; print(t.cluster_digest(7, 40))"
    )
    digests = []
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        digests.append(out.stdout.strip())
    assert digests[0] == digests[1] == cluster_digest(7, 40)
    assert cluster_digest(8, 40) != digests[0]


@pytest.mark.parametrize("nodes", [2, 10])
def test_small_clusters_find_everyone(nodes):
    run = run_cluster(seed=1, nodes=nodes, keys=3)
    assert all(sum(len(b) for b in table) == nodes - 1 for table in run.routing)
    assert run.values == ("value-0", "value-1", "value-2")


def test_simulation_leaves_no_running_loop_or_patch_behind():
    run_cluster(seed=1, nodes=3, keys=1)
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
    assert kademlia.routing.time is time and rpcudp.protocol.os is os

    async def loop_type():
        return type(asyncio.get_running_loop())

    assert not issubclass(asyncio.run(loop_type()), VirtualTimeLoop)
