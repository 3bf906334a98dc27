"""The paper's comparisons (§10) in the in-memory harness, OctopiA on clustered S_e vs the PADRES-style baseline on
the same graph unclustered. ``bench/overlays_compare.py`` prints them side by side; tests assert directions.

* :func:`control_and_static` — stock workload: advertisements, then subscriptions, then publications, each phase
  run to quiescence: routing-table sizes (CLT vs SRT, PRT), inter-broker messages (IMs) per phase, IMs and hops
  per publication.
* :func:`burst` — a high-rate publisher (HRP) whose host broker has slow iLinks, in virtual time with per-link
  output queues and Eq. 3 fed every t_w: static (SPR / TID-S) vs dynamic (IDR / TID-D) routing; how long queues
  stay long, delivery delays, IMs.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from dataclasses import dataclass, field

from .experiment import make_cores
from .harness import LinkModel, RandomNetwork, TimedNetwork
from .lst import CongestionConfig
from .messages import Advertise, Phase, Publish, Subscribe
from .scot import BrokerId, Scot
from .workload import STOCK, load_quotes, quote_event, stock_advertisement, stock_subscription


@dataclass
class ControlReport:
    kind: str
    brokers: int
    adverts_per_broker: float  # mean CLT (OctopiA) or SRT (PADRES) entries
    subs_per_broker: float  # mean distinct PRT subscriptions
    prt_entries_per_broker: float  # mean PRT (subscription, tree) bindings
    ims: Counter[Phase] = field(default_factory=Counter)
    duplicates_discarded: int = 0
    publications: int = 0
    deliveries: int = 0
    mean_hops: float = 0.0
    max_hops: int = 0
    ims_per_publication: float = 0.0
    match_tests_per_publication: float = 0.0  # subscription-vs-publication evaluations, all brokers


def control_and_static(
    kind: str,
    scot: Scot | None = None,
    *,
    publishers: int = 100,
    subscribers: int = 1000,
    publications: int = 500,
    seed: int = 1,
) -> ControlReport:
    """Stock workload on S_e: one advertisement per publisher (one symbol each), subscriptions on a symbol and a
    close-price window, publications of real quotes; phases run one after the other to quiescence."""
    scot = scot or Scot.s_e()
    rng = random.Random(seed)
    quotes = load_quotes(publishers, 200, random.Random(seed))
    symbols = sorted(quotes)
    cores = make_cores(kind, scot, {STOCK.name: STOCK})
    net = RandomNetwork(cores, random.Random(seed + 1))
    brokers = scot.brokers
    placed = {}
    for i, sym in enumerate(symbols):
        b = rng.choice(brokers)
        placed[sym] = (b, f"pub{i}")
        net.command(b, Advertise(f"pub{i}", "a", stock_advertisement(quotes[sym])))
    net.run()
    for i in range(subscribers):
        sym = rng.choice(symbols)
        net.command(rng.choice(brokers), Subscribe(f"sub{i}", f"s{i}", stock_subscription(rng, quotes[sym])))
    net.run()
    sizes = list(net.table_sizes().values())
    report = ControlReport(
        kind,
        len(brokers),
        statistics.fmean(s.advertisements for s in sizes),
        statistics.fmean(s.subscriptions for s in sizes),
        statistics.fmean(s.prt_entries for s in sizes),
    )
    before = sum(c.counters.match_tests for c in cores.values())  # type: ignore[attr-defined]
    for j in range(publications):
        sym = rng.choice(symbols)
        b, client = placed[sym]
        net.command(b, Publish(client, f"e{j}", quote_event(rng.choice(quotes[sym]))))
    net.run()
    after = sum(c.counters.match_tests for c in cores.values())  # type: ignore[attr-defined]
    report.match_tests_per_publication = (after - before) / publications
    report.ims = Counter(net.messages)
    report.duplicates_discarded = sum(c.counters.duplicates_discarded for c in cores.values())  # type: ignore[attr-defined]
    report.publications = publications
    report.deliveries = len(net.deliveries)
    hops = [d.hops for d in net.deliveries]
    report.mean_hops = statistics.fmean(hops) if hops else 0.0
    report.max_hops = max(hops, default=0)
    report.ims_per_publication = net.messages[Phase.PUBLISH] / publications
    return report


@dataclass
class BurstReport:
    routing: str
    publications: int
    deliveries: int
    expected: int
    ims: int
    burst_end: float
    settle_time: float  # after the burst ends, when every output queue stayed at or below `settled_queue`
    last_delivery: float  # after the burst ends
    mean_delay: float
    p99_delay: float
    max_delay: float
    max_queue: int
    mean_target_queue: float  # mean Q_ℓ over the windows after the burst starts, on the degraded links
    diversions: int


def burst(
    kind: str,
    dynamic: bool,
    *,
    n_pubs: int = 1500,
    interval: float = 0.001,
    fast: float = 0.0004,
    slow: float = 0.004,
    latency: float = 0.002,
    tau: float = 10.0,
    t_w: float = 0.05,
    settled_queue: int = 5,
    seed: int = 7,
) -> BurstReport:
    """HRP at the inner broker B(G,0) of S_e; all four clusters are target clusters (no subscriber at the HRP's
    own broker). Extra publishers (which do not publish) advertise the same symbol elsewhere, so the baseline has
    other trees to switch to, as in the paper's dynamic-routing setup. Once advertisements and subscriptions are
    in place, two outgoing links of the HRP's broker that static routing uses degrade to one message per ``slow``
    seconds (every other link serves one per ``fast``): for OctopiA its iLinks to C_1 and C_3 (IDR targets
    congested iLinks), for the baseline the two links of its tree that carry the most copies of a probe
    publication. The HRP then publishes ``n_pubs`` quotes, one per ``interval``."""
    scot = Scot.s_e()
    rng = random.Random(seed)
    cores = make_cores(kind, scot, {STOCK.name: STOCK}, dynamic=dynamic,
                       congestion=CongestionConfig(tau=tau, t_w=t_w))
    host = BrokerId("G", 0)
    net = TimedNetwork(cores, random.Random(seed + 1), t_w=t_w, default_link=LinkModel(fast, latency))
    quotes = load_quotes(1, n_pubs, random.Random(seed))
    (sym,) = quotes
    series = quotes[sym]
    adv = stock_advertisement(series)
    net.command(host, Advertise("hrp", "a", adv))
    for i, b in enumerate((BrokerId("A", 1), BrokerId("L", 2), BrokerId("E", 3))):
        net.command(b, Advertise(f"other{i}", "a", adv))
    subscribers = [BrokerId(x, c) for c in range(4) for x in ("A", "C", "E", "K", "N") if BrokerId(x, c) != host]
    for i, b in enumerate(subscribers):
        net.command(b, Subscribe(f"c{i}", f"s{i}", stock_subscription(rng, series, selectivity=1.0)))
    net.run()
    if kind == "octopia":
        degraded = [BrokerId("G", 1), BrokerId("G", 3)]
    else:
        net.reset_counters()
        net.command(host, Publish("hrp", "probe", quote_event(series[0])))
        net.run()
        used = sorted((-c, n) for (s, n), c in net.link_messages.items() if s == host)
        degraded = [n for _, n in used[:2]]
    for n in degraded:
        net.set_link(host, n, LinkModel(slow, latency))
    expected = n_pubs * len(subscribers)
    first = len(net.deliveries)
    net.reset_counters()
    start = net.now + t_w
    for k in range(n_pubs):
        net.schedule(start + k * interval, host, Publish("hrp", f"e{k}", quote_event(series[k % len(series)])))
    net.run()
    burst_end = start + (n_pubs - 1) * interval
    delays = sorted(net.delays())
    settle = burst_end
    targets = [(host, n) for n in degraded]
    target_q = []
    for at, snap in net.queue_samples:
        if at < start:
            continue
        if max(snap.values()) > settled_queue:
            settle = max(settle, at)
        target_q.append(statistics.fmean(snap[t] for t in targets))
    return BurstReport(
        routing={("octopia", False): "SPR", ("octopia", True): "IDR", ("padres", False): "TID-S",
                 ("padres", True): "TID-D"}[(kind, dynamic)],
        publications=n_pubs,
        deliveries=len(net.deliveries) - first,
        expected=expected,
        ims=net.messages[Phase.PUBLISH],
        burst_end=burst_end,
        settle_time=settle - burst_end,
        last_delivery=max(d.time for d in net.deliveries) - burst_end,
        mean_delay=statistics.fmean(delays) if delays else 0.0,
        p99_delay=delays[int(0.99 * (len(delays) - 1))] if delays else 0.0,
        max_delay=delays[-1] if delays else 0.0,
        max_queue=max(net.max_queue(s, d) for s, d in net.links()),
        mean_target_queue=statistics.fmean(target_q) if target_q else 0.0,
        diversions=sum(c.counters.dynamic_diversions for c in cores.values()),  # type: ignore[attr-defined]
    )


__all__ = ["BurstReport", "ControlReport", "burst", "control_and_static"]
