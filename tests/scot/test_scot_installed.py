"""What "installed" means: the moment ``subscribe`` (``advertise``) returns, a publication from any broker of the
overlay — handled right away, in the same loop turn, before any other message moves — reaches the subscription.
That holds only if every broker on the way (OctopiA: the subscriber's whole cluster, and the advertisement hosts'
CIV bits; the baseline: the reverse paths of the advertisement trees) already handled its part."""

from __future__ import annotations

import pytest
from scothelpers import TREE4, ScotCluster

from p2pubsub.scot.definition import OverlayDefinition


@pytest.mark.parametrize("routing", ["octopia", "padres"])
async def test_a_publication_right_after_subscribe_or_advertise_is_delivered(routing):
    c = ScotCluster(OverlayDefinition.build(TREE4, 2, routing=routing), seed=3, lease=2.0)
    try:
        await c.form()
        nodes = list(c.nodes)
        await nodes[0].put_schema("T", {"attributes": {"x": {"type": "int", "min": 0, "max": 100}}})
        for n in nodes:  # every node can publish anything it will publish
            await n.advertise("T", {"x": {"ge": 0, "le": 100}})
        expected = {}
        x = 0
        for si, sub_node in enumerate(nodes):
            for pi, pub_node in enumerate(nodes):
                if pi == si:
                    continue
                x += 1
                sid = await sub_node.subscribe("T", {"x": {"eq": x}})
                eid = await pub_node.publish("T", {"x": x})  # no await in between lets messages move
                expected[(si, sid)] = [eid]
        # advertisements: a new publisher's first publication reaches the subscriptions installed before
        late = await c.add(0)  # a standby node: it holds no broker, so it cannot serve clients
        with pytest.raises(Exception) as e:
            await late.advertise("T", {"x": {"ge": 0}})
        assert "standby" in str(e.value)
        await nodes[0].put_schema("U", {"attributes": {"y": {"type": "int", "min": 0, "max": 100}}})
        for si in (1, 6):
            sid = await nodes[si].subscribe("U", {"y": {"ge": 90}})
            for pub_node in nodes:  # nobody advertised U before
                if pub_node is nodes[si]:
                    continue
                adv = await pub_node.advertise("U", {"y": {"ge": 95, "le": 95}})
                eid = await pub_node.publish("U", {"y": 95})
                assert await pub_node.unadvertise(adv)
                expected.setdefault((si, sid), []).append(eid)
            assert await nodes[si].unsubscribe(sid)
        await c.settle()
        got = {k: sorted(v) for k, v in c.got.items() if k in expected}  # no duplicates, in any order
        assert got == {k: sorted(v) for k, v in expected.items()}
    finally:
        await c.close()
