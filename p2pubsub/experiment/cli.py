"""``p2pubsub experiment SCENARIO.toml --out DIR``: the command line of the experiment runner."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_experiment_arguments", "format_report"]


def add_experiment_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", metavar="SCENARIO.toml", help="the scenario (format: p2pubsub/scenario.py)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="run directory: summary.json, messages.parquet and the other trace tables, client/, "
                        "logs/, traces/")
    p.add_argument("--grace", type=float, default=1.0, metavar="S",
                   help="departure grace: a departed home owes only events published this long before its "
                        "signal; victims of a crash/leave are drawn this long before the step (default 1)")
    p.add_argument("--recovery-window", type=float, default=5.0, metavar="S",
                   help="deliveries.after_recovery leaves out events published within this long after a churn "
                        "step (default 5)")
    p.add_argument("--deadline", type=float, default=1.0, metavar="S",
                   help="recovery_s counts a notification read later than this after its publish as not delivered "
                        "(recovery_eventual_s counts it; default 1)")
    p.add_argument("--drain", type=float, metavar="S", help="longest wait for deliveries after the last event "
                                                             "(default: the scenario's drain_s)")
    p.add_argument("--stabilize", type=float, metavar="S",
                   help="wait after the last join before the workload (default: network.stabilize_s)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the probe check of installed subscriptions (subscriptions_lost is then null)")
    p.add_argument("--no-trace", action="store_true", help="no per-node traces, no messages.parquet")
    p.add_argument("--start-concurrency", type=int, default=2, metavar="N",
                   help="node processes starting at once (default 2)")
    p.add_argument("--ready-timeout", type=float, default=30.0, metavar="S",
                   help="how long a node may take to print its ready line (default 30)")
    progress = p.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="a progress line on stderr (default: when stderr is a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--check", choices=["none", "exact", "recovery"], default="none",
                   help="exit status 3 unless: exact = nothing missing, lost, false or duplicate; recovery = no "
                        "subscription lost, >= 99%% delivered after recovery, no false positive or duplicate")
    p.set_defaults(func=_experiment)


def _experiment(args: argparse.Namespace) -> int:
    from ..scenario import ScenarioError, load_scenario
    from .procs import ExperimentError
    from .runner import ExperimentOptions, run_experiment

    try:
        scenario = load_scenario(args.scenario)
    except (OSError, ScenarioError) as e:
        print(f"p2pubsub experiment: {e}", file=sys.stderr)
        return 2
    options = ExperimentOptions(
        grace_s=args.grace, recovery_window_s=args.recovery_window, deadline_s=args.deadline, drain_s=args.drain,
        stabilize_s=args.stabilize, verify=not args.no_verify, trace=not args.no_trace,
        start_concurrency=args.start_concurrency, ready_timeout_s=args.ready_timeout, progress=args.progress,
    )
    try:
        summary = run_experiment(scenario, args.out, options)
    except ExperimentError as e:
        print(f"p2pubsub experiment: FAILED: {e}\n(partial summary in {args.out}/summary.json)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"p2pubsub experiment: interrupted (partial summary in {args.out}/summary.json)", file=sys.stderr)
        return 130
    print(format_report(summary, args.out))
    if summary["problems"]:
        print("PROBLEMS:\n" + "\n".join(f"- {p}" for p in summary["problems"]), file=sys.stderr)
        return 1
    checks = summary["checks"]
    if args.check == "exact" and not checks["exact"]:
        return 3
    if args.check == "recovery" and not all(checks[k] for k in ("no_subscription_lost", "after_recovery_at_least_99pct",
                                                                "no_false_positive", "no_duplicate")):
        return 3
    return 0


def _f(x: Any, fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def format_report(s: dict[str, Any], out: str = "") -> str:
    """A few lines for the terminal: what ran, what the oracle says, recovery, latency."""
    d, a = s["deliveries"], s["deliveries"]["after_recovery"]
    sub, dlv = s["latency_ms"]["subscribe"], s["latency_ms"]["delivery"]
    nc = s["node_counts"]
    steps = ", ".join(f"{c['action']} {c['count']} @{c['at_s']:g}s: {_f(c['recovery_s'], '.2f')} "
                      f"({_f(c['eventual']['recovery_s'], '.2f')})" for c in s["churn"])
    lines = [
        f"experiment {s['scenario']}: {s['nodes']} node processes ({nc['initial']} initial, {nc['joined']} joined, "
        f"{nc['left']} left, {nc['crashed']} crashed), {s['subscriptions']} subscriptions "
        f"({s['subscriptions_detail']['acknowledged']} acknowledged), {s['events']} events, {s['wall_s']:.1f} s",
        f"deliveries: expected {d['expected']}, delivered {d['delivered']} ({_pct(d['ratio'])}), "
        f"missing {d['missing']}, false positive {d['false_positive']}, duplicate {d['duplicate']}, "
        f"unexpected {d['unexpected']}",
        f"after recovery ({a['recovery_window_s']:g} s): {a['delivered']}/{a['expected']} ({_pct(a['ratio'])}, "
        f"on time {_pct(a['on_time_ratio'])}); "
        f"subscriptions lost: {s['subscriptions_lost']}",
        f"recovery_s per churn step, on time <= {s['options']['deadline_s']:g} s (eventually): {steps or '-'}",
        f"latency ms: subscribe p50 {_f(sub['p50'])} p99 {_f(sub['p99'])}; "
        f"delivery p50 {_f(dlv['p50'])} p99 {_f(dlv['p99'])} max {_f(dlv['max'])}",
    ]
    if out:
        lines.append(f"written: {out}/summary.json")
    return "\n".join(lines)
