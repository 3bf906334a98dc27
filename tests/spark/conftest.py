"""Fixtures for the Spark tests: one local SparkSession for the whole test session, fake runs, an oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from p2pubsub.trace.synthetic import generate_suite, tiny_run
from spark.session import JavaNotFoundError, check_java, get_session

#: Small data: two local cores, two shuffle partitions, no UI, no adaptive re-planning (it only adds
#: planning time on inputs this small).
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture(scope="session")
def spark_session():
    try:
        check_java()
    except JavaNotFoundError as e:
        pytest.skip(f"Spark tests need Java: {e}")
    session = get_session("local[2]", app_name="p2pubsub-tests", conf=TEST_CONF)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def suite_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Five fake runs: multicast+cut-off at 12, 16, 24 nodes; unicast and no cut-off at 12 nodes."""
    return generate_suite(tmp_path_factory.mktemp("suite"), sizes=(12, 16, 24), seed=1)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny") / "tiny"
    tiny_run(d)
    return d


def retime_oracle(run_dir: Path, scale: float = 1.0) -> dict[str, Any]:
    """The re-timing rule of p2pubsub.trace.schema applied literally, one message at a time, in Python,
    with every one-way latency multiplied by `scale`. Returns replayed receipts by message id, deliveries
    by (event, subscription) and installs by subscription."""
    t = {
        n: pq.read_table(run_dir / f"{n}.parquet").to_pylist()
        for n in ("messages", "subscriptions", "events", "deliveries", "nodes", "latency")
    }
    host = {r["node"]: r["host"] for r in t["nodes"]}
    lat = {(r["src_host"], r["dst_host"]): r["one_way_ms"] / 1000.0 for r in t["latency"]}
    requested = {r["subscription_id"]: r["requested_at"] for r in t["subscriptions"]}
    published = {r["event_id"]: r["published_at"] for r in t["events"]}
    msgs = {m["id"]: m for m in t["messages"]}

    depth: dict[int, int] = {}
    for mid in msgs:
        chain = []
        cur = mid
        while cur is not None and cur not in depth:
            chain.append(cur)
            cur = msgs[cur]["parent_id"]
        base = -1 if cur is None else depth[cur]
        for k in reversed(chain):
            base += 1
            depth[k] = base

    received: dict[int, float | None] = {}
    for mid in sorted(msgs, key=depth.__getitem__):
        m = msgs[mid]
        p = m["parent_id"]
        if p is not None:
            sent = received[p] + (m["sent_at"] - msgs[p]["received_at"])
        else:
            action = published.get(m["event_id"]) if m["event_id"] else requested.get(m["subscription_id"])
            sent = m["sent_at"] if action is None else action + (m["sent_at"] - action)
        if m["received_at"] is None:
            received[mid] = None
            continue
        lo = lat[(host[m["src"]], host[m["dst"]])]
        q = max(0.0, m["received_at"] - m["sent_at"] - lo)
        received[mid] = sent + scale * lo + q

    def after(cause: int | None, t_orig: float) -> float:
        return t_orig if cause is None else received[cause] + (t_orig - msgs[cause]["received_at"])

    deliveries = {
        (d["event_id"], d["subscription_id"]): after(d["cause_id"], d["delivered_at"])
        for d in t["deliveries"]
    }
    installs = {
        s["subscription_id"]: after(s["cause_id"], s["installed_at"])
        for s in t["subscriptions"]
        if s["installed_at"] is not None
    }
    return {"received": received, "deliveries": deliveries, "installs": installs}


@pytest.fixture(scope="session")
def oracle():
    return retime_oracle
