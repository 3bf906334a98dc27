"""The report's files: ``metrics.json``, the CSVs and ``report.md`` (our figures beside the thesis's)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .compare import Group
from .figures import FIGURES, FigureSet
from .metrics import RunMetrics

__all__ = ["IDENTITY_TOLERANCE_S", "build_metrics", "thesis_table", "write_csvs", "write_markdown"]

#: The replay with the run's own matrix must reproduce the simulator's times to within this (s).
IDENTITY_TOLERANCE_S = 1e-6


def _fmt(v: float | None, spec: str, unit: str = "") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:{spec}}{unit}"


def _mean(a: np.ndarray) -> float | None:
    return float(a.mean()) if a.size else None


def _max(a: np.ndarray) -> float | None:
    return float(a.max()) if a.size else None


def thesis_table(
    headline: Group | None,
    multicast: tuple[Group, Group] | None,
    cutoff: tuple[Group, Group] | None,
    series: list[Group],
) -> list[dict[str, Any]]:
    """Rows (quantity, thesis, ours, source) for the figures the thesis quotes in §4.3."""
    rows: list[dict[str, Any]] = []

    def row(quantity: str, thesis: str, ours: str, source: str, value: Any = None) -> None:
        rows.append({"quantity": quantity, "thesis": thesis, "ours": ours, "source": source, "value": value})

    h = headline
    src = h.label if h else "no runs"
    inst = h.install.stats() if h else {}
    deli = h.delivery.stats() if h else {}
    row(
        "Average subscription install latency (Fig 4.1)",
        "331 ms",
        _fmt(inst.get("mean"), ".0f", " ms"),
        src,
        inst.get("mean"),
    )
    within = (h.install.share_within(600), h.install.share_within(1000)) if h else (None, None)
    row(
        "Installs done within 600 ms / 1 s",
        "≈70% / ≈90%",
        f"{_fmt(within[0], '.0%')} / {_fmt(within[1], '.0%')}",
        src,
        list(within),
    )
    per_sub = _mean(h.per_subscription()) if h else None
    row(
        "Average per-node bandwidth per subscription (Fig 4.2)",
        "14.32 B/sub",
        _fmt(per_sub, ".2f", " B/sub"),
        src,
        per_sub,
    )
    row(
        "Average event delivery latency (Fig 4.3)",
        "333 ms",
        _fmt(deli.get("mean"), ".0f", " ms"),
        src,
        deli.get("mean"),
    )
    d400 = h.delivery.share_within(400) if h else None
    row("Deliveries within 400 ms", "≈70%", _fmt(d400, ".0%"), src, d400)
    per_event = _mean(h.per_event()) if h else None
    row(
        "Average per-node bandwidth per event (Fig 4.4)",
        "1.32 KB/event",
        _fmt(per_event / 1000 if per_event is not None else None, ".3f", " KB/event"),
        src,
        per_event,
    )

    def pair_rows(pair: tuple[Group, Group] | None, what: str, thesis_avg: str, fig: str) -> None:
        if pair is None:
            row(f"Average per-node probe bandwidth, {what} ({fig})", thesis_avg, "—", "no such pair of runs")
            return
        off, on = pair
        a, b = _mean(off.probe_per_event()), _mean(on.probe_per_event())
        ours = f"{_fmt(a and a / 1000, '.3f')} → {_fmt(b and b / 1000, '.3f')} KB/event"
        row(
            f"Average per-node probe bandwidth, {what} ({fig})",
            thesis_avg,
            ours,
            f"{off.label} → {on.label}",
            [a, b],
        )
        if what.startswith("unicast"):
            a, b = _max(off.probe_per_event()), _max(on.probe_per_event())
            row(
                "Largest per-node probe bandwidth, unicast → multicast (Fig 4.6)",
                "12.2 → 9.4 KB/event",
                f"{_fmt(a and a / 1000, '.3f')} → {_fmt(b and b / 1000, '.3f')} KB/event",
                f"{off.label} → {on.label}",
                [a, b],
            )

    pair_rows(multicast, "unicast → multicast", "1.48 → 1.05 KB/event", "Fig 4.5")
    pair_rows(cutoff, "no cut-off → cut-off", "2.12 → 1.05 KB/event", "Fig 4.7")
    if series:
        first, last = series[0].delivery.stats(), series[-1].delivery.stats()
        row(
            "Average delivery latency, smallest → largest network (Fig 4.9)",
            "330 → 430 ms (1000 → 5000 nodes)",
            f"{_fmt(first['mean'], '.0f')} → {_fmt(last['mean'], '.0f')} ms "
            f"({series[0].nodes} → {series[-1].nodes} nodes)",
            f"{len(series)} sizes",
            [first["mean"], last["mean"]],
        )
        maxima = [g.delivery.stats()["max"] for g in series if g.delivery.n]
        lo, hi = (min(maxima) / 1000, max(maxima) / 1000) if maxima else (None, None)
        row(
            "Largest delivery latency across network sizes (Fig 4.9)",
            "1.6–1.8 s",
            f"{_fmt(lo, '.2f')}–{_fmt(hi, '.2f')} s",
            f"{len(series)} sizes",
            [lo, hi],
        )
    else:
        row(
            "Average delivery latency, smallest → largest network (Fig 4.9)",
            "330 → 430 ms (1000 → 5000 nodes)",
            "—",
            "needs two network sizes",
        )
    return rows


def _summary_check(r: RunMetrics) -> dict[str, Any]:
    """Compare the simulator's summary.json (when it has our fields) with what Spark computed."""
    s = r.info.summary
    ours = {
        "latency_ms.install.mean": r.install_original_mean_ms,
        "latency_ms.delivery.mean": r.delivery_original_mean_ms,
        **{f"bytes_per_node.{k}.mean": v["mean"] for k, v in r.bandwidth_stats().items()},
        "subscriptions": r.subscriptions,
        "events": r.events,
        "nodes": r.nodes,
    }
    out: dict[str, Any] = {}
    for key, mine in ours.items():
        theirs: Any = s
        for part in key.split("."):
            theirs = theirs.get(part) if isinstance(theirs, dict) else None
        if isinstance(theirs, int | float) and mine is not None:
            out[key] = {"summary": theirs, "spark": mine, "abs_diff": abs(float(theirs) - float(mine))}
    return out


