"""Histograms, grouping and the choice of runs per figure, and figures skipped for missing runs (no Spark)."""

from __future__ import annotations

import numpy as np
import pytest

from spark.compare import make_groups, pick_headline, pick_pair, scalability_series
from spark.figures import FIGURES, draw_figures
from spark.load import RunInfo
from spark.metrics import Hist, NodeBandwidth, RunMetrics
from spark.outputs import thesis_table


def _hist(values_ms):
    v = np.asarray(values_ms, dtype=float)
    b, c = np.unique(np.floor(v).astype(np.int64), return_counts=True)
    return Hist(buckets=b, counts=c, total_ms=float(v.sum()), max_ms=float(v.max()))


def _run(index, nodes, multicast, cutoff, scale=1.0):
    info = RunInfo(index, f"/runs/{index}", f"r{index}", nodes, multicast, cutoff, "k", index, {}, {})
    k = np.arange(nodes, dtype=np.int64)
    bw = NodeBandwidth(
        node=k,
        subscription=k * 10,
        event=k * 100,
        probe=(k * 50 * scale).astype(np.int64),
        dht=k * 0,
        transport=k * 0,
    )
    return RunMetrics(info, 10, 5, _hist([100, 200, 300]), _hist([50.5, 150.5]), 200.0, 100.5, 0, 0.0, 0, bw)


def test_hist_stats_merge_and_bins():
    h = _hist([0.2, 1.5, 1.7, 9.9])
    assert h.n == 4 and h.stats()["mean"] == pytest.approx(13.3 / 4) and h.stats()["max"] == 9.9
    assert 1.0 <= h.quantile(0.5) <= 2.0
    assert h.share_within(2) == 0.75
    edges, counts = h.binned(5.0, 1)
    assert edges.tolist() == [0.0, 5.0] and counts.tolist() == [3, 1]
    m = Hist.merge([h, _hist([1.1]), Hist()])
    assert m.n == 5 and m.max_ms == 9.9 and m.counts[m.buckets == 1][0] == 3


def test_groups_and_pairs():
    runs = [
        _run(0, 100, True, True),
        _run(1, 1000, True, True),
        _run(2, 1000, False, True, 2.0),
        _run(3, 1000, True, False, 1.5),
        _run(4, 3000, True, True),
        _run(5, 1000, True, True),
    ]
    groups = make_groups(runs)
    assert len(groups) == 5
    head = pick_headline(groups)
    assert head.nodes == 1000 and len(head.runs) == 2 and head.per_subscription().size == 2000
    off, on = pick_pair(groups, "multicast", head)
    assert (off.multicast, on.multicast, on.nodes) == (False, True, 1000)
    off, on = pick_pair(groups, "cutoff", head)
    assert (off.cutoff, on.cutoff) == (False, True)
    assert [g.nodes for g in scalability_series(groups, head)] == [100, 1000, 3000]
    rows = thesis_table(head, pick_pair(groups, "multicast", head), None, [])
    assert rows[0]["thesis"] == "331 ms" and rows[0]["ours"] == "200 ms"
    assert any(r["ours"] == "—" and "cut-off" in r["quantity"] for r in rows)


def test_figures_without_their_runs_are_skipped(tmp_path):
    groups = make_groups([_run(0, 50, True, True)])
    head = pick_headline(groups)
    fs = draw_figures(tmp_path, head, None, None, scalability_series(groups, head))
    assert set(fs.drawn) == {"4.1", "4.2", "4.3", "4.4"}
    assert set(fs.skipped) == set(FIGURES) - set(fs.drawn)
    assert "multicast" in fs.skipped["4.5"] and "network sizes" in fs.skipped["4.9"]
    assert all((tmp_path / name).exists() for name in fs.drawn.values())
