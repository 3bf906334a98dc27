"""A node whose Kademlia table misses a level of the id space must not answer for the keys of that level.

Kademlia does not guarantee complete routing tables: at 1000 simulated nodes two nodes stayed blind to a level
after every refresh (thesis-1000: 3 of 10,276 levels), took that level's keys for their own, and a few tree
nodes ended up on two hosts (a child created by a split, a node "lost" and brought back after messages waited for
it), each with part of the subscriptions: 0.15% of the deliveries were missed. Here six nodes of 30 are made blind
to half the id space after stabilisation, so that each believes itself responsible for every key of that half
(before the fix: 97 of 1,718 deliveries missed, 35 subscriptions and 37 events refused for a schema "missing" on
a blind node, tree nodes brought back as empty copies); the run must be exact, and no tree node may live anywhere
but on the node closest to its key.
"""

from __future__ import annotations

from p2pubsub.node.dht import Contact
from p2pubsub.scenario import parse_scenario
from p2pubsub.sim.runner import Simulation

SCENARIO = """
name = "blind-level"
seed = 5
drain_s = 10
[network]
nodes = 30
latency = "synthetic"
join_interval_ms = 10
stabilize_s = 2
[protocol]
leaf_capacity = [3, 6]
replicas = 3
[workload]
kind = "thesis"
subscriptions_per_node = 6
subscribe_interval_ms = 20
events = 250
publish_interval_ms = 10
settle_s = 2
"""

BLIND = (3, 7, 11, 15, 19, 23)  # nodes that forget every contact of level 0 (ids differing in the first bit)


def level(a: int, b: int) -> int:
    return 160 - (a ^ b).bit_length()


def stay_blind(protocol, me: int) -> None:
    """Requests from level-0 nodes no longer put them in ``protocol``'s table (as if none of them ever contacted
    this node, which is how thesis-1000's gaps lasted the whole run); the node's own lookups still do."""
    def rpc_ping(sender, nodeid):
        source = Contact(nodeid, sender[0], sender[1])
        if level(me, source.long_id) != 0:
            protocol.welcome_if_new(source)
        return protocol.source_node.id

    def rpc_find_node(sender, nodeid, key):
        source = Contact(nodeid, sender[0], sender[1])
        if level(me, source.long_id) != 0:
            protocol.welcome_if_new(source)
        return [tuple(c) for c in protocol.router.find_neighbors(Contact(key), exclude=source)]

    protocol.rpc_ping, protocol.rpc_find_node = rpc_ping, rpc_find_node


class BlindSimulation(Simulation):
    """After stabilisation, the ``BLIND`` nodes drop every contact of level 0 from their Kademlia tables and
    hear of none again but through lookups of their own."""

    async def _prepare(self) -> None:
        self.forgotten = {}
        for i in BLIND:
            node = self.nodes[i].node
            router = node.dht.protocol.router
            me = int.from_bytes(node.id, "big")
            self.forgotten[i] = [c for c in router.contacts() if level(me, c.long_id) == 0]
            for c in self.forgotten[i]:
                router.remove_contact(c)
            stay_blind(node.dht.protocol, me)
            node._sync()
        await super()._prepare()


def test_a_node_blind_to_a_level_answers_for_none_of_its_keys(tmp_path):
    sim = BlindSimulation(parse_scenario(SCENARIO), tmp_path)
    summary = sim.run()
    assert all(len(f) >= 5 for f in sim.forgotten.values()), "each blind node knew a good share of level 0"
    d = summary["deliveries"]
    failures = summary["failures"]
    assert d["expected"] > 1000
    assert (d["missing"], d["false_positive"], d["duplicate"]) == (0, 0, 0), d
    assert (failures["subscribe"], failures["publish"]) == (0, 0), failures

    check = summary["tree_check"]  # no tree node may live anywhere but on the node closest to its key
    assert check["tree_nodes"] > 50 and check["host_stats"]["splits"] > 20
    assert (check["misplaced"], check["duplicated"], check["host_stats"]["revived"]) == (0, 0, 0), check
    # a blind node found out by a lookup that a key was not its own, and passed its messages on
    assert sum(sim.nodes[i].node.counters["keys_declined"] for i in BLIND) > 0
