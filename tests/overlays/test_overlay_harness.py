"""The harness itself: determinism under a seed, FIFO per link, round cap, invariants, timed queues and stats."""

import random
from dataclasses import dataclass
from typing import ClassVar

import pytest

from overlays.experiment import make_cores, run_random_workload
from overlays.harness import InvariantViolation, LinkModel, RandomNetwork, RoundCapExceeded, TimedNetwork
from overlays.messages import Deliver, FromNeighbour, LinkStats, Phase, Publication, Send, TableSizes
from overlays.scot import Scot
from overlays.workload import small_schema
from p2pubsub.model import Event


def test_same_seed_same_run():
    scot = Scot.random(random.Random(5), 5, 3)
    runs = [run_random_workload("octopia", scot, small_schema(), seed=11, dynamic=True, congestion=0.3)
            for _ in range(2)]
    assert runs[0].steps == runs[1].steps and runs[0].messages == runs[1].messages
    assert runs[0].problems == []


@dataclass(frozen=True)
class Ping:
    PHASE: ClassVar[Phase] = Phase.ADVERTISE
    n: int


class Echo:
    """A toy core: forwards every message to every neighbour (loops on any cycle), or misbehaves on request."""

    def __init__(self, label, neighbours, mode="flood"):
        self.label, self.neighbours, self.mode = label, tuple(neighbours), mode
        self.seen = []

    def handle(self, message, now):
        if isinstance(message, FromNeighbour):
            self.seen.append((message.sender, message.message))
            if self.mode == "flood":
                return [Send(n, message.message) for n in self.neighbours]
            if self.mode == "dup":
                pub = Publication("e", "p", Event("T", {}))
                return [Deliver("c", "s", pub, 1), Deliver("c", "s", pub, 1)]
            return []
        if self.mode == "stranger":
            return [Send("nobody", message)]
        return [Send(n, message) for n in self.neighbours]

    def table_sizes(self):
        return TableSizes(0, 0, 0)


def ring(mode, n=3):
    labels = [f"b{i}" for i in range(n)]
    return {b: Echo(b, [labels[(i - 1) % n], labels[(i + 1) % n]], mode) for i, b in enumerate(labels)}


def test_round_cap_catches_a_loop():
    net = RandomNetwork(ring("flood"), random.Random(0), max_steps=500)
    net.command("b0", Ping(0))
    with pytest.raises(RoundCapExceeded):
        net.run()


def test_invariants_catch_bad_sends_and_duplicates():
    net = RandomNetwork(ring("stranger"), random.Random(0))
    with pytest.raises(InvariantViolation, match="non-neighbour"):
        net.command("b0", Ping(0))
    net = RandomNetwork(ring("dup"), random.Random(0))
    net.command("b0", Ping(0))
    with pytest.raises(InvariantViolation, match="duplicate delivery"):
        net.run()


def test_fifo_per_link_under_random_interleaving():
    cores = ring("sink", n=4)
    net = RandomNetwork(cores, random.Random(1))
    for k in range(50):
        net.command("b0", Ping(k))
    net.run()
    for b in ("b1", "b3"):
        assert [m.n for s, m in cores[b].seen if s == "b0"] == list(range(50))


def test_asymmetric_links_rejected():
    with pytest.raises(ValueError, match="not symmetric"):
        RandomNetwork({"a": Echo("a", ["b"]), "b": Echo("b", [])}, random.Random(0))


def test_timed_network_queues_and_feeds_link_stats():
    scot = Scot.build([("a", "b")], 2)
    cores = make_cores("octopia", scot, None, dynamic=True)
    seen = []

    class Spy:
        def __init__(self, core):
            self.core, self.label, self.neighbours = core, core.label, core.neighbours

        def handle(self, message, now):
            if isinstance(message, LinkStats):
                seen.append((self.label, now, message))
            return self.core.handle(message, now)

        def table_sizes(self):
            return self.core.table_sizes()

    spied = {b: Spy(c) for b, c in cores.items()}
    a0, b0 = scot.cluster(0)
    net = TimedNetwork(spied, random.Random(0), t_w=0.01, default_link=LinkModel(0.002, 0.001))
    from overlays.messages import Advertise, Subscribe
    from p2pubsub.model import parse_filter

    sch = small_schema()
    net.command(a0, Advertise("p", "a", parse_filter(sch, {"x": {"ge": 0}})))
    for i in range(20):
        net.command(a0, Subscribe(f"c{i}", f"s{i}", parse_filter(sch, {"x": {"ge": i}})))
    assert net.queue_length(a0, b0) == 20  # the queue counts the message in transmission
    net.run()
    assert net.max_queue(a0, b0) == 20 and net.queue_length(a0, b0) == 0
    first = next(m for lbl, _, m in seen if lbl == a0)
    sample = {s.neighbour: s for s in first.samples}[b0]
    # window 1 ends at t = 0.01: four 2 ms transmissions done (the fifth completes at 0.01, after the report)
    assert (sample.q_in, sample.q_out, sample.queue_length) == (20, 4, 16)