def build_metrics(
    runs: list[RunMetrics],
    groups: list[Group],
    headline: Group | None,
    multicast: tuple[Group, Group] | None,
    cutoff: tuple[Group, Group] | None,
    series: list[Group],
    figures: FigureSet,
    diagnostics: dict[str, Any],
    matrix_label: str,
) -> dict[str, Any]:
    """Everything in one JSON-able dict (``metrics.json``)."""
    identity = max(
        [float(diagnostics.get("identity_max_diff_s", 0.0))] + [r.identity_max_diff_s for r in runs]
    )
    run_rows = []
    for r in runs:
        run_rows.append(
            {
                **r.info.describe(),
                "subscriptions": r.subscriptions,
                "events": r.events,
                "nodes_in_trace": r.nodes,
                "deliveries": r.delivery.n,
                "not_installed": r.not_installed,
                "install_latency_ms": r.install.stats(),
                "delivery_latency_ms": r.delivery.stats(),
                "install_original_mean_ms": r.install_original_mean_ms,
                "delivery_original_mean_ms": r.delivery_original_mean_ms,
                "bytes_per_node": r.bandwidth_stats(),
                "identity_max_diff_s": r.identity_max_diff_s,
                "missing_causes": r.missing_causes,
                "summary_check": _summary_check(r),
            }
        )

    def pair(p: tuple[Group, Group] | None) -> dict[str, Any] | None:
        return None if p is None else {"off": p[0].summary(), "on": p[1].summary()}

    return {
        "matrix": matrix_label,
        "replay": {
            **diagnostics,
            "missing_causes": sum(r.missing_causes for r in runs),
            "identity_max_diff_s": identity,
            "identity_ok": identity < IDENTITY_TOLERANCE_S,
            "identity_tolerance_s": IDENTITY_TOLERANCE_S,
        },
        "runs": run_rows,
        "groups": [g.summary() for g in groups],
        "headline": headline.slug if headline else None,
        "comparisons": {"multicast": pair(multicast), "cutoff": pair(cutoff)},
        "scalability": [
            {
                "nodes": g.nodes,
                "group": g.slug,
                "delivery_latency_ms": g.delivery.stats(),
                "bytes_per_event_per_node": {"mean": _mean(g.per_event()), "max": _max(g.per_event())},
            }
            for g in series
        ],
        "thesis": thesis_table(headline, multicast, cutoff, series),
        "figures": {
            fig: (
                {"file": figures.drawn[fig]}
                if fig in figures.drawn
                else {"skipped": figures.skipped.get(fig)}
            )
            for fig in FIGURES
        },
    }


def _write_csv(path: Path, rows: list[dict[str, Any]], fields: list[str] | None = None) -> Path:
    fields = fields or (list(rows[0]) if rows else ["empty"])
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _flat(prefix: str, d: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}_{k}": v for k, v in d.items()}


