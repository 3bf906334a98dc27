"""PADRES-style baseline: TID flooding with duplicate discard, reverse-path subscriptions, TID-S and TID-D."""

import random

from overlays.experiment import check_padres_state, make_cores
from overlays.harness import RandomNetwork
from overlays.messages import (
    Advertise,
    FromNeighbour,
    LinkSample,
    LinkStats,
    Phase,
    Publish,
    Subscribe,
    Unadvertise,
    Unsubscribe,
)
from overlays.oracle import Oracle
from overlays.padres import PadresBroker, Tid, TidAdvertisement, TidPublication, TidSubscription
from overlays.scot import BrokerId as B
from overlays.scot import Scot
from overlays.workload import small_schema
from p2pubsub.model import parse_event, parse_filter

SCHEMA = small_schema()
SCHEMAS = {"T": SCHEMA}


def flt(body):
    return parse_filter(SCHEMA, body)


def setup(seed=0):
    scot = Scot.s_e()
    cores = make_cores("padres", scot, SCHEMAS)
    return scot, cores, RandomNetwork(cores, random.Random(seed)), Oracle(SCHEMAS)


def test_flooding_reaches_every_broker_once_and_discards_duplicates():
    scot, cores, net, _ = setup()
    net.command(B("A", 0), Advertise("P", "a", flt({"x": {"ge": 0}})))
    net.run()
    n = len(scot.brokers)
    edges = len(scot.alinks) + len(scot.ilinks)
    assert all(len(c.srt) == 1 for c in cores.values())
    # the host sends on every link, every other broker on all links but its parent: 2|E| - (n - 1) IMs
    assert net.messages[Phase.ADVERTISE] == 2 * edges - (n - 1) == 217
    assert sum(c.counters.duplicates_discarded for c in cores.values()) == 2 * edges - 2 * (n - 1)
    parents = [next(iter(c.srt)).lasthop for c in cores.values()]
    assert parents.count(None) == 1  # one root; the lasthops form a spanning tree


def test_subscription_follows_reverse_path_only():
    _scot, cores, net, oracle = setup(1)
    for cmd, b in [(Advertise("P", "a", flt({"x": {"ge": 0}})), B("A", 0)),
                   (Subscribe("S", "s", flt({"x": {"le": 3}})), B("N", 3))]:
        oracle.apply(cmd)
        net.command(b, cmd)
        net.run()
    holders = {b for b, c in cores.items() if "s" in c.prt}
    # exactly the tree path from the subscriber's broker to the root
    path, cur = [], B("N", 3)
    while cur is not None:
        path.append(cur)
        cur = next(iter(cores[cur].srt)).lasthop
    assert holders == set(path) and path[-1] == B("A", 0)
    assert check_padres_state(cores, oracle) == []


def test_subscription_before_advertisement_is_sent_back_along_the_new_tree():
    _scot, cores, net, oracle = setup(2)
    for cmd, b in [(Subscribe("S", "s", flt({"x": {"le": 3}})), B("N", 3)),
                   (Advertise("P", "a", flt({"x": {"ge": 0}})), B("A", 0))]:
        oracle.apply(cmd)
        net.command(b, cmd)
    net.run()
    assert "s" in cores[B("A", 0)].prt
    net.command(B("A", 0), Publish("P", "e", parse_event(SCHEMA, {"x": 2})))
    net.run()
    assert [d.sub_id for d in net.deliveries] == ["s"]
    assert check_padres_state(cores, oracle) == []


def test_unsubscribe_and_unadvertise_clean_every_table():
    _scot, cores, net, oracle = setup(3)
    cmds = [(Advertise("P", "a", flt({"x": {"ge": 0}})), B("A", 0)),
            (Advertise("Q", "b", flt({"x": {"ge": 2}})), B("K", 1)),
            (Subscribe("S", "s", flt({"x": {"le": 3}})), B("N", 3)),
            (Subscribe("T", "t", flt({"x": {"le": 9}})), B("C", 2))]
    for cmd, b in cmds:
        oracle.apply(cmd)
        net.command(b, cmd)
    net.run()
    assert check_padres_state(cores, oracle) == []
    for cmd, b in [(Unsubscribe("S", "s"), B("N", 3)), (Unadvertise("P", "a"), B("A", 0))]:
        oracle.apply(cmd)
        net.command(b, cmd)
    net.run()
    assert check_padres_state(cores, oracle) == []
    assert all("s" not in c.prt for c in cores.values())
    assert all(len(c.srt) == 1 and len(c.retired) == 1 for c in cores.values())
    assert sum(c.table_sizes().prt_entries for c in cores.values()) == sum(len(c.prt) for c in cores.values())


def test_tid_d_switches_tree_when_the_static_next_hop_is_overloaded():
    """At broker A: subscription s (from broker C) is bound to t1 via B and to t2 via D. A publication on t1 whose
    next hop B is overloaded switches to t2 toward D, naming C as its destination."""
    a = PadresBroker("A", ["B", "D", "X"], SCHEMAS, dynamic=True)
    a.handle(Advertise("P", "adv", flt({"x": {"ge": 0}})), 0.0)
    t1 = Tid("A", 0)
    t2 = Tid("Y", 0)
    a.handle(FromNeighbour("X", TidAdvertisement(t2, flt({"x": {"ge": 1}}))), 0.0)
    sub = flt({"x": {"ge": 2}})
    a.handle(FromNeighbour("B", TidSubscription("s", sub, "C", (t1,))), 0.0)
    out = a.handle(FromNeighbour("D", TidSubscription("s", sub, "C", (t2,))), 0.0)
    assert [(x.neighbour, x.message.tids) for x in out] == [("X", (t2,))]  # on toward t2's root
    event = parse_event(SCHEMA, {"x": 5})
    static = a.handle(Publish("P", "e1", event), 0.0)
    assert [(x.neighbour, x.message.tid, x.message.destinations) for x in static] == [("B", t1, None)]
    a.handle(LinkStats((LinkSample("B", 50, 10, 0),)), 0.0)
    dynamic = a.handle(Publish("P", "e2", event), 0.0)
    [send] = dynamic
    assert send.neighbour == "D" and isinstance(send.message, TidPublication)
    assert (send.message.tid, send.message.destinations, send.message.switches) == (t2, ("C",), 1)
    assert a.counters.dynamic_diversions == 1


def test_tid_d_keeps_static_path_without_alternative():
    a = PadresBroker("A", ["B", "D"], SCHEMAS, dynamic=True)
    a.handle(Advertise("P", "adv", flt({"x": {"ge": 0}})), 0.0)
    a.handle(FromNeighbour("B", TidSubscription("s", flt({"x": {"ge": 2}}), "C", (Tid("A", 0),))), 0.0)
    a.handle(LinkStats((LinkSample("B", 50, 10, 0),)), 0.0)
    [send] = a.handle(Publish("P", "e", parse_event(SCHEMA, {"x": 5})), 0.0)
    assert send.neighbour == "B" and send.message.destinations is None


def test_table_sizes_and_duplicate_unadvertisement():
    a = PadresBroker("A", ["B"], SCHEMAS)
    a.handle(Advertise("P", "adv", flt({"x": {"ge": 0}})), 0.0)
    a.handle(Subscribe("S", "s", flt({"x": {"ge": 0}})), 0.0)
    sizes = a.table_sizes()
    assert (sizes.advertisements, sizes.subscriptions, sizes.prt_entries) == (1, 1, 1)
    a.handle(FromNeighbour("B", TidAdvertisement(Tid("Z", 0), flt({"x": {"ge": 0}}))), 0.0)
    assert a.table_sizes().prt_entries == 2
