"""The repair of a replaced broker, on the pure cores (no sockets): a broker position gets a fresh core (a new
tenure), its neighbours purge the old tenure and send their snapshots, the baseline's hosts advertise retired trees
again — and then the routing state is exactly what it would be had the dead tenure's clients never existed, and
every publication reaches exactly the subscriptions the oracle owes it. Every position, both cores, many seeds."""

from __future__ import annotations

import random

import pytest

from overlays import BrokerId, FromNeighbour, Scot
from overlays.experiment import check_octopia_state, check_padres_state, make_cores
from overlays.harness import RandomNetwork
from overlays.messages import Advertise, Publish, Subscribe, Unadvertise, Unsubscribe
from overlays.oracle import Oracle
from overlays.workload import conforming_event, random_filter, small_schema
from p2pubsub.scot.definition import seq_base, sub_id
from p2pubsub.scot.repair import hosted_adverts, purge, snapshot

SCOT = Scot.build((("A", "B"), ("B", "C"), ("B", "D")), 2)


def _fresh(kind: str, b: BrokerId, epoch: int, schemas):
    core = make_cores(kind, Scot.build(SCOT.af_edges, SCOT.n_clusters), schemas)[b]
    if kind == "octopia":
        core._adv_seq = seq_base(epoch)
    else:
        core._seq = seq_base(epoch)
    return core


def _state_problems(kind: str, net: RandomNetwork, oracle: Oracle) -> list[str]:
    if kind == "octopia":
        return check_octopia_state(net.cores, SCOT, oracle)
    return check_padres_state(net.cores, oracle)


@pytest.mark.parametrize("kind", ["octopia", "padres"])
@pytest.mark.parametrize("victim", sorted(SCOT.brokers))
def test_a_replaced_broker_is_repaired_by_its_neighbours(kind, victim):
    for seed in range(3):
        _replace(kind, victim, seed)


def _replace(kind: str, victim: BrokerId, seed: int) -> None:
    schema = small_schema()
    schemas = {"T": schema}
    rng = random.Random(f"{kind}{victim}{seed}")
    cores = {b: _fresh(kind, b, 1, schemas) for b in SCOT.brokers}
    net = RandomNetwork(cores, rng)
    oracle = Oracle(schemas)
    seqs = dict.fromkeys(SCOT.brokers, 0)

    def issue(b: BrokerId, cmd) -> None:
        accepted = oracle.apply(cmd)  # an unsatisfiable advertisement is refused by both
        assert accepted == (not any(type(a).__name__ == "Rejected" for a in net.command(b, cmd)))
        net.run()

    for b in rng.sample(SCOT.brokers, 4):
        issue(b, Advertise(str(b), f"a{seqs[b]}", random_filter(rng, schema, full_numeric=True)))
        seqs[b] += 1
    for _ in range(16):
        b = rng.choice(SCOT.brokers)
        seqs[b] += 1
        issue(b, Subscribe(str(b), sub_id(b, 1, seqs[b]), random_filter(rng, schema)))

    # the victim's tenure ends (a crash): its clients are gone; a new tenure starts with empty tables
    for key in [k for k in oracle.adverts if k[0] == str(victim)]:
        del oracle.adverts[key]
    for sid in [s for s, owner in oracle.owners.items() if owner == str(victim)]:
        del oracle.subs[sid], oracle.owners[sid]
    net.cores[victim] = _fresh(kind, victim, 2, schemas)
    for q in SCOT.neighbours(victim):
        core = net.cores[q]
        for m in purge(core, victim, 2):
            net._process(q, core.handle(FromNeighbour(victim, m), net.now))
        for m in snapshot(core, victim):
            net._enqueue(q, victim, m)
    net.run()
    for b, core in net.cores.items():  # the baseline: hosts whose trees were retired advertise them again
        live = hosted_adverts(core)
        for (client, adv_id), flt in list(oracle.adverts.items()):
            if client == str(b) and adv_id not in live:
                net.command(b, Unadvertise(client, adv_id))
                net.command(b, Advertise(client, adv_id, flt))
        net.run()
    assert not _state_problems(kind, net, oracle), (seed, _state_problems(kind, net, oracle)[:3])

    # the new tenure's clients take part like any other
    issue(victim, Advertise(str(victim), "n0", random_filter(rng, schema, full_numeric=True)))
    issue(victim, Subscribe(str(victim), sub_id(victim, 2, 1), random_filter(rng, schema)))
    survivor = next(s for s, owner in oracle.owners.items() if owner != str(victim))
    issue(_owner_broker(oracle.owners[survivor]), Unsubscribe(oracle.owners[survivor], survivor))
    assert not _state_problems(kind, net, oracle)
    owed, pubs = {}, []
    for n in range(40):
        client, adv_id = rng.choice(sorted(oracle.adverts))
        ev = conforming_event(rng, schema, oracle.adverts[(client, adv_id)])
        if ev is None:
            continue
        cmd = Publish(client, f"p{n}", ev)
        owed[(client, cmd.pub_id)] = oracle.expected(cmd)
        net.command(_owner_broker(client), cmd)
        pubs.append((client, cmd.pub_id))
    net.run()
    got = net.delivered()
    assert all(got.get(p, set()) == owed[p] for p in pubs), seed


def _owner_broker(client: str) -> BrokerId:
    region, cluster = client[2:-1].split(",")
    return BrokerId(region, int(cluster))
