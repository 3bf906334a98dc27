"""What every `p2pubsub sim` run shares, whatever its nodes: loop, network, trace, workload clock, churn, drain.

`SimulationBase.run` builds a `VirtualTimeLoop`, a `SimNetwork` (latency model, ``network.link_capacity_kbps``
uplink queues, loss), the `TraceWriter` and its observer, then runs the phases:

1. **join**: node ``k`` starts at ``k · join_interval`` and bootstraps through a seeded-random earlier node; then
   every node refreshes its Kademlia levels (`stabilize.refresh_buckets`) and the network rests for
   ``stabilize_s``;
2. **prepare** (the mode's own step, `_prepare`): register the schema; broker overlays also wait for every
   position to be held and advertise; the *workload clock* starts when it is done;
3. **subscriptions** at their workload times, each a task (``subscribe`` returns once installed);
4. **events** at their times;
5. **drain**: after the last event, until no node has a message queued or unacknowledged, at most ``drain_s``.

``[[churn]]`` steps run at their workload times: ``join`` adds nodes (new hosts, bootstrapping through a live
node), ``leave`` stops a node gracefully and then takes its host off the network, ``crash`` takes the host off the
network first and then stops the node without a word. Victims are drawn with a seeded RNG among the live nodes
other than node 0. A workload step whose node cannot serve it runs on a serving node instead
(``serving[node % len(serving)]``).

A mode subclasses `SimulationBase` with its node (`_new_node`), its observer (`_make_observer`), `_prepare`, which
nodes serve clients (`_serves`), what to read from the nodes before they stop (`_at_end`) and its summary fields
(`extend_summary`). Same scenario and seed, same trace and summary (except the wall time and memory figures).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.service import ServiceError
from ..latency import from_scenario as latency_from_scenario
from ..scenario import Scenario
from ..trace import TraceWriter
from ..workload import Workload
from ..workload import from_scenario as workload_from_scenario
from .frames import shared_frames
from .kademlia_patch import kademlia_on_loop
from .network import SimNetwork
from .oracle import Oracle
from .progress import Progress
from .stabilize import refresh_buckets
from .summary import finish_summary
from .tracing import TraceObserver
from .vloop import VirtualTimeLoop

__all__ = ["Counts", "SimNode", "SimulationBase"]

log = logging.getLogger(__name__)

QUIET_POLL_S = 0.5  # how often the drain looks whether the network is quiet
# The cyclic garbage collector's default thresholds (700, 10, 10) make it scan young objects every 700
# allocations; a simulation allocates millions of short-lived messages and handles over a heap of hundreds of
# MB, and spent more than half its time collecting (measured: 33 s -> 14 s on a 200-node run). Cycles are rare
# here (asyncio's), so collect far less often during a run.
GC_THRESHOLDS = (100_000, 50, 1000)


@dataclass
class SimNode:
    index: int
    node: Any  # p2pubsub.node.runtime.Node, or p2pubsub.scot.ScotNode
    started_at: float
    gone_at: float | None = None
    how: str | None = None  # "crash" | "leave" | "failed"


@dataclass
class Counts:
    """What went wrong on the client side of the workload (the oracle judges the deliveries)."""

    subscribe_failed: int = 0
    publish_failed: int = 0
    join_failed: int = 0
    subscribe_skipped: int = 0  # no live node
    churn: dict[str, int] = field(default_factory=lambda: {"join": 0, "leave": 0, "crash": 0})
    reasons: Counter = field(default_factory=Counter)  # "subscribe: <error>" -> how often

    def failed(self, what: str, exc: BaseException) -> None:
        self.reasons[f"{what}: {type(exc).__name__}: {str(exc)[:120]}"] += 1


class SimulationBase:
    """One run of a scenario; `run` does everything and returns the summary."""

    CLIENT_ERRORS: tuple[type[BaseException], ...] = (ServiceError, TimeoutError)  # a failed client command
    EVERY_LIVE_NODE_SERVES = True  # False: `_serves` decides (a standby broker node takes no client commands)

    def __init__(
        self,
        scenario: Scenario,
        out_dir: str | Path,
        *,
        progress: Progress | None = None,
        node_config: dict[str, Any] | None = None,
        check_trace: bool = False,
        share_frames: bool = True,
    ) -> None:
        self.scenario = scenario
        self.out_dir = Path(out_dir)
        self.progress = progress or Progress(enabled=False)
        self.node_config = node_config or {}
        self.check_trace = check_trace
        self.share_frames = share_frames  # receivers get the sender's message object (frames.py): same results
        self.seed = scenario.seed
        self.workload: Workload = workload_from_scenario(scenario)
        self.schema = self.workload.parsed_schema()
        self.oracle = Oracle(self.schema)
        self.counts = Counts()
        self.nodes: list[SimNode] = []
        self.live: list[int] = []  # indices of live nodes, ascending
        self.t0 = 0.0  # virtual time at which the workload clock starts
        self._tasks: set[asyncio.Task] = set()
        self.refresh_rpcs = 0
        self.loop_errors = 0

    # --- what a mode provides ---

    def _new_node(self, index: int, contact: int | None) -> Any:
        """The node for host ``index``, joining through node ``contact`` (None: the first node)."""
        raise NotImplementedError

    def _make_observer(self) -> TraceObserver:
        return TraceObserver(self.writer, self.loop.time, self.net.host_of)

    async def _prepare(self) -> None:
        """After joins and stabilisation, before the workload clock starts."""

    def _serves(self, n: SimNode) -> bool:
        """Whether a live node can take client commands."""
        return n.node.ready

    def _at_end(self) -> None:
        """After the drain, before the nodes stop: read what the summary needs from them."""

    def extend_summary(self, summary: dict[str, Any]) -> None:
        """Add the mode's own fields to ``summary.json`` (called by `finish_summary` before it writes)."""

    # --- the run ---

    def run(self) -> dict[str, Any]:
        wall0 = time.perf_counter()
        self.model = latency_from_scenario(self.scenario)
        loop = self.loop = VirtualTimeLoop()
        self.progress.attach(loop.time)
        loop.set_exception_handler(self._loop_error)
        net = self.scenario.network
        cap = None if net.link_capacity_kbps is None else net.link_capacity_kbps * 1000.0 / 8.0
        self.net = SimNetwork(loop, self.model.lookup(), loss=net.loss, seed=self.seed, uplink_capacity=cap)
        self.writer = TraceWriter(self.out_dir, scenario=self.scenario.to_toml())
        self.observer = self._make_observer()
        self.observer.check_types = self.check_trace
        self.net.trace = self.observer.datagram
        thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            with kademlia_on_loop(loop, seed=self.seed), (shared_frames() if self.share_frames else nullcontext()):
                loop.run_until_complete(self._main())
                self.end_time = loop.time()
                self._at_end()
                self._cancel_leftovers()
        finally:
            gc.set_threshold(*thresholds)
            self.progress.close()
            loop.close()
        return finish_summary(self, wall_start=wall0)

    async def _main(self) -> None:
        sc = self.scenario
        loop = asyncio.get_running_loop()
        # 1. joins, then stabilisation
        self.progress.phase("join", total=sc.network.nodes)
        interval = sc.network.join_interval_ms / 1000.0
        boot = random.Random(f"p2pubsub.sim/bootstrap/{self.seed}")
        starts = []
        for k in range(sc.network.nodes):
            contact = None if k == 0 else boot.randrange(k)
            starts.append(self._spawn(self._start_node(contact, delay=k * interval)))
        await asyncio.gather(*starts)
        self.progress.phase("stabilize", total=len(self.live))
        stable_at = loop.time() + sc.network.stabilize_s
        await self._refresh_all(sc.network.stabilize_s / 2)
        if loop.time() < stable_at:
            await asyncio.sleep(stable_at - loop.time())
        # 2. the mode's preparation (schema, ...)
        await self._prepare()
        self.t0 = loop.time()
        # 3-4. workload and churn, side by side on the workload clock
        churn = self._spawn(self._churn())
        subs = self._spawn(self._subscriptions())
        await subs
        events = self._spawn(self._events())
        await events
        await churn
        # 5. drain
        self.progress.phase("drain")
        deadline = loop.time() + sc.drain_s
        while loop.time() < deadline:
            await asyncio.sleep(QUIET_POLL_S)
            if self._quiet():
                break

    def _spawn(self, coro) -> asyncio.Task:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _until(self, workload_s: float) -> None:
        delay = self.t0 + workload_s - self.loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    # --- nodes ---

    async def _start_node(self, contact: int | None, delay: float = 0.0) -> SimNode:
        """Create node number ``len(self.nodes)`` on a new host, wait ``delay``, start it (join through ``contact``)."""
        index = self.net.add_host()
        assert index == len(self.nodes), "node i runs on host i"
        node = self._new_node(index, contact)
        node.sim_index = index
        sim_node = SimNode(index, node, self.loop.time() + delay)
        self.nodes.append(sim_node)
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            await node.start()
        except Exception as exc:  # a join that fails leaves the node out of the network
            self.counts.join_failed += 1
            log.warning("node %d failed to join: %r", index, exc)
            sim_node.gone_at, sim_node.how = self.loop.time(), "failed"
            self.net.crash(index)
            await node.stop(graceful=False)
            return sim_node
        self._insert_live(index)
        self.progress.advance("joined")
        return sim_node

    async def _refresh_all(self, spread_s: float) -> None:
        """Every live node refreshes every bucket (`stabilize.refresh_buckets`), starts spread over ``spread_s``."""
        live = list(self.live)

        async def one(k: int, index: int) -> None:
            await asyncio.sleep(k * spread_s / max(1, len(live)))
            rng = random.Random(f"p2pubsub.sim/refresh/{self.seed}/{index}")
            rpcs = await refresh_buckets(self.nodes[index].node.dht, rng)
            self.refresh_rpcs += rpcs
            self.progress.advance("refreshed")

        await asyncio.gather(*(self._spawn(one(k, i)) for k, i in enumerate(live)))

    def _insert_live(self, index: int) -> None:
        self.live.append(index)
        self.live.sort()

    def _live_node(self, index: int) -> SimNode | None:
        n = self.nodes[index] if index < len(self.nodes) else None
        if n is not None and n.gone_at is None and self._serves(n):
            return n
        serving = self.live if self.EVERY_LIVE_NODE_SERVES else [i for i in self.live if self._serves(self.nodes[i])]
        if not serving:
            return None
        return self.nodes[serving[index % len(serving)]]

    # --- workload ---

    async def _subscriptions(self) -> None:
        subs = self.workload.subscriptions
        self.progress.phase("subscribe", total=len(subs))
        installs: set[asyncio.Task] = set()
        for s in subs:
            await self._until(s.time_s)
            target = self._live_node(s.node)
            if target is None:
                self.counts.subscribe_skipped += 1
                continue
            installs.add(self._spawn(self._subscribe(target, s.filter)))
            installs = {t for t in installs if not t.done()}
        if installs:  # wait for the installs still under way
            await asyncio.gather(*installs, return_exceptions=True)

    async def _subscribe(self, target: SimNode, body: dict) -> None:
        try:
            await target.node.subscribe(self.workload.schema_name, body)
        except self.CLIENT_ERRORS as exc:
            self.counts.subscribe_failed += 1
            self.counts.failed("subscribe", exc)
            log.debug("subscribe on node %d failed: %r", target.index, exc)
        self.progress.advance("subscribed")

    async def _events(self) -> None:
        self.progress.phase("publish", total=self.workload.event_count)
        for e in self.workload.events():
            await self._until(e.time_s)
            target = self._live_node(e.node)
            if target is None:
                self.counts.publish_failed += 1
                continue
            self._spawn(self._publish(target, e.attributes))

    async def _publish(self, target: SimNode, attributes: dict) -> None:
        try:
            event_id = await target.node.publish(self.workload.schema_name, attributes)
        except self.CLIENT_ERRORS as exc:
            self.counts.publish_failed += 1
            self.counts.failed("publish", exc)
            log.debug("publish on node %d failed: %r", target.index, exc)
        else:
            self.oracle.event(event_id, attributes)
        self.progress.advance("published")

    # --- churn ---

    async def _churn(self) -> None:
        rng = random.Random(f"p2pubsub.sim/churn/{self.seed}")
        for step in self.scenario.churn:
            await self._until(step.at_s)
            self.progress.note(f"churn {step.action} {step.count}")
            if step.action == "join":
                joins = []
                for _ in range(step.count):
                    contact = self.live[rng.randrange(len(self.live))]
                    joins.append(self._spawn(self._start_node(contact)))
                await asyncio.gather(*joins)
            else:
                candidates = [i for i in self.live if i != 0]
                victims = rng.sample(candidates, min(step.count, len(candidates)))
                await asyncio.gather(*(self._remove(v, step.action) for v in sorted(victims)))
            self.counts.churn[step.action] += step.count

    async def _remove(self, index: int, how: str) -> None:
        sim_node = self.nodes[index]
        sim_node.gone_at, sim_node.how = self.loop.time(), how
        self.live.remove(index)
        if how == "crash":
            self.net.crash(index)
            await sim_node.node.stop(graceful=False)
        else:
            await sim_node.node.stop(graceful=True)
            self.net.crash(index)

    # --- end of run ---

    def _quiet(self) -> bool:
        """No node has a peer message waiting or unacknowledged."""
        for n in self.nodes:
            if n.gone_at is not None or n.node.peers is None:
                continue
            for peer in n.node.peers._peers.values():
                if peer.unacked or peer.waiting:
                    return False
        return True

    def _cancel_leftovers(self) -> None:
        """Stop every node's timers and background tasks (the run is over; nothing is sent any more)."""
        loop = self.loop
        for n in self.nodes:
            if n.gone_at is None:
                loop.run_until_complete(n.node.stop(graceful=False))
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        self.loop_errors += 1
        if self.loop_errors <= 5:
            log.warning("simulation: %s", context.get("message"), exc_info=context.get("exception"))
