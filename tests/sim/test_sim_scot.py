"""`p2pubsub sim` with ``mode = "scot"`` (OctopiA) and ``mode = "padres"`` (the baseline): real `ScotNode`s on the
simulator, exact against the oracle under static and dynamic routing, deterministic for a seed, with the routing
tables, inter-broker messages and advertisement latency in the summary, and link capacities that delay messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from p2pubsub.datadir import describe_missing
from p2pubsub.scenario import load_scenario
from p2pubsub.sim.runner import run_scenario
from p2pubsub.sim.summary import comparable
from p2pubsub.trace.schema import FILES
from p2pubsub.workload.quotes import QUOTES_PARTS, quotes_folder

pytestmark = pytest.mark.skipif(quotes_folder() is None, reason=describe_missing(*QUOTES_PARTS))

SCENARIOS = Path(__file__).resolve().parents[2] / "bench" / "scenarios"


def scenario(mode: str, *, network: dict | None = None, scot: dict | None = None, workload: dict | None = None):
    sc = load_scenario(SCENARIOS / f"{mode}-ci.toml")
    for table, values in (("network", network), ("scot", scot), ("workload", workload)):
        if values:
            sc = replace(sc, **{table: replace(getattr(sc, table), **values)})
    return sc


def exact(summary: dict) -> bool:
    d = summary["deliveries"]
    return d["missing"] == d["false_positive"] == d["duplicate"] == d["unknown"] == 0 and d["expected"] > 100


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("scot-sim")
    return {mode: run_scenario(scenario(mode), out / mode) for mode in ("scot", "padres")} | {"dir": out}


@pytest.mark.parametrize("mode", ["scot", "padres"])
def test_exact_and_summarised(runs, mode):
    s = runs[mode]
    assert exact(s), s["deliveries"]
    assert s["nodes"] == 12 and s["subscriptions"] == 60 and s["events"] == 200
    assert not any(s["failures"].values()), s["failures"]
    assert s["overlay"]["formed_at_s"] is not None and s["overlay"]["advertisements"] == 6
    assert s["overlay"]["routing"] == {"scot": "octopia", "padres": "padres"}[mode]
    t = s["tables"]
    assert t["brokers"] == 12 and t["advertisement_table"] == {"scot": "CLT", "padres": "SRT"}[mode]
    for key in ("advertisements_per_broker", "subscriptions_per_broker"):
        assert 0 < t[key]["mean"] <= t[key]["max"]
    ims = s["inter_broker_messages"]
    assert min(ims["advertise"], ims["subscribe"], ims["publish"]) > 0
    assert ims["per_publication"] == ims["publish"] / 200
    for key in ("advertise", "subscribe", "delivery"):
        assert s["latency_ms"][key]["count"] > 0 and s["latency_ms"][key]["mean"] > 0
    # the trace logs broker messages as what they carry, with the publication's event id
    msgs = pq.read_table(runs["dir"] / mode / FILES["messages"], columns=["type", "event_id"]).to_pydict()
    pub_type = {"scot": "PublicationRoute", "padres": "TidPublication"}[mode]
    pubs = [e for t, e in zip(msgs["type"], msgs["event_id"], strict=True) if t == pub_type]
    assert len(pubs) == ims["publish"] and all(pubs) and "Tracked" not in msgs["type"]


def test_the_papers_directions_on_tables_and_advertisements(runs):
    """OctopiA §10: CLTs are smaller than SRTs (advertisements stay in the host region) and advertisement
    broadcast costs far fewer IMs; both see the same workload, so they owe the same deliveries."""
    o, p = runs["scot"], runs["padres"]
    assert o["deliveries"]["expected"] == p["deliveries"]["expected"]
    assert o["tables"]["advertisements_per_broker"]["mean"] < p["tables"]["advertisements_per_broker"]["mean"]
    assert p["tables"]["advertisements_per_broker"]["mean"] == 6  # flooded: every broker holds every one
    assert o["inter_broker_messages"]["advertise"] * 5 < p["inter_broker_messages"]["advertise"]
    assert p["overlay"]["duplicates_discarded"] > 0 == o["overlay"]["duplicates_discarded"]


@pytest.mark.parametrize("mode", ["scot", "padres"])
def test_same_seed_same_summary(runs, mode, tmp_path):
    again = run_scenario(scenario(mode), tmp_path)
    assert comparable(again) == comparable(runs[mode])


def test_same_summary_in_another_process(runs, tmp_path):
    """Nothing depends on the process's hash seed (set iteration order): a fresh interpreter with another
    PYTHONHASHSEED writes the same summary (the replica copies once went out in a set's order)."""
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    cmd = [sys.executable, "-m", "p2pubsub", "sim", str(SCENARIOS / "padres-ci.toml"), "--out", str(tmp_path),
           "--no-progress"]
    subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=Path(__file__).resolve().parents[2])
    other = json.loads((tmp_path / "summary.json").read_text())

    def plain(summary: dict) -> dict:
        return json.loads(json.dumps(comparable(summary), sort_keys=True))

    assert plain(other) == plain(runs["padres"])


@pytest.mark.parametrize("mode", ["scot", "padres"])
def test_dynamic_routing_is_exact(mode, tmp_path):
    # a low congestion threshold and a burst of quotes on slow links: IDR leaves the static paths
    s = run_scenario(scenario(mode, scot={"dynamic": True, "tau": 1.0, "t_w_ms": 20.0},
                              workload={"publish_interval_ms": 2.0}), tmp_path)
    assert exact(s), s["deliveries"]
    assert s["overlay"]["dynamic"] is True
    if mode == "scot":
        assert s["overlay"]["dynamic_diversions"] > 0


def test_link_capacity_delays_messages(runs, tmp_path):
    free = run_scenario(scenario("scot", network={"link_capacity_kbps": None}), tmp_path)
    capped = runs["scot"]
    assert exact(free)
    assert free["network"]["link_capacity_kbps"] is None and capped["network"]["link_capacity_kbps"] == 128
    assert capped["latency_ms"]["delivery"]["mean"] > free["latency_ms"]["delivery"]["mean"]

    def queueing(run_dir: Path) -> np.ndarray:
        """Each received message's transit time beyond the latency model's one-way delay (s)."""
        m = pq.read_table(run_dir / FILES["messages"], columns=["src", "dst", "sent_at", "received_at"]).to_pydict()
        lat = pq.read_table(run_dir / FILES["latency"]).to_pydict()
        one_way = {(a, b): ms / 1000 for a, b, ms in zip(lat["src_host"], lat["dst_host"], lat["one_way_ms"],
                                                           strict=True)}
        return np.array([r - s - one_way[(a, b)] for a, b, s, r in zip(m["src"], m["dst"], m["sent_at"],
                                                                       m["received_at"], strict=True)
                         if r is not None])

    assert np.abs(queueing(tmp_path)).max() < 1e-9  # unlimited links: transit is the model's delay exactly
    q = queueing(runs["dir"] / "scot")
    assert q.min() > -1e-9 and (q > 0.005).sum() > 100  # 128 kbit/s uplinks: many messages waited > 5 ms
