"""OctopiA broker core: CLT/CIV bookkeeping (Alg. 1, 2), SPR (Alg. 3) and the three IDR cases (Alg. 4)."""

import random

import pytest

from overlays.experiment import check_octopia_state, scot_link_discipline
from overlays.harness import RandomNetwork
from overlays.messages import (
    Advertise,
    Deliver,
    LinkSample,
    LinkStats,
    Phase,
    Publish,
    Rejected,
    Subscribe,
    Unadvertise,
    Unsubscribe,
)
from overlays.octopia import Civ, CivSet, CivUnset, OctopiaBroker, PublicationRoute
from overlays.oracle import Oracle
from overlays.scot import BrokerId as B
from overlays.scot import Scot
from overlays.workload import small_schema
from p2pubsub.model import parse_event, parse_filter

SCHEMA = small_schema()
SCHEMAS = {"T": SCHEMA}


def flt(body):
    return parse_filter(SCHEMA, body)


def ev(**values):
    return parse_event(SCHEMA, values)


class Net:
    """A SCOT of OctopiA brokers in the random harness, with every send recorded."""

    def __init__(self, scot, dynamic=False, seed=0):
        self.scot = scot
        self.cores = {b: OctopiaBroker(scot, b, SCHEMAS, dynamic=dynamic) for b in scot.brokers}
        self.sent = []
        self.net = RandomNetwork(
            self.cores, random.Random(seed), send_checks=[scot_link_discipline(scot), self._record]
        )
        self.oracle = Oracle(SCHEMAS)

    def _record(self, _net, src, send):
        self.sent.append((src, send.neighbour, send.message))

    def do(self, broker, cmd):
        self.oracle.apply(cmd)
        out = self.net.command(broker, cmd)
        self.net.run()
        return out

    def sends(self, kind):
        return [(s, d, m) for s, d, m in self.sent if isinstance(m, kind)]


def fig7(dynamic=True):
    """Fig. 7: a 3-broker path a-b-c times K4; publisher P at B(b,3); subscribers in every cluster."""
    n = Net(Scot.build([("a", "b"), ("b", "c")], 4), dynamic=dynamic)
    n.do(B("b", 3), Advertise("P", "adv", flt({"x": {"ge": 0}})))
    for i, b in enumerate([B("a", 0), B("c", 1), B("b", 2), B("a", 3), B("c", 0)]):
        n.do(b, Subscribe(f"S{i + 1}", f"s{i + 1}", flt({"x": {"ge": 5}})))
    return n


def test_advertisement_stays_in_host_region_and_civ_tracks_subscriptions():
    n = Net(Scot.build([("a", "b"), ("b", "c")], 3))
    n.do(B("a", 2), Subscribe("S2", "s2", flt({"x": {"le": 4}})))
    n.sent.clear()
    n.do(B("a", 0), Advertise("P0", "adv0", flt({"x": {"ge": 0, "le": 9}})))
    # Alg. 1: only secondary neighbours receive it; B(a,2) already holds an overlapping subscription
    assert sorted(d for _, d, _ in n.sends(type(n.sent[0][2]))) == [B("a", 1), B("a", 2)]
    civsets = n.sends(CivSet)
    assert [(s, d) for s, d, _ in civsets] == [(B("a", 2), B("a", 0))]
    assert civsets[0][2].phase is Phase.ADVERTISE
    host = n.cores[B("a", 0)].clt
    (entry,) = list(host)
    assert entry.civ == Civ.of([0, 2]) and entry.civ.render(3) == "101"
    assert len(n.cores[B("b", 0)].clt) == 0  # other regions never see it
    assert check_octopia_state(n.cores, n.scot, n.oracle) == []


