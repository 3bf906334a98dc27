"""Client-facing notification delivery: a bounded buffer per subscription, read by cursor.

Every notification the node hands over (:meth:`SubscriptionRegistry.deliver`) is appended to its subscription's
buffer and numbered: the n-th notification of a subscription has sequence number n (1, 2, ...). Readers never
consume; they read *after* a cursor (the sequence number of the last notification they have seen, 0 for none),
so any number of long polls, SSE streams and one webhook read the same stream independently, and a client that
comes back with its cursor misses nothing still in the buffer.

Overflow policy: a buffer keeps the newest ``DeliveryPolicy.buffer_size`` notifications. When a new one arrives
at a full buffer the oldest is dropped; a reader whose cursor points before the oldest kept notification is told
how many it lost (``Page.dropped``) and continues with the oldest kept one. Nothing blocks the node: ``deliver``
is O(1) and never waits.

Webhooks (``deliver_to``): a worker per subscription POSTs batches read from the same buffer, in order, one batch
in flight at a time. A batch that fails (connection error, timeout, any non-2xx answer) is retried after
``backoff * 2**(failures-1)`` seconds (capped at ``backoff_max``, minus up to ``jitter`` of it at random). A
webhook that stays down is retried at the capped interval for as long as the subscription lives; meanwhile the
buffer is its bounded queue, so notifications beyond ``buffer_size`` are dropped oldest first and the next
successful POST reports them in ``"dropped"``. Delivery is at least once: a POST whose answer is lost is sent
again, so receivers dedupe by event id (or by the batch's ``cursor``). Unsubscribing stops the worker.

All timing uses the event loop's clock (``asyncio.timeout``/``sleep``), so this runs on virtual time too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any
from urllib.parse import urlsplit

from ..model import ValidationError

log = logging.getLogger(__name__)

MAX_URL = 2048


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    buffer_size: int = 1000  # notifications kept per subscription (the newest win)
    webhook_batch: int = 100  # notifications per webhook POST at most
    webhook_timeout: float = 10.0  # seconds for one POST, connect to last byte
    webhook_backoff: float = 0.5  # first retry delay, doubled per consecutive failure
    webhook_backoff_max: float = 60.0  # retry interval of a webhook that stays down
    webhook_jitter: float = 0.2  # each delay is shortened by up to this fraction, at random
    closed_memory: int = 10_000  # closed subscription ids remembered, so late deliveries do not reopen them

    def __post_init__(self) -> None:
        if self.buffer_size < 1 or self.webhook_batch < 1:
            raise ValueError("buffer_size and webhook_batch must be positive")
        if not 0 < self.webhook_backoff <= self.webhook_backoff_max:
            raise ValueError("need 0 < webhook_backoff <= webhook_backoff_max")
        if not 0 <= self.webhook_jitter < 1:
            raise ValueError("webhook_jitter must lie in [0, 1)")

    def backoff(self, failures: int, rng: random.Random) -> float:
        """Delay before the next attempt after ``failures`` consecutive failures (>= 1)."""
        delay = min(self.webhook_backoff_max, self.webhook_backoff * 2 ** min(failures - 1, 60))
        return delay * (1 - self.webhook_jitter * rng.random())


def check_webhook_url(url: Any, path: str = "deliver_to") -> str:
    """An absolute http(s) URL with a host, or ValidationError ``invalid_deliver_to``."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise ValidationError("invalid_deliver_to", f"deliver_to must be an http(s) URL of at most {MAX_URL} chars",
                              path)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValidationError("invalid_deliver_to", f"deliver_to is not a valid URL: {exc}", path) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("invalid_deliver_to", "deliver_to must be an absolute http:// or https:// URL", path)
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValidationError("invalid_deliver_to", "deliver_to must not contain spaces or control characters", path)
    return url


class CursorAhead(ValueError):
    """A cursor beyond the newest notification: it did not come from this subscription's stream."""


@dataclass(slots=True)
class Page:
    """Notifications after a cursor: ``events`` carry sequence numbers ``first .. cursor``; ``dropped`` were lost to
    overflow between the reader's cursor and ``first``."""

    events: list[dict]
    first: int
    cursor: int
    dropped: int


