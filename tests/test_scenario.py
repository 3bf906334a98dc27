"""Scenario files: defaults, a precise error for every rule, round trips, and the shipped examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pubsub.latency import SyntheticModel
from p2pubsub.latency import from_scenario as latency_for
from p2pubsub.model import parse_event, parse_filter
from p2pubsub.scenario import ChurnStep, Scenario, ScenarioError, Scot, load_scenario, parse_scenario
from p2pubsub.workload import from_scenario as workload_for

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "bench" / "scenarios").glob("*.toml"))

ISSUE_EXAMPLE = """
name = "churn-20"
seed = 1
mode = "dht"                 # "dht" | "scot" | "padres"
[network]
nodes = 20
latency = "ripe"             # "ripe" | "synthetic" | "king:PATH" (ignored by live runs)
[protocol]
leaf_capacity = [10, 30]
min_probe_level = 2
max_probe_level = 10
probe_p = 0.5
multicast = true
cutoff = true
replicas = 3
[workload]
kind = "thesis"              # "thesis" | "stocks"
subscriptions_per_node = 5
subscribe_interval_ms = 50
events = 2000
publish_interval_ms = 10
[[churn]]
at_s = 10
crash = 5                    # or: join = N, leave = N
"""


def test_the_issue_example_parses():
    s = parse_scenario(ISSUE_EXAMPLE)
    assert s.name == "churn-20" and s.seed == 1 and s.mode == "dht"
    assert s.network.nodes == 20 and s.network.latency == "ripe"
    assert s.protocol.leaf_capacity == (10, 30) and s.protocol.replicas == 3
    assert s.workload.subscribe_interval_ms == 50.0 and s.workload.events == 2000
    assert s.churn == (ChurnStep(10.0, "crash", 5),)
    assert s.protocol.cutoff_fraction == 0.25  # defaults fill what the file leaves out
    assert s.scot is None


def test_minimal_scenario_takes_every_default():
    s = parse_scenario("[network]\nnodes = 3\n", name="tiny")
    assert s == Scenario("tiny", s.network)
    assert s.network.latency == "ripe" and s.network.access_delay_ms is None
    assert s.workload.kind == "thesis" and s.workload.events == 10_000
    assert s.workload.subscribe_interval_ms == 2000.0 and s.workload.publish_interval_ms == 1000.0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_shipped_examples_parse_and_round_trip(path):
    s = load_scenario(path)
    assert s.name == path.stem
    assert parse_scenario(s.to_toml()) == s
    assert parse_scenario(s.to_dict()) == s


def test_examples_exist():
    assert {p.name for p in EXAMPLES} >= {"thesis-1000.toml", "stocks-100.toml", "ci-small.toml"}


def test_round_trip_of_every_table():
    text = """
