"""The neighbourhood's answers (closest, responsible, nearest) against brute force, while contacts are added in
batches (cached answers are brought up to date) and the table is replaced (they start over)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from p2pubsub.node.neighbourhood import Neighbourhood

ids = st.binary(min_size=20, max_size=20)


def host(node_id: bytes) -> tuple[bytes, str, int]:
    return (node_id, "10.0.0.1", 8468)


def pairs(hosts: list[tuple]) -> list[tuple[int, tuple]]:
    return [(int.from_bytes(h[0], "big"), h) for h in hosts]


def brute(me: tuple, contacts: list[tuple], key: bytes, n: int, with_me: bool) -> list[tuple]:
    k = int.from_bytes(key, "big")
    everyone = {h[0]: h for h in contacts if h[0] != me[0]}
    if with_me:
        everyone[me[0]] = me
    return sorted(everyone.values(), key=lambda h: int.from_bytes(h[0], "big") ^ k)[:n]


@given(me=ids, batches=st.lists(st.lists(ids, max_size=12), min_size=1, max_size=6),
       keys=st.lists(ids, min_size=1, max_size=8), n=st.integers(1, 5), leaving=st.booleans(),
       small=st.booleans())
def test_answers_stay_exact_while_contacts_are_added(me, batches, keys, n, leaving, small):
    hood = Neighbourhood(host(me))
    if small:
        hood.INCREMENTAL = 2  # caches beyond this start over instead of being updated: both paths
    hood.leaving = leaving
    known: list[tuple] = []
    version = 0
    for batch in batches:
        for key in keys:  # ask first, so that the answers are cached when the contacts arrive
            hood.closest(key)
            hood.closest(key, exclude_me=True)
            hood.nearest(key, n)
        added = [host(i) for i in batch]
        known += added
        version += 1
        hood.add_pairs(pairs(added), version)
        for key in keys:
            assert hood.nearest(key, n) == brute(hood.me, known, key, n, not leaving)
            closest = brute(hood.me, known, key, 1, not leaving)
            assert hood.closest(key) == (closest[0] if closest else None)
            other = brute(hood.me, known, key, 1, False)
            assert hood.closest(key, exclude_me=True) == (other[0] if other else None)
            assert hood.responsible(key) == (not leaving and closest == [hood.me])
    kept = list(dict.fromkeys(known))[::2]  # a removal: the table (each contact once) is copied anew
    hood.update_pairs(pairs(kept), version + 1)
    for key in keys:
        assert hood.nearest(key, n) == brute(hood.me, kept, key, n, not leaving)
