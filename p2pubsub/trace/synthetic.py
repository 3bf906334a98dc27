"""Small, realistic fake runs in the trace format, for tests and for trying `spark/` without a simulator.

Not the protocol: a seeded toy that produces the *shapes* the real simulator will write, with times that
obey the re-timing rule of :mod:`.schema` exactly (each message arrives after its one-way latency from the
run's matrix, plus queueing on some links), so a replay with the run's own matrix must reproduce them.

- DHT chatter: ``dht.ping`` pairs at start-up (roots without event or subscription: a replay keeps them).
- Installs: optional ``dht.find_node`` lookup, ``ProbeSub`` hops, ``InsertSub`` at the home leaf (acked),
  ``SubInstalled`` back to the subscriber (the install's cause); sometimes a split (``TransferSub``,
  ``LeafUpdate``). The first subscription is installed locally (no message, null cause).
- Events: the publisher probes a few leaves, either by unicast ``ProbePub`` routed over 1-3 hops or by
  ``ProbePubMulticast`` to a relay per group of leaves that fans out ``ProbePub`` (multicast); without the
  cut-off the two *hot* leaves are probed by every event as well. A probed leaf matches its subscriptions
  and sends ``EventDelivery`` (acked) to remote subscribers or delivers locally. Event 0 is published by a
  leaf that holds its own subscriber's subscription (a delivery with null cause).
- A node crashes half-way through the events: messages to it from then on are lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .writer import TraceWriter

__all__ = ["SyntheticSpec", "generate_run", "generate_suite", "tiny_run"]


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a fake run."""

    nodes: int = 16
    subs_per_node: float = 3.0
    events: int = 20
    multicast: bool = True
    cutoff: bool = True
    seed: int = 1
    hosts: int | None = None  # latency-model hosts; None = one per node
    kind: str = "synthetic"
    queueing: float = 0.15  # share of messages that wait in a link queue
    crashes: int = 1
    name: str | None = None

    def run_name(self) -> str:
        if self.name:
            return self.name
        return f"n{self.nodes}-mc{int(self.multicast)}-co{int(self.cutoff)}-s{self.seed}"

    def scenario(self) -> dict[str, Any]:
        return {
            "name": self.run_name(),
            "seed": self.seed,
            "network": {"nodes": self.nodes, "hosts": self.hosts or self.nodes},
            "protocol": {"multicast": self.multicast, "cutoff": self.cutoff},
            "workload": {"kind": self.kind, "subs_per_node": self.subs_per_node, "events": self.events},
        }


class _Net:
    """Sends messages through the writer with latency, queueing and crash-loss."""

    def __init__(self, spec: SyntheticSpec, rng: np.random.Generator, writer: TraceWriter) -> None:
        self.rng, self.w = rng, writer
        n = spec.nodes
        n_hosts = spec.hosts or n
        self.host = rng.permutation(n_hosts)[:n] if n_hosts >= n else np.arange(n) % n_hosts
        # hosts in three continents on a plane; one-way ms = base + distance + a little asymmetry
        centres = rng.uniform(0, 1, size=(3, 2))
        xy = centres[rng.integers(0, 3, n_hosts)] + rng.normal(0, 0.08, size=(n_hosts, 2))
        dist = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=2)
        self.ms = np.round(4.0 + 110.0 * dist + rng.uniform(0, 6, size=(n_hosts, n_hosts)), 3)
        np.fill_diagonal(self.ms, 0.0)
        self.queueing = spec.queueing
        self.crash_at = np.full(n, np.inf)
        for i in range(n):
            writer.node(i, int(self.host[i]), None)
        used = np.unique(self.host)
        writer.latency_matrix(used, self.ms[np.ix_(used, used)])

    def proc(self) -> float:
        return float(self.rng.uniform(0.0005, 0.003))

    def send(
        self,
        type_: str,
        src: int,
        dst: int,
        nbytes: int,
        at: float,
        parent: int | None,
        event_id: str | None = None,
        subscription_id: str | None = None,
    ) -> tuple[int, float | None]:
        """Log a message; returns (id, receipt time or None if lost)."""
        latency = self.ms[self.host[src], self.host[dst]] / 1000.0
        q = float(self.rng.uniform(0, 0.02)) if self.rng.random() < self.queueing else 0.0
        recv: float | None = at + latency + q
        if recv >= self.crash_at[dst]:
            recv = None
        mid = self.w.message(type_, src, dst, nbytes, at, recv, parent, event_id, subscription_id)
        return mid, recv


