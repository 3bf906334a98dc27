"""The King loader on small files: both formats, missing and asymmetric pairs, malformed input."""

from __future__ import annotations

import numpy as np
import pytest

from p2pubsub.latency.king import KingFormatError, complete, load_king, parse_king, read_king


def write(tmp_path, text: str, name: str = "king.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


MATRIX = """\
# RTTs in microseconds, -1 = not measured
0      20000  30000  -1
20000  0      44000  50000
30000  40000  0      60000
-1     50000  60000  0
"""


def test_matrix_format_microseconds_missing_and_asymmetry(tmp_path):
    data = read_king(write(tmp_path, MATRIX))
    assert data.fmt == "matrix" and data.unit == "us" and data.servers == 4
    assert data.rtt_ms[0, 1] == 20.0
    assert np.isnan(data.rtt_ms[0, 3]) and np.isnan(data.rtt_ms[3, 0])
    assert np.isnan(np.diag(data.rtt_ms)).all()
    km = complete(data)
    one_way_ms = km.one_way_s * 1000
    assert one_way_ms[1, 2] == pytest.approx(22.0)  # measured 1->2 RTT 44 ms, halved
    assert one_way_ms[2, 1] == pytest.approx(20.0)  # measured 2->1 RTT 40 ms: the asymmetry is kept
    assert km.stats["imputed_pairs"] == 1
    assert np.isfinite(one_way_ms).all()
    # 0 and 3 were never measured: the imputed RTT lies in the range of the measured ones
    assert 10.0 < one_way_ms[0, 3] * 2 < 120.0
    assert one_way_ms[0, 3] == one_way_ms[3, 0]
    sym = complete(data, symmetric=True).one_way_s * 1000
    assert sym[1, 2] == sym[2, 1] == pytest.approx(21.0)


def test_one_direction_measured_is_used_both_ways(tmp_path):
    data = read_king(write(tmp_path, "0 -1 10000\n30000 0 20000\n10000 20000 0\n"))
    km = complete(data)
    assert km.one_way_s[0, 1] * 1000 == pytest.approx(15.0)
    assert km.one_way_s[1, 0] * 1000 == pytest.approx(15.0)
    assert km.stats["imputed_pairs"] == 0


def test_unmeasured_servers_are_dropped(tmp_path):
    data = read_king(write(tmp_path, "0 10000 -1\n10000 0 -1\n-1 -1 0\n"))
    km = complete(data)
    assert km.servers == (0, 1)
    assert km.stats["dropped_servers"] == 1
    model = load_king(write(tmp_path, "0 10000 -1\n10000 0 -1\n-1 -1 0\n", "k2.txt"), 2, seed=0)
    assert model.hosts == 2
    assert sorted(model.site_of(h) for h in range(2)) == ["1", "2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 1 2\n1 0\n2 1 0\n", "k.txt:2: 2 values, but the first row has 3"),
        ("0 10\n1x 0\n", "k.txt:2: column 1: '1x' is not a number"),
        ("0 10 20\n10 0 30\n", "2 rows of 3 values; the matrix must be square"),
        ("# nothing\n\n", "no matrix rows"),
        ("0 nan\n1 0\n", "not a finite number"),
    ],
)
def test_malformed_matrix_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(KingFormatError, match=message.replace("(", r"\(")):
        read_king(write(tmp_path, text, "k.txt"))


TOPOLOGY = """\
# p2psim E2EGraph: one-way latencies
topology E2EGraph 4
failure_model NullFailureModel

node 1
node 2
node 3
node 4
1,2 10
1,3 20
3,2 30
1,4 -1
2,4 1000000
3,4 25
"""


def test_topology_e2egraph_one_way_symmetric_in_ms(tmp_path):
    data = read_king(write(tmp_path, TOPOLOGY))
    assert data.fmt == "E2EGraph" and data.unit == "ms"
    assert data.rtt_ms[0, 1] == data.rtt_ms[1, 0] == 20.0  # one-way 10 ms = RTT 20 ms
    assert data.rtt_ms[1, 2] == data.rtt_ms[2, 1] == 60.0  # "3,2" fills the unordered pair
    assert np.isnan(data.rtt_ms[0, 3])  # negative: missing
    assert np.isnan(data.rtt_ms[1, 3])  # p2psim's 1000000 stuffing: missing
    km = complete(data)
    assert km.stats["imputed_pairs"] == 2
    assert km.one_way_s[0, 1] == pytest.approx(0.010)


