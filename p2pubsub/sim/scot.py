"""`p2pubsub sim` for the broker overlays: ``mode = "scot"`` (OctopiA) and ``mode = "padres"`` (the PADRES-style
baseline on the same positions, unclustered), on the simulator's shared phases (`p2pubsub.sim.engine`).

Each node is the unmodified `p2pubsub.scot.ScotNode` — what ``p2pubsub node --overlay scot|padres`` runs: it
joins the DHT, reads the overlay's definition, claims a region slot of its cluster (OctopiA §3–§4) and runs the
broker core there, talking to its direct SCOT neighbours over the peer transport (and so through the network's
``link_capacity_kbps`` uplink queues).

* **Placement.** Node ``k``'s id is its DHT-mode id moved into cluster ``k mod n``
  (`p2pubsub.scot.definition.id_in_cluster`), so with ``network.nodes`` = positions every cluster gets exactly as
  many nodes as it has regions and every slot is held (more nodes: the extra ones stand by).
* **Preparation** (before the workload clock): wait until every position is held and every broker has bound and
  synchronised all its links (at most `FORM_TIMEOUT_S`); node 0 registers the schema and every node reads it
  (its broker core too), so that no advertisement, subscription or link waits for a schema look-up in the DHT
  (the paper's brokers know the schema beforehand); each publisher advertises
  (`Workload.advertisements`, one every ``scot.advertise_interval_ms``), and the clock starts once all are
  installed. Subscriptions and events then run on the engine's workload clock.
* **Summary** (`extend_summary`): ``tables`` — routing-table sizes per broker at the end (§10: CLT in OctopiA,
  SRT in the baseline, as ``advertisements_per_broker``; distinct PRT subscriptions as
  ``subscriptions_per_broker``; PRT (subscription, tree) bindings), each ``mean``/``max``;
  ``inter_broker_messages`` — core messages sent on the wire by phase (``advertise``, ``subscribe``,
  ``publish``; `overlays.messages.Phase`) and per publication, beside the node's link control (``Hello``,
  ``Bye``) and termination echoes (``Echoed``); ``latency_ms.advertise`` — advertise call to installed;
  ``overlay`` — definition, formation, match tests per publication, duplicates discarded, dynamic diversions.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from overlays.messages import phase_of

from ..node.config import NodeConfig
from ..scenario import OVERLAY_MODES, Scenario
from ..scot import OverlayDefinition, ScotConfig, ScotNode
from ..scot.definition import id_in_cluster
from ..scot.messages import Tracked
from .engine import SimNode, SimulationBase
from .kademlia_nodes import KADEMLIA_PORT, node_id
from .summary import stats_ms
from .tracing import TraceObserver

__all__ = ["OVERLAY_NAME", "ScotSimulation", "overlay_definition"]

log = logging.getLogger(__name__)

OVERLAY_NAME = "sim"
FORM_POLL_S = 0.5
FORM_TIMEOUT_S = 120.0  # virtual seconds after stabilisation for every position to be held and linked
ROUTING = {"scot": "octopia", "padres": "padres"}
CONTROL = ("Echoed", "Hello", "Bye")


def overlay_definition(scenario: Scenario) -> OverlayDefinition:
    """The overlay a ``scot`` / ``padres`` scenario describes (``[scot]``)."""
    s = scenario.scot
    assert s is not None, "the scenario parser gives every overlay mode a [scot] table"
    kw = {"routing": ROUTING[scenario.mode], "dynamic": s.dynamic, "tau": s.tau, "t_w": s.t_w_ms / 1000.0}
    if s.edges is not None:
        return OverlayDefinition.build([(str(a), str(b)) for a, b in s.edges], s.clusters, **kw)
    if s.topology.lower() != "s_e":
        raise ValueError(f"scot.topology: unknown topology {s.topology!r}; known: 'S_e' (or give scot.edges)")
    return OverlayDefinition.from_cli("s_e", s.clusters, **kw)


class _Observer(TraceObserver):
    """The trace observer, plus the oracle's subscriptions (as installed) and inter-broker messages by phase."""

    def __init__(self, sim: ScotSimulation, *args: Any) -> None:
        super().__init__(*args)
        self._sim = sim
        self.ims: Counter = Counter()  # core messages sent, by phase
        self.control: Counter = Counter()  # Echoed, Hello, Bye

    def sent(self, node: Any, dst: tuple, msg: Any, nbytes: int, cause: int | None) -> int:
        inner = msg.msg if type(msg) is Tracked else msg
        if hasattr(type(inner), "PHASE"):
            self.ims[str(phase_of(inner))] += 1
        elif type(inner).__name__ in CONTROL:
            self.control[type(inner).__name__] += 1
        return super().sent(node, dst, msg, nbytes, cause)

    def installed(self, node: Any, sub_id: str, at: float, cause: int | None) -> None:
        super().installed(node, sub_id, at, cause)
        flt = node.subs.get(sub_id)
        if flt is not None:
            self._sim.oracle.subscription(sub_id, node.sim_index, flt)