class SubscriptionBuffer:
    """The bounded, numbered notification stream of one subscription."""

    __slots__ = ("_events", "_waiting", "_wake", "closed", "dropped", "last_seq", "stopping", "sub_id", "webhook")

    def __init__(self, sub_id: str, capacity: int) -> None:
        self.sub_id = sub_id
        self._events: deque[dict] = deque(maxlen=capacity)
        self.last_seq = 0
        self.dropped = 0  # notifications evicted by overflow, in all
        self.closed = False
        self.stopping = False  # the server is shutting down: waiters return at once
        self.webhook: WebhookWorker | None = None
        self._wake = asyncio.Event()
        self._waiting = False

    @property
    def first_seq(self) -> int:
        """Sequence number of the oldest notification kept (last_seq + 1 when empty)."""
        return self.last_seq - len(self._events) + 1

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: dict) -> int:
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append(event)
        self.last_seq += 1
        self._notify()
        return self.last_seq

    def read(self, after: int, limit: int) -> Page:
        """Up to ``limit`` notifications with sequence numbers above ``after``."""
        if after > self.last_seq:
            raise CursorAhead(f"cursor {after} is ahead of this subscription's stream (newest is {self.last_seq})")
        first_kept = self.first_seq
        start = max(after + 1, first_kept)
        index = start - first_kept
        events = list(islice(self._events, index, index + limit))
        return Page(events, start, start - 1 + len(events), start - after - 1)

    async def wait(self, after: int, timeout: float | None) -> bool:
        """Wait until a notification after ``after`` exists (True), or the buffer closes, the server stops or
        ``timeout`` seconds pass on the loop's clock (False)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.last_seq <= after:
            if self.closed or self.stopping:
                return False
            wake = self._wake
            self._waiting = True
            try:
                async with asyncio.timeout_at(deadline):
                    await wake.wait()
            except TimeoutError:
                return self.last_seq > after
        return True

    def _notify(self) -> None:
        if self._waiting:
            self._waiting = False
            self._wake.set()
            self._wake = asyncio.Event()

    def close(self) -> None:
        self.closed = True
        self._waiting = True
        self._notify()

    def stop(self) -> None:
        self.stopping = True
        self._waiting = True
        self._notify()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cursor": str(self.last_seq),
            "oldest": str(self.first_seq),
            "buffered": len(self._events),
            "capacity": self._events.maxlen,
            "dropped": self.dropped,
        }
        if self.webhook is not None:
            out["webhook"] = self.webhook.stats()
        return out


Poster = Callable[[str, bytes, dict[str, str], float], Awaitable[int]]
"""``poster(url, body, headers, timeout) -> HTTP status``; raises on a transport failure."""


class WebhookWorker:
    """Posts one subscription's notifications to ``url`` in order, retrying each batch with backoff."""

    def __init__(self, registry: SubscriptionRegistry, buffer: SubscriptionBuffer, url: str) -> None:
        self.registry = registry
        self.buffer = buffer
        self.url = url
        self.cursor = 0  # the last sequence number the target has acknowledged
        self.delivered = 0
        self.failures = 0  # failed attempts, in all
        self.consecutive = 0  # failed attempts since the last success
        self.dropped = 0  # notifications lost to overflow before they could be posted
        self.last_error: str | None = None
        self.retry_at: float | None = None  # loop time of the next attempt while backing off
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run(), name=f"webhook {self.buffer.sub_id}")
        self.registry._tasks.add(self.task)
        self.task.add_done_callback(self.registry._tasks.discard)

    async def run(self) -> None:
        policy = self.registry.policy
        buf = self.buffer
        loop = asyncio.get_running_loop()
        while not buf.closed:
            page = buf.read(self.cursor, policy.webhook_batch)
            if not page.events:
                await buf.wait(self.cursor, None)
                if buf.stopping:
                    return
                continue
            body = {
                "subscription": buf.sub_id,
                "events": page.events,
                "cursor": str(page.cursor),
                "dropped": page.dropped,
            }
            error = await self._post(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())
            if error is None:
                self.cursor = page.cursor
                self.delivered += len(page.events)
                self.dropped += page.dropped
                self.consecutive = 0
                self.retry_at = None
                self.registry.counters["webhook_posts_ok_total"] += 1
                continue
            self.failures += 1
            self.consecutive += 1
            self.last_error = error
            self.registry.counters["webhook_posts_failed_total"] += 1
            delay = policy.backoff(self.consecutive, self.registry.rng)
            self.retry_at = loop.time() + delay
            # back off; the batch is read anew afterwards, so overflow meanwhile is reported, not resent
            if await self._closed_within(delay):
                return

    async def _closed_within(self, delay: float) -> bool:
        buf = self.buffer
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while loop.time() < deadline:
            if buf.closed or buf.stopping:
                return True
            # new notifications wake the wait early; keep backing off until the deadline
            await buf.wait(buf.last_seq, deadline - loop.time())
        return buf.closed or buf.stopping

    async def _post(self, body: bytes) -> str | None:
        headers = {"Content-Type": "application/json", "X-P2pubsub-Subscription": self.buffer.sub_id}
        try:
            status = await self.registry.poster(self.url, body, headers, self.registry.policy.webhook_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # connection refused, timeout, DNS, invalid URL, ...: all mean "try again later"
            return f"{type(exc).__name__}: {exc}"[:200]
        return None if 200 <= status < 300 else f"HTTP {status}"

    def stats(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "cursor": str(self.cursor),
            "delivered": self.delivered,
            "pending": self.buffer.last_seq - self.cursor,
            "failures": self.failures,
            "consecutive_failures": self.consecutive,
            "dropped": self.dropped,
            "last_error": self.last_error,
            "retry_at": self.retry_at,
        }


class SubscriptionRegistry:
    """Per-subscription buffers, long-poll and SSE waiters, and webhook workers of one node.

    ``open``/``close`` are idempotent and may be called by the node and by the HTTP layer alike. A delivery for a
    subscription not yet opened opens its buffer (so a notification racing the subscribe answer is kept); one for
    a recently closed subscription is counted as late and dropped.
    """

    def __init__(
        self,
        policy: DeliveryPolicy | None = None,
        *,
        rng: random.Random | None = None,
        poster: Poster | None = None,
    ) -> None:
        self.policy = policy or DeliveryPolicy()
        self.rng = rng or random.Random()
        self.poster: Poster = poster or self._aiohttp_post
        self.buffers: dict[str, SubscriptionBuffer] = {}
        self._closed: OrderedDict[str, None] = OrderedDict()
        self.counters: Counter[str] = Counter()
        self.stopping = False
        self._session: Any = None
        self._tasks: set[asyncio.Task] = set()  # webhook workers, also those of closed subscriptions still posting

    def open(self, sub_id: str, deliver_to: str | None = None) -> SubscriptionBuffer:
        buf = self.buffers.get(sub_id)
        if buf is None:
            self._closed.pop(sub_id, None)
            buf = self.buffers[sub_id] = SubscriptionBuffer(sub_id, self.policy.buffer_size)
            buf.stopping = self.stopping
        if deliver_to is not None and buf.webhook is None:
            buf.webhook = WebhookWorker(self, buf, deliver_to)
            buf.webhook.start()
        return buf

    def get(self, sub_id: str) -> SubscriptionBuffer | None:
        return self.buffers.get(sub_id)

    def deliver(self, sub_id: str, event: dict) -> bool:
        """Buffer one notification; False (and counted as late) for a closed subscription. Never blocks."""
        buf = self.buffers.get(sub_id)
        if buf is None:
            if sub_id in self._closed:
                self.counters["late_total"] += 1
                return False
            buf = self.open(sub_id)
        if len(buf) == self.policy.buffer_size:
            self.counters["dropped_total"] += 1
        buf.append(event)
        self.counters["delivered_total"] += 1
        return True

    def deliver_many(self, sub_ids: tuple[str, ...] | list[str], event: dict) -> int:
        """`deliver` ``event`` to each of ``sub_ids``; the number buffered. One event often reaches many local
        subscriptions at once: this is `deliver`'s loop with its lookups hoisted (same effect, pair by pair)."""
        buffers, size = self.buffers, self.policy.buffer_size
        done = fast = 0
        for sub_id in sub_ids:
            buf = buffers.get(sub_id)
            if buf is None or len(buf) == size:  # unknown, closed or full: the general case
                done += self.deliver(sub_id, event)
                continue
            buf.append(event)
            fast += 1
        self.counters["delivered_total"] += fast
        return done + fast

    def close(self, sub_id: str) -> bool:
        """Forget a subscription: waiters return, its webhook stops. False when it was not open."""
        buf = self.buffers.pop(sub_id, None)
        self._closed[sub_id] = None
        self._closed.move_to_end(sub_id)
        while len(self._closed) > self.policy.closed_memory:
            self._closed.popitem(last=False)
        if buf is None:
            return False
        buf.close()
        return True

    def stop_streams(self) -> None:
        """The server is going down: wake every long poll and SSE stream so that they answer now."""
        self.stopping = True
        for buf in self.buffers.values():
            buf.stop()

    async def aclose(self) -> None:
        """Stop everything: streams, webhook workers, the HTTP session webhooks use."""
        self.stop_streams()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _aiohttp_post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession()
        async with self._session.post(
            url, data=body, headers=headers, allow_redirects=False, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as resp:
            await resp.read()
            return resp.status

    def stats(self) -> dict[str, Any]:
        hooks = [b.webhook for b in self.buffers.values() if b.webhook is not None]
        return {
            "subscriptions": len(self.buffers),
            "buffered": sum(len(b) for b in self.buffers.values()),
            "buffer_size": self.policy.buffer_size,
            "delivered_total": self.counters["delivered_total"],
            "dropped_total": self.counters["dropped_total"],
            "late_total": self.counters["late_total"],
            "webhooks": len(hooks),
            "webhooks_failing": sum(h.consecutive > 0 for h in hooks),
            "webhook_pending": sum(h.buffer.last_seq - h.cursor for h in hooks),
            "webhook_posts_ok_total": self.counters["webhook_posts_ok_total"],
            "webhook_posts_failed_total": self.counters["webhook_posts_failed_total"],
        }


__all__ = [
    "CursorAhead",
    "DeliveryPolicy",
    "Page",
    "Poster",
    "SubscriptionBuffer",
    "SubscriptionRegistry",
    "WebhookWorker",
    "check_webhook_url",
]
