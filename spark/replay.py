"""Re-time every message path of the traces through a latency matrix (rule in :mod:`p2pubsub.trace.schema`).

How, and why it scales
----------------------
The rule is additive along a causal chain: a message's replayed receipt is its original receipt plus the
sum, over its chain from the root, of ``delta = L_new + q - (received_at - sent_at)`` (a root keeps its
send time). So the replay is:

1. one pass over the messages: hosts of ``src``/``dst`` from ``nodes`` (broadcast join), the original and
   the new one-way latency (joins with the matrices, broadcast when small), then ``q`` and ``delta``;
2. a prefix sum of ``delta`` down each tree of ``parent_id`` links, by *pointer jumping*: every message
   keeps (ancestor, sum of deltas up to that ancestor); each round joins the table with itself on the
   ancestor and doubles the distance covered, so chains of depth D take ceil(log2(D + 1)) rounds (6 for
   depth 40) instead of D level-by-level joins. Each round's state is persisted and counted (one job a
   round), and the rounds stop when no message has an ancestor left.

Everything is Spark SQL in the JVM: no Python workers, no pandas, and no group has to fit in one task, as
it would when re-timing per event or subscription with ``applyInPandas`` (one event's fan-out at 5,000
nodes can be large), nor does it rely on how the simulator numbers its messages. Deliveries and installs
then take their cause's shift (one join each). Several matrices are replayed in the same pass: the run's
own matrix always (the identity check) and the requested one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .matrix import Matrix

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from .load import Traces
    from .progress import Progress

__all__ = ["MAX_ROUNDS", "Replay", "diagnostics", "prepare_messages", "replay", "shifts"]

#: Pointer-jumping rounds before we call the parent links cyclic (2**40 hops is no real chain).
MAX_ROUNDS = 40
#: Tolerance (s) for the diagnostics: negative queueing or processing delay below this is rounding.
TOLERANCE_S = 1e-9


@dataclass
class Replay:
    """Replayed tables. ``own`` columns use the run's matrix (identity), the unsuffixed ones `matrix`."""

    messages: DataFrame  # run, id, ..., shift, shift_own, depth, sent_replayed, received_replayed
    deliveries: DataFrame  # run, ..., delivered_replayed, delivered_own, latency_s, latency_replayed_s
    installs: DataFrame  # run, ..., installed_replayed, installed_own, latency_s, latency_replayed_s
    matrix_label: str
    rounds: int


def _maybe_broadcast(df: DataFrame, rows: int | None, limit: int) -> DataFrame:
    from pyspark.sql import functions as F

    return F.broadcast(df) if rows is not None and rows <= limit else df


def prepare_messages(traces: Traces, matrix: Matrix | None, broadcast_rows: int = 1_000_000) -> DataFrame:
    """Messages with hosts, latencies, queueing ``q`` and ``delta`` (s): new matrix, own (``delta_own``)."""
    from pyspark.sql import functions as F

    nodes = traces.nodes.select("run", "node", "host")
    src = F.broadcast(nodes.select("run", F.col("node").alias("src"), F.col("host").alias("src_host")))
    dst = F.broadcast(nodes.select("run", F.col("node").alias("dst"), F.col("host").alias("dst_host")))
    m = traces.messages.join(src, ["run", "src"], "left").join(dst, ["run", "dst"], "left")

    own = traces.latency.select("run", "src_host", "dst_host", F.col("one_way_ms").alias("l_orig_ms"))
    known = traces.rows.get("latency", [])
    own_rows = sum(known) if known and None not in known else None  # type: ignore[arg-type]
    m = m.join(_maybe_broadcast(own, own_rows, broadcast_rows), ["run", "src_host", "dst_host"], "left")

    transit = F.col("received_at") - F.col("sent_at")
    # a pair missing from the run's own matrix: take the observed transit as its latency (q = 0)
    l_orig = F.coalesce(F.col("l_orig_ms") / 1000.0, transit)
    m = m.withColumn("q", transit - l_orig)

    if matrix is None:
        l_new: Column = l_orig
        m = m.withColumn("imputed", F.lit(False))
    else:
        if matrix.modulo:
            ka, kb = F.pmod("src_host", F.lit(matrix.modulo)), F.pmod("dst_host", F.lit(matrix.modulo))
        else:
            ka, kb = F.col("src_host"), F.col("dst_host")
        m = m.withColumn("_a", ka).withColumn("_b", kb)
        new = matrix.frame.select(
            F.col("a").alias("_a"), F.col("b").alias("_b"), F.col("one_way_ms").alias("l_new_ms")
        )
        m = m.join(_maybe_broadcast(new, matrix.rows, broadcast_rows), ["_a", "_b"], "left").drop("_a", "_b")
        l_new_ms = F.coalesce(F.col("l_new_ms"), F.lit(matrix.fill_ms))
        same = F.col("src_host") == F.col("dst_host")
        if matrix.same_host_zero:
            l_new_ms = F.when(same, F.lit(0.0)).otherwise(l_new_ms)
        l_new = l_new_ms / 1000.0
        imputed = F.col("l_new_ms").isNull() & F.col("src_host").isNotNull()
        m = m.withColumn("imputed", imputed & ~same if matrix.same_host_zero else imputed)

    lost = F.col("received_at").isNull()
    q_pos = F.greatest(F.col("q"), F.lit(0.0))
    m = m.withColumn("delta_own", F.when(lost, 0.0).otherwise(l_orig + q_pos - transit))
    m = m.withColumn("delta", F.when(lost, 0.0).otherwise(l_new + q_pos - transit))
    return m


