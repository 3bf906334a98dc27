"""`p2pubsub sim`: a scenario's nodes — the real node code — in one process, on virtual time and a simulated network.

Only the clock and the network are simulated: a `VirtualTimeLoop` and a `SimNetwork` whose datagrams take the
latency model's one-way delay (plus queueing on capacity-limited uplinks); the phases, the workload clock, churn,
drain, trace and summary are `p2pubsub.sim.engine`'s. This module holds the DHT mode (``mode = "dht"``): each node
is the unmodified `p2pubsub.node.runtime.Node` (kademlia DHT, tree core, multicast, delivery) bound to its own
simulated host; kademlia reads the loop's clock and seeded RNGs (`kademlia_on_loop`). Its preparation step: node 0
registers the workload's schema. The broker overlays (``mode = "scot"`` / ``"padres"``) are `p2pubsub.sim.scot`.

`run_scenario` runs either. The run's trace (`p2pubsub.trace` format) and ``summary.json`` go to the output
directory. Same scenario and seed, same trace and summary (except the wall time and memory figures, see
`p2pubsub.sim.summary`).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..node.config import NodeConfig
from ..node.keys import tree_key
from ..node.runtime import Node
from ..scenario import Scenario, load_scenario
from ..tree import TreeConfig
from .engine import SimNode, SimulationBase
from .kademlia_nodes import KADEMLIA_PORT, node_id
from .progress import Progress
from .tracing import TraceObserver

__all__ = ["SimNode", "Simulation", "run_scenario"]


class _Observer(TraceObserver):
    """The trace observer, plus what the oracle needs: each subscription's filter as its node installs it."""

    def __init__(self, sim: Simulation, *args: Any) -> None:
        super().__init__(*args)
        self._sim = sim

    def subscribed(self, node: Any, sub_id: str, at: float) -> None:
        super().subscribed(node, sub_id, at)
        state = node.core.home.subs.get(sub_id)
        if state is not None:
            self._sim.oracle.subscription(sub_id, node.sim_index, state.versions[state.current].sub)


class Simulation(SimulationBase):
    """A ``mode = "dht"`` run: `Node`s (2d-tree over Kademlia)."""

    def __init__(self, scenario: Scenario, out_dir: str | Path, **kw: Any) -> None:
        if scenario.mode != "dht":
            raise ValueError(f"Simulation runs mode 'dht' scenarios; {scenario.name} has mode {scenario.mode!r}")
        super().__init__(scenario, out_dir, **kw)

    def _make_observer(self) -> TraceObserver:
        return _Observer(self, self.writer, self.loop.time, self.net.host_of)

    def _config(self, index: int, contact: int | None) -> NodeConfig:
        p = self.scenario.protocol
        tree = TreeConfig(
            min_probe_level=p.min_probe_level,
            max_probe_level=p.max_probe_level,
            probe_p=p.probe_p,
            cutoff=p.cutoff,
            cutoff_fraction=p.cutoff_fraction,
            seen_ttl=p.seen_ttl_s,
        )
        boot = () if contact is None else ((self.net.ip_of(contact), KADEMLIA_PORT),)
        return NodeConfig(
            host=self.net.ip_of(index),
            dht_port=KADEMLIA_PORT,
            http_port=None,
            bootstrap=boot,
            capacity=self.workload.capacities[index],
            tree=tree,
            multicast=p.multicast,
            replicas=p.replicas,
            **{"tick_interval": p.tick_interval_s, **self.node_config},  # the CLI's --tick-interval wins
        )

    def _new_node(self, index: int, contact: int | None) -> Node:
        return Node(
            self._config(index, contact),
            rng=random.Random(f"p2pubsub.sim/node/{self.seed}/{index}"),
            node_id=node_id(self.seed, index),
            observer=self.observer,
            wall_clock=self.loop.time,
        )

    async def _prepare(self) -> None:
        await self.nodes[0].node.put_schema(self.workload.schema_name, self.workload.schema)

    def _at_end(self) -> None:
        self.tree_check = tree_check([(n.index, n.node) for n in self.nodes if n.gone_at is None and n.node.core])

    def extend_summary(self, summary: dict[str, Any]) -> None:
        summary["tree_check"] = self.tree_check


def tree_check(nodes: list[tuple[int, Node]], examples: int = 5) -> dict[str, Any]:
    """Where the tree nodes ended up, against the truth only the simulator knows: each belongs on the live node
    closest to its key. ``tree_nodes`` distinct ids held, ``duplicated`` held by more than one node,
    ``misplaced`` held by a node that is not the closest (``examples``: a few, with their holders and the closest
    node); ``level_gaps``: (node, level) pairs where a node's Kademlia table knows no node of a level of the id
    space that has some (such a node takes the level's keys for its own), over ``nodes_with_gaps`` nodes;
    ``host_stats``: the tree hosts' counters summed (parked, dropped, revived, promoted, ...)."""
    ids = {i: int.from_bytes(n.id, "big") for i, n in nodes}
    holders: dict[Any, list[int]] = defaultdict(list)
    stats: Counter = Counter()
    for i, n in nodes:
        stats.update(asdict(n.core.tree.stats))
        for tid in n.core.tree.nodes:
            holders[tid].append(i)

    def closest(tid) -> int:
        k = int.from_bytes(tree_key(tid), "big")
        return min(ids, key=lambda i: ids[i] ^ k)

    truth = {t: closest(t) for t in holders}
    wrong = sorted((str(t), sorted(h), truth[t]) for t, h in holders.items() if any(i != truth[t] for i in h))
    gaps = 0
    gapped = 0
    for i, n in nodes:
        me = ids[i]
        need = {160 - (me ^ o).bit_length() for j, o in ids.items() if j != i}
        have = {160 - (me ^ c).bit_length() for c, _ in n.dht.contact_pairs()}
        missing = len(need - have)
        gaps += missing
        gapped += missing > 0
    return {
        "tree_nodes": len(holders),
        "duplicated": sum(len(h) > 1 for h in holders.values()),
        "misplaced": len(wrong),
        "examples": [{"tree_node": t, "held_by": h, "closest": c} for t, h, c in wrong[:examples]],
        "level_gaps": gaps,
        "nodes_with_gaps": gapped,
        "host_stats": dict(sorted(stats.items())),
    }


def run_scenario(
    scenario: Scenario | str | Path,
    out_dir: str | Path,
    *,
    progress: Progress | None = None,
    node_config: dict[str, Any] | None = None,
    check_trace: bool = False,
    share_frames: bool = True,
) -> dict[str, Any]:
    """Run a scenario (a `Scenario` or a TOML path) and write its trace and summary to ``out_dir``."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    kind: type[SimulationBase] = Simulation
    if scenario.mode != "dht":
        from .scot import ScotSimulation

        kind = ScotSimulation
    sim = kind(
        scenario, out_dir, progress=progress, node_config=node_config, check_trace=check_trace,
        share_frames=share_frames,
    )
    return sim.run()
