"""The latency interface: SiteModel's fast path and closed-form mean, the synthetic model, load_model."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from p2pubsub.latency import LOOPBACK_S, SiteModel, SyntheticModel, load_model


def small_site_model() -> SiteModel:
    base = np.array([[0.001, 0.030, 0.050], [0.032, 0.002, 0.040], [0.050, 0.040, 0.003]])
    return SiteModel("t", base, [0, 0, 1, 2, 2], [0.001, 0.002, 0.0, 0.0005, 0.003], ["A", "B", "C"])


def test_site_model_one_way_adds_access_delays_and_keeps_direction():
    m = small_site_model()
    assert m.one_way(0, 2) == pytest.approx(0.030 + 0.001 + 0.0)
    assert m.one_way(2, 0) == pytest.approx(0.032 + 0.0 + 0.001)  # asymmetric sites stay asymmetric
    assert m.one_way(0, 1) == pytest.approx(0.001 + 0.001 + 0.002)  # same site: the site's own delay
    assert m.one_way(3, 3) == LOOPBACK_S
    assert m.site_of(4) == "C"
    assert m.rtt(0, 2) == pytest.approx(m.one_way(0, 2) + m.one_way(2, 0))


def test_site_model_matrix_mean_and_export_agree_with_one_way():
    m = small_site_model()
    mat = m.matrix_s()
    for a in range(m.hosts):
        for b in range(m.hosts):
            assert mat[a, b] == pytest.approx(m.one_way(a, b))
    n = m.hosts
    brute = 2000 * sum(m.one_way(a, b) for a in range(n) for b in range(n) if a != b) / (n * (n - 1))
    assert m.mean_rtt_ms() == pytest.approx(brute)
    rows = list(m.export_rows([4, 0]))
    assert rows == [
        (4, 4, pytest.approx(LOOPBACK_S * 1000)),
        (4, 0, pytest.approx(m.one_way(4, 0) * 1000)),
        (0, 4, pytest.approx(m.one_way(0, 4) * 1000)),
        (0, 0, pytest.approx(LOOPBACK_S * 1000)),
    ]
    table = m.to_arrow([1, 3])
    assert table.column_names == ["src_host", "dst_host", "one_way_ms"]
    assert table.column("dst_host").to_pylist() == [1, 3, 1, 3]
    assert table.column("one_way_ms").to_pylist()[1] == pytest.approx(m.one_way(1, 3) * 1000)


def test_site_model_rejects_missing_or_negative_entries():
    with pytest.raises(ValueError, match="finite and non-negative"):
        SiteModel("t", np.array([[0.0, np.nan], [0.1, 0.0]]), [0, 1], [0.0, 0.0])
    with pytest.raises(ValueError, match="square"):
        SiteModel("t", np.zeros((2, 3)), [0], [0.0])
    with pytest.raises(ValueError, match="site indices"):
        SiteModel("t", np.zeros((2, 2)), [0, 2], [0.0, 0.0])


def test_synthetic_hits_its_target_mean_and_is_symmetric():
    m = SyntheticModel(300, seed=4, mean_rtt_ms=180.0)
    assert m.mean_rtt_ms() == pytest.approx(180.0, rel=1e-9)
    mat = m.matrix_s()
    assert np.allclose(mat, mat.T)
    assert (mat > 0).all()
    n = m.hosts
    assert 2000 * (mat.sum() - np.trace(mat)) / (n * (n - 1)) == pytest.approx(180.0, rel=1e-9)
    for a, b in [(0, 1), (5, 299), (17, 17)]:
        assert m.one_way(a, b) == pytest.approx(mat[a, b])
    other = SyntheticModel(50, seed=4, mean_rtt_ms=60.0, access_delay_ms=1.0)
    assert other.mean_rtt_ms() == pytest.approx(60.0, rel=1e-9)


def test_synthetic_is_deterministic_per_seed():
    a, b, c = SyntheticModel(40, seed=1), SyntheticModel(40, seed=1), SyntheticModel(40, seed=2)
    assert np.array_equal(a.matrix_s(), b.matrix_s())
    assert not np.array_equal(a.matrix_s(), c.matrix_s())


def test_synthetic_rejects_impossible_targets():
    with pytest.raises(ValueError, match="must exceed"):
        SyntheticModel(10, seed=1, mean_rtt_ms=4.0, access_delay_ms=2.0)
    with pytest.raises(ValueError, match="nodes"):
        SyntheticModel(0, seed=1)


def test_load_model_specs(tmp_path):
    assert isinstance(load_model("synthetic", 20, 3), SyntheticModel)
    king = tmp_path / "k.txt"
    king.write_text("0 20000 30000\n20000 0 40000\n30000 40000 0\n")
    m = load_model(f"king:{king}", 3, 1)
    assert m.name == "king"
    assert sorted(round(m.rtt(a, b) * 1000, 6) for a, b in [(0, 1), (0, 2), (1, 2)]) == [20.0, 30.0, 40.0]
    for bad in ["kingdom", "king:", "RIPE", ""]:
        with pytest.raises(ValueError, match="latency"):
            load_model(bad, 3, 1)


def test_ripe_falls_back_to_synthetic_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("P2PUBSUB_DATA", str(tmp_path / "nowhere"))
    with caplog.at_level(logging.WARNING, logger="p2pubsub.latency"):
        m = load_model("ripe", 30, 1)
    assert isinstance(m, SyntheticModel)
    assert "falling back to the synthetic model" in caplog.text
    assert "P2PUBSUB_DATA" in caplog.text
    assert math.isclose(m.mean_rtt_ms(), 180.0, rel_tol=1e-9)


def test_lookup_is_one_way_dense_or_not(monkeypatch):
    import p2pubsub.latency.base as base

    for m in (small_site_model(), SyntheticModel(30, seed=2)):
        look = m.lookup()
        assert look.__self__ is m.lookup().__self__  # the dense matrix is built once
        for a in range(m.hosts):
            for b in range(m.hosts):
                assert look(a, b) == pytest.approx(m.one_way(a, b), rel=1e-12)
        assert look(1, 1) == LOOPBACK_S
    monkeypatch.setattr(base, "DENSE_LIMIT", 3)
    big = small_site_model()
    assert big.lookup() == big.one_way  # beyond the limit: O(hosts) memory, no dense matrix