def shifts(
    messages: DataFrame, columns: list[str], progress: Progress | None = None
) -> tuple[DataFrame, int]:
    """Sum each of `columns` from the root of every message's chain down to the message (pointer jumping).

    `messages` needs ``run``, ``id``, ``parent_id`` and `columns`; returns (``run, id, depth, <columns>``
    materialised, rounds). A parent id with no message is treated as a root (see the diagnostics). Each
    round's state is locally checkpointed (materialised, lineage cut); counting the rows still above their
    root is one more job on it, then the previous round's state is released.
    """
    from pyspark.sql import functions as F

    state = messages.select(
        "run",
        "id",
        F.col("parent_id").alias("anc"),
        F.when(F.col("parent_id").isNull(), 0).otherwise(1).alias("depth"),
        *columns,
    ).persist()
    previous: DataFrame | None = None
    rounds = 0
    while True:
        # counting the rows still above their root also materialises this round's (persisted) state
        n_pending = state.filter(F.col("anc").isNotNull()).count()
        if previous is not None:
            previous.unpersist()
        if n_pending == 0:
            break
        if rounds >= MAX_ROUNDS:
            raise ValueError(
                f"parent_id links do not end after {MAX_ROUNDS} doublings: a cycle in the trace?"
            )
        rounds += 1
        if progress is not None:
            progress.note(f"pointer jumping round {rounds}: {n_pending:,} messages to go")
        up = state.select(
            F.col("run").alias("u_run"),
            F.col("id").alias("u_id"),
            F.col("anc").alias("u_anc"),
            F.col("depth").alias("u_depth"),
            *[F.col(c).alias("u_" + c) for c in columns],
        )
        pending = state.filter(F.col("anc").isNotNull())
        jumped = pending.join(up, (F.col("run") == F.col("u_run")) & (F.col("anc") == F.col("u_id")), "left")
        jumped = jumped.select(
            "run",
            "id",
            F.col("u_anc").alias("anc"),
            (F.col("depth") + F.coalesce(F.col("u_depth"), F.lit(0))).alias("depth"),
            *[(F.col(c) + F.coalesce(F.col("u_" + c), F.lit(0.0))).alias(c) for c in columns],
        )
        # a local checkpoint, not a cache: it also cuts the lineage, which otherwise grows with every round
        # until planning alone exhausts the driver's heap (seen on a 1,000-node run's 8 M messages)
        previous, state = state, state.filter(F.col("anc").isNull()).unionByName(jumped).localCheckpoint(eager=True)
    return state.drop("anc"), rounds