def write_csvs(out: Path, runs: list[RunMetrics], metrics: dict[str, Any], figures: FigureSet) -> list[Path]:
    """runs.csv, groups.csv, node_bandwidth.csv, the figures' histograms, comparisons, scalability, thesis."""
    written = []
    rows = []
    for r in metrics["runs"]:
        row = {
            k: r[k]
            for k in (
                "run",
                "name",
                "nodes",
                "multicast",
                "cutoff",
                "kind",
                "seed",
                "subscriptions",
                "events",
                "deliveries",
                "not_installed",
                "identity_max_diff_s",
            )
        }
        row.update(_flat("install_ms", r["install_latency_ms"]))
        row.update(_flat("delivery_ms", r["delivery_latency_ms"]))
        for k, v in r["bytes_per_node"].items():
            row.update(_flat(f"bytes_{k}", v))
        rows.append(row)
    written.append(_write_csv(out / "runs.csv", rows))

    rows = []
    for g in metrics["groups"]:
        row = {k: g[k] for k in ("group", "kind", "nodes", "multicast", "cutoff")}
        row["runs"] = " ".join(g["runs"])
        row.update(_flat("install_ms", g["install_latency_ms"]))
        row.update(_flat("delivery_ms", g["delivery_latency_ms"]))
        for k, v in g["bytes_per_node"].items():
            row.update(_flat(f"bytes_{k}", v))
        rows.append(row)
    written.append(_write_csv(out / "groups.csv", rows))

    rows = []
    for r in runs:
        bw = r.bandwidth
        per = (bw.per_subscription(r.subscriptions), bw.per_event(r.events), bw.probe_per_event(r.events))
        for i, node in enumerate(bw.node):
            rows.append(
                {
                    "run": r.info.name,
                    "node": int(node),
                    "bytes_subscription_phase": int(bw.subscription[i]),
                    "bytes_event_phase": int(bw.event[i]),
                    "bytes_probe": int(bw.probe[i]),
                    "bytes_dht": int(bw.dht[i]),
                    "bytes_ack": int(bw.transport[i]),
                    "bytes_per_subscription": float(per[0][i]) if per[0].size else None,
                    "bytes_per_event": float(per[1][i]) if per[1].size else None,
                    "probe_bytes_per_event": float(per[2][i]) if per[2].size else None,
                }
            )
    written.append(_write_csv(out / "node_bandwidth.csv", rows))

    for key, hist_rows in figures.histograms.items():
        written.append(_write_csv(out / f"{key}_hist.csv", hist_rows))

    rows = []
    for name, pair in metrics["comparisons"].items():
        for variant, g in (pair or {}).items():
            b = g["bytes_per_node"]["per_event_probe"]
            rows.append(
                {
                    "comparison": name,
                    "variant": variant,
                    "group": g["group"],
                    "probe_bytes_per_event_mean": b["mean"],
                    "probe_bytes_per_event_p90": b["p90"],
                    "probe_bytes_per_event_max": b["max"],
                }
            )
    written.append(
        _write_csv(
            out / "comparisons.csv",
            rows,
            [
                "comparison",
                "variant",
                "group",
                "probe_bytes_per_event_mean",
                "probe_bytes_per_event_p90",
                "probe_bytes_per_event_max",
            ],
        )
    )

    rows = [
        {
            "nodes": s["nodes"],
            "group": s["group"],
            "delivery_ms_mean": s["delivery_latency_ms"]["mean"],
            "delivery_ms_max": s["delivery_latency_ms"]["max"],
            "bytes_per_event_mean": s["bytes_per_event_per_node"]["mean"],
            "bytes_per_event_max": s["bytes_per_event_per_node"]["max"],
        }
        for s in metrics["scalability"]
    ]
    written.append(
        _write_csv(
            out / "scalability.csv",
            rows,
            [
                "nodes",
                "group",
                "delivery_ms_mean",
                "delivery_ms_max",
                "bytes_per_event_mean",
                "bytes_per_event_max",
            ],
        )
    )
    written.append(
        _write_csv(out / "thesis_comparison.csv", metrics["thesis"], ["quantity", "thesis", "ours", "source"])
    )
    return written


def write_json(out: Path, metrics: dict[str, Any]) -> Path:
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return [clean(v) for v in o]
        if isinstance(o, np.generic):
            return o.item()
        return o

    path = out / "metrics.json"
    path.write_text(json.dumps(clean(metrics), indent=2) + "\n")
    return path