def test_subscription_civ_set_once_per_ilink_and_unset_on_last_unsubscribe():
    n = Net(Scot.build([("a", "b"), ("b", "c")], 3))
    n.do(B("c", 0), Advertise("P", "a1", flt({"x": {"ge": 0}})))
    n.do(B("c", 0), Advertise("P", "a2", flt({"x": {"ge": 3}})))
    n.sent.clear()
    n.do(B("a", 1), Subscribe("S", "s1", flt({"x": {"ge": 5}})))
    civsets = n.sends(CivSet)
    assert len(civsets) == 1  # one CIV_SET for both advertisements of the host: one per iLink
    (src, dst, msg) = civsets[0]
    assert (src, dst, msg.cluster, len(msg.uids), msg.phase) == (B("c", 1), B("c", 0), 1, 2, Phase.SUBSCRIBE)
    n.sent.clear()
    n.do(B("b", 1), Subscribe("S", "s2", flt({"x": {"ge": 7}})))
    assert not n.sends(CivSet)  # CIV_s^1[1] already 1
    n.do(B("a", 1), Unsubscribe("S", "s1"))
    assert not n.sends(CivUnset)  # s2 still overlaps
    n.do(B("b", 1), Unsubscribe("S", "s2"))
    assert len(n.sends(CivUnset)) == 1
    assert all(e.civ == Civ.of([0]) for e in n.cores[B("c", 0)].clt)
    assert check_octopia_state(n.cores, n.scot, n.oracle) == []


def test_unadvertise_removes_region_entries():
    n = Net(Scot.build([("a", "b")], 3))
    n.do(B("b", 1), Advertise("P", "a", flt({"x": {"ge": 0}})))
    assert all(len(n.cores[b].clt) == 1 for b in n.scot.region("b"))
    n.do(B("b", 1), Unadvertise("P", "a"))
    assert all(len(c.clt) == 0 for c in n.cores.values())


def test_spr_host_cluster_only_means_no_inter_cluster_messages():
    n = Net(Scot.s_e())
    n.do(B("A", 2), Advertise("P", "a", flt({"x": {"ge": 0}})))
    n.do(B("N", 2), Subscribe("S", "s", flt({"x": {"eq": 3}})))
    n.sent.clear()
    n.do(B("A", 2), Publish("P", "e1", ev(x=3)))
    pubs = n.sends(PublicationRoute)
    assert all(s.cluster == d.cluster == 2 for s, d, _ in pubs)
    (d,) = [x for x in n.net.deliveries]
    assert d.sub_id == "s" and d.hops == 5 == n.scot.af_diameter()  # A-F-G-H-I-N


def test_spr_reaches_tscs_over_host_ilinks_within_diam_plus_one():
    n = fig7(dynamic=False)
    n.sent.clear()
    n.do(B("b", 3), Publish("P", "e", ev(x=6)))
    ilink_sends = [(s, d) for s, d, m in n.sends(PublicationRoute) if s.cluster != d.cluster]
    assert sorted(ilink_sends) == [(B("b", 3), B("b", 0)), (B("b", 3), B("b", 1)), (B("b", 3), B("b", 2))]
    got = {d.sub_id: d.hops for d in n.net.deliveries}
    assert set(got) == {"s1", "s2", "s3", "s4", "s5"}
    assert max(got.values()) <= n.scot.af_diameter() + 1


def overload(n, broker, queues):
    """Feed Eq. 3 inputs: queues maps neighbour -> Q_ℓ with a growing queue (CE = 11)."""
    samples = tuple(
        LinkSample(nb, queues.get(nb, 0), 10 if nb in queues else 0, 0) for nb in n.cores[broker].neighbours
    )
    n.net.command(broker, LinkStats(samples))


def host_sends(n):
    return {d: m.civ_p for s, d, m in n.sends(PublicationRoute) if s == B("b", 3)}


def test_idr_case_1_overloaded_ilink_delegated_to_least_loaded_uncongested_ilink():
    n = fig7()
    overload(n, B("b", 3), {B("b", 0): 50})
    n.sent.clear()
    n.do(B("b", 3), Publish("P", "e", ev(x=6)))
    sends = host_sends(n)
    assert B("b", 0) not in sends
    assert sends[B("b", 1)] == Civ.of([0]) and sends[B("b", 2)] == Civ() and sends[B("a", 3)] == Civ()
    assert {d.sub_id for d in n.net.deliveries} == {"s1", "s2", "s3", "s4", "s5"}
    assert len(n.net.deliveries) == 5


def test_idr_case_2_all_ilinks_overloaded_uses_uncongested_alink():
    n = fig7()
    overload(n, B("b", 3), {B("b", 0): 50, B("b", 1): 40, B("b", 2): 30})
    n.sent.clear()
    n.do(B("b", 3), Publish("P", "e", ev(x=6)))
    assert host_sends(n) == {B("a", 3): Civ.of([0, 1, 2])}
    # B(a,3) serves the three clusters over its own iLinks, then routing is static again
    from_a3 = {d: m.civ_p for s, d, m in n.sends(PublicationRoute) if s == B("a", 3)}
    assert from_a3 == {B("a", 0): Civ(), B("a", 1): Civ(), B("a", 2): Civ()}
    assert sorted(d.sub_id for d in n.net.deliveries) == ["s1", "s2", "s3", "s4", "s5"]


