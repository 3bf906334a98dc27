"""A SCOT formed through the DHT by 8 in-process nodes (a 4-broker acyclic factor x 2 clusters), driven through
the REST API on every node: every publication reaches exactly the subscriptions the brute-force oracle owes it (no
miss, no false positive, no duplicate), under static and dynamic routing, with OctopiA and the PADRES-style
baseline on the same positions; a publication without a matching advertisement of its node is refused (409)."""

from __future__ import annotations

import asyncio
import random

import pytest
from scothelpers import TREE4, RestScot, ScotCluster

from overlays.messages import Advertise, Publish, Subscribe, Unadvertise, Unsubscribe
from overlays.oracle import Oracle
from overlays.workload import conforming_event, random_event, random_filter, small_schema
from p2pubsub.client import ApiError
from p2pubsub.model import Absent, parse_filter
from p2pubsub.scot.definition import OverlayDefinition

CASES = [  # routing, dynamic, absent
    ("octopia", False, Absent.NO_MATCH),
    ("octopia", True, Absent.MATCH),
    ("padres", False, Absent.MATCH),
    ("padres", True, Absent.NO_MATCH),
]


async def _events(client, sub_id: str) -> list[str]:
    page = await client.events(sub_id, limit=1000)
    return [e["id"] for e in page.events]


@pytest.mark.parametrize("routing, dynamic, absent", CASES, ids=[f"{r}-{'dyn' if d else 'static'}-{a.value}"
                                                                 for r, d, a in CASES])
async def test_every_publication_reaches_exactly_the_matching_subscriptions(routing, dynamic, absent):
    # tau = 0 under dynamic routing: any queued message makes a link "overloaded", so bursts exercise IDR / TID-D
    definition = OverlayDefinition.build(TREE4, 2, routing=routing, dynamic=dynamic, tau=0.0 if dynamic else 10.0,
                                         t_w=0.02)
    rest = RestScot(ScotCluster(definition, seed=11, lease=2.0))
    try:
        await rest.cluster.form()
        await rest.serve_all()
        nodes, clients = rest.cluster.nodes, rest.clients
        assert len(nodes) == 8 and {n.broker.position for n in nodes} == set(definition.scot.brokers)
        schema = small_schema(absent)
        _, created = await clients[5].put_schema("T", {a.name: a.to_dict() for a in schema.attributes},
                                                 absent=absent.value)
        assert created
        rng = random.Random(f"{routing}{dynamic}")
        oracle = Oracle({"T": schema})
        subs: dict[str, int] = {}  # sub id -> node index
        adverts: dict[str, tuple[int, object]] = {}  # adv id -> (node index, filter)

        async def advertise(i: int) -> None:
            flt = random_filter(rng, schema, full_numeric=True)
            adv = await clients[i].advertise("T", flt.to_filter())
            parsed = parse_filter(schema, adv["filter"])
            assert parsed == flt and adv["schema"] == "T"
            adverts[adv["id"]] = (i, parsed)
            assert oracle.apply(Advertise(str(i), adv["id"], parsed))

        async def subscribe(i: int) -> None:
            flt = random_filter(rng, schema)
            sub = await clients[i].subscribe("T", flt.to_filter())
            subs[sub["id"]] = i
            assert oracle.apply(Subscribe(str(i), sub["id"], parse_filter(schema, sub["filter"])))

        async def publish_round(count: int) -> dict[str, set[str]]:
            """Publish ``count`` events at once (a burst: queues build); the owed subscriptions per event id."""
            plan = []
            for _ in range(count):
                i = rng.choice([i for i, _ in adverts.values()] + [rng.randrange(8)])
                mine = [f for j, f in adverts.values() if j == i]
                ev = conforming_event(rng, schema, rng.choice(mine)) if mine and rng.random() < 0.85 else None
                if ev is None:
                    ev = random_event(rng, schema, rng.sample(schema.names, rng.randint(1, 3)))
                plan.append((i, ev, oracle.expected(Publish(str(i), "?", ev))))
            results = await asyncio.gather(*(clients[i].publish("T", dict(ev.values)) for i, ev, _ in plan),
                                           return_exceptions=True)
            owed = {}
            for (_i, _ev, want), res in zip(plan, results, strict=True):
                if want is None:  # no advertisement of that node covers it: the broker refuses it
                    assert isinstance(res, ApiError) and res.status == 409 and res.code == "no_advertisement", res
                else:
                    assert isinstance(res, str), res
                    owed[res] = want
            return owed

        async def check(owed: dict[str, set[str]], live: dict[str, int]) -> None:
            await rest.cluster.settle()
            got: dict[str, set[str]] = {e: set() for e in owed}
            for sid, i in live.items():
                ids = [e for e in await _events(clients[i], sid) if e in owed]
                assert len(ids) == len(set(ids)), f"duplicate deliveries to {sid}"
                for e in ids:
                    got[e].add(sid)
            problems = [f"{e}: missed {sorted(owed[e] - got[e])}, extra {sorted(got[e] - owed[e])}"
                        for e in owed if got[e] != owed[e]]
            assert not problems, problems[:5]

        for i in rng.sample(range(8), 5):
            await advertise(i)
        for _ in range(24):
            await subscribe(rng.randrange(8))
        owed = await publish_round(60)
        assert sum(map(len, owed.values())) > 40  # the workload does exercise delivery
        await check(owed, subs)

        # churn of clients: withdraw some subscriptions and advertisements, add others, publish again
        for sid in rng.sample(sorted(subs), 8):
            assert await clients[subs[sid]].unsubscribe(sid)
            assert oracle.apply(Unsubscribe(str(subs.pop(sid)), sid))
        for adv_id in rng.sample(sorted(adverts), 2):
            i, _ = adverts.pop(adv_id)
            assert await clients[i].unadvertise(adv_id)
            assert oracle.apply(Unadvertise(str(i), adv_id))
        for i in rng.sample(range(8), 2):
            await advertise(i)
        for _ in range(8):
            await subscribe(rng.randrange(8))
        owed = await publish_round(60)
        await check(owed, subs)
        if dynamic:
            diversions = sum(n.broker.core.counters.dynamic_diversions for n in nodes)
            print(f"{routing}: {diversions} publication copies left the static path")
    finally:
        await rest.close()