name = "all"
seed = 9
mode = "scot"
drain_s = 5.5
[network]
nodes = 7
latency = "king:data/king \\"x\\".txt"
access_delay_ms = 1.5
link_capacity_kbps = 1000
loss = 0.01
[protocol]
cutoff_fraction = 0.1
seen_ttl_s = 5
tick_interval_s = 0.5
[workload]
kind = "stocks"
stock_mix = [0.95, 0.0, 0.05]
stock_placement = "clustered"
symbols = 10
absent = "match"
[[churn]]
at_s = 1
join = 2
[[churn]]
at_s = 1
leave = 8
[scot]
edges = [[0, 1], [1, 2]]
clusters = 3
tau = 10
t_w_ms = 50
"""
    s = parse_scenario(text)
    assert s.network.latency == 'king:data/king "x".txt'
    assert s.scot == Scot(topology=None, edges=((0, 1), (1, 2)), clusters=3)
    assert s.churn_totals() == {"crash": 0, "join": 2, "leave": 8}
    assert s.protocol.tick_interval_s == 0.5
    assert parse_scenario(s.to_toml()) == s
    assert "event_present_prob" not in s.to_dict()["workload"]  # thesis-only keys stay out of a stocks scenario


def test_scot_mode_gets_a_default_topology():
    s = parse_scenario('mode = "scot"\n[network]\nnodes = 54\n[workload]\nkind = "stocks"\n', name="x")
    assert s.scot == Scot()
    assert s.scot.topology == "S_e"


def test_padres_mode_takes_the_scot_table_too():
    text = ('mode = "padres"\n[network]\nnodes = 56\n[workload]\nkind = "stocks"\n'
            "[scot]\ndynamic = true\nlease_s = 4\nadvertise_interval_ms = 0\n")
    s = parse_scenario(text, name="p")
    assert s.scot == Scot(dynamic=True, lease_s=4.0, advertise_interval_ms=0.0)
    assert parse_scenario(s.to_toml()) == s
    plain = 'mode = "padres"\n[network]\nnodes = 5\n[workload]\nkind = "stocks"\n'
    assert parse_scenario(plain, name="q").scot == Scot()


BASE = "[network]\nnodes = 10\n"


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("nodes = 3\n" + BASE, "nodes", "unknown key"),
        ("[network]\nlatency = 'ripe'\n", "network.nodes", "is required"),
        ("name = 'x'\n", "network", "is required"),
        ("name = 'a b'\n" + BASE, "name", "must be a name"),
        ("seed = -1\n" + BASE, "seed", "must be >= 0"),
        ("seed = 1.5\n" + BASE, "seed", "must be an integer, got float 1.5"),
        ("mode = 'pastry'\n" + BASE, "mode", "must be one of ['dht', 'scot', 'padres']"),
        ("drain_s = -1\n" + BASE, "drain_s", "must be >= 0.0"),
        ("[network]\nnodes = 0\n", "network.nodes", "must be >= 1"),
        ("[network]\nnodes = true\n", "network.nodes", "must be an integer, got a boolean"),
        ("[network]\nnodes = 5\nlatency = 'king:'\n", "network.latency", "'ripe', 'synthetic' or 'king:PATH'"),
        ("[network]\nnodes = 5\nlatency = 3\n", "network.latency", "must be a string"),
        ("[network]\nnodes = 5\nloss = 1.0\n", "network.loss", "must be in [0, 1)"),
        ("[network]\nnodes = 5\nlink_capacity_kbps = 0\n", "network.link_capacity_kbps", "must be > 0.0"),
        ("[network]\nnodes = 5\nbandwidth = 3\n", "network.bandwidth", "unknown key"),
        ("network = 5\n", "network", "must be a table"),
        (BASE + "[protocol]\nleaf_capacity = [10]\n", "protocol.leaf_capacity", "must have 2 elements"),
        (BASE + "[protocol]\nleaf_capacity = [0, 5]\n", "protocol.leaf_capacity[0]", "must be >= 1"),
        (BASE + "[protocol]\nleaf_capacity = [30, 10]\n", "protocol.leaf_capacity", "lo <= hi"),
        (BASE + "[protocol]\nleaf_capacity = 10\n", "protocol.leaf_capacity", "must be an array"),
        (BASE + "[protocol]\nmin_probe_level = 5\nmax_probe_level = 4\n", "protocol.min_probe_level", "<= protocol"),
        (BASE + "[protocol]\nmax_probe_level = 65\n", "protocol.max_probe_level", "must be <= 64"),
        (BASE + "[protocol]\nprobe_p = 0\n", "protocol.probe_p", "must be in (0, 1]"),
        (BASE + "[protocol]\nprobe_p = 1.5\n", "protocol.probe_p", "must be in (0, 1]"),
        (BASE + "[protocol]\nmulticast = 'yes'\n", "protocol.multicast", "must be true or false"),
        (BASE + "[protocol]\ncutoff_fraction = 0\n", "protocol.cutoff_fraction", "must be in (0, 1]"),
        (BASE + "[protocol]\nreplicas = 11\n", "protocol.replicas", "must be <= network.nodes (10)"),
        (BASE + "[protocol]\nreplicas = 0\n", "protocol.replicas", "must be >= 1"),
        (BASE + "[protocol]\nseen_ttl_s = 0\n", "protocol.seen_ttl_s", "must be > 0.0"),
        (BASE + "[protocol]\ntick_interval_s = -1\n", "protocol.tick_interval_s", "must be > 0.0"),
        (BASE + "[workload]\nkind = 'zipf'\n", "workload.kind", "must be one of ['thesis', 'stocks']"),
        (BASE + "[workload]\nevents = -1\n", "workload.events", "must be >= 0"),
        (BASE + "[workload]\nsubscribe_interval_ms = 'fast'\n", "workload.subscribe_interval_ms", "must be a number"),
        (BASE + "[workload]\nabsent = 'ignore'\n", "workload.absent", "must be one of"),
        (BASE + "[workload]\nevent_present_prob = 0\n", "workload.event_present_prob", "must be in (0, 1]"),
        (BASE + "[workload]\nstock_mix = [0.7, 0.25, 0.05]\n", "workload.stock_mix", "does not apply"),
        (BASE + "[workload]\nkind = 'stocks'\nshuffle_subranges = true\n", "workload.shuffle_subranges", "does not"),
        (BASE + "[workload]\nkind = 'stocks'\nstock_mix = [0.5, 0.5, 0.5]\n", "workload.stock_mix", "sum to 1"),
        (BASE + "[workload]\nkind = 'stocks'\nstock_mix = [1.5, -0.5, 0]\n", "workload.stock_mix[0]", "<= 1.0"),
        (BASE + "[workload]\nkind = 'stocks'\nsymbols = 0\n", "workload.symbols", "must be >= 1"),
        (
            "[network]\nnodes = 1\n[protocol]\nreplicas = 1\n"
            "[workload]\nkind = 'stocks'\nstock_placement = 'clustered'\n",
            "workload.stock_placement",
            "needs network.nodes >= 2",
        ),
        (BASE + "[[churn]]\ncrash = 2\n", "churn[0].at_s", "is required"),
        (BASE + "[[churn]]\nat_s = 1\n", "churn[0]", "exactly one of crash, join, leave; got none"),
        (BASE + "[[churn]]\nat_s = 1\ncrash = 1\njoin = 1\n", "churn[0]", "got ['crash', 'join']"),
        (BASE + "[[churn]]\nat_s = 1\ncrash = 0\n", "churn[0].crash", "must be >= 1"),
        (BASE + "[[churn]]\nat_s = -1\ncrash = 1\n", "churn[0].at_s", "must be >= 0.0"),
        (BASE + "[[churn]]\nat_s = 1\nkill = 1\n", "churn[0].kill", "unknown key"),
        (BASE + "[[churn]]\nat_s = 5\ncrash = 1\n[[churn]]\nat_s = 4\njoin = 1\n", "churn[1].at_s", "not decrease"),
        (BASE + "[[churn]]\nat_s = 1\ncrash = 10\n", "churn[0].crash", "would leave no live node (10 alive before)"),
        (
            BASE + "[[churn]]\nat_s = 1\ncrash = 9\n[[churn]]\nat_s = 2\nleave = 1\n",
            "churn[1].leave",
            "would leave no live node (1 alive before)",
        ),
        ("churn = 3\n" + BASE, "churn", "must be an array"),
        (BASE + "[scot]\nclusters = 2\n", "scot", "applies to modes 'scot' and 'padres' only"),
        ("mode = 'scot'\n" + BASE + "[scot]\ntopology = 'S_e'\nedges = [[0, 1]]\n", "scot.edges", "either"),
        ("mode = 'scot'\n" + BASE + "[scot]\nedges = [[0, 0]]\n", "scot.edges[0]", "joins two brokers"),
        ("mode = 'scot'\n" + BASE + "[scot]\nedges = [[0, 1], [1, 0]]\n", "scot.edges[1]", "listed twice"),
        ("mode = 'scot'\n" + BASE + "[scot]\nedges = [[0, 1, 2]]\n", "scot.edges[0]", "must have 2 elements"),
        ("mode = 'scot'\n" + BASE + "[scot]\nedges = []\n", "scot.edges", "at least one edge"),
        ("mode = 'scot'\n" + BASE + "[scot]\ntau = 0\n", "scot.tau", "must be > 0.0"),
        ("mode = 'scot'\n" + BASE + "[scot]\nclusters = 0\n", "scot.clusters", "must be >= 1"),
        ("mode = 'scot'\n" + BASE + "[scot]\nlease_s = 0.1\n", "scot.lease_s", "must be > 0.1"),
        ("mode = 'scot'\n" + BASE + "[scot]\ndynamic = 1\n", "scot.dynamic", "must be true or false"),
        ("mode = 'padres'\n" + BASE, "workload.kind", "needs 'stocks'"),
    ],
)
def test_every_rule_has_a_precise_error(text, key, message):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, name="t")
    assert info.value.key == key
    assert message in info.value.message


def test_errors_name_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[network]\nnodes = 5\n[protocol]\nprobe_p = 2\n")
    with pytest.raises(ScenarioError, match=r"^bad\.toml: protocol\.probe_p: must be in \(0, 1\], got 2\.0$"):
        load_scenario(p)
    p.write_text("[network\nnodes = 5\n")
    with pytest.raises(ScenarioError, match=r"^bad\.toml: not valid TOML"):
        load_scenario(p)
    with pytest.raises(ScenarioError, match="name: is required"):
        parse_scenario(BASE)


def test_scenario_builds_its_workload_and_latency_model():
    text = (
        "name = 'w'\n[network]\nnodes = 12\nlatency = 'synthetic'\naccess_delay_ms = 1\n"
        "[protocol]\nleaf_capacity = [2, 4]\n"
        "[workload]\nevents = 50\nsubscriptions_per_node = 2\nabsent = 'match'\nevent_present_prob = 0.5\n"
        "[[churn]]\nat_s = 1\njoin = 3\n"
    )
    s = parse_scenario(text)
    w = workload_for(s)
    schema = w.parsed_schema()
    assert schema.absent.value == "match"
    assert len(w.subscriptions) == 24 and w.event_count == 50
    assert len(w.capacities) == 15 and set(w.capacities) <= {2, 3, 4}  # joined nodes get capacities too
    assert max(sub.node for sub in w.subscriptions) < 12
    for sub in w.subscriptions:
        parse_filter(schema, sub.filter)
    for e in w.events():
        parse_event(schema, e.attributes)
    m = latency_for(s)
    assert isinstance(m, SyntheticModel) and m.hosts == 15 and m.access_delay_ms == 1.0


def test_readme_documents_every_scenario_key():
    import p2pubsub.scenario as scenario_module

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = [line for line in scenario_module.__doc__.splitlines() if line.startswith("| `")]
    assert len(rows) > 30
    missing = [row for row in rows if row not in readme]
    assert not missing, f"README's scenario table lacks: {missing}"