def test_idr_case_3_everything_overloaded_takes_least_loaded_target_ilink():
    n = fig7()
    overload(n, B("b", 3), {B("b", 0): 50, B("b", 1): 40, B("b", 2): 30, B("a", 3): 5})
    overload(n, B("b", 2), {B("b", 1): 50})
    n.sent.clear()
    n.do(B("b", 3), Publish("P", "e", ev(x=6)))
    # every target aLink still gets its copy; CIV_p-D goes over the least-loaded target iLink, its bit cleared
    assert host_sends(n) == {B("a", 3): Civ(), B("b", 2): Civ.of([0, 1])}
    from_b2 = {d: m.civ_p for s, d, m in n.sends(PublicationRoute) if s == B("b", 2)}
    assert from_b2[B("b", 0)] == Civ.of([1])  # (b,2)->(b,1) is overloaded too: C_1 rides on the copy to C_0
    assert B("b", 1) not in from_b2
    assert sorted(d.sub_id for d in n.net.deliveries) == ["s1", "s2", "s3", "s4", "s5"]


def test_static_mode_ignores_link_stats():
    n = fig7(dynamic=False)
    overload(n, B("b", 3), {B("b", 0): 50, B("b", 1): 40, B("b", 2): 30, B("a", 3): 5})
    n.sent.clear()
    n.do(B("b", 3), Publish("P", "e", ev(x=6)))
    assert all(not c for c in host_sends(n).values()) and len(host_sends(n)) == 4


def test_stale_link_stats_expire():
    core = OctopiaBroker(Scot.build([("a", "b")], 2), B("a", 0), SCHEMAS, dynamic=True)
    core.handle(LinkStats((LinkSample(B("a", 1), 100, 10, 0),)), 1.0)
    assert core.lst.overloaded(B("a", 1))
    core.handle(LinkStats(()), 1.0 + 3 * core.lst.config.t_w)
    assert not core.lst.overloaded(B("a", 1)) and core.lst.queue_length(B("a", 1)) == 0


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        (Unadvertise("P", "nope"), "unknown_id"),
        (Publish("Q", "e", ev(x=1)), "no_advertisement"),
        (Publish("P", "e", ev(x=1, y=2.0)), "no_advertisement"),  # carries an unadvertised attribute
        (Unsubscribe("S", "nope"), "unknown_id"),
        (Unsubscribe("other", "s"), "not_owner"),
        (Advertise("P", "a", flt({"x": {"ge": 0}})), "duplicate_id"),
        (Subscribe("S", "s", flt({"x": {"ge": 0}})), "duplicate_id"),
        (Advertise("P", "b", parse_filter(small_schema(name="U"), {"x": {"ge": 0}})), "unknown_schema"),
    ],
)
def test_rejections(cmd, code):
    core = OctopiaBroker(Scot.build([("a", "b")], 2), B("a", 0), SCHEMAS)
    setup = [Advertise("P", "a", flt({"x": {"ge": 0}})), Subscribe("S", "s", flt({"x": {"ge": 0}}))]
    for c in setup:
        assert not any(isinstance(a, Rejected) for a in core.handle(c, 0.0))
    out = core.handle(cmd, 0.0)
    assert [a.code for a in out if isinstance(a, Rejected)] == [code]


def test_local_delivery_and_unknown_input():
    core = OctopiaBroker(Scot.build([], 1, af_vertices=["a"]), B("a", 0), SCHEMAS)
    core.handle(Advertise("P", "a", flt({"x": {"ge": 0}})), 0.0)
    core.handle(Subscribe("S", "s", flt({"x": {"le": 3}})), 0.0)
    out = core.handle(Publish("P", "e", ev(x=2)), 0.0)
    assert [(type(a), a.subscription_id, a.hops) for a in out] == [(Deliver, "s", 0)]
    with pytest.raises(TypeError):
        core.handle(object(), 0.0)
    assert core.table_sizes().advertisements == 1 and core.table_sizes().subscriptions == 1
