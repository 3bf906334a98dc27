"""PNG figures mirroring thesis Figs 4.1-4.10 (matplotlib, Agg backend; plain arrays in, file out).

The thesis draws distributions as Excel-style bar histograms (count per bin, the last bin "More") with the
cumulative percentage on a second axis; we do the same, with bin widths chosen from the data (a round
width, about a dozen bins up to the 99th percentile).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "nice_width",
    "plot_distribution",
    "plot_distributions",
    "plot_top_nodes",
    "plot_vs_size",
    "value_bins",
]

_COLOURS = ("#1f4e79", "#c55a11", "#548235", "#7f6000")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _integer_ticks(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def nice_width(upper: float, bins: int = 12) -> float:
    """A round bin width (1, 2, 2.5 or 5 x 10^k) giving about `bins` bins up to `upper`."""
    if not upper or upper <= 0 or not math.isfinite(upper):
        return 1.0
    raw = upper / bins
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= raw:
            return m * exp
    return 10 * exp  # pragma: no cover


def value_bins(values: np.ndarray, width: float, nbins: int) -> np.ndarray:
    """Counts of `values` in `nbins` bins of `width` from 0 plus a last "more" bin."""
    idx = np.clip(np.floor(np.asarray(values, dtype=np.float64) / width), 0, nbins).astype(np.int64)
    return np.bincount(idx, minlength=nbins + 1)


def _tick_labels(width: float, nbins: int) -> list[str]:
    fmt = "{:g}"
    return [fmt.format(round((i + 1) * width, 6)) for i in range(nbins)] + ["More"]


def plot_distributions(
    path: Path,
    title: str,
    xlabel: str,
    series: list[tuple[str, np.ndarray]],
    width: float,
    ylabel: str = "frequency",
) -> Path:
    """Grouped histogram bars (count per bin, bins labelled by their upper edge) and cumulative % lines.

    `series`: (label, counts over nbins + 1 bins), as from :func:`value_bins` or ``Hist.binned``.
    """
    plt = _pyplot()
    nb = len(series[0][1])
    x = np.arange(nb)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax2 = ax.twinx()
    bar_w = 0.8 / len(series)
    for i, (label, counts) in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        ax.bar(x - 0.4 + bar_w * (i + 0.5), counts, width=bar_w, color=colour, alpha=0.85, label=label)
        total = counts.sum()
        cum = np.cumsum(counts) / total * 100 if total else np.zeros(nb)
        ax2.plot(x, cum, marker="o", ms=3, color=colour, lw=1.4, ls="--", label=f"{label}, cumulative %")
    ax.set_xticks(x)
    ax.set_xticklabels(_tick_labels(width, nb - 1), rotation=45, ha="right", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _integer_ticks(ax.yaxis)
    ax2.set_ylabel("cumulative %")
    ax2.set_ylim(0, 105)
    ax.set_title(title, fontsize=11)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    fig.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower center", ncol=len(series) * 2, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_distribution(
    path: Path,
    title: str,
    xlabel: str,
    label: str,
    counts: np.ndarray,
    width: float,
    ylabel: str = "frequency",
) -> Path:
    """One histogram with its cumulative percentage."""
    return plot_distributions(path, title, xlabel, [(label, counts)], width, ylabel)


def plot_top_nodes(
    path: Path, title: str, ylabel: str, series: list[tuple[str, np.ndarray]], top: int
) -> Path:
    """Per-node values by rank (largest first) for the `top` nodes of each series."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    for i, (label, values) in enumerate(series):
        v = np.sort(np.asarray(values, dtype=np.float64))[::-1][:top]
        ax.plot(np.arange(1, v.size + 1), v, marker="o", ms=2.5, lw=1.2, color=_COLOURS[i % 4], label=label)
    shown = min(top, max((np.asarray(v).size for _, v in series), default=0))
    note = f"top {top} nodes" if shown >= top else f"all {shown} nodes; the thesis shows the top {top}"
    ax.set_xlabel(f"rank ({note})")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_vs_size(
    path: Path,
    title: str,
    sizes: list[int],
    average: list[float],
    maximum: list[float],
    ylabel: str,
    twin: bool = False,
) -> Path:
    """Average and maximum against network size; `twin` puts the maximum on its own right axis."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    x = np.arange(len(sizes))
    ax.plot(x, average, marker="D", color=_COLOURS[0], label="average")
    target = ax.twinx() if twin else ax
    target.plot(x, maximum, marker="s", color=_COLOURS[1], label="maximum")
    ax.set_xticks(x)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("network size (nodes)")
    ax.set_ylabel(ylabel + (" (average)" if twin else ""))
    if twin:
        target.set_ylabel(ylabel + " (maximum)")
        target.set_ylim(0, max(maximum, default=0) * 1.1 or 1)
        ax.set_ylim(0, max(average, default=0) * 1.1 or 1)
    else:
        ax.set_ylim(0, max([*average, *maximum], default=0) * 1.1 or 1)
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = target.get_legend_handles_labels() if twin else ([], [])
    ax.legend(h1 + h2, l1 + l2, fontsize=9, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
