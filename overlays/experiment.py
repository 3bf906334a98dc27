"""Driving many brokers at once: build cores for a topology, run seeded random workloads against the oracle,
and check routing-state invariants at quiescence. Used by the tests and by ``bench/overlays_compare.py``."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from p2pubsub.model import Schema

from .content import overlaps
from .harness import RandomNetwork, SendCheck
from .lst import CongestionConfig
from .messages import (
    Advertise,
    LinkSample,
    LinkStats,
    Phase,
    Publish,
    Rejected,
    RoutingCore,
    Send,
    Subscribe,
    Unadvertise,
    Unsubscribe,
)
from .octopia import (
    Advertisement,
    CivSet,
    CivUnset,
    OctopiaBroker,
    PublicationRoute,
    SubscriptionBroadcast,
    Unadvertisement,
    UnsubscriptionBroadcast,
)
from .oracle import Oracle, compare
from .padres import PadresBroker
from .scot import BrokerId, Scot
from .workload import conforming_event, random_event, random_filter

KINDS = ("octopia", "padres")


def make_cores(
    kind: str,
    scot: Scot,
    schemas: Mapping[str, Schema] | None,
    *,
    dynamic: bool = False,
    congestion: CongestionConfig | None = None,
) -> dict[BrokerId, RoutingCore]:
    """OctopiA on the clustered SCOT, or the PADRES-style baseline on the same graph unclustered."""
    if kind == "octopia":
        return {b: OctopiaBroker(scot, b, schemas, dynamic=dynamic, congestion=congestion) for b in scot.brokers}
    if kind == "padres":
        return {b: PadresBroker.on_scot(scot, b, schemas, dynamic=dynamic, congestion=congestion)
                for b in scot.brokers}
    raise ValueError(f"unknown overlay kind {kind!r}; expected one of {KINDS}")


def scot_link_discipline(scot: Scot) -> SendCheck:
    """OctopiA invariant on every send: subscriptions stay on aLinks (inside the cluster), advertisements and CIV
    messages on iLinks (inside the host region)."""

    def check(_net: Any, src: Hashable, send: Send) -> None:
        m = send.message
        alink = scot.is_alink(src, send.neighbour)
        if isinstance(m, SubscriptionBroadcast | UnsubscriptionBroadcast) and not alink:
            raise AssertionError(f"{type(m).__name__} left its cluster: {src} -> {send.neighbour}")
        if isinstance(m, Advertisement | Unadvertisement | CivSet | CivUnset) and alink:
            raise AssertionError(f"{type(m).__name__} on an aLink: {src} -> {send.neighbour}")
        if isinstance(m, PublicationRoute) and m.civ_p[send.neighbour.cluster]:
            raise AssertionError(f"CIV_p still names the cluster it enters: {src} -> {send.neighbour}")

    return check


def check_octopia_state(cores: Mapping[BrokerId, OctopiaBroker], scot: Scot, oracle: Oracle) -> list[str]:
    """At quiescence: PRT of every broker of C_j = the live subscriptions issued in C_j; the CLT holds exactly the
    advertisements of its region; CIV_a^i and CIV_s^j name exactly the clusters with overlapping subscriptions."""
    problems = []
    home: dict[str, int] = {}
    for b, core in cores.items():
        for e in core.prt:
            if e.lasthop is None:
                home[e.sub_id] = b.cluster
    by_cluster: dict[int, set[str]] = defaultdict(set)
    for sid in oracle.subs:
        if sid in home:
            by_cluster[home[sid]].add(sid)
    if set(home) != set(oracle.subs):
        problems.append(f"subscriptions without a home broker: {sorted(set(oracle.subs) ^ set(home))}")
    hosts: dict[Any, tuple[BrokerId, Any]] = {}
    for b, core in cores.items():
        for e in core.clt:
            if e.is_local:
                hosts[e.uid] = (b, e)
    if len(hosts) != len(oracle.adverts):
        problems.append(f"{len(hosts)} live advertisements at hosts, oracle has {len(oracle.adverts)}")
    for b, core in cores.items():
        have = {e.sub_id for e in core.prt}
        if have != by_cluster[b.cluster]:
            problems.append(f"{b}: PRT {sorted(have)} != cluster subscriptions {sorted(by_cluster[b.cluster])}")
        for e in core.clt:
            if e.uid.host.region != b.region:
                problems.append(f"{b}: CLT holds advertisement {e.uid} from another region")
        want_uids = {u for u, (h, _) in hosts.items() if h.region == b.region}
        if {e.uid for e in core.clt} != want_uids:
            problems.append(f"{b}: CLT {sorted(e.uid for e in core.clt)} != region advertisements")
    for uid, (h, entry) in hosts.items():
        absent = oracle.absent(entry.filter.schema)
        want = {h.cluster} | {
            j for j, sids in by_cluster.items() if any(overlaps(entry.filter, oracle.subs[s], absent) for s in sids)
        }
        if set(entry.civ) != want:
            problems.append(f"CIV_a of {uid} at {h} is {sorted(entry.civ)}, want {sorted(want)}")
        for j, n in scot.secondary_neighbours(h).items():
            sec = cores[n].clt.get(uid)
            if sec is None or sec.civ[j] != (j in want) or not sec.civ[h.cluster]:
                problems.append(f"CIV_s of {uid} at {n} disagrees: {sec.civ if sec else None}")
    return problems


def check_padres_state(cores: Mapping[Hashable, PadresBroker], oracle: Oracle) -> list[str]:
    """At quiescence: every SRT holds every live advertisement once; each live subscription is bound, at its own
    broker and at the publisher's, to every live advertisement it overlaps and to nothing else."""
    problems = []
    roots = {}
    for b, core in cores.items():
        for e in core.srt:
            if e.lasthop is None:
                roots[e.tid] = (b, e)
    for b, core in cores.items():
        if {e.tid for e in core.srt} != set(roots):
            problems.append(f"{b}: SRT has {len(core.srt)} entries, {len(roots)} advertisements are live")
    for b, core in cores.items():
        for e in core.prt:
            if not e.is_local:
                continue
            absent = oracle.absent(e.filter.schema)
            want = {t for t, (_, a) in roots.items() if overlaps(a.filter, e.filter, absent)}
            if set(e.bindings) != want:
                problems.append(f"{b}: {e.sub_id} bound to {sorted(e.bindings)}, overlapping {sorted(want)}")
            for t in want:
                rb, _ = roots[t]
                re_ = cores[rb].prt.get(e.sub_id)
                if re_ is None or t not in re_.bindings:
                    problems.append(f"{e.sub_id} did not reach the root {rb} of {t}")
    return problems


