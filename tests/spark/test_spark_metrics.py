"""Metrics against the hand-computed tiny run (p2pubsub.trace.synthetic.tiny_run)."""

from __future__ import annotations

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from spark.load import load_runs, row_counts
from spark.matrix import load_matrix
from spark.metrics import compute_run_metrics
from spark.replay import diagnostics, replay


@pytest.fixture(scope="module")
def tiny_metrics(spark_session, tiny_dir, tmp_path_factory):
    doubled = tmp_path_factory.mktemp("matrix") / "doubled.parquet"
    lat = pq.read_table(tiny_dir / "latency.parquet")
    pq.write_table(lat.set_column(2, "one_way_ms", pc.multiply(lat["one_way_ms"], 2.0)), doubled)
    traces = load_runs(spark_session, [tiny_dir])
    rep = replay(traces, load_matrix(spark_session, doubled))
    runs = compute_run_metrics(rep, traces, row_counts(traces, "subscriptions"), row_counts(traces, "events"))
    return rep, runs[0]


def test_latencies_after_doubling(tiny_metrics):
    _, m = tiny_metrics
    inst, deli = m.install.stats(), m.delivery.stats()
    assert inst["count"] == 2 and deli["count"] == 2
    assert inst["mean"] == pytest.approx((129 + 0.5) / 2, abs=1e-6)
    assert inst["max"] == pytest.approx(129, abs=1e-6)
    assert deli["mean"] == pytest.approx((103 + 41.5) / 2, abs=1e-6)
    assert deli["max"] == pytest.approx(103, abs=1e-6)
    # the simulator's own (un-replayed) figures
    assert m.install_original_mean_ms == pytest.approx((69 + 0.5) / 2, abs=1e-6)
    assert m.delivery_original_mean_ms == pytest.approx((53 + 21.5) / 2, abs=1e-6)
    assert m.identity_max_diff_s < 1e-9 and m.not_installed == 0 and m.missing_causes == 0


def test_bandwidth_per_node(tiny_metrics):
    _, m = tiny_metrics
    bw = m.bandwidth
    assert bw.node.tolist() == [0, 1, 2]
    assert bw.subscription.tolist() == [100, 200, 50]
    assert bw.event.tolist() == [0, 450, 200]
    assert bw.probe.tolist() == [0, 450, 0]
    assert bw.dht.tolist() == [0, 100, 0] and bw.transport.tolist() == [40, 0, 0]
    stats = m.bandwidth_stats()
    assert stats["per_subscription"]["mean"] == pytest.approx(350 / 3 / 2)
    assert stats["per_subscription"]["max"] == 100
    assert stats["per_event"]["mean"] == pytest.approx(650 / 3)
    assert stats["per_event_probe"]["mean"] == pytest.approx(150)
    assert m.subscriptions == 2 and m.events == 1 and m.nodes == 3


def test_diagnostics_of_the_tiny_run(tiny_metrics):
    rep, _ = tiny_metrics
    d = diagnostics(rep)
    assert d["messages"] == 8 and d["lost"] == 1 and d["roots"] == 4
    assert d["max_depth"] == 2 and d["rounds"] == 2
    assert d["max_queueing_s"] == pytest.approx(0.005)
    assert d["identity_max_diff_s"] < 1e-9
