"""Profile a simulator run: wall time, then where it goes (cProfile, by own time and by subsystem).

    python bench/sim_profile.py bench/scenarios/ci-small.toml [--nodes N] [--events E] [--top 30] [--no-profile]

``--nodes``/``--events`` scale a scenario down (the workload keeps its per-node rates). Subsystems are cumulative
times of marker functions, so they overlap where one calls another (a node's message handling includes the sends
it makes); the loop's own share is what the run spends outside every callback.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from p2pubsub.scenario import load_scenario
from p2pubsub.sim.runner import run_scenario

MARKERS = {
    "node: message handling": ("runtime.py", "_on_peer_message"),
    "node: ticks": ("runtime.py", "_on_tick"),
    "node: client commands (subscribe/publish)": ("runtime.py", "publish"),
    "wire: encode": ("wire.py", "encode"),
    "wire: decode": ("wire.py", "decode"),
    "transport: datagram in": ("transport.py", "datagram_received"),
    "transport: send": ("transport.py", "send"),
    "network: send": ("network.py", "_send"),
    "network: arrive": ("network.py", "_arrive"),
    "kademlia: rpc datagrams": ("dht.py", "_solve_safely"),
    "trace: node hooks (sent)": ("tracing.py", "sent"),
    "trace: node hooks (received)": ("tracing.py", "received"),
    "trace: datagram hook": ("tracing.py", "datagram"),
    "oracle": ("oracle.py", "verdict"),
    "summary + parquet": ("summary.py", "finish_summary"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scenario")
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--events", type=int)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--out", help="run directory (default: a temporary one)")
    args = ap.parse_args()
    sc = load_scenario(args.scenario)
    if args.nodes:
        sc = replace(sc, network=replace(sc.network, nodes=args.nodes))
    if args.events is not None:
        sc = replace(sc, workload=replace(sc.workload, events=args.events))
    out = args.out or tempfile.mkdtemp(prefix="sim-profile-")
    prof = None if args.no_profile else cProfile.Profile()
    t = time.perf_counter()
    if prof:
        prof.enable()
    s = run_scenario(sc, out)
    if prof:
        prof.disable()
    wall = time.perf_counter() - t
    d = s["deliveries"]
    print(f"{sc.name}: {sc.network.nodes} nodes, {s['subscriptions']} subscriptions, {s['events']} events, "
          f"{s['messages']['total']} message rows, virtual {s['virtual_s']:.0f} s")
    print(f"wall {wall:.1f} s{' (profiled)' if prof else ''}, peak RSS {s['peak_rss_mb']:.0f} MB; "
          f"missing {d['missing']} false_positive {d['false_positive']} duplicate {d['duplicate']}")
    if d["missing"]:
        print(f"missing: {d['missing_events']} events, {d['missing_subscriptions']} subscriptions; "
              f"per tenth of the events {d['missing_by_tenth']}")
    if not prof:
        return
    stats = pstats.Stats(prof)
    total = stats.total_tt
    print(f"\nby subsystem (cumulative, overlapping; total {total:.1f} s):")
    for label, (file, func) in MARKERS.items():
        cum = sum(v[3] for k, v in stats.stats.items() if k[0].endswith(file) and k[2] == func)
        print(f"  {label:<44} {cum:8.1f} s  {100 * cum / total:5.1f}%")
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.top)
    print(buf.getvalue().split("\n", 6)[-1])


if __name__ == "__main__":
    main()
