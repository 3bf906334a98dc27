"""Replay: the identity with each run's own matrix, and a King matrix with every latency doubled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from spark.load import load_runs
from spark.matrix import load_matrix
from spark.replay import diagnostics, replay


def _king_file(run_dir: Path, path: Path, scale: float) -> Path:
    """A King-format file (RTT in microseconds) of the run's matrix with one-way latencies times `scale`."""
    lat = pq.read_table(run_dir / "latency.parquet").to_pydict()
    n = max(max(lat["src_host"]), max(lat["dst_host"])) + 1
    rtt_us = np.zeros((n, n))
    for a, b, ms in zip(lat["src_host"], lat["dst_host"], lat["one_way_ms"], strict=True):
        rtt_us[a, b] = ms * scale * 2 * 1000
    path.write_text("# doubled\n" + "\n".join(" ".join(f"{v:.3f}" for v in row) for row in rtt_us) + "\n")
    return path


@pytest.fixture(scope="module")
def doubled(spark_session, suite_dirs, tmp_path_factory):
    """The three 12-node runs (one seed, so one latency matrix) replayed with a doubled King matrix."""
    dirs = [d for d in suite_dirs if d.name.startswith("n12-")]
    assert len(dirs) == 3
    king = _king_file(dirs[0], tmp_path_factory.mktemp("king") / "king.txt", 2.0)
    traces = load_runs(spark_session, dirs)
    hosts = [r["host"] for r in traces.nodes.select("host").distinct().collect()]
    rep = replay(traces, load_matrix(spark_session, king, hosts))
    return dirs, traces, rep


def test_identity_with_the_runs_own_matrix(doubled, oracle):
    dirs, _, rep = doubled
    diag = diagnostics(rep)
    assert diag["identity_max_diff_s"] < 1e-6
    assert diag["dangling_parents"] == diag["children_of_lost"] == diag["sent_before_parent_received"] == 0
    assert diag["faster_than_matrix"] == 0 and diag["imputed_pairs"] == 0
    assert diag["lost"] > 0 and diag["max_depth"] >= 4
    assert diag["rounds"] == int(np.ceil(np.log2(diag["max_depth"] + 1)))
    own = rep.deliveries.select("run", "delivered_own", "delivered_at").collect()
    assert max(abs(r["delivered_own"] - r["delivered_at"]) for r in own) < 1e-6
    # the literal rule with the original matrix reproduces the trace too
    ident = oracle(dirs[0], 1.0)
    recv = dict(
        zip(
            *pq.read_table(dirs[0] / "messages.parquet", columns=["id", "received_at"]).to_pydict().values(),
            strict=True,
        )
    )
    assert all(v is None or abs(v - recv[k]) < 1e-9 for k, v in ident["received"].items())


def test_doubled_matrix_retimes_as_the_rule_says(doubled, oracle):
    dirs, _, rep = doubled
    for i, run_dir in enumerate(dirs):
        want = oracle(run_dir, 2.0)
        got = {
            r["id"]: r["received_replayed"]
            for r in rep.messages.filter(f"run = {i}").select("id", "received_replayed").collect()
        }
        assert got.keys() == want["received"].keys()
        for mid, expected in want["received"].items():
            assert (got[mid] is None) == (expected is None)
            if expected is not None:
                assert abs(got[mid] - expected) < 1e-9, mid
        rows = rep.deliveries.filter(f"run = {i}").collect()
        assert len(rows) == len(want["deliveries"])
        for r in rows:
            assert (
                abs(r["delivered_replayed"] - want["deliveries"][(r["event_id"], r["subscription_id"])])
                < 1e-9
            )
        rows = rep.installs.filter(f"run = {i}").collect()
        for r in rows:
            assert abs(r["installed_replayed"] - want["installs"][r["subscription_id"]]) < 1e-9


def test_doubled_matrix_adds_each_paths_latency_once_more(doubled):
    """Doubling adds, to every delivery, the sum of the original one-way latencies along its chain."""
    dirs, _, rep = doubled
    run_dir = dirs[0]
    msgs = {m["id"]: m for m in pq.read_table(run_dir / "messages.parquet").to_pylist()}
    host = dict(
        zip(
            *pq.read_table(run_dir / "nodes.parquet", columns=["node", "host"]).to_pydict().values(),
            strict=True,
        )
    )
    lat = pq.read_table(run_dir / "latency.parquet").to_pydict()
    one_way = {
        (a, b): ms / 1000
        for a, b, ms in zip(lat["src_host"], lat["dst_host"], lat["one_way_ms"], strict=True)
    }

    def path_latency(mid: int | None) -> float:
        total = 0.0
        while mid is not None:
            m = msgs[mid]
            total += one_way[(host[m["src"]], host[m["dst"]])]
            mid = m["parent_id"]
        return total

    rows = rep.deliveries.filter("run = 0").collect()
    remote = [r for r in rows if r["cause_id"] is not None]
    assert remote
    for r in rows:
        added = r["latency_replayed_s"] - r["latency_s"]
        assert abs(added - path_latency(r["cause_id"])) < 1e-9
    assert all(r["latency_replayed_s"] > r["latency_s"] for r in remote if path_latency(r["cause_id"]) > 0)
