"""Virtual-time simulation of p2pubsub: the real node code on a virtual clock and an in-memory network.

- `vloop`: `VirtualTimeLoop`, an asyncio loop that jumps to the next timer instead of sleeping.
- `network`: `SimNetwork`, simulated hosts and datagram delivery (latency, capacity, loss, crashes, trace).
- `links`: FIFO transmission queues used for capacity-limited links.
- `transport`: the in-memory `DatagramTransport`.
- `kademlia_patch`: point kademlia/rpcudp's clock and randomness at the loop and seeded RNGs.
- `kademlia_nodes`: seeded kademlia servers on simulated hosts.
- `engine`: what every `p2pubsub sim` run shares (phases, workload clock, churn, drain); `runner`: the DHT mode
  and `run_scenario`; `scot`: the broker overlays (modes scot and padres); `tracing`, `oracle`, `summary`.
"""

from p2pubsub.sim.links import Backlog, TransmitQueue
from p2pubsub.sim.network import NetStats, SimNetwork, host_ip
from p2pubsub.sim.transport import SimDatagramTransport
from p2pubsub.sim.vloop import RealIOForbidden, SimulationStalled, VirtualTimeLoop, run

__all__ = [
    "Backlog",
    "NetStats",
    "RealIOForbidden",
    "SimDatagramTransport",
    "SimNetwork",
    "SimulationStalled",
    "TransmitQueue",
    "VirtualTimeLoop",
    "host_ip",
    "run",
]
