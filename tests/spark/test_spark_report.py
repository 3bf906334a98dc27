"""`run_report` end to end on the fake suite: every file, the thesis table, the replay check."""

from __future__ import annotations

import json

import pytest

from spark.figures import FIGURES
from spark.report import run_report

CSVS = (
    "runs.csv",
    "groups.csv",
    "node_bandwidth.csv",
    "comparisons.csv",
    "scalability.csv",
    "thesis_comparison.csv",
    "install_latency_hist.csv",
    "delivery_latency_hist.csv",
    "bandwidth_per_sub_hist.csv",
    "bandwidth_per_event_hist.csv",
)


@pytest.fixture(scope="module")
def report(spark_session, suite_dirs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    metrics = run_report(suite_dirs, out, spark=spark_session, progress=False)
    return out, metrics


def test_every_file_is_written(report):
    out, metrics = report
    for name in ("metrics.json", "report.md", *CSVS):
        assert (out / name).stat().st_size > 0, name
    for fig, (name, _) in FIGURES.items():
        assert metrics["figures"][fig] == {"file": name}
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_md_sets_our_figures_beside_the_thesis(report):
    out, metrics = report
    text = (out / "report.md").read_text()
    for thesis in (
        "331 ms",
        "14.32 B/sub",
        "333 ms",
        "1.32 KB/event",
        "1.48 → 1.05 KB/event",
        "2.12 → 1.05 KB/event",
        "330 → 430 ms",
    ):
        assert thesis in text
    for _, (name, _) in FIGURES.items():
        assert f"]({name})" in text
    assert "largest difference from the simulator's own times" in text
    assert all(row["ours"] != "—" for row in metrics["thesis"])


def test_replay_identity_and_agreement_with_the_simulators_summary(report):
    out, _ = report
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["replay"]["identity_ok"] and saved["replay"]["identity_max_diff_s"] < 1e-6
    assert len(saved["runs"]) == 5 and len(saved["groups"]) == 5
    for run in saved["runs"]:
        assert run["summary_check"], run["name"]
        for key, check in run["summary_check"].items():
            assert check["abs_diff"] < 1e-6, (run["name"], key)


def test_groups_behind_the_comparisons(report):
    _, metrics = report
    assert metrics["headline"] == "synthetic-n24-mcon-coon"
    mc, co = metrics["comparisons"]["multicast"], metrics["comparisons"]["cutoff"]
    assert (mc["off"]["multicast"], mc["on"]["multicast"]) == (False, True)
    assert (co["off"]["cutoff"], co["on"]["cutoff"]) == (False, True)
    assert mc["on"]["nodes"] == mc["off"]["nodes"] == 12
    assert [s["nodes"] for s in metrics["scalability"]] == [12, 16, 24]
