"""Node processes of the experiment runner: options from the scenario, loud start failures, leave and crash."""

from __future__ import annotations

import signal
import time

import pytest

from p2pubsub.experiment.procs import ExperimentError, Fleet, node_arguments, supported_node_options
from p2pubsub.scenario import parse_scenario


def clock() -> float:
    return time.monotonic()


def test_scenario_knobs_become_node_options_where_the_node_has_them():
    scenario = parse_scenario({"name": "x", "network": {"nodes": 4},
                               "protocol": {"multicast": False, "cutoff": False, "probe_p": 0.7, "replicas": 2}})
    supported = supported_node_options()
    assert {"--capacity", "--unicast", "--no-cutoff", "--probe-p", "--trace"} <= supported
    args, info = node_arguments(scenario, 17, supported)
    assert args[:2] == ["--capacity", "17"] and "--unicast" in args and "--no-cutoff" in args
    assert args[args.index("--probe-p") + 1] == "0.7"
    assert ("protocol.replicas" in info["passed"]) == ("--replicas" in supported)
    assert ("protocol.replicas" in info["unsupported"]) == ("--replicas" not in supported)
    # once the node has --replicas (replication landed), the same scenario passes it
    args, info = node_arguments(scenario, 17, supported | {"--replicas"})
    assert args[args.index("--replicas") + 1] == "2" and info["passed"]["protocol.replicas"] == "--replicas 2"


async def test_a_node_that_cannot_start_fails_loudly_naming_it_and_its_stderr(tmp_path):
    fleet = Fleet(tmp_path, clock)
    node = fleet.new(["--capacity", "lots"], None)
    with pytest.raises(ExperimentError, match=r"(?s)node 0 exited with status 2 before it was ready.*--capacity"):
        await fleet.launch(node)
    assert await fleet.teardown() == []


async def test_a_node_that_is_not_ready_in_time_is_named_and_killed_at_teardown(tmp_path):
    fleet = Fleet(tmp_path, clock, ready_timeout=0.01)
    node = fleet.new([], None)
    with pytest.raises(ExperimentError, match=r"node 0 printed no ready line within 0\.01 s"):
        await fleet.launch(node)
    down = await fleet.teardown(timeout=10)
    assert [d["index"] for d in down] == [0] and node.proc.returncode is not None


async def test_leave_exits_0_and_crash_is_a_sigkill(tmp_path):
    fleet = Fleet(tmp_path, clock, trace=False)
    first = await fleet.launch(fleet.new(["--capacity", "5"], None))
    second = await fleet.launch(fleet.new(["--capacity", "5"], first))
    assert first.url.startswith("http://127.0.0.1:") and second.dht[1] > 0 and second.bootstrap == 0
    assert await fleet.leave(second) == 0
    assert second.gone_at == second.signalled_at and first.gone_at == float("inf")
    assert [n.index for n in fleet.live()] == [0]
    assert await fleet.crash(first) == -signal.SIGKILL
    assert first.signal_name == "SIGKILL" and first.gone_at == first.signalled_at
    assert await fleet.teardown() == []
    assert fleet.problems == [] and not any(n.unexpected_exit for n in fleet.nodes)


async def test_teardown_stops_what_still_runs_and_reports_exit_codes(tmp_path):
    fleet = Fleet(tmp_path, clock, trace=False)
    await fleet.launch(fleet.new([], None))
    assert await fleet.teardown() == [{"index": 0, "exit_code": 0, "killed": False}]
    assert fleet.problems == []


async def test_a_node_that_dies_by_itself_is_a_problem(tmp_path):
    fleet = Fleet(tmp_path, clock, trace=False)
    node = await fleet.launch(fleet.new([], None))
    node.proc.send_signal(signal.SIGKILL)  # behind the fleet's back
    await node._wait
    assert node.unexpected_exit and node.gone_at == node.exited_at
    assert any("exited by itself" in p for p in fleet.problems)
    await fleet.teardown()


def test_an_experiment_whose_network_cannot_start_fails_loudly_and_still_writes_a_summary(tmp_path):
    import json

    from p2pubsub.experiment import ExperimentOptions, run_experiment

    scenario = parse_scenario({"name": "x", "network": {"nodes": 3}, "workload": {"events": 5}})
    with pytest.raises(ExperimentError, match="node 0 printed no ready line"):
        run_experiment(scenario, tmp_path, ExperimentOptions(ready_timeout_s=0.01, progress=False))
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["failed"] is True and any("node 0 printed no ready line" in p for p in s["problems"])
    assert s["nodes_detail"][0]["exit_code"] is not None  # torn down
