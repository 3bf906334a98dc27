"""What a tree host answers for (`Custody.held`): the nodes it holds, transfers half received, and nodes that
messages wait for: everything `release` would give up."""

from __future__ import annotations

from test_tree_network import SCHEMAS

from p2pubsub.tree import TreeConfig
from p2pubsub.tree.host import TreeHost
from p2pubsub.tree.messages import AdoptNode, LeafUpdate
from p2pubsub.tree.pieces import space_of
from p2pubsub.tree.treeid import TreeId


def test_held_is_every_tree_node_release_would_give_up():
    config = TreeConfig()
    schema = SCHEMAS[0]
    space = space_of(schema, schema.names[0], config)
    host = TreeHost("h", 10, config)
    root, half, waited = TreeId(space.root), TreeId(space.root, "0"), TreeId(space.root, "1")
    host.handle(AdoptNode(root, space, 0, 1, True), 0.0)  # arrives whole: held
    host.handle(AdoptNode(half, space, 0, 2, True), 0.0)  # one part of two: a transfer in progress
    host.handle(LeafUpdate(waited, "10"), 0.0)  # for a node not here yet: parked
    assert set(host.nodes) == {root}
    assert sorted(host.held(), key=str) == sorted([root, half, waited], key=str)

    picked: list[TreeId] = []
    host.release(lambda t: picked.append(t) or True, 1.0)
    assert sorted(picked, key=str) == sorted([root, half, waited], key=str)
    assert host.held() == []
