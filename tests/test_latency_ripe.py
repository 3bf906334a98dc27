"""The RIPE Atlas model: parsing, imputation that keeps the measured distribution, hold-out error, placement."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from p2pubsub.datadir import describe_missing
from p2pubsub.latency.ripe import (
    RIPE_PARTS,
    RipeFormatError,
    build_ripe_model,
    load_imputed,
    parse_ripe_rows,
    ripe_file,
    ripe_holdout,
)

needs_data = pytest.mark.skipif(ripe_file() is None, reason=describe_missing(*RIPE_PARTS))

HEADER = "cty1,cty2,rtt_cnt,rtt_avg,rtt_std,rtt_min,rtt_max\n"


def rows(text: str):
    return csv.reader(io.StringIO(HEADER + text))


def test_parse_drops_none_and_unplaceable_countries_and_merges_duplicates():
    t = parse_ripe_rows(rows("AA,BB,2,10.0,1,9,11\nBB,AA,6,30.0,1,9,11\nAA,None,5,99,1,1,1\nCC,CC,3,5,1,1,1\n"))
    assert t.countries == ("AA", "BB")  # CC only measured inside itself: it cannot be placed
    assert t.rtt_ms[0, 1] == t.rtt_ms[1, 0] == pytest.approx(25.0)  # count-weighted
    assert t.count[0, 1] == 8
    assert np.isnan(t.rtt_ms[0, 0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("AA,BB,2,10.0\n", "x.csv:2: expected 7 fields, got 4"),
        ("AA,BB,two,10.0,1,1,1\n", "x.csv:2: rtt_cnt 'two' / rtt_avg '10.0' not numbers"),
        ("AA,BB,2,-1,1,1,1\n", "x.csv:2: need rtt_cnt >= 1 and a positive rtt_avg"),
        (",BB,2,10,1,1,1\n", "x.csv:2: empty country code"),
        ("AA,AA,2,10,1,1,1\n", "x.csv: fewer than two countries"),
    ],
)
def test_parse_errors_name_file_and_line(text, message):
    with pytest.raises(RipeFormatError, match=message):
        parse_ripe_rows(rows(text), "x.csv")
    with pytest.raises(RipeFormatError, match=r"x\.csv:1: expected header"):
        parse_ripe_rows(csv.reader(io.StringIO("a,b\n")), "x.csv")


@needs_data
def test_table_matches_the_documented_data():
    imp = load_imputed()
    t = imp.table
    assert "None" not in t.countries
    assert 150 <= len(t.countries) <= 172
    assert np.array_equal(t.measured, t.measured.T)
    assert imp.stats["measured_mean_ms"] == pytest.approx(183.3, abs=2.0)
    assert imp.stats["intra_median_ms"] == pytest.approx(6.1, abs=0.5)
    full = imp.rtt_ms
    assert np.isfinite(full).all() and (full > 0).all()
    assert np.array_equal(full, full.T)
    # measured pairs are kept exactly; only the missing ones are imputed
    assert np.array_equal(full[t.measured], t.rtt_ms[t.measured])


@needs_data
def test_imputation_keeps_the_measured_distribution():
    s = load_imputed().stats
    # shortest-path filling would drop the all-pairs mean to ~118 ms; coordinates must not
    assert s["all_pairs_mean_ms"] > 0.95 * s["measured_mean_ms"]
    assert 0.8 * s["measured_mean_ms"] < s["imputed_mean_ms"] < 1.3 * s["measured_mean_ms"]
    assert s["fit_mae_ms"] < 30.0


@needs_data
def test_holdout_error_is_small_and_unbiased():
    rep = ripe_holdout(fraction=0.1, seed=1)
    assert rep.pairs > 600
    assert rep.mae_ms < 35.0
    assert rep.median_rel_error < 0.15
    assert abs(rep.bias_ms) < 10.0


@needs_data
def test_model_for_1000_nodes():
    m = build_ripe_model(1000, seed=1)
    assert m.hosts == 1000
    assert 185.0 < m.mean_rtt_ms() < 215.0
    mat = m.matrix_s(range(0, 1000, 7))
    assert np.isfinite(mat).all() and (mat > 0).all()
    assert np.array_equal(mat, mat.T)
    # same country: the intra-country RTT plus four access delays at most
    same = [(a, b) for a in range(60) for b in range(60) if a < b and m.site_of(a) == m.site_of(b)]
    assert same
    imp = load_imputed()
    code = {c: k for k, c in enumerate(imp.table.countries)}
    a, b = same[0]
    intra = imp.rtt_ms[code[m.site_of(a)], code[m.site_of(a)]]
    assert intra <= m.rtt(a, b) * 1000 <= intra + 4 * 3.0 + 1e-9
    measured = build_ripe_model(1000, seed=1, assign="measured")
    assert measured.mean_rtt_ms() < m.mean_rtt_ms()  # probe-dense Europe/US is closer together


@needs_data
def test_model_is_deterministic_per_seed():
    a, b, c = build_ripe_model(200, 5), build_ripe_model(200, 5), build_ripe_model(200, 6)
    assert np.array_equal(a.matrix_s(), b.matrix_s())
    assert not np.array_equal(a.matrix_s(), c.matrix_s())
    with pytest.raises(ValueError, match="assign"):
        build_ripe_model(10, 1, assign="population")
