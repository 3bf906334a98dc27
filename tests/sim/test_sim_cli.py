"""`p2pubsub sim` on the command line: the one-line result, and a loud note when the latency model fell back."""

from __future__ import annotations

import json

from p2pubsub.sim.cli import main

TINY = """
name = "tiny"
seed = 3
mode = "dht"

[network]
nodes = 4
latency = "ripe"

[workload]
kind = "thesis"
subscriptions_per_node = 1
events = 5
"""


def test_a_run_without_the_ripe_data_says_which_model_it_used(tmp_path, monkeypatch, capsys):
    (tmp_path / "tiny.toml").write_text(TINY)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("P2PUBSUB_DATA", str(tmp_path / "empty"))
    assert main([str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    brief = json.loads(out.strip().splitlines()[-1])
    assert brief["latency_model"] == "synthetic"
    assert "latency model 'ripe' was not available" in err and "'synthetic'" in err


def test_a_run_on_the_model_it_asked_for_has_no_note(tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(TINY.replace('"ripe"', '"synthetic"'))
    assert main([str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1])["latency_model"] == "synthetic"
    assert "not available" not in err
