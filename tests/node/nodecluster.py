"""Test helpers: a cluster of real nodes on loopback, and waiting on conditions."""

import random

from conditions import until

from p2pubsub.node.config import NodeConfig
from p2pubsub.node.runtime import Node


class Cluster:
    """Real nodes on loopback UDP (port 0), each recording what it delivers."""

    def __init__(self, seed: int = 0, **config) -> None:
        self.seed = seed
        self.config = {"dht_port": 0, "http_port": None, "capacity": 3, "tick_interval": 0.5, **config}
        self.nodes: list[Node] = []
        self.got: list[tuple[int, str, str]] = []  # (node index, sub_id, event_id)

    async def add(self, **overrides) -> Node:
        i = len(self.nodes)
        boot = () if not self.nodes else (("127.0.0.1", self.nodes[0].host[2]),)
        cfg = NodeConfig(**{**self.config, "bootstrap": boot, **overrides})
        node = Node(cfg, rng=random.Random(self.seed * 1000 + i),
                    on_deliver=lambda subs, e, i=i: self.got.extend((i, s, e.event_id) for s in subs))
        await node.start()
        self.nodes.append(node)
        return node

    def idle(self) -> bool:
        return all(
            not n.peers or not any(s.queue_length for s in n.peers.all_stats().values()) for n in self.nodes
        )

    async def settle(self, timeout: float = 10.0) -> None:
        await until(self.idle, timeout, "every transport queue to drain")

    async def close(self) -> None:
        for n in reversed(self.nodes):
            await n.stop(graceful=False)