class ScotSimulation(SimulationBase):
    """A ``mode = "scot"`` or ``"padres"`` run: `ScotNode`s on a SCOT (``[scot]``), the stocks workload."""

    EVERY_LIVE_NODE_SERVES = False

    def __init__(self, scenario: Scenario, out_dir: str | Path, **kw: Any) -> None:
        if scenario.mode not in OVERLAY_MODES:
            raise ValueError(f"ScotSimulation runs modes {OVERLAY_MODES}; {scenario.name} has {scenario.mode!r}")
        self.definition = overlay_definition(scenario)
        if scenario.network.nodes < self.definition.positions:
            raise ValueError(f"network.nodes = {scenario.network.nodes} cannot hold the overlay's "
                             f"{self.definition.positions} broker positions")
        super().__init__(scenario, out_dir, **kw)
        if not self.workload.advertisements:
            raise ValueError(f"workload {self.workload.schema_name!r} has no advertisements for a broker overlay")
        self.advertise_s: list[float] = []
        self.advertise_failed = 0
        self.formed_at: float | None = None
        self.tables: dict[str, Any] = {}
        self.core_counters: dict[str, int] = {}

    def _make_observer(self) -> TraceObserver:
        return _Observer(self, self.writer, self.loop.time, self.net.host_of)

    def _new_node(self, index: int, contact: int | None) -> ScotNode:
        sc = self.scenario
        boot = () if contact is None else ((self.net.ip_of(contact), KADEMLIA_PORT),)
        config = NodeConfig(host=self.net.ip_of(index), dht_port=KADEMLIA_PORT, http_port=None, bootstrap=boot,
                            replicas=sc.protocol.replicas,
                            **{"tick_interval": sc.protocol.tick_interval_s, **self.node_config})
        scot = ScotConfig(OVERLAY_NAME, self.definition, lease=sc.scot.lease_s, replicas=sc.protocol.replicas)
        clusters = self.definition.clusters
        planned = id_in_cluster(int.from_bytes(node_id(self.seed, index), "big"), index % clusters, clusters)
        return ScotNode(config, scot, rng=random.Random(f"p2pubsub.sim/node/{self.seed}/{index}"), node_id=planned,
                        observer=self.observer, wall_clock=self.loop.time)

    def _serves(self, n: SimNode) -> bool:
        return n.node.broker is not None

    # --- preparation: formation, schema, advertisements ---

    async def _prepare(self) -> None:
        await self._formation()
        await self.nodes[0].node.put_schema(self.workload.schema_name, self.workload.schema)
        await asyncio.gather(*(self._learn_schema(self.nodes[i]) for i in self.live))
        await self._advertise()

    def formed(self) -> bool:
        """Every position held by one live broker, every link bound and synchronised, no echo outstanding."""
        held = [n.node.broker for n in self.nodes if n.gone_at is None and n.node.broker is not None]
        return (len({b.position for b in held}) == len(held) == self.definition.positions
                and all(b.all_synced() and not len(b.echo) for b in held))

    async def _formation(self) -> None:
        self.progress.phase("form", total=self.definition.positions)
        deadline = self.loop.time() + FORM_TIMEOUT_S
        while not self.formed():
            if self.loop.time() >= deadline:
                log.warning("the overlay did not form within %.0f s: running the workload anyway", FORM_TIMEOUT_S)
                return
            await asyncio.sleep(FORM_POLL_S)
        self.formed_at = self.loop.time()

    async def _learn_schema(self, n: SimNode) -> None:
        schema = await n.node.get_schema(self.workload.schema_name)
        if schema is not None and n.node.broker is not None:
            n.node.broker.learn_schema(schema)

    async def _advertise(self) -> None:
        adverts = self.workload.advertisements
        self.progress.phase("advertise", total=len(adverts))
        gap = self.scenario.scot.advertise_interval_ms / 1000.0
        start = self.loop.time()
        tasks = []
        for k, a in enumerate(adverts):
            delay = start + k * gap - self.loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            target = self._live_node(a.node)
            if target is None:
                self.advertise_failed += 1
                continue
            tasks.append(self._spawn(self._advertise_one(target, a.filter)))
        await asyncio.gather(*tasks)

    async def _advertise_one(self, target: SimNode, body: dict) -> None:
        at = self.loop.time()
        try:
            await target.node.advertise(self.workload.schema_name, body)
        except self.CLIENT_ERRORS as exc:
            self.advertise_failed += 1
            log.debug("advertise on node %d failed: %r", target.index, exc)
        else:
            self.advertise_s.append(self.loop.time() - at)
        self.progress.advance("advertised")

    # --- summary ---

    def _at_end(self) -> None:
        brokers = [n.node.broker for n in self.nodes if n.gone_at is None and n.node.broker is not None]
        sizes = [b.core.table_sizes() for b in brokers]

        def spread(values: list[int]) -> dict[str, float | int | None]:
            a = np.asarray(values, dtype=np.float64)
            return {"mean": float(a.mean()) if a.size else None, "max": int(a.max()) if a.size else None}

        self.tables = {
            "brokers": len(brokers),
            "advertisement_table": "CLT" if self.definition.routing == "octopia" else "SRT",
            "advertisements_per_broker": spread([s.advertisements for s in sizes]),
            "subscriptions_per_broker": spread([s.subscriptions for s in sizes]),
            "prt_entries_per_broker": spread([s.prt_entries for s in sizes]),
        }
        c = [b.core.counters for b in brokers]
        self.core_counters = {
            "match_tests": sum(x.match_tests for x in c),
            "overlap_tests": sum(x.overlap_tests for x in c),
            "duplicates_discarded": sum(x.duplicates_discarded for x in c),
            "dropped": sum(x.dropped for x in c),
            "dynamic_diversions": sum(x.dynamic_diversions for x in c),
        }

    def extend_summary(self, summary: dict[str, Any]) -> None:
        obs: _Observer = self.observer  # type: ignore[assignment]
        events = summary.get("events", 0)
        publish = obs.ims.get("publish", 0)
        summary["tables"] = self.tables
        summary["inter_broker_messages"] = {
            "advertise": obs.ims.get("advertise", 0),
            "subscribe": obs.ims.get("subscribe", 0),
            "publish": publish,
            "per_publication": publish / events if events else None,
            "control": {k: obs.control.get(k, 0) for k in CONTROL},
        }
        summary["latency_ms"]["advertise"] = stats_ms(self.advertise_s)
        d = self.definition
        summary["overlay"] = {
            "routing": d.routing,
            "dynamic": d.dynamic,
            "tau": d.tau,
            "t_w_s": d.t_w,
            "regions": len(d.vertices),
            "clusters": d.clusters,
            "positions": d.positions,
            "formed_at_s": self.formed_at,
            "advertisements": len(self.advertise_s),
            "advertise_failed": self.advertise_failed,
            "match_tests_per_publication": self.core_counters["match_tests"] / events if events else None,
            **self.core_counters,
        }
