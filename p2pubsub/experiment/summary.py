"""``summary.json`` of a live experiment, and the files beside it.

Keys (times in seconds on the experiment clock, 0 = the runner started; the scenario's workload clock starts at
``timeline.workload_start_s``):

* ``nodes`` (processes started), ``node_counts``, ``nodes_detail`` (each process: ids, addresses, signals, exit
  codes); ``subscriptions`` (requested), ``events`` (published: answered by a node), with ``*_detail``;
* ``deliveries``: the oracle's verdict (:mod:`.oracle`): ``expected``, ``delivered``, ``missing``,
  ``false_positive``, ``duplicate``, ``unexpected``, ``unknown``, ``ratio``; ``after_recovery`` (the same
  without events published from ``grace_s`` before to ``recovery_window_s`` after any churn step);
  ``departed_homes`` / ``surviving_homes`` (split by the subscription's home); ``reader`` (buffer drops, errors);
* ``subscriptions_lost`` and ``verify`` (:mod:`.verify`);
* ``recovery_s``: one value per churn step (see :func:`recovery`: notifications read within ``deadline_s``),
  ``recovery_eventual_s`` (read at all); both also in ``churn[k]`` with the step's window and what it did;
* ``latency_ms.subscribe`` (acknowledged - requested) and ``latency_ms.delivery`` (the reader's receipt of a
  matching notification - the publish request), each ``count mean p50 p90 p99 max``;
* ``checks``: the issue's criteria as booleans; ``problems`` (the runner's own failures: a node that did not
  start or exited unasked, a leave with a non-zero status, stragglers at teardown) and ``warnings``;
* ``wall_s``, ``timeline``, ``schedule_lag_ms``, ``node_counters``, ``node_options``, ``options``, ``scenario``,
  ``traces`` (:mod:`.traces`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..trace.summary import stats_ms
from .oracle import Verdict

if TYPE_CHECKING:
    from .runner import Experiment

__all__ = ["build_summary", "latency_ms", "recovery", "write_outputs"]


def latency_ms(seconds: Any) -> dict[str, Any]:
    """count, mean, p50, p90, p99, max of durations given in seconds (any iterable), in milliseconds (None when
    empty)."""
    return stats_ms(list(seconds))


def recovery(step_times: list[float], req: np.ndarray, expected: np.ndarray, failed: np.ndarray,
             grace: float, lost_at_end: int | None = None) -> list[dict[str, Any]]:
    """``recovery_s`` of each churn step, from per-event counts of expected pairs and of *failed* ones (not
    delivered on time for ``recovery_s``, not delivered at all for ``recovery_eventual_s``).

    Step k at time T_k owns the events requested in ``[T_k - grace, T_next - grace)`` (``T_next``: the next later
    step, or the end), so that events caught by the step itself count toward it. With ``p`` the request time of
    the window's last event with a failed expected pair, ``recovery_s = max(0, p - T_k)``: every event published
    after ``p`` in the window reached every expected subscriber. 0 when nothing in the window failed; None
    (``recovered: false``) when the window's last expected event itself failed, or the window had none, or (the
    last step only) ``lost_at_end`` acknowledged subscriptions were found lost at the end of the run: events are
    too sparse to show that, but the network has not recovered while they stay lost."""
    out = []
    distinct = sorted(set(step_times))
    for t in step_times:
        later = [x for x in distinct if x > t]
        hi = (later[0] if later else math.inf) - grace
        window = (req >= t - grace) & (req < hi) & (expected > 0)
        bad = window & (failed > 0)
        info: dict[str, Any] = {"window_s": [t - grace, None if math.isinf(hi) else hi],
                                "events": int(window.sum()), "expected": int(expected[window].sum()),
                                "failed": int(failed[window].sum())}
        if not window.any():
            info.update(recovery_s=None, recovered=False, note="no expected event in the window")
        elif not bad.any():
            info.update(recovery_s=0.0, recovered=True, last_failed_s=None)
        else:
            p = float(req[bad].max())
            ok = bool((window & (req > p)).any())
            info.update(recovery_s=max(0.0, p - t) if ok else None, recovered=ok, last_failed_s=p)
        if lost_at_end and math.isinf(hi):
            info.update(recovery_s=None, recovered=False,
                        note=f"{lost_at_end} acknowledged subscriptions still lost at the end")
        out.append(info)
    return out


def _split(v: Verdict, mask: np.ndarray) -> dict[str, Any]:
    expected = int(v.sub_expected[mask].sum()) if v.sub_expected.size else 0
    missing = int(v.sub_missing[mask].sum()) if v.sub_missing.size else 0
    return {"subscriptions": int(mask.sum()), "expected": expected, "delivered": expected - missing,
            "missing": missing, "ratio": (expected - missing) / expected if expected else None}


def build_summary(exp: Experiment, teardown: list[dict[str, Any]], *, failed: bool) -> dict[str, Any]:
    sc = exp.scenario
    opt = exp.opt
    subs, events, fleet = exp.subs, exp.events, exp.fleet
    verdict = exp.judge(exp.oracle(), events) if subs and events else Verdict()
    nan = float("nan")
    req = np.array([e.requested_at if e.requested_at is not None else nan for e in events], np.float64)
    step_times = [s["time"] for s in exp.steps]
    ev_exp = verdict.event_expected if verdict.event_expected.size else np.zeros(len(events), np.int64)
    ev_miss = verdict.event_missing if verdict.event_missing.size else np.zeros(len(events), np.int64)
    ev_late = verdict.event_late if verdict.event_late.size else np.zeros(len(events), np.int64)
    probe_verdict = exp.judge(exp.oracle_of(exp.probes), exp.probes) if exp.probes and subs else None
    lost = exp.verify_result["lost"] if exp.verify_result is not None else None
    steps = recovery(step_times, req, ev_exp, ev_late, opt.grace_s, lost)
    eventual = recovery(step_times, req, ev_exp, ev_miss, opt.grace_s, lost)
    churn = []
    for rec, on_time, late in zip(exp.steps, steps, eventual, strict=True):
        churn.append({**rec, "deadline_s": opt.deadline_s, **on_time,
                      "eventual": {k: late[k] for k in ("failed", "recovery_s", "recovered", "last_failed_s")
                                   if k in late}})
    # after recovery: leave out events from grace before to recovery_window after any step
    keep = np.ones(len(events), bool)
    for t in step_times:
        keep &= ~((req >= t - opt.grace_s) & (req < t + opt.recovery_window_s))
    keep &= ~np.isnan(req)
    exp_after, miss_after = int(ev_exp[keep].sum()), int(ev_miss[keep].sum())
    late_after = int(ev_late[keep].sum())
    after = {"grace_s": opt.grace_s, "recovery_window_s": opt.recovery_window_s, "events": int(keep.sum()),
             "expected": exp_after, "delivered": exp_after - miss_after, "missing": miss_after,
             "ratio": (exp_after - miss_after) / exp_after if exp_after else None,
             "late": late_after, "on_time_ratio": (exp_after - late_after) / exp_after if exp_after else None}
    departed = np.array([s.home is not None and math.isfinite(fleet.nodes[s.home].gone_at) for s in subs], bool)
    deliveries = verdict.totals()
    by_id = {e.event_id: e for e in events if e.event_id is not None}
    deliveries.update(
        after_recovery=after,
        departed_homes=_split(verdict, departed),
        surviving_homes=_split(verdict, ~departed),
        reader={"notifications": sum(len(s.received) for s in subs), "dropped": sum(s.dropped for s in subs),
                "errors": sum(s.reader_errors for s in subs),
                "ended": dict(Counter(s.reader_end.split(":")[0] for s in subs if s.reader_end))},
        examples={k: [{"event": events[e].event_id, "subscription": subs[j].sub_id, "home": subs[j].home}
                      for e, j in pairs] for k, pairs in verdict.examples.items()},
    )
    # latencies
    delivery = []
    absent = exp.schema.absent
    for s in subs:
        seen: set[str] = set()
        for event_id, t in s.received:
            e = by_id.get(event_id)
            if e is None or event_id in seen:
                continue
            seen.add(event_id)
            if s.parsed.matches(e.attributes, absent):
                delivery.append(t - e.requested_at)
    acked = [s for s in subs if s.acked_at is not None]
    if deliveries["reader"]["errors"]:
        exp.warnings.append(f"{deliveries['reader']['errors']} long-poll errors while the home was alive")
    if deliveries["reader"]["dropped"]:
        exp.warnings.append(f"{deliveries['reader']['dropped']} notifications dropped by full buffers before a "
                            "reader got them (counted as missing)")
    published = [e for e in events if e.acked_at is not None]
    verify = exp.verify_result
    if verify is not None and probe_verdict is not None:
        verify = {**verify, "deliveries": probe_verdict.totals()}
    counters: Counter = Counter()
    for info in exp.node_info.values():
        counters.update(info.get("counters", {}))
    nodes = fleet.nodes
    by_signal = Counter(n.signal_name for n in nodes if n.signal_name)
    initial = sc.network.nodes
    fp, dup = deliveries["false_positive"], deliveries["duplicate"]
    summary: dict[str, Any] = {
        "scenario": sc.name,
        "seed": sc.seed,
        "failed": failed,
        "nodes": len(nodes),
        "node_counts": {
            "initial": min(initial, len(nodes)), "joined": max(0, len(nodes) - initial),
            "left": by_signal.get("SIGTERM", 0), "crashed": by_signal.get("SIGKILL", 0),
            "alive_at_end": sum(1 for n in nodes if n.signal_name is None and not n.unexpected_exit
                                and n.ready_at is not None),
            "unexpected_exits": sum(n.unexpected_exit for n in nodes),
        },
        "subscriptions": len(subs),
        "subscriptions_detail": {
            "scheduled": len(exp.workload.subscriptions), "requested": len(subs), "acknowledged": len(acked),
            "failed": sum(s.error is not None for s in subs),
            "errors": dict(Counter(s.error.split(":")[0] for s in subs if s.error)),
        },
        "events": len(published),
        "events_detail": {
            "scheduled": exp.workload.event_count, "requested": len(events), "published": len(published),
            "failed": sum(e.error is not None for e in events),
            "errors": dict(Counter(e.error.split(":")[0] for e in events if e.error)),
        },
        "deliveries": deliveries,
        "subscriptions_lost": lost,
        "recovery_s": [s["recovery_s"] for s in steps],
        "recovery_eventual_s": [s["recovery_s"] for s in eventual],
        "latency_ms": {"subscribe": latency_ms(s.acked_at - s.requested_at for s in acked),
                       "delivery": latency_ms(delivery)},
        "wall_s": exp.clock(),
        "churn": churn,
        "checks": {
            "exact": (deliveries["missing"] == 0 and fp == 0 and dup == 0 and lost == 0 and not exp.problems
                      and all(s.error is None for s in subs) and all(e.error is None for e in events)
                      and deliveries["reader"]["dropped"] == 0 and deliveries["unknown"] == 0),
            "no_subscription_lost": lost == 0,
            "after_recovery_at_least_99pct": after["ratio"] is not None and after["ratio"] >= 0.99,
            "no_false_positive": fp == 0,
            "no_duplicate": dup == 0,
        },
        "problems": exp.problems,
        "warnings": exp.warnings,
        "timeline": {
            "network_ready_s": max((n.ready_at for n in nodes[:initial] if n.ready_at is not None), default=None),
            "workload_start_s": exp.workload_start,
            "first_event_s": published[0].requested_at if published else None,
            "last_event_s": max((e.requested_at for e in published), default=None),
            "publish_end_s": exp.publish_end,
            "drained_s": exp.drained_at,
            "missing_at_drain_end": exp.drain_missing,
        },
        "schedule_lag_ms": latency_ms(exp.lag),
        "verify": verify,
        "node_counters": dict(sorted(counters.items())),
        "stored_subscriptions": sum(int(i.get("stored_subscriptions", 0)) for i in exp.node_info.values()),
        "node_options": exp.node_options,
        "options": asdict(opt),
        "teardown": teardown,
        "nodes_detail": [n.describe() for n in nodes],
        "scenario_spec": sc.to_dict(),
    }
    return summary


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return _json_safe(float(x))
    return x


def write_outputs(exp: Experiment, summary: dict[str, Any]) -> None:
    """``summary.json``, ``scenario.toml``, the merged traces and the client-side records (``client/``)."""
    out = exp.out
    (out / "scenario.toml").write_text(exp.scenario.to_toml())
    if exp.opt.trace and exp.fleet is not None and exp.fleet.nodes:
        from .traces import merge_traces, sources_of

        try:
            summary["traces"] = merge_traces(sources_of(exp.fleet.nodes, exp.origin), exp.origin, out)
            if summary["traces"]["type_mismatches"]:
                exp.warnings.append(f"trace merge: {summary['traces']['type_mismatches']} type mismatches")
        except Exception as e:  # the summary still gets written
            summary["traces"] = {"error": f"{type(e).__name__}: {e}"}
            exp.problems.append(f"trace merge failed: {type(e).__name__}: {e}")
    client = out / "client"
    client.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist([
        {"index": s.index, "node": s.node, "home": s.home, "sub_id": s.sub_id, "scheduled_at": s.scheduled_at,
         "requested_at": s.requested_at, "acked_at": s.acked_at, "error": s.error, "base": s.base,
         "pieces": s.pieces, "filter": json.dumps(s.filter), "dropped": s.dropped, "reader_end": s.reader_end}
        for s in exp.subs], schema=_SUBS), client / "subscriptions.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"index": e.index, "probe": probe, "node": e.node, "via": e.via, "event_id": e.event_id,
         "scheduled_at": e.scheduled_at, "requested_at": e.requested_at, "acked_at": e.acked_at,
         "error": e.error, "attributes": json.dumps(e.attributes)}
        for probe, recs in ((False, exp.events), (True, exp.probes)) for e in recs], schema=_EVENTS),
        client / "events.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"subscription": s.index, "sub_id": s.sub_id, "event_id": event_id, "received_at": t}
        for s in exp.subs for event_id, t in s.received], schema=_NOTES), client / "notifications.parquet")
    (out / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2, sort_keys=False) + "\n")


_SUBS = pa.schema([("index", pa.int32()), ("node", pa.int32()), ("home", pa.int32()), ("sub_id", pa.string()),
                   ("scheduled_at", pa.float64()), ("requested_at", pa.float64()), ("acked_at", pa.float64()),
                   ("error", pa.string()), ("base", pa.string()), ("pieces", pa.int32()), ("filter", pa.string()),
                   ("dropped", pa.int64()), ("reader_end", pa.string())])
_EVENTS = pa.schema([("index", pa.int32()), ("probe", pa.bool_()), ("node", pa.int32()), ("via", pa.int32()),
                     ("event_id", pa.string()), ("scheduled_at", pa.float64()), ("requested_at", pa.float64()),
                     ("acked_at", pa.float64()), ("error", pa.string()), ("attributes", pa.string())])
_NOTES = pa.schema([("subscription", pa.int32()), ("sub_id", pa.string()), ("event_id", pa.string()),
                    ("received_at", pa.float64())])