@pytest.mark.parametrize("routing, dynamic", [("octopia", True), ("padres", False)])
async def test_the_papers_topology_s_e_with_two_clusters(routing, dynamic):
    """S_e's 14-broker acyclic factor (paper §10) x 2 clusters: 28 node processes' worth of nodes in one loop."""
    from overlays.workload import conforming_event as conforming
    from p2pubsub.node.transport import TransportConfig

    definition = OverlayDefinition.from_cli("s_e", 2, routing=routing, dynamic=dynamic, tau=1.0, t_w=0.02)
    c = ScotCluster(definition, seed=5, lease=10.0, transport=TransportConfig(max_retries=4, max_rto=1.0),
                    rpc_timeout=2.0)
    try:
        await c.form()
        schema = small_schema()
        rng = random.Random(routing)
        oracle = Oracle({"T": schema})
        await c.nodes[3].put_schema("T", {"attributes": {a.name: a.to_dict() for a in schema.attributes}})
        for i in rng.sample(range(28), 8):
            flt = random_filter(rng, schema, full_numeric=True)
            adv = await c.nodes[i].advertise("T", flt.to_filter())
            assert oracle.apply(Advertise(str(i), adv, flt))
        for _ in range(60):
            i = rng.randrange(28)
            flt = random_filter(rng, schema)
            sid = await c.nodes[i].subscribe("T", flt.to_filter())
            assert oracle.apply(Subscribe(str(i), sid, flt))
        publishers = sorted({int(i) for i, _ in oracle.adverts})
        plan = []
        for _ in range(150):
            i = rng.choice(publishers)
            ev = conforming(rng, schema, rng.choice([f for (j, _), f in oracle.adverts.items() if j == str(i)]))
            if ev is not None:
                plan.append((i, ev, oracle.expected(Publish(str(i), "?", ev))))
        ids = await asyncio.gather(*(c.nodes[i].publish("T", dict(ev.values)) for i, ev, _ in plan))
        owed = {eid: want for eid, (_i, _ev, want) in zip(ids, plan, strict=True)}
        await c.settle(20)
        got: dict[str, list[str]] = {e: [] for e in owed}
        for (_i, sid), events in c.got.items():
            for e in events:
                got[e].append(sid)
        assert sum(map(len, owed.values())) > 500
        assert all(sorted(got[e]) == sorted(owed[e]) for e in owed)
    finally:
        await c.close()
