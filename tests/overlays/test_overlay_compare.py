"""The paper's directions (§10) on the stock workload in the harness, at small sizes. Only robust directions are
asserted (counts and virtual-time orderings, never wall-clock)."""

import pytest

from overlays.evaluation import burst, control_and_static
from overlays.messages import Phase


@pytest.fixture(scope="module")
def control():
    kw = {"publishers": 30, "subscribers": 150, "publications": 60, "seed": 3}
    return control_and_static("octopia", **kw), control_and_static("padres", **kw)


def test_clt_at_least_90_percent_smaller_than_srt(control):
    o, p = control
    assert o.adverts_per_broker <= 0.10 * p.adverts_per_broker


def test_fewer_ims_in_advertisement_broadcast_and_no_duplicates(control):
    o, p = control
    assert o.ims[Phase.ADVERTISE] < p.ims[Phase.ADVERTISE]
    assert o.ims[Phase.ADVERTISE] == 30 * 3  # one IM per secondary broker of the host region
    assert o.duplicates_discarded == 0 < p.duplicates_discarded


def test_same_deliveries_and_octopia_paths_bounded(control):
    o, p = control
    assert o.deliveries == p.deliveries > 0
    assert o.max_hops <= 5 + 1  # diam(G_af) + 1 (§9.1)


def test_idr_relieves_congestion_sooner_than_spr():
    spr = burst("octopia", False, n_pubs=500)
    idr = burst("octopia", True, n_pubs=500)
    assert spr.deliveries == spr.expected and idr.deliveries == idr.expected
    assert idr.diversions > 0 and spr.diversions == 0
    assert idr.settle_time < spr.settle_time
    assert idr.max_delay < spr.max_delay
    assert idr.mean_target_queue < spr.mean_target_queue


def test_baseline_burst_is_exact():
    r = burst("padres", True, n_pubs=200)
    assert r.deliveries == r.expected
