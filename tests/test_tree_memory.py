"""Expiry of time-limited memories: forgets exactly what has expired, oldest first, never a live entry."""

from hypothesis import given
from hypothesis import strategies as st

from p2pubsub.tree.memory import expire_oldest, expire_oldest_pairs


@given(st.lists(st.floats(0, 100), max_size=50), st.floats(0, 200), st.floats(0, 200))
def test_expire_in_insertion_order_forgets_exactly_the_expired(starts, ttl, now):
    memory = {i: t + ttl for i, t in enumerate(sorted(starts))}  # written with now + ttl on a monotonic clock
    pairs = {i: ("v", until) for i, until in memory.items()}
    expire_oldest(memory, now)
    expire_oldest_pairs(pairs, now)
    live = {i for i, t in enumerate(sorted(starts)) if t + ttl > now}
    assert set(memory) == live
    assert set(pairs) == live


def test_merged_entries_out_of_order_are_kept_until_the_older_ones_expire():
    memory = {"young": 10.0, "merged-old": 5.0}
    expire_oldest(memory, 6.0)
    assert memory == {"young": 10.0, "merged-old": 5.0}  # late, never early
    expire_oldest(memory, 10.0)
    assert memory == {}
