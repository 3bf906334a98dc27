"""Draw thesis Figs 4.1-4.10 from grouped metrics; a figure without its runs is skipped with a reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .compare import Group
from .plots import nice_width, plot_distribution, plot_distributions, plot_top_nodes, plot_vs_size, value_bins

__all__ = ["FIGURES", "FigureSet", "draw_figures"]

#: Figure id -> (file name, caption after the thesis).
FIGURES: dict[str, tuple[str, str]] = {
    "4.1": ("fig4_1_install_latency.png", "Subscription installation latency"),
    "4.2": ("fig4_2_bandwidth_per_subscription.png", "Per-node bandwidth during subscription installation"),
    "4.3": ("fig4_3_delivery_latency.png", "Event delivery (publication) latency"),
    "4.4": ("fig4_4_bandwidth_per_event.png", "Per-node bandwidth during event publication"),
    "4.5": ("fig4_5_multicast_vs_unicast.png", "Multicast vs unicast: per-node probe bandwidth"),
    "4.6": ("fig4_6_multicast_top100.png", "Multicast vs unicast on the top 100 nodes"),
    "4.7": ("fig4_7_cutoff_vs_none.png", "Cut-off (load balancing) vs none: per-node probe bandwidth"),
    "4.8": ("fig4_8_cutoff_top125.png", "Cut-off vs none on the top 125 nodes"),
    "4.9": ("fig4_9_latency_vs_size.png", "Event delivery latency against network size"),
    "4.10": ("fig4_10_bandwidth_vs_size.png", "Per-node bandwidth per event against network size"),
}

BINS = 12


@dataclass
class FigureSet:
    """What was drawn (figure id -> file name), what was skipped (id -> reason), and the binned data."""

    drawn: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    histograms: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _rows(
    group: Group, edges: np.ndarray, counts: np.ndarray, width: float, unit: str
) -> list[dict[str, Any]]:
    total = counts.sum()
    cum = np.cumsum(counts)
    return [
        {
            "group": group.slug,
            f"bin_low_{unit}": float(lo),
            f"bin_high_{unit}": float(lo + width) if i < len(edges) - 1 else float("inf"),
            "count": int(c),
            "cumulative_fraction": float(cum[i] / total) if total else 0.0,
        }
        for i, (lo, c) in enumerate(zip(edges, counts, strict=True))
    ]


def _latency_figure(fs: FigureSet, fig: str, out: Path, group: Group, which: str) -> None:
    hist = group.install if which == "install" else group.delivery
    if not hist.n:
        fs.skipped[fig] = f"no {which} latencies in {group.label}"
        return
    width = nice_width(hist.quantile(0.99) or hist.max_ms or 1.0, BINS)
    nbins = int(np.ceil((hist.quantile(0.99) or width) / width)) or 1
    edges, counts = hist.binned(width, nbins)
    name, caption = FIGURES[fig]
    noun = "installs" if which == "install" else "deliveries"
    title = f"Fig {fig}: {caption}\n({group.label}; {hist.n:,} {noun}, {len(group.runs)} run(s))"
    plot_distribution(out / name, title, "latency (ms)", noun, counts, width, ylabel=noun)
    fs.drawn[fig] = name
    fs.histograms[f"{which}_latency"] = _rows(group, edges, counts, width, "ms")


def _node_figure(
    fs: FigureSet, fig: str, out: Path, group: Group, values: np.ndarray, xlabel: str, key: str, unit: str
) -> None:
    if not values.size or not np.any(values):
        fs.skipped[fig] = f"no {key} traffic in {group.label}"
        return
    upper = float(np.percentile(values, 99)) or float(values.max())
    width = nice_width(upper, BINS)
    nbins = int(np.ceil(upper / width)) or 1
    counts = value_bins(values, width, nbins)
    name, caption = FIGURES[fig]
    title = f"Fig {fig}: {caption}\n({group.label}; {len(group.runs)} run(s))"
    plot_distribution(out / name, title, xlabel, "nodes", counts, width, ylabel="nodes")
    fs.drawn[fig] = name
    fs.histograms[key] = _rows(group, np.arange(nbins + 1) * width, counts, width, unit)


def _pair_figures(
    fs: FigureSet,
    figs: tuple[str, str],
    out: Path,
    pair: tuple[Group, Group] | None,
    names: tuple[str, str],
    top: int,
    why: str,
) -> None:
    if pair is None:
        for f in figs:
            fs.skipped[f] = why
        return
    off, on = pair
    v_off, v_on = off.probe_per_event(), on.probe_per_event()
    if not (np.any(v_off) or np.any(v_on)):
        for f in figs:
            fs.skipped[f] = f"no probe traffic in {off.label} / {on.label}"
        return
    kb_off, kb_on = v_off / 1000.0, v_on / 1000.0
    upper = float(np.percentile(np.concatenate([kb_off, kb_on]), 99)) or 1.0
    width = nice_width(upper, BINS)
    nbins = int(np.ceil(upper / width)) or 1
    name, caption = FIGURES[figs[0]]
    plot_distributions(
        out / name,
        f"Fig {figs[0]}: {caption}\n({on.kind}, {on.nodes} nodes; EventDelivery excluded)",
        "probe bandwidth per node (KB/event)",
        [(names[0], value_bins(kb_off, width, nbins)), (names[1], value_bins(kb_on, width, nbins))],
        width,
        ylabel="nodes",
    )
    fs.drawn[figs[0]] = name
    name, caption = FIGURES[figs[1]]
    plot_top_nodes(
        out / name,
        f"Fig {figs[1]}: {caption}\n({on.kind}, {on.nodes} nodes; EventDelivery excluded)",
        "probe bandwidth (bytes/event)",
        [(names[0], v_off), (names[1], v_on)],
        top,
    )
    fs.drawn[figs[1]] = name


def draw_figures(
    out: Path,
    headline: Group | None,
    multicast: tuple[Group, Group] | None,
    cutoff: tuple[Group, Group] | None,
    series: list[Group],
) -> FigureSet:
    """Draw every figure that has data into `out`."""
    fs = FigureSet()
    if headline is None:
        for fig in FIGURES:
            fs.skipped[fig] = "no runs"
        return fs
    _latency_figure(fs, "4.1", out, headline, "install")
    _node_figure(
        fs,
        "4.2",
        out,
        headline,
        headline.per_subscription(),
        "bytes per subscription",
        "bandwidth_per_sub",
        "bytes",
    )
    _latency_figure(fs, "4.3", out, headline, "delivery")
    _node_figure(
        fs, "4.4", out, headline, headline.per_event() / 1000.0, "KB per event", "bandwidth_per_event", "kb"
    )
    _pair_figures(
        fs,
        ("4.5", "4.6"),
        out,
        multicast,
        ("unicast", "multicast"),
        100,
        "needs two runs that differ only in [protocol] multicast",
    )
    _pair_figures(
        fs,
        ("4.7", "4.8"),
        out,
        cutoff,
        ("no cut-off", "cut-off"),
        125,
        "needs two runs that differ only in [protocol] cutoff",
    )
    if not series:
        for fig in ("4.9", "4.10"):
            fs.skipped[fig] = "needs the headline configuration at two network sizes at least"
        return fs
    sizes = [g.nodes for g in series]
    lat = [g.delivery.stats() for g in series]
    if all(s["count"] for s in lat):
        name, caption = FIGURES["4.9"]
        plot_vs_size(
            out / name,
            f"Fig 4.9: {caption}",
            sizes,
            [s["mean"] for s in lat],
            [s["max"] for s in lat],
            "latency (ms)",
        )
        fs.drawn["4.9"] = name
    else:
        fs.skipped["4.9"] = "a network size without deliveries"
    bw = [g.per_event() for g in series]
    name, caption = FIGURES["4.10"]
    plot_vs_size(
        out / name,
        f"Fig 4.10: {caption}",
        sizes,
        [float(b.mean()) if b.size else 0.0 for b in bw],
        [float(b.max()) if b.size else 0.0 for b in bw],
        "bandwidth (bytes/event)",
        twin=True,
    )
    fs.drawn["4.10"] = name
    return fs
