"""Random probing (thesis §3.3 Program 3.2, §3.4.1 Program 3.3): where a subscriber or publisher sends first.

Neither asks the root: the subscriber guesses a random level on the path to its point; the publisher expands
the tree breadth-first from the root and stops at each overlapping node with probability ``p`` past
``min_probe_level`` (always at ``max_probe_level``). The guesses are made locally, with no knowledge of the
tree; tree hosts correct them (binary search upward, routing tables downward).
"""

from __future__ import annotations

import random
from collections import deque

from .config import TreeConfig
from .space import Space, Target
from .treeid import TreeId


def probe_leaf(space: Space, point: tuple[float, float], config: TreeConfig, rng: random.Random) -> TreeId:
    """RndLeafProbe: the node at a random level whose area holds ``point``."""
    level = rng.randint(config.min_probe_level, config.max_probe_level)
    return TreeId(space.root, space.path_of(point, level))


def probe_region(space: Space, target: Target, config: TreeConfig, rng: random.Random) -> list[str]:
    """RndRegionProbe: disjoint tree nodes (identifier suffixes) that together cover ``target``."""
    chosen = []
    queue = deque([""])
    while queue:
        path = queue.popleft()
        if not target.hits(space.area(path)):
            continue
        level = len(path)
        if level >= config.max_probe_level or (level >= config.min_probe_level and rng.random() < config.probe_p):
            chosen.append(path)
        else:
            queue.append(path + "0")
            queue.append(path + "1")
    return chosen
