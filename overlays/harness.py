"""In-memory multi-broker harness: every broker core of a topology in one process, no sockets, no sleeps.

Two schedulers over the same bookkeeping:

* :class:`RandomNetwork` — each step delivers the head of one non-empty directed link chosen at random (seeded):
  any interleaving across links, FIFO within a link (what a runtime with one ordered stream per neighbour gives).
  ``now`` advances by ``dt`` per step. For correctness runs against the oracle.
* :class:`TimedNetwork` — virtual time; each directed link is an output queue served one message per
  ``service_time`` and then ``latency`` in flight, so a fast publisher builds queues. Every ``t_w`` the harness
  feeds each broker :class:`~overlays.messages.LinkStats` measured on its own output queues, exactly what a
  node's peer transport will expose. For congestion and delay comparisons.

Both enforce a round cap and run invariant checks on every send and after every step: sends go to neighbours
only, no subscription receives a publication twice, a delivered publication matches its subscription.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .messages import (
    Deliver,
    FromNeighbour,
    LinkSample,
    LinkStats,
    Phase,
    Publish,
    Rejected,
    RoutingCore,
    Send,
    Subscribe,
    Unsubscribe,
    phase_of,
)


class InvariantViolation(AssertionError):
    pass


class RoundCapExceeded(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    broker: Hashable
    client: str
    sub_id: str
    publisher: str
    pub_id: str
    hops: int
    time: float


SendCheck = Callable[["NetworkBase", Hashable, Send], None]


class NetworkBase:
    """Shared bookkeeping: cores, counters, deliveries, invariants."""

    def __init__(
        self,
        cores: Mapping[Hashable, RoutingCore],
        *,
        max_steps: int = 2_000_000,
        send_checks: Sequence[SendCheck] = (),
        step_checks: Sequence[Callable[[NetworkBase], None]] = (),
    ) -> None:
        self.cores = dict(cores)
        self.adjacency: dict[Hashable, frozenset[Hashable]] = {
            b: frozenset(getattr(c, "neighbours", ())) for b, c in self.cores.items()
        }
        for b, ns in self.adjacency.items():
            for n in ns:
                if b not in self.adjacency.get(n, frozenset()):
                    raise ValueError(f"link {b}-{n} is not symmetric")
        self.max_steps = max_steps
        self.send_checks = list(send_checks)
        self.step_checks = list(step_checks)
        self.now = 0.0
        self.steps = 0
        self.deliveries: list[DeliveryRecord] = []
        self.rejections: list[Rejected] = []
        self.messages: Counter[Phase] = Counter()
        self.messages_by_type: Counter[str] = Counter()
        self.link_messages: Counter[tuple[Hashable, Hashable]] = Counter()
        self.publication_messages: Counter[tuple[str, str]] = Counter()  # (publisher, pub_id) -> IMs
        self.subscriptions: dict[str, Any] = {}  # live sub_id -> filter (for the match invariant)
        self._delivered: set[tuple[str, str, str]] = set()

    # -- feeding cores --------------------------------------------------------------------------------------

    def command(self, broker: Hashable, message: Any) -> list[Any]:
        """Hand a client command (or LinkStats) to ``broker`` now; returns its non-Send actions."""
        actions = self.cores[broker].handle(message, self.now)
        if not any(isinstance(a, Rejected) for a in actions):
            if isinstance(message, Subscribe):
                self.subscriptions[message.sub_id] = message.filter
            elif isinstance(message, Unsubscribe):
                self.subscriptions.pop(message.sub_id, None)
        return self._process(broker, actions)

    def _process(self, broker: Hashable, actions: Iterable[Any]) -> list[Any]:
        rest = []
        for a in actions:
            if isinstance(a, Send):
                if a.neighbour not in self.adjacency[broker]:
                    raise InvariantViolation(f"{broker} sent {type(a.message).__name__} to non-neighbour {a.neighbour}")
                for check in self.send_checks:
                    check(self, broker, a)
                phase = phase_of(a.message)
                self.messages[phase] += 1
                self.messages_by_type[type(a.message).__name__] += 1
                self.link_messages[(broker, a.neighbour)] += 1
                if phase is Phase.PUBLISH:
                    pub = a.message.publication
                    self.publication_messages[(pub.publisher, pub.pub_id)] += 1
                self._enqueue(broker, a.neighbour, a.message)
            elif isinstance(a, Deliver):
                self._record_delivery(broker, a)
                rest.append(a)
            else:
                if isinstance(a, Rejected):
                    self.rejections.append(a)
                rest.append(a)
        return rest

    def _record_delivery(self, broker: Hashable, d: Deliver) -> None:
        key = (d.subscription_id, d.publication.publisher, d.publication.pub_id)
        if key in self._delivered:
            raise InvariantViolation(f"duplicate delivery of {key[1:]} to subscription {key[0]} at {broker}")
        self._delivered.add(key)
        flt = self.subscriptions.get(d.subscription_id)
        if flt is not None:
            core = self.cores[broker]
            absent = core.absent(flt.schema) if hasattr(core, "absent") else None
            ok = flt.matches(d.publication.event.values, absent) if absent else flt.matches(d.publication.event.values)
            if not ok:
                raise InvariantViolation(f"{d.publication.pub_id} delivered to non-matching {d.subscription_id}")
        self.deliveries.append(
            DeliveryRecord(
                broker, d.client, d.subscription_id, d.publication.publisher, d.publication.pub_id, d.hops, self.now
            )
        )

    def _enqueue(self, src: Hashable, dst: Hashable, message: Any) -> None:
        raise NotImplementedError

    def _arrive(self, src: Hashable, dst: Hashable, message: Any) -> None:
        actions = self.cores[dst].handle(FromNeighbour(src, message), self.now)
        self._process(dst, actions)
        self.steps += 1
        if self.steps > self.max_steps:
            raise RoundCapExceeded(f"more than {self.max_steps} message deliveries: a routing loop?")
        for check in self.step_checks:
            check(self)

    # -- results --------------------------------------------------------------------------------------------

    def delivered(self) -> dict[tuple[str, str], set[str]]:
        """(publisher, pub_id) -> the subscriptions that received it."""
        out: dict[tuple[str, str], set[str]] = defaultdict(set)
        for d in self.deliveries:
            out[(d.publisher, d.pub_id)].add(d.sub_id)
        return out

    def table_sizes(self) -> dict[Hashable, Any]:
        return {b: c.table_sizes() for b, c in self.cores.items()}

    def reset_counters(self) -> None:
        self.messages.clear()
        self.messages_by_type.clear()
        self.link_messages.clear()
        self.publication_messages.clear()


class RandomNetwork(NetworkBase):
    """Random interleaving across links, FIFO per directed link, seeded."""

    def __init__(self, cores: Mapping[Hashable, RoutingCore], rng: random.Random, *, dt: float = 1e-3,
                 **kw: Any) -> None:
        super().__init__(cores, **kw)
        self.rng = rng
        self.dt = dt
        self._queues: dict[tuple[Hashable, Hashable], deque[Any]] = {}
        self._active: list[tuple[Hashable, Hashable]] = []
        self._pos: dict[tuple[Hashable, Hashable], int] = {}

    def _enqueue(self, src: Hashable, dst: Hashable, message: Any) -> None:
        key = (src, dst)
        q = self._queues.get(key)
        if q is None:
            q = self._queues[key] = deque()
        q.append(message)
        if key not in self._pos:
            self._pos[key] = len(self._active)
            self._active.append(key)

    def in_flight(self) -> int:
        return sum(len(self._queues[k]) for k in self._active)

    def queue_length(self, src: Hashable, dst: Hashable) -> int:
        q = self._queues.get((src, dst))
        return len(q) if q else 0

    def step(self) -> bool:
        if not self._active:
            return False
        i = self.rng.randrange(len(self._active))
        key = self._active[i]
        q = self._queues[key]
        message = q.popleft()
        if not q:  # swap-remove from the active list
            last = self._active.pop()
            if last != key:
                self._active[i] = last
                self._pos[last] = i
            del self._pos[key]
        self.now += self.dt
        self._arrive(key[0], key[1], message)
        return True

    def run(self, max_steps: int | None = None, between: Callable[[RandomNetwork], None] | None = None) -> int:
        """Deliver until no message is in flight; ``between`` runs before each step (e.g. to feed LinkStats)."""
        start = self.steps
        while self._active:
            if max_steps is not None and self.steps - start >= max_steps:
                raise RoundCapExceeded(f"not quiescent after {max_steps} steps")
            if between is not None:
                between(self)
            self.step()
        return self.steps - start


@dataclass(frozen=True, slots=True)
class LinkModel:
    """A directed link: one message leaves the output queue per ``service_time``, then flies ``latency``."""

    service_time: float = 1e-3
    latency: float = 5e-3


@dataclass
class _Link:
    model: LinkModel
    queue: deque[Any] = field(default_factory=deque)
    busy: bool = False
    q_in: int = 0
    q_out: int = 0
    max_queue: int = 0
    last_arrival: float = 0.0


class TimedNetwork(NetworkBase):
    """Discrete-event virtual time with per-link output queues; feeds LinkStats to every broker each ``t_w``."""

    def __init__(
        self,
        cores: Mapping[Hashable, RoutingCore],
        rng: random.Random,
        *,
        t_w: float = 0.05,
        default_link: LinkModel = LinkModel(),
        links: Mapping[tuple[Hashable, Hashable], LinkModel] | None = None,
        jitter: float = 0.0,
        **kw: Any,
    ) -> None:
        super().__init__(cores, **kw)
        self.rng = rng
        self.t_w = t_w
        self.jitter = jitter
        self._links: dict[tuple[Hashable, Hashable], _Link] = {}
        for b, ns in self.adjacency.items():
            for n in ns:
                model = (links or {}).get((b, n), default_link)
                self._links[(b, n)] = _Link(model)
        self._events: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self._next_window = t_w
        self.publish_times: dict[tuple[str, str], float] = {}
        self.queue_samples: list[tuple[float, dict[tuple[Hashable, Hashable], int]]] = []

    def _push(self, at: float, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at, self._seq, kind, payload))

    def schedule(self, at: float, broker: Hashable, command: Any) -> None:
        """A client command (e.g. one publication of a burst) at virtual time ``at``."""
        if isinstance(command, Publish):
            self.publish_times[(command.client, command.pub_id)] = at
        self._push(at, "command", (broker, command))

    def _enqueue(self, src: Hashable, dst: Hashable, message: Any) -> None:
        link = self._links[(src, dst)]
        link.queue.append(message)
        link.q_in += 1
        link.max_queue = max(link.max_queue, len(link.queue))
        if not link.busy:
            link.busy = True
            self._push(self.now + link.model.service_time, "tx", (src, dst))

    def _transmitted(self, src: Hashable, dst: Hashable) -> None:
        link = self._links[(src, dst)]
        message = link.queue.popleft()
        link.q_out += 1
        at = self.now + link.model.latency
        if self.jitter:
            at += self.rng.random() * self.jitter
        at = max(at, link.last_arrival)  # FIFO on the link even with jitter
        link.last_arrival = at
        self._push(at, "arrive", (src, dst, message))
        if link.queue:
            self._push(self.now + link.model.service_time, "tx", (src, dst))
        else:
            link.busy = False

    def _window(self) -> None:
        """End of a window t_w: report each broker's output queues, reset the window counters."""
        snapshot = {}
        per_broker: dict[Hashable, list[LinkSample]] = defaultdict(list)
        for (src, dst), link in self._links.items():
            per_broker[src].append(LinkSample(dst, len(link.queue), link.q_in, link.q_out))
            snapshot[(src, dst)] = len(link.queue)
            link.q_in = link.q_out = 0
        self.queue_samples.append((self.now, snapshot))
        for b, samples in per_broker.items():
            self._process(b, self.cores[b].handle(LinkStats(tuple(samples)), self.now))

    def queue_length(self, src: Hashable, dst: Hashable) -> int:
        return len(self._links[(src, dst)].queue)

    def set_link(self, src: Hashable, dst: Hashable, model: LinkModel) -> None:
        """Change a directed link's service time / latency from now on (e.g. a link degrades)."""
        self._links[(src, dst)].model = model

    def links(self) -> list[tuple[Hashable, Hashable]]:
        return list(self._links)

    def max_queue(self, src: Hashable, dst: Hashable) -> int:
        return self._links[(src, dst)].max_queue

    def run(self, until: float | None = None) -> int:
        """Process events (windows included) until none is left, or virtual time ``until``."""
        start = self.steps
        while self._events:
            at = self._events[0][0]
            if until is not None and at > until:
                break
            if self._next_window <= at:
                self.now = self._next_window
                self._next_window += self.t_w
                self._window()
                continue
            at, _, kind, payload = heapq.heappop(self._events)
            self.now = at
            if kind == "command":
                self.command(*payload)
            elif kind == "tx":
                self._transmitted(*payload)
            else:
                self._arrive(*payload)
        return self.steps - start

    def delays(self) -> list[float]:
        """End-to-end delay of every delivery (delivery time - publish time)."""
        return [
            d.time - self.publish_times[(d.publisher, d.pub_id)]
            for d in self.deliveries
            if (d.publisher, d.pub_id) in self.publish_times
        ]


__all__ = [
    "DeliveryRecord",
    "InvariantViolation",
    "LinkModel",
    "NetworkBase",
    "RandomNetwork",
    "RoundCapExceeded",
    "TimedNetwork",
]
