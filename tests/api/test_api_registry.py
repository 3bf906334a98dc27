"""The delivery registry on its own: cursors, overflow, waits and webhook backoff, on virtual time (no sockets)."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from p2pubsub.api.delivery import CursorAhead, DeliveryPolicy, SubscriptionRegistry, check_webhook_url
from p2pubsub.model import ValidationError
from p2pubsub.sim import run


def ev(n: int) -> dict:
    return {"id": f"e{n}", "schema": "s", "attributes": {"x": n}, "published_at": float(n)}


def test_cursor_reads_do_not_consume_and_overflow_keeps_the_newest():
    reg = SubscriptionRegistry(DeliveryPolicy(buffer_size=4))
    buf = reg.open("a")
    for n in range(1, 4):
        reg.deliver("a", ev(n))
    page = buf.read(0, 10)
    assert [e["id"] for e in page.events] == ["e1", "e2", "e3"] and (page.first, page.cursor, page.dropped) == (1, 3, 0)
    assert buf.read(0, 10).events == page.events  # a second reader sees the same
    assert buf.read(1, 1).events == [ev(2)] and buf.read(1, 1).cursor == 2
    assert buf.read(3, 10).events == [] and buf.read(3, 10).cursor == 3
    for n in range(4, 11):
        reg.deliver("a", ev(n))
    page = buf.read(3, 10)  # 4..6 were dropped: 7..10 kept
    assert (page.first, page.cursor, page.dropped) == (7, 10, 3)
    assert [e["id"] for e in page.events] == ["e7", "e8", "e9", "e10"]
    assert buf.read(0, 2).dropped == 6 and buf.read(8, 10).dropped == 0
    with pytest.raises(CursorAhead):
        buf.read(11, 1)
    assert reg.stats()["dropped_total"] == 6 and reg.stats()["delivered_total"] == 10
    assert buf.stats() == {"cursor": "10", "oldest": "7", "buffered": 4, "capacity": 4, "dropped": 6}


def test_deliveries_open_lazily_but_not_after_close():
    reg = SubscriptionRegistry()
    assert reg.deliver("early", ev(1))  # a notification that raced the subscribe answer is kept
    assert reg.open("early").read(0, 5).events == [ev(1)]
    assert reg.close("early") and not reg.close("early")
    assert not reg.deliver("early", ev(2))
    assert reg.stats()["late_total"] == 1 and reg.get("early") is None
    reg.open("early")  # reopened explicitly (e.g. a node that reuses ids): a fresh stream
    assert reg.get("early").last_seq == 0


def test_deliver_many_is_deliver_pair_by_pair():
    """Open, unknown (opened lazily), closed (late) and full (oldest dropped) subscriptions alike."""

    def registry() -> SubscriptionRegistry:
        reg = SubscriptionRegistry(DeliveryPolicy(buffer_size=3))
        for sub in ("open", "full", "closed"):
            reg.open(sub)
        for n in range(3):
            reg.deliver("full", ev(n))
        reg.close("closed")
        return reg

    one, many = registry(), registry()
    subs = ("open", "unknown", "closed", "full", "open")
    for n in range(10, 14):
        expected = sum(one.deliver(s, ev(n)) for s in subs)
        assert many.deliver_many(subs, ev(n)) == expected == 4
    assert many.stats() == one.stats()
    for sub in ("open", "unknown", "full"):
        a, b = one.get(sub), many.get(sub)
        assert b.read(0, 100) == a.read(0, 100) and b.stats() == a.stats()


def test_waits_run_on_the_loop_clock():
    async def main():
        loop = asyncio.get_running_loop()
        reg = SubscriptionRegistry()
        buf = reg.open("a")
        assert not await buf.wait(0, 30.0)
        assert loop.time() == 30.0  # virtual seconds, no wall time
        loop.call_later(5.0, reg.deliver, "a", ev(1))
        assert await buf.wait(0, 60.0)
        assert loop.time() == 35.0
        assert await buf.wait(0, 60.0) and loop.time() == 35.0  # already there: no wait
        waiter = asyncio.ensure_future(buf.wait(1, None))
        loop.call_later(1.0, reg.close, "a")
        assert not await waiter and loop.time() == 36.0
        other = reg.open("b")
        waiter = asyncio.ensure_future(other.wait(0, None))
        loop.call_later(2.0, reg.stop_streams)
        assert not await waiter and loop.time() == 38.0
        await reg.aclose()

    run(main(), timeout=1000)


class FakeTarget:
    """A webhook target on virtual time: fails while ``down``; records (time, body) of every attempt."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.attempts: list[tuple[float, dict]] = []
        self.received: list[str] = []
        self.changed = asyncio.Event()

    async def post(self, url: str, body: bytes, headers: dict, timeout: float) -> int:
        import json

        assert headers["Content-Type"] == "application/json"
        data = json.loads(body)
        self.attempts.append((asyncio.get_running_loop().time(), data))
        await asyncio.sleep(0.001)  # the round trip, in virtual time
        self.changed.set()
        if self.fail > 0:
            self.fail -= 1
            if self.fail % 2:
                raise ConnectionRefusedError("down")
            return 503
        self.received += [e["id"] for e in data["events"]]
        return 200