_DIAG_TEXT = {
    "messages": "messages",
    "lost": "lost (no receipt)",
    "roots": "chain roots (no parent)",
    "max_depth": "longest causal chain (hops)",
    "rounds": "pointer-jumping rounds",
    "dangling_parents": "parent_id not found (treated as roots)",
    "children_of_lost": "messages caused by a lost message",
    "sent_before_parent_received": "sent before their parent arrived",
    "unknown_nodes": "src/dst missing from nodes.parquet",
    "pairs_missing_in_run_matrix": "host pairs missing from latency.parquet",
    "faster_than_matrix": "arrived faster than the run's matrix allows",
    "imputed_pairs": "pairs imputed in the replay matrix",
    "missing_causes": "deliveries or installs whose cause_id is no message",
}


def write_markdown(out: Path, metrics: dict[str, Any], figures: FigureSet) -> Path:
    """``report.md``: runs, the comparison with the thesis, the replay check, figures, definitions."""
    rep = metrics["replay"]
    lines = ["# p2pubsub evaluation", ""]
    lines += [f"Replayed {len(metrics['runs'])} run(s) with: **{metrics['matrix']}**.", ""]
    lines += [
        "| run | nodes | multicast | cut-off | workload | seed | subscriptions | events | deliveries |",
        "| --- | ---: | --- | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in metrics["runs"]:
        lines.append(
            f"| {r['name']} | {r['nodes']} | {r['multicast']} | {r['cutoff']} | {r['kind']} | {r['seed']} "
            f"| {r['subscriptions']} | {r['events']} | {r['deliveries']} |"
        )
    lines += ["", "## Our figures beside the thesis's", ""]
    lines += ["| quantity | thesis (§4.3) | ours | runs |", "| --- | --- | --- | --- |"]
    for t in metrics["thesis"]:
        lines.append(f"| {t['quantity']} | {t['thesis']} | {t['ours']} | {t['source']} |")
    lines += [
        "",
        "The thesis simulated FreePastry on the King matrix (1,740 DNS servers, average RTT 180 ms) with "
        "Java-serialised messages; our sizes are our wire encoding's, so bandwidth compares in shape more "
        "than in bytes.",
        "",
        "## Replay check",
        "",
        f"Replayed with each run's own latency matrix, the largest difference from the simulator's own times "
        f"(message receipts, deliveries, installs) is **{rep['identity_max_diff_s']:.3g} s** "
        f"({'within' if rep['identity_ok'] else 'OUTSIDE'} the {rep['identity_tolerance_s']:g} s tolerance).",
        "",
        "| check | count |",
        "| --- | ---: |",
    ]
    for key, text in _DIAG_TEXT.items():
        if key in rep:
            lines.append(f"| {text} | {rep[key]} |")
    checks = [(r["name"], k, v) for r in metrics["runs"] for k, v in r["summary_check"].items()]
    if checks:
        worst = max(checks, key=lambda c: c[2]["abs_diff"])
        lines += [
            "",
            f"summary.json against Spark: {len(checks)} figure(s) compared, largest difference "
            f"{worst[2]['abs_diff']:.3g} ({worst[1]} of {worst[0]}).",
        ]
    lines += ["", "## Figures", ""]
    for fig, (_, caption) in FIGURES.items():
        lines.append(f"### Fig {fig}: {caption}")
        lines.append("")
        if fig in figures.drawn:
            lines.append(f"![Fig {fig}]({figures.drawn[fig]})")
        else:
            lines.append(f"*Skipped: {figures.skipped.get(fig, 'no data')}.*")
        lines.append("")
    lines += [
        "## Definitions",
        "",
        "- Install latency = installed_at − requested_at; delivery latency = delivered_at − published_at, "
        "after replay. Percentiles are read from 1 ms histograms (exact to 1 ms); means and maxima are "
        "exact.",
        "- A node's bandwidth per subscription = bytes it sent in subscription-phase messages (ProbeSub, "
        "InsertSub, SubInstalled, LeafUpdate, TransferSub, Unsubscribe) / subscriptions in the run; per "
        "event = "
        "bytes sent in ProbePub, ProbePubMulticast and EventDelivery / events in the run. Every node counts, "
        "idle ones too. Acks and DHT traffic count toward neither.",
        "- Probe bandwidth (multicast and cut-off comparisons, Figs 4.5–4.8) leaves EventDelivery out, as "
        "the "
        "thesis does (§4.3.2). KB = 1000 bytes.",
        "- Runs with the same workload, size, multicast and cut-off are pooled.",
        "",
        "Data: `metrics.json`, `runs.csv`, `groups.csv`, `node_bandwidth.csv`, `comparisons.csv`, "
        "`scalability.csv`, `thesis_comparison.csv` and the histograms behind the figures (`*_hist.csv`).",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path
