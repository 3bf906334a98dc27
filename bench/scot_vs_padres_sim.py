"""OctopiA vs the PADRES-style baseline on the simulator: real SCOT nodes on S_e, side by side, in one run.

    python bench/scot_vs_padres_sim.py                  # scot-se.toml vs padres-se.toml, static and dynamic
    python bench/scot_vs_padres_sim.py --static-only    # SPR vs TID-S only (half the time)
    python bench/scot_vs_padres_sim.py --quick          # the CI pair (12 positions), a few seconds

Each pair runs `p2pubsub sim` on the same workload, latencies and link capacities (one process, one after the
other) and prints the paper's metrics (OctopiA §10) from the two ``summary.json`` files: advertisement delay,
CLT vs SRT size, inter-broker messages (IMs) in advertisement and subscription broadcast, subscription delay, PRT
size, publication delay (with hops, propagation and queueing per delivery from the trace's causal chains), IMs per
publication; matching costs no virtual time here, so matching work is shown as match tests per publication. Delays
are virtual: latency model plus queueing on the uplinks. Then the recovery after a high-rate publisher's burst (SPR
vs IDR, TID-S vs TID-D) from the pure harness (`overlays_compare`): the simulator's capacity-limited links are
per-node uplinks, which every overlay link of a node shares, so diverting a publication to another iLink does not
relieve the node's congested uplink there.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq
from overlays_compare import print_burst, print_rows

from p2pubsub.scenario import load_scenario
from p2pubsub.sim.runner import run_scenario

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def delivery_paths(run_dir: Path) -> dict[str, float]:
    """Per delivery, from the trace's causal chains (publish -> ... -> the message that caused the delivery):
    overlay hops, and the delay split into the latency model's propagation and the uplinks' queueing (ms)."""
    m = pq.read_table(run_dir / "messages.parquet",
                      columns=["id", "parent_id", "src", "dst", "sent_at", "received_at"]).to_pydict()
    lat = pq.read_table(run_dir / "latency.parquet").to_pydict()
    one_way = {(a, b): ms / 1000 for a, b, ms in zip(lat["src_host"], lat["dst_host"], lat["one_way_ms"], strict=True)}
    parent = dict(zip(m["id"], m["parent_id"], strict=True))
    hop = {i: (r - s, one_way[(a, b)]) for i, a, b, s, r in zip(m["id"], m["src"], m["dst"], m["sent_at"],
                                                                 m["received_at"], strict=True) if r is not None}
    causes = pq.read_table(run_dir / "deliveries.parquet", columns=["cause_id"]).column("cause_id").to_pylist()
    hops = propagation = transit = 0.0
    for c in causes:
        while c is not None:
            hops += 1
            transit += hop[c][0]
            propagation += hop[c][1]
            c = parent[c]
    n = max(1, len(causes))
    queueing = transit - propagation
    return {"hops": hops / n, "propagation_ms": 1000 * propagation / n, "queueing_ms": 1000 * queueing / n}


def run(name: str, out: Path, dynamic: bool, seed: int | None) -> dict:
    sc = load_scenario(SCENARIOS / f"{name}.toml")
    sc = replace(sc, scot=replace(sc.scot, dynamic=dynamic), seed=sc.seed if seed is None else seed)
    label = f"{sc.name}-{'dynamic' if dynamic else 'static'}"
    summary = run_scenario(sc, out / label)
    summary["delivery_paths"] = delivery_paths(out / label)
    d = summary["deliveries"]
    print(f"  {label}: {summary['wall_s']:.1f} s wall, {d['delivered']}/{d['expected']} delivered, "
          f"missing {d['missing']}, false positives {d['false_positive']}, duplicates {d['duplicate']}", flush=True)
    return summary


def rows(o: dict, p: dict) -> list[tuple[str, float | int, float | int]]:
    lat = {k: (o["latency_ms"][k], p["latency_ms"][k]) for k in ("advertise", "subscribe", "delivery")}
    t = {k: (o["tables"][k], p["tables"][k]) for k in ("advertisements_per_broker", "subscriptions_per_broker")}
    im = (o["inter_broker_messages"], p["inter_broker_messages"])
    ov = (o["overlay"], p["overlay"])
    return [
        ("advertisement delay, mean ms", lat["advertise"][0]["mean"], lat["advertise"][1]["mean"]),
        ("advertisement delay, max ms", lat["advertise"][0]["max"], lat["advertise"][1]["max"]),
        ("CLT vs SRT entries per broker, mean", *(x["mean"] for x in t["advertisements_per_broker"])),
        ("CLT vs SRT entries per broker, max", *(x["max"] for x in t["advertisements_per_broker"])),
        ("IMs, advertisement broadcast", im[0]["advertise"], im[1]["advertise"]),
        ("  duplicates discarded", ov[0]["duplicates_discarded"], ov[1]["duplicates_discarded"]),
        ("IMs, subscription broadcast", im[0]["subscribe"], im[1]["subscribe"]),
        ("subscription delay, mean ms", lat["subscribe"][0]["mean"], lat["subscribe"][1]["mean"]),
        ("subscription delay, p99 ms", lat["subscribe"][0]["p99"], lat["subscribe"][1]["p99"]),
        ("PRT subscriptions per broker, mean", *(x["mean"] for x in t["subscriptions_per_broker"])),
        ("PRT subscriptions per broker, max", *(x["max"] for x in t["subscriptions_per_broker"])),
        ("publication delay, mean ms", lat["delivery"][0]["mean"], lat["delivery"][1]["mean"]),
        ("publication delay, p99 ms", lat["delivery"][0]["p99"], lat["delivery"][1]["p99"]),
        ("  overlay hops per delivery", o["delivery_paths"]["hops"], p["delivery_paths"]["hops"]),
        ("  propagation per delivery ms", o["delivery_paths"]["propagation_ms"], p["delivery_paths"]["propagation_ms"]),
        ("  queueing per delivery ms", o["delivery_paths"]["queueing_ms"], p["delivery_paths"]["queueing_ms"]),
        ("IMs, publications", im[0]["publish"], im[1]["publish"]),
        ("IMs per publication", im[0]["per_publication"], im[1]["per_publication"]),
        ("match tests per publication", ov[0]["match_tests_per_publication"], ov[1]["match_tests_per_publication"]),
        ("publication copies off the static path", ov[0]["dynamic_diversions"], ov[1]["dynamic_diversions"]),
        ("deliveries (exact: oracle)", o["deliveries"]["delivered"], p["deliveries"]["delivered"]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the CI-sized pair (scot-ci, padres-ci)")
    ap.add_argument("--static-only", action="store_true", help="SPR vs TID-S only")
    ap.add_argument("--burst", type=int, default=3000, help="publications of the high-rate publisher (harness)")
    ap.add_argument("--seed", type=int, help="override the scenarios' seed")
    ap.add_argument("--out", type=Path, help="keep the run directories here (default: a temporary directory)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    names = ("scot-ci", "padres-ci") if args.quick else ("scot-se", "padres-se")
    if args.quick:
        args.burst = min(args.burst, 800)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        sc = load_scenario(SCENARIOS / f"{names[0]}.toml")
        w, n = sc.workload, sc.network
        print(f"{names[0]} vs {names[1]}: {n.nodes} nodes, {n.latency} latencies, uplinks "
              f"{n.link_capacity_kbps} kbit/s; stocks, {n.nodes * w.subscriptions_per_node} subscriptions, "
              f"{w.events} quotes at {1000 / w.publish_interval_ms:.0f}/s")
        for dynamic in (False,) if args.static_only else (False, True):
            o, p = (run(name, out, dynamic, args.seed) for name in names)
            print(f"\n{'IDR vs TID-D' if dynamic else 'SPR vs TID-S'} (routing tables at the end of the run)")
            print_rows(rows(o, p))
            clt, srt = (x["tables"]["advertisements_per_broker"]["mean"] for x in (o, p))
            red = 1 - clt / srt
            print(f"CLT {red:.1%} smaller than SRT; advertisement broadcast "
                  f"{p['inter_broker_messages']['advertise'] / max(1, o['inter_broker_messages']['advertise']):.1f}"
                  "x fewer IMs in OctopiA\n")
            if args.out:
                (out / f"pair-{'dynamic' if dynamic else 'static'}.json").write_text(
                    json.dumps({"octopia": o, "padres": p}, indent=1, sort_keys=True))
    print("Recovery after a burst, on the pure harness (overlays/evaluation.py, as bench/overlays_compare.py):")
    print_burst(args.burst, 1 if args.seed is None else args.seed)
    print(f"\n({time.perf_counter() - t0:.1f} s wall)")


if __name__ == "__main__":
    main()
