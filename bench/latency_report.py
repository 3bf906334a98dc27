"""Print the latency models' figures: RIPE imputation check, mean RTTs, and look-up speed (as ratios).

    .venv/bin/python bench/latency_report.py [--nodes 1000] [--seeds 1 2 3]

Needs the shared data folder for the RIPE figures (``../shared/data`` or ``$P2PUBSUB_DATA``); the synthetic
figures print anywhere.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from p2pubsub.latency import SyntheticModel, build_ripe_model
from p2pubsub.latency.ripe import load_imputed, ripe_file, ripe_holdout


def shortest_path_mean(rtt: np.ndarray, measured: np.ndarray) -> float:
    """What filling missing pairs with shortest paths over measured ones would give (Floyd-Warshall)."""
    d = np.where(measured, rtt, np.inf)
    np.fill_diagonal(d, 0.0)
    for k in range(len(d)):
        d = np.minimum(d, d[:, k : k + 1] + d[k : k + 1, :])
    upper = np.triu_indices(len(d), k=1)
    vals = d[upper]
    return float(vals[np.isfinite(vals)].mean())


def lookups_per_second(model, n: int = 1_000_000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, model.hosts, size=(n, 2)).tolist()
    one_way = model.one_way
    t = time.perf_counter()
    for a, b in pairs:
        one_way(a, b)
    fast = n / (time.perf_counter() - t)
    look = model.lookup()
    t = time.perf_counter()
    for a, b in pairs:
        look(a, b)
    dense = n / (time.perf_counter() - t)
    return fast, dense


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()

    if ripe_file() is None:
        print("RIPE data not found: skipping the RIPE figures")
    else:
        imp = load_imputed()
        s = imp.stats
        print(f"RIPE table: {int(s['countries'])} countries, {int(s['measured_pairs'])} measured inter-country pairs, "
              f"{int(s['imputed_pairs'])} imputed")
        print(f"  measured pairs mean RTT      {s['measured_mean_ms']:7.1f} ms")
        print(f"  imputed pairs mean RTT       {s['imputed_mean_ms']:7.1f} ms (coordinates, 3 dims + height)")
        print(f"  all country pairs mean RTT   {s['all_pairs_mean_ms']:7.1f} ms")
        t = imp.table
        sp = shortest_path_mean(np.nan_to_num(t.rtt_ms, nan=np.inf), t.measured)
        print(f"  (shortest-path filling would give {sp:.1f} ms over all pairs: the bias we avoid)")
        print(f"  fit MAE on measured pairs    {s['fit_mae_ms']:7.1f} ms")
        for seed in (1, 2):
            h = ripe_holdout(seed=seed)
            print(f"  hold-out 10% (seed {seed}): {h.pairs} pairs, MAE {h.mae_ms:.1f} ms, "
                  f"median rel. error {100 * h.median_rel_error:.1f}%, bias {h.bias_ms:+.1f} ms "
                  f"(true mean {h.true_mean_ms:.1f}, predicted {h.predicted_mean_ms:.1f})")
        for assign in ("uniform", "measured"):
            means = [build_ripe_model(args.nodes, seed, assign=assign).mean_rtt_ms() for seed in args.seeds]
            print(f"  {args.nodes} nodes, assign={assign:8s}: mean RTT "
                  + ", ".join(f"{m:.1f}" for m in means) + f" ms (seeds {args.seeds})")
        model = build_ripe_model(args.nodes, args.seeds[0])
        fast, dense = lookups_per_second(model)
        print(f"  look-ups: one_way {fast / 1e6:.2f} M/s, lookup() {dense / 1e6:.2f} M/s (ratio {dense / fast:.2f})")
    syn = SyntheticModel(args.nodes, args.seeds[0])
    fast, dense = lookups_per_second(syn)
    print(f"synthetic {args.nodes} nodes: mean RTT {syn.mean_rtt_ms():.1f} ms; one_way {fast / 1e6:.2f} M/s, "
          f"lookup() {dense / 1e6:.2f} M/s (ratio {dense / fast:.2f})")


if __name__ == "__main__":
    main()