def _others(rng: np.random.Generator, n: int, k: int, exclude: int) -> list[int]:
    pool = np.array([i for i in range(n) if i != exclude])
    return [int(x) for x in rng.choice(pool, size=min(k, pool.size), replace=False)]


def _install(net: _Net, spec: SyntheticSpec, sid: str, subscriber: int, home: int, t: float) -> None:
    """One subscription's install chain, logged through the writer."""
    rng, w, n = net.rng, net.w, spec.nodes
    at, parent = t + net.proc(), None
    node = subscriber
    if rng.random() < 0.5:  # DHT lookup first: a root with no ids, kept as is by a replay
        contact = _others(rng, n, 1, subscriber)[0]
        m1, r1 = net.send("dht.find_node", subscriber, contact, 90, at, None)
        m2, r2 = net.send("dht.find_node", contact, subscriber, 310, r1 + net.proc(), m1)
        at, parent = r2 + net.proc(), m2
    hops = [*_others(rng, n, int(rng.integers(1, 4)), home), home]
    probe_end = hops[-2] if len(hops) > 1 else home
    for nxt in hops[:-1]:
        if nxt == node:
            continue
        parent, recv = net.send("ProbeSub", node, nxt, int(120 + rng.integers(0, 40)), at, parent, None, sid)
        node, at = nxt, recv + net.proc()
    ins, r_ins = net.send("InsertSub", probe_end, home, 210, at, parent, None, sid)
    at = r_ins + net.proc()
    net.send("Ack", home, probe_end, 40, at, ins)
    if subscriber == home:  # the home leaf is the subscriber's own node: installed without a reply
        w.installed(sid, at + net.proc(), ins)
    else:
        done, r_done = net.send("SubInstalled", home, subscriber, 60, at + net.proc(), ins, None, sid)
        w.installed(sid, r_done + net.proc(), done)
    if rng.random() < 0.2:  # the leaf splits: move subscriptions, tell the ancestors
        for child in _others(rng, n, 2, home):
            net.send("TransferSub", home, child, int(150 + 60 * rng.integers(1, 5)), at + net.proc(), ins)
        for anc in _others(rng, n, int(rng.integers(1, 3)), home):
            net.send("LeafUpdate", home, anc, 80, at + net.proc(), ins)


def _probe_leaves(
    net: _Net, spec: SyntheticSpec, eid: str, publisher: int, targets: list[int], t: float
) -> list[tuple[int, float, int | None]]:
    """Route the event's probes to `targets`; returns (leaf, receipt time, probe id) per reached leaf."""
    rng, n = net.rng, spec.nodes
    reached: list[tuple[int, float, int | None]] = []
    remote = [x for x in targets if x != publisher]
    if publisher in targets:
        reached.append((publisher, t + net.proc(), None))
    if spec.multicast:
        groups = [remote[i : i + 3] for i in range(0, len(remote), 3)]
        for group in groups:
            if len(group) == 1:
                mid, recv = net.send("ProbePub", publisher, group[0], 160, t + net.proc(), None, eid)
                if recv is not None:
                    reached.append((group[0], recv, mid))
                continue
            relay = _others(rng, n, 1, publisher)[0]
            mm, rm = net.send(
                "ProbePubMulticast", publisher, relay, 140 + 30 * len(group), t + net.proc(), None, eid
            )
            if rm is None:
                continue
            for leaf in group:
                if leaf == relay:
                    reached.append((leaf, rm + net.proc(), mm))
                    continue
                mid, recv = net.send("ProbePub", relay, leaf, 160, rm + net.proc(), mm, eid)
                if recv is not None:
                    reached.append((leaf, recv, mid))
    else:
        for leaf in remote:
            route = [*_others(rng, n, int(rng.integers(0, 3)), leaf), leaf]
            node, at, parent = publisher, t + net.proc(), None
            for nxt in route:
                if nxt == node:
                    continue
                parent, recv = net.send("ProbePub", node, nxt, 160, at, parent, eid)
                if recv is None:
                    break
                node, at = nxt, recv + net.proc()
            else:
                reached.append((leaf, at, parent))
    return reached


