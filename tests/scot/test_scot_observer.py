"""A SCOT node tells an observer what the DHT node tells it (the simulator's trace writer): messages sent and
received with causal ids, and subscribe / installed / publish / deliver events, so a delivery can be traced back
hop by hop."""

from __future__ import annotations

from scothelpers import TREE4, ScotCluster

from p2pubsub.node.observer import Observer
from p2pubsub.scot.definition import OverlayDefinition


class Recorder(Observer):
    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.next = 0

    def _lid(self) -> int:
        self.next += 1
        return self.next

    def sent(self, node, dst, msg, nbytes, cause):
        lid = self._lid()
        self.rows.append(("s", lid, type(msg).__name__, (dst[1], dst[2]), nbytes, cause))
        return lid

    def received(self, node, src, msg):
        lid = self._lid()
        self.rows.append(("r", lid, type(msg).__name__, tuple(src)))
        return lid

    def subscribed(self, node, sub_id, at):
        self.rows.append(("sub", sub_id, at))

    def installed(self, node, sub_id, at, cause):
        self.rows.append(("ins", sub_id, at))

    def published(self, node, event_id, at):
        self.rows.append(("pub", event_id, at))

    def delivered(self, node, sub_id, event, at, cause):
        self.rows.append(("dlv", sub_id, event.event_id, event.publisher, event.published_at, cause))


async def test_deliveries_trace_back_to_the_publishing_node_hop_by_hop():
    c = ScotCluster(OverlayDefinition.build(TREE4, 2), seed=4, lease=2.0)
    try:
        await c.form()
        recorders = {}
        for n in c.nodes:
            recorders[n.host[2]] = n.observer = Recorder()
        pub_node = c.by_position()[("A", 0)]
        sub_node = c.by_position()[("C", 1)]  # A,0 -> A,1 (iLink) -> B,1 -> C,1 (aLinks): three hops
        await pub_node.put_schema("T", {"attributes": {"x": {"type": "int", "min": 0, "max": 9}}})
        sid = await sub_node.subscribe("T", {"x": {"ge": 1}})
        await pub_node.advertise("T", {"x": {"ge": 0}})
        eid = await pub_node.publish("T", {"x": 5})
        await c.settle()
        rec = recorders[sub_node.host[2]]
        assert ("sub", sid) == rec.rows[[r[0] for r in rec.rows].index("sub")][:2]
        assert any(r[:2] == ("ins", sid) for r in rec.rows)
        assert any(r[:2] == ("pub", eid) for r in recorders[pub_node.host[2]].rows)
        (dlv,) = [r for r in rec.rows if r[0] == "dlv"]
        assert dlv[1:3] == (sid, eid) and dlv[3][1:] == pub_node.host[1:] and dlv[4] > 0
        # walk back: delivery <- received publication <- sent by the previous hop <- ... <- the publisher
        node, cause, hops = sub_node, dlv[5], 0
        while cause is not None:
            rows = recorders[node.host[2]].rows
            received = next(r for r in rows if r[0] == "r" and r[1] == cause)
            assert received[2] == "PublicationRoute"
            src = received[3]
            prev = next(n for n in c.nodes if (n.host[1], n.host[2]) == src)
            sent = [r for r in recorders[prev.host[2]].rows if r[0] == "s" and r[2] == "PublicationRoute"
                    and r[3] == (node.host[1], node.host[2])]
            assert len(sent) == 1 and sent[0][4] > 0
            node, cause, hops = prev, sent[0][5], hops + 1
        assert node is pub_node and hops == 3
    finally:
        await c.close()