async def _until(target: FakeTarget, predicate) -> None:
    while not predicate():
        target.changed.clear()
        await target.changed.wait()


def test_webhook_retries_with_exponential_backoff():
    async def main():
        loop = asyncio.get_running_loop()
        target = FakeTarget(fail=5)
        policy = DeliveryPolicy(webhook_backoff=0.5, webhook_backoff_max=4.0, webhook_jitter=0.0, webhook_batch=2)
        reg = SubscriptionRegistry(policy, poster=target.post)
        reg.open("a", "http://hook.test/x")
        for n in range(1, 6):
            reg.deliver("a", ev(n))
        await _until(target, lambda: len(target.received) == 5)
        times = [round(t, 3) for t, _ in target.attempts]
        # attempts at 0, then after 0.5, 1, 2, 4 (capped), 4 s of backoff (+1 ms round trips): in order, batches of 2
        gaps = [round(b - a - 0.001, 3) for a, b in itertools.pairwise(times)]
        assert gaps[:5] == [0.5, 1.0, 2.0, 4.0, 4.0]
        assert target.received == ["e1", "e2", "e3", "e4", "e5"]
        assert [b["cursor"] for _, b in target.attempts[-3:]] == ["2", "4", "5"]
        hook = reg.get("a").webhook.stats()
        assert hook["failures"] == 5 and hook["consecutive_failures"] == 0 and hook["pending"] == 0
        assert hook["last_error"] in ("HTTP 503", "ConnectionRefusedError: down")
        assert reg.stats()["webhook_posts_failed_total"] == 5 and reg.stats()["webhook_posts_ok_total"] == 3
        assert loop.time() < 20
        await reg.aclose()

    run(main(), timeout=1000)


def test_a_webhook_that_stays_down_keeps_the_newest_and_reports_drops():
    async def main():
        loop = asyncio.get_running_loop()
        target = FakeTarget(fail=10**9)
        policy = DeliveryPolicy(buffer_size=3, webhook_backoff=1.0, webhook_backoff_max=30.0, webhook_jitter=0.5)
        reg = SubscriptionRegistry(policy, poster=target.post, rng=random.Random(1))
        reg.open("a", "http://hook.test/x")
        for n in range(1, 11):
            reg.deliver("a", ev(n))
        await asyncio.sleep(3600)  # an hour down: retried at the capped interval, never given up
        gaps = [b - a for (a, _), (b, _) in zip(target.attempts, target.attempts[1:], strict=False)]
        assert all(g <= 30.0 + 0.01 for g in gaps) and max(gaps) > 15.0
        assert 3600 / 30 <= len(target.attempts) < 3600 / 15 + 10
        hook = reg.get("a").webhook.stats()
        assert hook["pending"] == 10 and hook["consecutive_failures"] == len(target.attempts)
        target.fail = 0  # back up: the next attempt delivers the newest 3 and reports the 7 dropped
        await _until(target, lambda: len(target.received) == 3)
        last = target.attempts[-1][1]
        assert last["dropped"] == 7 and [e["id"] for e in last["events"]] == ["e8", "e9", "e10"]
        assert reg.get("a").webhook.stats()["dropped"] == 7
        # new notifications flow at once again
        reg.deliver("a", ev(11))
        await _until(target, lambda: len(target.received) == 4)
        assert target.attempts[-1][0] == pytest.approx(loop.time() - 0.001)
        await reg.aclose()

    run(main(), timeout=10_000)


def test_unsubscribing_stops_a_retrying_webhook():
    async def main():
        target = FakeTarget(fail=10**9)
        reg = SubscriptionRegistry(DeliveryPolicy(webhook_backoff=1.0), poster=target.post, rng=random.Random(3))
        buf = reg.open("a", "http://hook.test/x")
        reg.deliver("a", ev(1))
        await asyncio.sleep(10)
        reg.close("a")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert buf.webhook.task.done()
        tried = len(target.attempts)
        await asyncio.sleep(1000)
        assert len(target.attempts) == tried
        await reg.aclose()

    run(main(), timeout=10_000)


@pytest.mark.parametrize("url", ["http://example.org/hook", "https://h:8443/a?b=c", "http://[::1]:9/x"])
def test_webhook_urls_accepted(url):
    assert check_webhook_url(url) == url


@pytest.mark.parametrize("url", ["ftp://h/", "http://", "/relative", "h:80", 5, None, "http://h:99999/",
                                 "http://h/\n", "http://h/ x", "http://" + "h" * 2050])
def test_webhook_urls_refused(url):
    with pytest.raises(ValidationError) as err:
        check_webhook_url(url)
    assert err.value.code == "invalid_deliver_to"


def test_policy_checks_its_numbers():
    for bad in ({"buffer_size": 0}, {"webhook_batch": 0}, {"webhook_backoff": 0}, {"webhook_backoff_max": 0.1},
                {"webhook_jitter": 1.0}):
        with pytest.raises(ValueError):
            DeliveryPolicy(**bad)
    policy = DeliveryPolicy(webhook_backoff=0.5, webhook_backoff_max=60, webhook_jitter=0)
    assert [policy.backoff(n, random.Random(0)) for n in (1, 2, 3, 8, 9, 500)] == [0.5, 1, 2, 60, 60, 60]