def replay(
    traces: Traces,
    matrix: Matrix | None = None,
    *,
    broadcast_rows: int = 1_000_000,
    progress: Progress | None = None,
) -> Replay:
    """Replay `traces` with `matrix` (None: each run's own ``latency.parquet``). Lazy but for the rounds."""
    from pyspark.sql import functions as F

    m = prepare_messages(traces, matrix, broadcast_rows).persist()
    sums, rounds = shifts(
        m.select("run", "id", "parent_id", "delta", "delta_own"), ["delta", "delta_own"], progress
    )
    sums = sums.select(
        "run", "id", "depth", F.col("delta").alias("shift"), F.col("delta_own").alias("shift_own")
    )
    msgs = (
        m.join(sums, ["run", "id"], "left")
        .withColumn("received_replayed", F.col("received_at") + F.col("shift"))
        .withColumn("sent_replayed", F.col("sent_at") + F.col("shift") - F.col("delta"))
        .persist()
    )
    causes = msgs.select(
        "run",
        F.col("id").alias("cause_id"),
        F.col("shift").alias("c_shift"),
        F.col("shift_own").alias("c_own"),
    )

    def retime(df: DataFrame, start: str, end: str, prefix: str) -> DataFrame:
        return (
            df.join(causes, ["run", "cause_id"], "left")
            .withColumn(f"{prefix}_replayed", F.col(end) + F.coalesce("c_shift", F.lit(0.0)))
            .withColumn(f"{prefix}_own", F.col(end) + F.coalesce("c_own", F.lit(0.0)))
            .withColumn("cause_missing", F.col("cause_id").isNotNull() & F.col("c_shift").isNull())
            .withColumn("latency_s", F.col(end) - F.col(start))
            .withColumn("latency_replayed_s", F.col(f"{prefix}_replayed") - F.col(start))
            .drop("c_shift", "c_own")
        )

    label = "run's own latency.parquet" if matrix is None else matrix.label
    return Replay(
        messages=msgs,
        deliveries=retime(traces.deliveries, "published_at", "delivered_at", "delivered"),
        installs=retime(traces.subscriptions, "requested_at", "installed_at", "installed"),
        matrix_label=label,
        rounds=rounds,
    )


def diagnostics(rep: Replay) -> dict[str, Any]:
    """One job over the replayed messages: counts that say whether the trace is consistent, chain depth,
    and the largest difference between the identity replay (own matrix) and the simulator's receipts."""
    from pyspark.sql import functions as F

    m = rep.messages
    parents = m.select(
        F.col("run").alias("p_run"),
        F.col("id").alias("p_id"),
        F.col("received_at").alias("p_recv"),
        F.lit(True).alias("p_found"),
    )
    j = m.join(parents, (F.col("run") == F.col("p_run")) & (F.col("parent_id") == F.col("p_id")), "left")
    has_parent = F.col("parent_id").isNotNull()

    def count(cond: Column) -> Column:
        return F.sum(F.when(cond, 1).otherwise(0))

    row = j.agg(
        F.count("*").alias("messages"),
        count(F.col("received_at").isNull()).alias("lost"),
        count(~has_parent).alias("roots"),
        count(has_parent & F.col("p_found").isNull()).alias("dangling_parents"),
        count(F.col("p_found") & F.col("p_recv").isNull()).alias("children_of_lost"),
        count(F.col("sent_at") < F.col("p_recv") - TOLERANCE_S).alias("sent_before_parent_received"),
        count(F.col("src_host").isNull() | F.col("dst_host").isNull()).alias("unknown_nodes"),
        count(
            F.col("l_orig_ms").isNull() & F.col("src_host").isNotNull() & F.col("dst_host").isNotNull()
        ).alias("pairs_missing_in_run_matrix"),
        count(F.col("q") < -TOLERANCE_S).alias("faster_than_matrix"),
        count(F.col("imputed")).alias("imputed_pairs"),
        F.min("q").alias("min_queueing_s"),
        F.max("q").alias("max_queueing_s"),
        F.max("depth").alias("max_depth"),
        F.max(F.abs(F.col("shift_own"))).alias("identity_max_diff_s"),
        F.max(F.abs(F.col("shift"))).alias("max_shift_s"),
    ).first()
    out = {k: (v if v is not None else 0) for k, v in row.asDict().items()}
    out["rounds"] = rep.rounds
    return out