def generate_run(run_dir: str | Path, spec: SyntheticSpec | None = None, **overrides: Any) -> dict[str, Any]:
    """Write a fake run to `run_dir`; returns its summary. `overrides` replace fields of `spec`."""
    spec = spec or SyntheticSpec()
    if overrides:
        spec = SyntheticSpec(**{**spec.__dict__, **overrides})
    if spec.nodes < 4:
        raise ValueError("a synthetic run needs at least 4 nodes")
    rng = np.random.default_rng(spec.seed)
    w = TraceWriter(run_dir, scenario=spec.scenario())
    net = _Net(spec, rng, w)
    n = spec.nodes

    for a in range(n):  # start-up pings: roots with neither event nor subscription id
        b = _others(rng, n, 1, a)[0]
        m, r = net.send("dht.ping", a, b, 70, float(rng.uniform(0, 0.5)), None)
        net.send("dht.ping", b, a, 70, r + net.proc(), m)

    leaves = [int(x) for x in rng.choice(n, size=max(3, (2 * n) // 3), replace=False)]
    hot = leaves[:2]
    stored: dict[int, list[tuple[str, int]]] = {leaf: [] for leaf in leaves}
    t = 1.0
    for j in range(round(spec.subs_per_node * n)):
        t += float(rng.exponential(0.05))
        sid = f"s{j}"
        if j == 0:  # installed locally: the subscriber is its own home leaf
            subscriber = home = leaves[0]
            w.subscription(sid, subscriber, t, t + net.proc(), None)
        else:
            subscriber = int(rng.integers(0, n))
            home = leaves[int(rng.integers(0, len(leaves)))]
            w.subscription(sid, subscriber, t)
            _install(net, spec, sid, subscriber, home, t)
        stored[home].append((sid, subscriber))

    t += 1.0
    crash_time = t + 0.05 * spec.events / 2
    for victim in rng.choice(np.arange(1, n), size=min(spec.crashes, n - 1), replace=False):
        net.crash_at[int(victim)] = crash_time
    with_subs = [leaf for leaf in leaves if stored[leaf]]
    for k in range(spec.events):
        t += float(rng.exponential(0.05))
        eid = f"e{k}"
        alive = [i for i in range(n) if net.crash_at[i] > t]
        publisher = leaves[0] if k == 0 else int(rng.choice(alive))
        picks = rng.choice(len(with_subs), size=min(len(with_subs), int(rng.integers(2, 5))), replace=False)
        targets = sorted({with_subs[i] for i in picks} | ({leaves[0]} if k == 0 else set()))
        if not spec.cutoff:
            targets = sorted(set(targets) | set(hot))
        w.event(eid, publisher, t)
        for leaf, at, probe in _probe_leaves(net, spec, eid, publisher, targets, t):
            for sid, subscriber in stored[leaf]:
                if not (k == 0 and leaf == leaves[0]) and rng.random() > 0.6:
                    continue
                at2 = at + net.proc()
                if subscriber == leaf:
                    w.delivery(eid, sid, subscriber, publisher, t, at2, probe)
                    continue
                ed, recv = net.send("EventDelivery", leaf, subscriber, 230, at2, probe, eid, sid)
                if recv is None:
                    continue
                w.delivery(eid, sid, subscriber, publisher, t, recv + net.proc(), ed)
                net.send("Ack", subscriber, leaf, 40, recv + net.proc(), ed)
    return w.close({"generator": "p2pubsub.trace.synthetic"})


def generate_suite(
    root: str | Path, sizes: tuple[int, ...] = (12, 16, 24), seed: int = 1, **overrides: Any
) -> list[Path]:
    """Runs for every figure: multicast+cut-off at each size, unicast and no-cut-off at the first size."""
    root = Path(root)
    specs = [SyntheticSpec(nodes=s, seed=seed + i, **overrides) for i, s in enumerate(sizes)]
    specs.append(SyntheticSpec(nodes=sizes[0], multicast=False, seed=seed, **overrides))
    specs.append(SyntheticSpec(nodes=sizes[0], cutoff=False, seed=seed, **overrides))
    dirs = []
    for spec in specs:
        d = root / spec.run_name()
        generate_run(d, spec)
        dirs.append(d)
    return dirs


def tiny_run(run_dir: str | Path) -> dict[str, Any]:
    """A hand-checkable run: 3 nodes on hosts 0-2, one-way 10 ms (0-1), 20 ms (1-2), 30 ms (0-2).

    - ``s1``: node 0 subscribes at 0; ProbeSub 0->1 (100 B, 1-11 ms), InsertSub 1->2 (200 B, 12-32 ms),
      SubInstalled 2->0 (50 B, 33-68 ms: 5 ms queueing); installed at 69 ms (latency 69 ms).
    - ``s2``: node 2 subscribes at 100 ms, installed locally at 100.5 ms (no message; latency 0.5 ms).
    - ``e1``: node 1 publishes at 1 s; ProbePubMulticast 1->2 (300 B, 1.001-1.021); ProbePub 1->0 (150 B)
      lost; node 2 matches: delivers ``s2`` locally at 1.0215 (21.5 ms) and sends EventDelivery 2->0 (200 B,
      1.022-1.052), acked (40 B); ``s1`` delivered at 1.053 (53 ms). A ``dht.find_node`` 1->0 (100 B).

    Bytes sent per node: subscription phase 100 / 200 / 50 (nodes 0 / 1 / 2), event phase 0 / 450 / 200,
    probes 0 / 450 / 0. With every latency doubled, the replay gives installs of 129 and 0.5 ms and
    deliveries of 103 and 41.5 ms.
    """
    w = TraceWriter(
        run_dir,
        scenario={
            "name": "tiny",
            "seed": 0,
            "network": {"nodes": 3},
            "protocol": {"multicast": True, "cutoff": True},
            "workload": {"kind": "tiny"},
        },
    )
    for node in range(3):
        w.node(node, node, None)
    ms = [[0.0, 10.0, 30.0], [10.0, 0.0, 20.0], [30.0, 20.0, 0.0]]
    w.latency_matrix([0, 1, 2], ms)
    w.subscription("s1", 0, 0.0)
    p = w.message("ProbeSub", 0, 1, 100, 0.001, 0.011, None, None, "s1")
    i = w.message("InsertSub", 1, 2, 200, 0.012, 0.032, p, None, "s1")
    done = w.message("SubInstalled", 2, 0, 50, 0.033, 0.068, i, None, "s1")
    w.installed("s1", 0.069, done)
    w.subscription("s2", 2, 0.1, 0.1005, None)
    w.event("e1", 1, 1.0)
    mm = w.message("ProbePubMulticast", 1, 2, 300, 1.001, 1.021, None, "e1")
    w.message("ProbePub", 1, 0, 150, 1.002, None, None, "e1")
    w.delivery("e1", "s2", 2, 1, 1.0, 1.0215, mm)
    ed = w.message("EventDelivery", 2, 0, 200, 1.022, 1.052, mm, "e1", "s1")
    w.delivery("e1", "s1", 0, 1, 1.0, 1.053, ed)
    w.message("Ack", 0, 2, 40, 1.053, 1.083, ed)
    w.message("dht.find_node", 1, 0, 100, 0.5, 0.51)
    return w.close()
