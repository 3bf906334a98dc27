"""Property tests against the brute-force oracle: every publication reaches exactly the live subscriptions it
matches — no miss, no false positive, no duplicate — for OctopiA (SPR, IDR) and the PADRES-style baseline
(TID-S, TID-D), on S_e and on random SCOTs, under advertisement/subscription churn issued concurrently, random
message interleavings (FIFO per link) and, in dynamic mode, random link congestion fed mid-flight.

Routing-state invariants (PRT/CLT/CIV for OctopiA, SRT/bindings for PADRES) are checked at every quiescence.
A publication is owed only to subscriptions overlapping an advertisement of its publisher (PADRES' contract):
the workload publishes events conforming to the publisher's advertisements, and non-conforming publications
must be rejected at the publisher's broker.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlays.experiment import run_random_workload
from overlays.scot import Scot
from overlays.workload import small_schema
from p2pubsub.model import Absent

MODES = [("octopia", False), ("octopia", True), ("padres", False), ("padres", True)]
S_E = Scot.s_e()


def _assert_exact(report):
    assert report.problems == [], "\n".join(report.problems[:10])
    assert report.deliveries == report.expected_deliveries


@pytest.mark.parametrize(("kind", "dynamic"), MODES)
@settings(max_examples=25, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**31), absent=st.sampled_from(list(Absent)), congestion=st.sampled_from([0.05, 0.5]))
def test_exact_on_s_e(kind, dynamic, seed, absent, congestion):
    report = run_random_workload(
        kind, S_E, small_schema(absent), seed=seed, dynamic=dynamic, congestion=congestion,
        rounds=2, publishers=8, subscribers=16, publications=15,
    )
    _assert_exact(report)


@pytest.mark.parametrize(("kind", "dynamic"), MODES)
@settings(max_examples=50, derandomize=True, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n_af=st.integers(1, 7),
    n_clusters=st.integers(1, 5),
    absent=st.sampled_from(list(Absent)),
)
def test_exact_on_random_scots(kind, dynamic, seed, n_af, n_clusters, absent):
    scot = Scot.random(random.Random(seed), n_af, n_clusters)
    report = run_random_workload(
        kind, scot, small_schema(absent), seed=seed, dynamic=dynamic, congestion=0.5,
        rounds=3, publishers=6, subscribers=12, publications=15,
    )
    _assert_exact(report)


def test_dynamic_runs_really_divert():
    """Guard against a vacuous dynamic property: congestion makes both cores leave the static paths."""
    for kind in ("octopia", "padres"):
        total = 0
        for seed in range(6):
            r = run_random_workload(kind, S_E, small_schema(Absent.MATCH), seed=seed, dynamic=True, congestion=0.5,
                                    publishers=10, subscribers=25)
            _assert_exact(r)
            total += r.diversions
        assert total > 10, kind