def test_topology_units_are_detected_or_given(tmp_path):
    text = "topology E2EGraph 3\n1,2 45000\n1,3 60000\n2,3 30000\n"
    auto = read_king(write(tmp_path, text))
    assert auto.unit == "us" and auto.rtt_ms[0, 1] == pytest.approx(90.0)
    given = read_king(write(tmp_path, text), unit="ms")
    assert given.rtt_ms[0, 1] == pytest.approx(90000.0)
    with pytest.raises(ValueError, match="unit"):
        read_king(write(tmp_path, text), unit="s")


def test_topology_asym_graph_halves_directed_rtts(tmp_path):
    text = "topology E2EAsymGraph 2\n1,2 40\n2,1 60\n"
    km = complete(read_king(write(tmp_path, text)))
    assert km.one_way_s[0, 1] * 1000 == pytest.approx(20.0)
    assert km.one_way_s[1, 0] * 1000 == pytest.approx(30.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topology Euclidean\n1 0,0\n", "t.txt:1: expected 'topology E2EGraph N' first"),
        ("topology G2Graph 3\n", "t.txt:1: topology 'G2Graph' carries no latency matrix"),
        ("topology E2EGraph x\n", "t.txt:1: node count 'x' is not an integer"),
        ("topology E2EGraph 3\n1,4 10\n", r"t.txt:2: node numbers must lie in \[1, 3\], got 1,4"),
        ("topology E2EGraph 3\n1,1 10\n", "t.txt:2: a node's latency to itself"),
        ("topology E2EGraph 3\n1,2 10 5\n", "t.txt:2: expected 'I,J LATENCY'"),
        ("topology E2EGraph 3\n1;2 10\n", "t.txt:2: '1;2' is not a pair of node numbers"),
        ("topology E2EGraph 3\n1,b 10\n", "t.txt:2: '1,b' is not a pair of node numbers"),
        ("topology E2EGraph 3\n1,2 ten\n", "t.txt:2: 'ten' is not a number"),
        ("topology E2EGraph 3\n1,2 10\n2,1 11\n", "t.txt:3: pair 2,1 already given on line 2"),
        ("topology E2EGraph 3\nnode 7\n", r"t.txt:2: expected 'node I' with 1 <= I <= 3"),
    ],
)
def test_malformed_topology_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(KingFormatError, match=message):
        read_king(write(tmp_path, text, "t.txt"))


def test_imputation_recovers_a_planar_network():
    # distances between points in a plane are exactly what coordinates can represent: imputation must be close
    rng = np.random.default_rng(5)
    pts = rng.random((30, 2)) * 100.0
    rtt = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1)) + 4.0
    hide = np.triu(rng.random((30, 30)) < 0.2, k=1)
    hide |= hide.T
    lines = [" ".join("-1" if hide[i, j] else str(round(rtt[i, j] * 1000)) for j in range(30)) for i in range(30)]
    km = complete(parse_king(lines))
    got = km.one_way_s * 2000
    err = np.abs(got[hide] - rtt[hide])
    assert hide.sum() > 100
    assert np.median(err / rtt[hide]) < 0.05


def test_placement_distinct_then_cyclic_and_deterministic(tmp_path):
    p = write(tmp_path, MATRIX)
    a = load_king(p, 3, seed=9)
    assert len({a.site_of(h) for h in range(3)}) == 3
    b = load_king(p, 10, seed=9)
    sites = [b.site_of(h) for h in range(10)]
    assert sorted(set(sites)) == ["1", "2", "3", "4"]
    assert max(sites.count(s) for s in set(sites)) - min(sites.count(s) for s in set(sites)) <= 1
    # two nodes on one server are 1 ms RTT apart, not 0
    same = [(x, y) for x in range(10) for y in range(10) if x != y and sites[x] == sites[y]]
    assert b.rtt(*same[0]) == pytest.approx(0.001)
    assert np.array_equal(b.matrix_s(), load_king(p, 10, seed=9).matrix_s())
    assert not np.array_equal(b.matrix_s(), load_king(p, 10, seed=10).matrix_s())
