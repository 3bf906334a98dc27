"""The experiment runner: a network of real node processes, the scenario's workload through the REST API, its
churn timeline, then the oracle, the installed-subscription check and the summary.

Phases (times on one clock, ``time.monotonic()`` seconds since the runner started; the workload clock of the
scenario starts at ``workload_start`` once the network has formed and stabilised):

1. **Network.** Node 0 starts a network; node i joins through a node drawn (seeded) among those already ready,
   ``network.join_interval_ms`` apart, at most ``start_concurrency`` starting at once.
2. **Stabilise** for ``network.stabilize_s``, then register the workload's schema.
3. **Workload and churn**, each on its own schedule: subscriptions at their times from their nodes (each
   answered once installed: requested and acknowledged times recorded; then one long-poll reader per
   subscription, recording every notification with its receipt time), events at their times from their nodes,
   and the churn steps at theirs (crash = SIGKILL, leave = SIGTERM and wait for exit status 0, join = a new
   process). Workload node indices map onto live nodes (:meth:`Experiment.place`). The nodes a crash or leave
   step will take are drawn ``grace_s`` before the step and get no new subscriptions or events from then on.
4. **Drain** until every expected notification has been read, or ``drain_s`` after the last publish answered.
5. **Check** that every acknowledged subscription of a live home is still installed (:mod:`.verify`).
6. **Teardown** (SIGTERM, SIGKILL after a timeout), merge of the traces (:mod:`.traces`), ``summary.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import Subscription, parse_filter
from ..scenario import Scenario
from ..workload import Workload, from_scenario
from .oracle import Oracle, Verdict
from .procs import ExperimentError, Fleet, NodeProcess, node_arguments, supported_node_options

__all__ = ["EventRecord", "Experiment", "ExperimentOptions", "SubRecord"]


@dataclass(frozen=True)
class ExperimentOptions:
    """How the runner measures; the scenario says what to run."""

    grace_s: float = 1.0  # departure grace of the oracle; victims of a crash/leave are drawn this long before
    recovery_window_s: float = 5.0  # events this long after a churn step are left out of "after_recovery"
    deadline_s: float = 1.0  # a notification read later than this after its publish request is late (recovery_s)
    drain_s: float | None = None  # default: the scenario's drain_s
    stabilize_s: float | None = None  # default: the scenario's network.stabilize_s
    verify: bool = True  # probe that every acknowledged subscription of a live home is still installed
    verify_timeout_s: float = 5.0  # per probe round
    trace: bool = True  # --trace on every node, merged into messages.parquet
    ready_timeout_s: float = 30.0
    start_concurrency: int = 2
    long_poll_s: float = 5.0
    http_timeout_s: float = 40.0
    teardown_timeout_s: float = 20.0
    progress: bool | None = None  # None: when stderr is a terminal


@dataclass
class SubRecord:
    index: int
    node: int  # workload node index
    filter: dict[str, Any]
    parsed: Subscription
    scheduled_at: float
    home: int | None = None
    requested_at: float | None = None
    acked_at: float | None = None
    sub_id: str | None = None
    error: str | None = None
    received: list[tuple[str, float]] = field(default_factory=list)  # (event id, receipt time)
    got: set[str] = field(default_factory=set)  # the event ids in ``received``
    dropped: int = 0  # notifications the home's buffer dropped before the reader got them
    reader_errors: int = 0
    reader_end: str | None = None
    base: str | None = None  # from GET /v1/subscriptions/{id} (verify)
    pieces: int | None = None


@dataclass
class EventRecord:
    index: int
    node: int  # workload node index (-1: a probe of the verify phase)
    attributes: dict[str, Any]
    scheduled_at: float
    via: int | None = None
    requested_at: float | None = None
    acked_at: float | None = None
    event_id: str | None = None
    error: str | None = None


class Experiment:
    def __init__(self, scenario: Scenario, out: str | os.PathLike, options: ExperimentOptions | None = None) -> None:
        if scenario.mode != "dht":
            raise ExperimentError(f"mode {scenario.mode!r}: only mode 'dht' runs on real nodes")
        self.scenario = scenario
        self.out = Path(out)
        self.opt = options or ExperimentOptions()
        self.origin = time.monotonic()
        self.rng = random.Random(f"p2pubsub:experiment:{scenario.seed}")
        self.workload: Workload = from_scenario(scenario)
        self.schema = self.workload.parsed_schema()
        self.subs: list[SubRecord] = []
        self.events: list[EventRecord] = []
        self.probes: list[EventRecord] = []
        self.steps: list[dict[str, Any]] = []
        self.reserved: set[int] = set()  # nodes drawn for a coming crash or leave
        self.lag: list[float] = []  # how late each scheduled action started (s)
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.workload_start: float | None = None
        self.publish_end: float | None = None
        self.node_info: dict[int, dict[str, Any]] = {}
        self.clients: dict[int, Any] = {}
        self.readers: list[asyncio.Task] = []
        self._by_event_id: dict[str, int] = {}
        self._supported = supported_node_options()
        self.node_options: dict[str, Any] = {}
        self.progress = self.opt.progress if self.opt.progress is not None else sys.stderr.isatty()
        self._phase = "start"
        self._session: Any = None
        self.fleet: Fleet | None = None
        self.verify_result: dict[str, Any] | None = None
        self.schema_doc: Any = None
        self.drained_at: float | None = None
        self.drain_missing: int | None = None

    def clock(self) -> float:
        return time.monotonic() - self.origin

    # ------------------------------------------------------------------------------------------ orchestration

    async def run(self) -> dict[str, Any]:
        """Carry out the whole experiment; returns the summary (also written to ``out/summary.json``)."""
        import aiohttp

        from .summary import build_summary, write_outputs

        self.out.mkdir(parents=True, exist_ok=True)
        self.fleet = Fleet(self.out, self.clock, ready_timeout=self.opt.ready_timeout_s, trace=self.opt.trace)
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False))
        progress = asyncio.create_task(self._progress()) if self.progress else None
        error: BaseException | None = None
        teardown: list[dict[str, Any]] = []
        try:
            await self._start_network()
            self._phase = "stabilise"
            stabilize = self.opt.stabilize_s if self.opt.stabilize_s is not None else self.scenario.network.stabilize_s
            await asyncio.sleep(stabilize)
            await self._put_schema()
            self.workload_start = self.clock()
            self._phase = "workload"
            await _all_or_none(self._subscribe_all(), self._publish_all(), self._churn_all())
            self.publish_end = self.clock()
            self._phase = "drain"
            await self._drain()
            await self._final_info()
            if self.opt.verify:
                from .verify import verify_installed

                self._phase = "verify"
                self.verify_result = await verify_installed(self)
        except BaseException as e:  # record, tear down, write what we have, then re-raise
            error = e
        finally:
            self._phase = "teardown"
            for t in self.readers:
                t.cancel()
            await asyncio.gather(*self.readers, return_exceptions=True)
            if progress is not None:
                progress.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await progress
                sys.stderr.write("\n")
            await self._session.close()
            with contextlib.suppress(Exception):
                teardown = await self.fleet.teardown(self.opt.teardown_timeout_s)
        self.problems += self.fleet.problems
        if error is not None and not isinstance(error, ExperimentError | asyncio.CancelledError | KeyboardInterrupt):
            import traceback

            self.problems.append("runner error: " + "".join(traceback.format_exception(error)).strip())
        elif error is not None:
            self.problems.append(f"{type(error).__name__}: {error}")
        summary = build_summary(self, teardown, failed=error is not None)
        write_outputs(self, summary)
        if error is not None:
            raise error
        return summary

    async def _progress(self) -> None:
        while True:
            live = len(self.fleet.live()) if self.fleet else 0
            got = sum(len(s.received) for s in self.subs)
            acked = sum(s.acked_at is not None for s in self.subs)
            published = sum(e.acked_at is not None for e in self.events)
            w = f" w+{self.clock() - self.workload_start:6.1f}s" if self.workload_start is not None else ""
            sys.stderr.write(
                f"\r[{self.clock():6.1f}s{w}] {self._phase:<9} nodes {live:>3} live  subs {acked:>5}/"
                f"{len(self.workload.subscriptions)}  events {published:>6}/{self.workload.event_count}  "
                f"notifications {got:>7}  churn {len(self.steps)}/{len(self.scenario.churn)} "
            )
            sys.stderr.flush()
            await asyncio.sleep(0.5)

    async def sleep_until(self, t: float) -> None:
        """Sleep until experiment time ``t`` (the runner schedules by time: that is its job)."""
        delay = t - self.clock()
        if delay > 0:
            await asyncio.sleep(delay)

    def _late(self, t: float) -> None:
        self.lag.append(max(0.0, self.clock() - t))

    # ------------------------------------------------------------------------------------------ nodes

    def _node_args(self, index: int) -> list[str]:
        caps = self.workload.capacities
        capacity = caps[index] if index < len(caps) else caps[index % len(caps)]
        args, info = node_arguments(self.scenario, capacity, self._supported)
        if not self.node_options:
            info["passed"]["protocol.leaf_capacity"] = "--capacity rand(lo, hi) per node (workload capacities)"
            self.node_options = {**info, "ignored_live": {
                "network.latency": self.scenario.network.latency, "network.loss": self.scenario.network.loss,
                "network.link_capacity_kbps": self.scenario.network.link_capacity_kbps,
                "network.access_delay_ms": self.scenario.network.access_delay_ms}}
            for key, option in info["unsupported"].items():
                self.warnings.append(f"{key} not passed: this node has no {option} option yet")
        return args

    async def _ready(self, node: NodeProcess) -> NodeProcess:
        from ..client import AsyncClient

        await self.fleet.launch(node)
        client = self.clients[node.index] = AsyncClient(node.url, session=self._session,
                                                        timeout=self.opt.http_timeout_s)
        info = await client.node()
        node.node_id = info["id"]
        return node

    async def _start_network(self) -> None:
        self._phase = "network"
        n = self.scenario.network.nodes
        gap = self.scenario.network.join_interval_ms / 1000.0
        conc = max(1, self.opt.start_concurrency)
        started: list[asyncio.Task] = []
        net_rng = random.Random(f"p2pubsub:experiment:network:{self.scenario.seed}")
        try:
            for i in range(n):
                if i >= conc:
                    await started[i - conc]  # at most `conc` nodes starting at once
                boot = None
                if i > 0:
                    b = net_rng.randrange(max(1, i - conc + 1))  # an earlier node, ready by now
                    await started[b]
                    boot = self.fleet.nodes[b]
                    await asyncio.sleep(gap)
                node = self.fleet.new(self._node_args(i), boot)
                started.append(asyncio.create_task(self._ready(node)))
            await asyncio.gather(*started)
        except BaseException:
            for t in started:
                t.cancel()
            await asyncio.gather(*started, return_exceptions=True)
            raise

    async def _put_schema(self) -> None:
        body = dict(self.workload.schema)
        attributes = body.pop("attributes")
        self.schema_doc, _ = await self.clients[0].put_schema(self.workload.schema_name, attributes, **body)

    def cutoff_fraction(self) -> float | None:
        """The schema's cut-off line as its creating node fixed it (else what the scenario asked for)."""
        tree = (self.schema_doc or {}).get("tree") if isinstance(self.schema_doc, dict) else None
        if isinstance(tree, dict) and "cutoff" in tree:
            return tree["cutoff"]
        p = self.scenario.protocol
        return p.cutoff_fraction if p.cutoff else None

    def place(self, w: int) -> NodeProcess:
        """The live node that acts for workload node ``w``: node ``w`` itself while it is alive and not drawn for a
        coming crash or leave, else ``candidates[w % len(candidates)]`` among such nodes (by index)."""
        live = self.fleet.live()
        cands = [n for n in live if n.index not in self.reserved] or live
        if not cands:
            raise ExperimentError("no live node left to act for the workload")
        if w < len(self.fleet.nodes) and self.fleet.nodes[w] in cands:
            return self.fleet.nodes[w]
        return cands[w % len(cands)]

    # ------------------------------------------------------------------------------------------ workload

    async def _subscribe_all(self) -> None:
        tasks = []
        for k, s in enumerate(self.workload.subscriptions):
            rec = SubRecord(k, s.node, s.filter, parse_filter(self.schema, s.filter), self.workload_start + s.time_s)
            self.subs.append(rec)
            await self.sleep_until(rec.scheduled_at)
            self._late(rec.scheduled_at)
            tasks.append(asyncio.create_task(self._subscribe(rec, self.place(s.node))))
        await asyncio.gather(*tasks)

    async def _subscribe(self, rec: SubRecord, home: NodeProcess) -> None:
        rec.home = home.index
        rec.requested_at = self.clock()
        try:
            info = await self.clients[home.index].subscribe(self.workload.schema_name, rec.filter)
        except Exception as e:  # a failed subscribe is a result, recorded with its reason
            rec.error = f"{type(e).__name__}: {e}"[:300]
            return
        rec.acked_at = self.clock()
        rec.sub_id = info["id"]
        self.readers.append(asyncio.create_task(self._read(rec, home)))

    async def _read(self, rec: SubRecord, home: NodeProcess) -> None:
        """One long-poll reader per subscription, until its home is gone (or the runner stops it)."""
        from ..client import ApiError

        client = self.clients[home.index]
        cursor = None
        while True:
            try:
                page = await client.events(rec.sub_id, after=cursor, wait=self.opt.long_poll_s)
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.status == 404:
                    rec.reader_end = f"home forgot the subscription: {e}"
                    return
                if not home.alive:
                    rec.reader_end = f"home {home.state}"
                    return
                rec.reader_errors += 1
                await asyncio.sleep(0.1)  # back-off before asking again (not a synchronisation)
                continue
            except Exception as e:  # connection refused/reset: the home is going away
                if not home.alive:
                    rec.reader_end = f"home {home.state}"
                    return
                rec.reader_errors += 1
                if rec.reader_errors > 1000:
                    rec.reader_end = f"gave up: {type(e).__name__}: {e}"[:200]
                    return
                await asyncio.sleep(0.1)
                continue
            t = self.clock()
            for ev in page.events:
                rec.received.append((ev["id"], t))
                rec.got.add(ev["id"])
            rec.dropped += page.dropped
            cursor = page.cursor

    async def _publish_all(self) -> None:
        pending: set[asyncio.Task] = set()
        for k, p in enumerate(self.workload.events()):
            rec = EventRecord(k, p.node, p.attributes, self.workload_start + p.time_s)
            self.events.append(rec)
            await self.sleep_until(rec.scheduled_at)
            self._late(rec.scheduled_at)
            task = asyncio.create_task(self.publish(rec, self.place(p.node)))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)

    async def publish(self, rec: EventRecord, via: NodeProcess) -> None:
        rec.via = via.index
        rec.requested_at = self.clock()
        try:
            event_id = await self.clients[via.index].publish(self.workload.schema_name, rec.attributes)
        except Exception as e:  # recorded: nothing is owed for an event whose publish failed
            rec.error = f"{type(e).__name__}: {e}"[:300]
            return
        rec.acked_at = self.clock()
        rec.event_id = event_id

    # ------------------------------------------------------------------------------------------ churn

    async def _churn_all(self) -> None:
        running: list[asyncio.Task] = []
        for k, step in enumerate(self.scenario.churn):
            at = self.workload_start + step.at_s
            rec: dict[str, Any] = {"step": k, "at_s": step.at_s, "time": at, "action": step.action,
                                   "count": step.count, "nodes": []}
            if step.action == "join":
                await self.sleep_until(at)
                self._late(at)
                self.steps.append(rec)
                rec["started_at"] = self.clock()
                running.append(asyncio.create_task(self._join(rec, step.count)))
                continue
            await self.sleep_until(at - self.opt.grace_s)
            live = [n for n in self.fleet.live() if n.index not in self.reserved]
            if len(live) <= step.count:
                live = self.fleet.live()
            if len(live) <= step.count:
                raise ExperimentError(f"churn step {k}: {step.action} {step.count} needs more than {len(live)} "
                                      "live nodes")
            victims = self.rng.sample(live, step.count)
            self.reserved |= {v.index for v in victims}
            await self.sleep_until(at)
            self._late(at)
            self.steps.append(rec)
            rec["started_at"] = self.clock()
            stop = self.fleet.crash if step.action == "crash" else self.fleet.leave
            running.append(asyncio.create_task(self._depart(rec, victims, stop)))
        await asyncio.gather(*running)

    async def _depart(self, rec: dict[str, Any], victims: list[NodeProcess], stop) -> None:
        await asyncio.gather(*(stop(v) for v in victims))
        rec["nodes"] = [{"index": v.index, "node_id": v.node_id, "signal": v.signal_name,
                         "signalled_at": v.signalled_at, "exited_at": v.exited_at, "exit_code": v.exit_code,
                         "exit_s": None if v.exited_at is None else v.exited_at - v.signalled_at}
                        for v in victims]

    async def _join(self, rec: dict[str, Any], count: int) -> None:
        for _ in range(count):
            live = [n for n in self.fleet.live() if n.index not in self.reserved] or self.fleet.live()
            boot = self.rng.choice(live)
            node = self.fleet.new(self._node_args(len(self.fleet.nodes)), boot)
            await self._ready(node)
            rec["nodes"].append({"index": node.index, "node_id": node.node_id, "bootstrap": boot.index,
                                 "spawned_at": node.spawned_at, "ready_at": node.ready_at,
                                 "join_s": node.ready_at - node.spawned_at})

    # ------------------------------------------------------------------------------------------ judging

    def oracle(self) -> Oracle:
        return self.oracle_of(self.events)

    def oracle_of(self, events: list[EventRecord]) -> Oracle:
        return Oracle(self.schema, [s.parsed for s in self.subs], [e.attributes for e in events])

    def sub_times(self) -> tuple[list[float], list[float]]:
        inf = float("inf")
        ack = [s.acked_at if s.acked_at is not None else inf for s in self.subs]
        gone = [self.fleet.nodes[s.home].gone_at if s.home is not None else inf for s in self.subs]
        return ack, gone

    def judge(self, oracle: Oracle, events: list[EventRecord]) -> Verdict:
        """The oracle's verdict over ``events`` (the workload's, or the verify phase's probes); notifications of
        events the runner never saw published at all count as ``unknown``."""
        index = {e.event_id: i for i, e in enumerate(events) if e.event_id is not None}
        known = {e.event_id for e in (*self.events, *self.probes) if e.event_id is not None}
        received, unknown = [], 0
        for j, s in enumerate(self.subs):
            for event_id, t in s.received:
                i = index.get(event_id)
                if i is not None:
                    received.append((i, j, t))
                elif event_id not in known:
                    unknown += 1
        ack, gone = self.sub_times()
        nan = float("nan")
        return oracle.judge(ack, gone, [e.requested_at if e.requested_at is not None else nan for e in events],
                            [e.acked_at if e.acked_at is not None else nan for e in events], received,
                            grace=self.opt.grace_s, deadline=self.opt.deadline_s, unknown=unknown)

    async def _drain(self) -> None:
        """Wait until every expected notification was read, or ``drain_s`` has passed."""
        drain = self.opt.drain_s if self.opt.drain_s is not None else self.scenario.drain_s
        deadline = self.clock() + drain
        oracle = self.oracle()
        while True:
            verdict = self.judge(oracle, self.events)
            if verdict.missing == 0 or self.clock() >= deadline:
                break
            await asyncio.sleep(0.25)
        self.drained_at = self.clock()
        self.drain_missing = verdict.missing

    async def _final_info(self) -> None:
        async def info(n: NodeProcess) -> None:
            with contextlib.suppress(Exception):
                self.node_info[n.index] = await self.clients[n.index].node()

        await asyncio.gather(*(info(n) for n in self.fleet.live()))


async def _all_or_none(*coros) -> None:
    """Run the coroutines together; when one fails, cancel the others (and wait for them) before raising."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def run_experiment(scenario: Scenario, out: str | os.PathLike, options: ExperimentOptions | None = None) -> dict:
    """Run an experiment to the end (its own event loop); returns the summary."""
    return asyncio.run(Experiment(scenario, out, options).run())
