"""A node's configuration: addresses, its share of the tree (leaf capacity), and protocol knobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import TreeOptions
from ..tree import TreeConfig
from .transport import TransportConfig


@dataclass(frozen=True)
class NodeConfig:
    host: str = "127.0.0.1"  # interface to bind
    dht_port: int = 8468  # UDP: the DHT and all peer messages (0: any free port)
    http_port: int = 8080  # TCP: the REST API (0: any free port; None: no API)
    advertise: str | None = None  # address peers reach us at, when ``host`` is a wildcard
    bootstrap: tuple[tuple[str, int], ...] = ()  # empty: start a new network
    capacity: int = 1000  # subscriptions a leaf on this node holds before it splits (thesis: rand(10, 30))
    tree: TreeConfig = field(default_factory=TreeConfig)
    multicast: bool = True  # prefix-grouped probes (thesis §3.4.2); False: one message per probe
    replicas: int = 3  # copies of each tree node and schema: on the node responsible and the next closest (§3.6)
    ksize: int = 20
    alpha: int = 3
    rpc_timeout: float = 2.0  # kademlia request timeout (the library's is a fixed 5 s)
    lookup_rounds: int = 4  # FIND_NODE rounds at most before answering for a key we hold nothing of
    tick_interval: float = 2.0  # housekeeping: expiry, hand-off checks
    join_timeout: float = 5.0  # how long a joining node waits for each neighbour's hand-off
    request_timeout: float = 10.0  # schema requests
    install_timeout: float = 30.0  # a subscription not installed by then is reported as failed
    max_hops: int = 48  # a routed message that travelled this far is dropped (and counted)
    # a peer that answers nothing for about 3 s (4 timeouts, RTO capped at 1 s) is gone: its keys move on (§3.6)
    transport: TransportConfig = field(default_factory=lambda: TransportConfig(max_retries=4, max_rto=1.0))
    trace: str | None = None  # append a per-message trace to this file (p2pubsub.node.tracefile)

    @property
    def tree_defaults(self) -> TreeOptions:
        """The geometry this node gives schemas that do not fix their own."""
        t = self.tree
        return TreeOptions(t.cutoff_fraction if t.cutoff else None, t.widen_fraction)