@dataclass
class WorkloadReport:
    publications: int = 0
    expected_deliveries: int = 0
    deliveries: int = 0
    rejected_publications: int = 0
    problems: list[str] = field(default_factory=list)
    messages: Counter[Phase] = field(default_factory=Counter)
    diversions: int = 0
    steps: int = 0


def random_link_stats(rng: random.Random, core: Any, hot: float = 0.5) -> LinkStats:
    """Random Eq. 3 inputs: each link of ``core`` is hot (long, growing queue) with probability ``hot``."""
    samples = []
    for n in core.neighbours:
        if rng.random() < hot:
            samples.append(LinkSample(n, rng.randrange(20, 200), rng.randrange(10, 50), rng.randrange(0, 5)))
        else:
            samples.append(LinkSample(n, rng.randrange(0, 3), rng.randrange(0, 3), rng.randrange(0, 3)))
    return LinkStats(tuple(samples))


def run_random_workload(
    kind: str,
    scot: Scot,
    schema: Schema,
    *,
    seed: int,
    dynamic: bool = False,
    rounds: int = 3,
    publishers: int = 6,
    subscribers: int = 12,
    publications: int = 20,
    churn: float = 0.3,
    congestion: float = 0.05,
    state_checks: bool = True,
    extra_checks: Sequence[SendCheck] = (),
    on_round: Callable[[RandomNetwork], None] | None = None,
) -> WorkloadReport:
    """Rounds of (concurrent control batch -> quiescence -> concurrent publication batch -> quiescence), each
    publication compared with the oracle. In dynamic mode random LinkStats hit random brokers between message
    deliveries with probability ``congestion`` per step, so IDR / TID-D take every case mid-flight."""
    rng = random.Random(seed)
    schemas = {schema.name: schema}
    cores = make_cores(kind, scot, schemas, dynamic=dynamic)
    checks = list(extra_checks)
    if kind == "octopia":
        checks.append(scot_link_discipline(scot))
    net = RandomNetwork(cores, random.Random(rng.random()), send_checks=checks)
    oracle = Oracle(schemas)
    report = WorkloadReport()
    brokers = scot.brokers
    live_adverts: list[tuple[BrokerId, Advertise]] = []
    live_subs: list[tuple[BrokerId, Subscribe]] = []
    counter = Counter()

    def issue(b: BrokerId, cmd: Any) -> None:
        want = oracle.apply(cmd)
        got = net.command(b, cmd)
        rejected = any(isinstance(a, Rejected) for a in got)
        if rejected == want:
            report.problems.append(f"{cmd!r} at {b}: broker {'rejected' if rejected else 'accepted'} it")

    def stats(n: RandomNetwork) -> None:
        if dynamic and rng.random() < congestion:
            b = rng.choice(brokers)
            n.command(b, random_link_stats(rng, cores[b]))

    for _ in range(rounds):
        # control batch, issued concurrently
        for _ in range(publishers):
            if live_adverts and rng.random() < churn:
                b, a = live_adverts.pop(rng.randrange(len(live_adverts)))
                issue(b, Unadvertise(a.client, a.adv_id))
            else:
                counter["adv"] += 1
                b = rng.choice(brokers)
                client = f"p{rng.randrange(publishers)}@{b}"
                a = Advertise(client, f"a{counter['adv']}", random_filter(rng, schema, full_numeric=True))
                live_adverts.append((b, a))
                issue(b, a)
        for _ in range(subscribers):
            if live_subs and rng.random() < churn:
                b, s = live_subs.pop(rng.randrange(len(live_subs)))
                issue(b, Unsubscribe(s.client, s.sub_id))
            else:
                counter["sub"] += 1
                b = rng.choice(brokers)
                s = Subscribe(f"c{counter['sub']}@{b}", f"s{counter['sub']}", random_filter(rng, schema))
                live_subs.append((b, s))
                issue(b, s)
        report.steps += net.run(between=stats)
        if state_checks:
            if kind == "octopia":
                report.problems += check_octopia_state(cores, scot, oracle)  # type: ignore[arg-type]
            else:
                report.problems += check_padres_state(cores, oracle)  # type: ignore[arg-type]
        # publication batch, issued concurrently
        expected: dict[tuple[str, str], set[str]] = {}
        keys = []
        for _ in range(publications):
            counter["pub"] += 1
            pid = f"e{counter['pub']}"
            if live_adverts and rng.random() < 0.9:
                b, a = rng.choice(live_adverts)
                ev = conforming_event(rng, schema, a.filter)
                if ev is None:
                    continue
                cmd = Publish(a.client, pid, ev)
            else:  # a publisher without a matching advertisement: must be rejected
                b = rng.choice(brokers)
                cmd = Publish(f"p{rng.randrange(publishers)}@{b}", pid,
                              random_event(rng, schema, rng.sample(schema.names, 2)))
            want = oracle.expected(cmd)
            got = net.command(b, cmd)
            rejected = any(isinstance(x, Rejected) for x in got)
            if rejected != (want is None):
                report.problems.append(f"{cmd.pub_id} at {b}: rejected={rejected}, oracle expects {want}")
            if want is None:
                report.rejected_publications += 1
                continue
            expected[(cmd.client, cmd.pub_id)] = want
            keys.append((cmd.client, cmd.pub_id))
            stats(net)
        report.steps += net.run(between=stats)
        delivered = net.delivered()
        report.problems += compare(expected, delivered, keys)
        report.publications += len(keys)
        report.expected_deliveries += sum(len(v) for v in expected.values())
        if on_round is not None:
            on_round(net)
    report.deliveries = len(net.deliveries)
    report.messages = Counter(net.messages)
    report.diversions = sum(c.counters.dynamic_diversions for c in cores.values())  # type: ignore[attr-defined]
    return report


__all__ = [
    "KINDS",
    "WorkloadReport",
    "check_octopia_state",
    "check_padres_state",
    "make_cores",
    "random_link_stats",
    "run_random_workload",
    "scot_link_discipline",
]
