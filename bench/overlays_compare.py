"""OctopiA (clustered S_e) vs the PADRES-style TID baseline (unclustered S_e), side by side, in one run.

    python bench/overlays_compare.py            # paper-like sizes: 100 publishers, 1000 subscribers
    python bench/overlays_compare.py --quick    # small sizes, a few seconds

Everything runs in the in-memory harness (no sockets): the control plane and static publication routing with
random message interleavings, the burst in virtual time with per-link output queues. Stock quotes come from
../shared/data/stockquotes when present (synthetic quotes otherwise). Figures are counts and virtual seconds,
deterministic under --seed, so the ratios are the point.
"""

from __future__ import annotations

import argparse
import time

from overlays.evaluation import burst, control_and_static
from overlays.messages import Phase
from overlays.workload import stockquotes_dir


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def print_rows(rows: list[tuple[str, float | int, float | int]]) -> None:
    """``(metric, OctopiA, PADRES)`` rows side by side, with their ratio."""
    print(f"{'metric':42} {'OctopiA':>12} {'PADRES':>12} {'Oct/PAD':>9}")
    for name, a, b in rows:
        fa = f"{a:12.2f}" if isinstance(a, float) else f"{a:12d}"
        fb = f"{b:12.2f}" if isinstance(b, float) else f"{b:12d}"
        print(f"{name:42} {fa} {fb} {_ratio(a, b):>9}")


def print_burst(n_pubs: int, seed: int) -> None:
    """The recovery after a high-rate publisher's burst (OctopiA §10, Figs 17-20): SPR/IDR vs TID-S/TID-D."""
    print(f"\nBurst: HRP at B(G,0) publishes {n_pubs} quotes at 1000/s; two of its outgoing links degrade to "
          "250 msg/s (OctopiA: iLinks to C1, C3), tau=10, t_w=50 ms")
    print(f"{'routing':8} {'settle s':>9} {'last dlv s':>10} {'mean dly':>9} {'p99 dly':>8} {'max dly':>8} "
          f"{'maxQ':>6} {'mean Q':>7} {'IMs':>7} {'diverted':>8} {'exact':>6}")
    for kind in ("octopia", "padres"):
        for dynamic in (False, True):
            r = burst(kind, dynamic, n_pubs=n_pubs, seed=seed)
            print(f"{r.routing:8} {r.settle_time:9.3f} {r.last_delivery:10.3f} {r.mean_delay:9.3f} "
                  f"{r.p99_delay:8.3f} {r.max_delay:8.3f} {r.max_queue:6d} {r.mean_target_queue:7.1f} {r.ims:7d} "
                  f"{r.diversions:8d} {r.deliveries == r.expected!s:>6}")
    print("\nsettle: seconds after the burst's last publication until every output queue stays <= 5 messages;"
          "\nmean Q: mean queue length on the two degraded links over the windows from the burst's start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--publishers", type=int, default=100)
    ap.add_argument("--subscribers", type=int, default=1000)
    ap.add_argument("--publications", type=int, default=1000)
    ap.add_argument("--burst", type=int, default=3000, help="publications of the high-rate publisher")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.publishers, args.subscribers, args.publications, args.burst = 50, 300, 200, 800
    t0 = time.perf_counter()
    data = "PADRES stock quotes" if stockquotes_dir().is_dir() else "synthetic quotes (../shared/data absent)"
    print(f"S_e: 14-broker acyclic factor x K4 = 56 brokers; {data}")
    print(f"{args.publishers} publishers (one advertisement each), {args.subscribers} subscribers, "
          f"{args.publications} publications\n")
    o = control_and_static("octopia", publishers=args.publishers, subscribers=args.subscribers,
                           publications=args.publications, seed=args.seed)
    p = control_and_static("padres", publishers=args.publishers, subscribers=args.subscribers,
                           publications=args.publications, seed=args.seed)
    rows = [
        ("advertisements per broker (CLT vs SRT)", o.adverts_per_broker, p.adverts_per_broker),
        ("subscriptions per broker (PRT)", o.subs_per_broker, p.subs_per_broker),
        ("PRT bindings per broker", o.prt_entries_per_broker, p.prt_entries_per_broker),
        ("IMs, advertisement phase", o.ims[Phase.ADVERTISE], p.ims[Phase.ADVERTISE]),
        ("  of which duplicates discarded", o.duplicates_discarded, p.duplicates_discarded),
        ("IMs, subscription phase", o.ims[Phase.SUBSCRIBE], p.ims[Phase.SUBSCRIBE]),
        ("IMs, publication phase", o.ims[Phase.PUBLISH], p.ims[Phase.PUBLISH]),
        ("IMs per publication", o.ims_per_publication, p.ims_per_publication),
        ("match tests per publication", o.match_tests_per_publication, p.match_tests_per_publication),
        ("deliveries", o.deliveries, p.deliveries),
        ("hops per delivery, mean", o.mean_hops, p.mean_hops),
        ("hops per delivery, max", o.max_hops, p.max_hops),
    ]
    print_rows(rows)
    red = 1 - o.adverts_per_broker / p.adverts_per_broker
    print(f"\nCLT is {red:.1%} smaller than SRT; advertisement broadcast uses "
          f"{p.ims[Phase.ADVERTISE] / max(1, o.ims[Phase.ADVERTISE]):.1f}x fewer IMs in OctopiA")

    print_burst(args.burst, args.seed)
    print(f"\n({time.perf_counter() - t0:.1f} s wall)")


if __name__ == "__main__":
    main()
