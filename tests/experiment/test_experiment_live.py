"""The CI-sized live churn experiment (bench/scenarios/churn-ci.toml): 8-9 real node processes on loopback.

Without crashes (a join and a graceful leave while events flow) the run must be exact: nothing missing, false or
duplicate, no acknowledged subscription lost. With the SIGKILL the issue's criteria (no subscription lost, >= 99%
delivered after the recovery window, no false positive) need replication of tree state and takeover on crash:
that test is an expected failure until replication lands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from p2pubsub.experiment import ExperimentOptions, run_experiment
from p2pubsub.scenario import load_scenario, parse_scenario
from p2pubsub.trace import MESSAGES, SCHEMAS

CHURN_CI = Path(__file__).resolve().parents[2] / "bench" / "scenarios" / "churn-ci.toml"
LATENCY_KEYS = {"mean", "p50", "p90", "p99", "max"}


def check_structure(s: dict, steps: int) -> None:
    for key in ("nodes", "subscriptions", "events", "deliveries", "subscriptions_lost", "recovery_s", "latency_ms",
                "wall_s", "churn", "checks", "problems", "verify", "traces", "timeline"):
        assert key in s, key
    assert {"expected", "delivered", "missing", "false_positive", "duplicate"} <= set(s["deliveries"])
    assert set(s["latency_ms"]["subscribe"]) >= LATENCY_KEYS and set(s["latency_ms"]["delivery"]) >= LATENCY_KEYS
    assert len(s["recovery_s"]) == len(s["churn"]) == steps
    assert s["subscriptions_detail"]["acknowledged"] == s["subscriptions"] > 20
    assert s["events"] == s["events_detail"]["scheduled"] >= 300
    assert s["deliveries"]["expected"] > 100 and s["deliveries"]["reader"]["dropped"] == 0
    assert s["wall_s"] > 0


def check_traces(out: Path, s: dict) -> None:
    for name in SCHEMAS:
        assert (out / f"{name}.parquet").exists(), name
    msgs = pq.read_table(out / "messages.parquet")
    assert msgs.schema.equals(MESSAGES, check_metadata=False)
    ids = msgs.column("id").to_pylist()
    assert ids == list(range(len(ids))) and len(ids) == s["traces"]["messages"] > 1000
    parents = [p for p in msgs.column("parent_id").to_pylist() if p is not None]
    assert parents and all(0 <= p < len(ids) for p in parents)
    assert s["traces"]["type_mismatches"] == 0 and s["traces"]["bad_lines"] == 0
    assert s["traces"]["deliveries"] >= s["deliveries"]["delivered"]


def test_ci_experiment_with_joins_and_graceful_leaves_is_exact(tmp_path):
    base = load_scenario(CHURN_CI).to_dict()
    base["name"] = "churn-ci-nocrash"
    base["churn"] = [c for c in base["churn"] if "crash" not in c]
    path = tmp_path / "churn-ci-nocrash.toml"
    path.write_text(parse_scenario(base).to_toml())
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "p2pubsub", "experiment", str(path), "--out", str(out), "--check", "exact",
         "--no-progress"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "deliveries: expected" in proc.stdout
    s = json.loads((out / "summary.json").read_text())
    check_structure(s, 2)
    d = s["deliveries"]
    assert (d["missing"], d["false_positive"], d["duplicate"]) == (0, 0, 0)
    assert s["subscriptions_lost"] == 0 and s["verify"]["checked"] > 20 and s["verify"]["requirements"] > 0
    assert s["verify"]["deliveries"]["false_positive"] == 0
    # nothing was lost, so eventual recovery is immediate; on-time recovery is a speed figure: not asserted
    assert s["recovery_eventual_s"] == [0.0, 0.0] and all(r is None or r >= 0 for r in s["recovery_s"])
    join, leave = s["churn"]
    assert join["action"] == "join" and join["nodes"][0]["index"] == 8 and join["nodes"][0]["join_s"] > 0
    assert leave["action"] == "leave" and leave["nodes"][0]["exit_code"] == 0
    assert s["node_counts"] == {"initial": 8, "joined": 1, "left": 1, "crashed": 0, "alive_at_end": 8,
                                "unexpected_exits": 0}
    assert s["problems"] == [] and s["checks"]["exact"]
    assert all(t["exit_code"] == 0 for t in s["teardown"])
    check_traces(out, s)
    assert s["traces"]["unmatched_received"] == 0  # nobody was killed: every receipt pairs with its send
    for f in ("subscriptions", "events", "notifications"):
        assert (out / "client" / f"{f}.parquet").exists()


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("churn-ci")
    options = ExperimentOptions(recovery_window_s=3.0, verify_timeout_s=3.0, progress=False)
    return out, run_experiment(load_scenario(CHURN_CI), out, options)


def test_ci_experiment_with_a_crash_runs_and_reports_it(crash_run):
    out, s = crash_run
    check_structure(s, 3)
    crash = s["churn"][2]
    assert crash["action"] == "crash" and crash["nodes"][0]["exit_code"] == -9 and crash["nodes"][0]["signal"] \
        == "SIGKILL"
    assert s["node_counts"]["crashed"] == 1 and s["node_counts"]["unexpected_exits"] == 0
    assert s["churn"][1]["nodes"][0]["exit_code"] == 0
    assert s["problems"] == []
    assert s["deliveries"]["after_recovery"]["events"] > 20  # events after the crash's recovery window exist
    assert isinstance(s["subscriptions_lost"], int)
    check_traces(out, s)


def test_ci_experiment_recovers_from_a_crash(crash_run):
    """Issue 4's criteria on the CI-sized run: replicas take over the SIGKILLed node's tree state."""
    _, s = crash_run
    d = s["deliveries"]
    assert s["subscriptions_lost"] == 0
    assert d["after_recovery"]["ratio"] >= 0.99
    assert d["false_positive"] == 0 and d["duplicate"] == 0
    assert s["recovery_eventual_s"][2] is not None
