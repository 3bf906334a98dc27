"""Merge the per-node trace files of a live run (:mod:`p2pubsub.node.tracefile`) into the Parquet trace format of
:mod:`p2pubsub.trace.schema` (``messages``, ``subscriptions``, ``events``, ``deliveries``, ``nodes``, ``latency``).

* **Ids.** Every ``sent`` row becomes one message; its ``id`` is its row number in ``messages.parquet``, node by
  node in file order, so ids are unique across nodes.
* **Who is who.** Rows name peers by UDP address. An address belongs to the node process the runner saw bound
  to it at that time (ports are picked by the OS, so a port may be reused by a later process; the node alive at
  the row's time wins). ``src`` / ``dst`` are node indices (the runner's numbering, 0 = first node).
* **Receipts.** The peer transport is exactly-once and FIFO per (sender, receiver) address pair, so the k-th
  message A sent to B is the k-th B received from A: ``received_at`` comes from B's k-th ``received`` row from
  A. Each pairing is checked by message type (``type_mismatches``, 0 when all is well).
* **Causes.** A node passes the id of the message it is handling to everything that handling sends, delivers
  or installs; the merge turns that node-local id into the matched message's global id, so ``parent_id`` links
  across nodes (the message that caused this one, whoever sent it), and a delivery's or install's ``cause_id``
  is the message whose handling produced it.
* **Times** are ``time.monotonic()`` of each node (one clock for all processes of a machine on Linux) minus the
  runner's origin: seconds on the experiment's clock, like ``summary.json``.

What the traces cannot tell: Kademlia's own RPCs and the transport's acknowledgements never pass the node's
observer (no ``dht.*`` or ``Ack`` rows: bandwidth per node is peer messages only); a node killed with SIGKILL
loses its last unflushed rows (at most the flush interval, 0.2 s), so messages it received then stay unreceived
and messages it sent then show up only as ``unmatched_received`` at their receiver; a message handed back by the
transport after giving up on a live but unresponsive peer can leave a gap in the k-th pairing (it would show as
type mismatches). Re-timing (:mod:`spark.replay`) works on the causal chains, but on loopback the measured
``received_at - sent_at`` is queueing and scheduling on a shared CPU, not propagation: ``latency.parquet`` is
left empty (no latency model was used), so replay needs an explicit matrix, and the replayed processing delays
carry the CPU contention of the live run.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ..trace import FILES, TraceWriter

__all__ = ["TraceSource", "merge_traces"]


@dataclass(frozen=True)
class TraceSource:
    """One node's trace file and where it lived. Times: monotonic seconds (``origin + experiment time``)."""

    index: int
    path: Path
    address: tuple[str, int] | None
    start: float
    end: float  # inf: to the end of the run


class _Addresses:
    def __init__(self, sources: Iterable[TraceSource]) -> None:
        self._by: dict[tuple[str, int], list[TraceSource]] = defaultdict(list)
        for s in sources:
            if s.address is not None:
                self._by[s.address].append(s)
        for lst in self._by.values():
            lst.sort(key=lambda s: s.start)

    def node(self, ip: str, port: int, t: float) -> int:
        cands = self._by.get((ip, port))
        if not cands:
            return -1
        if len(cands) == 1:
            return cands[0].index
        best = cands[0]
        for s in cands:
            if s.start <= t:
                best = s
        return best.index


def _rows(path: Path, bad: Counter) -> Iterable[list]:
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115
    except FileNotFoundError:
        bad["missing_files"] += 1
        return
    with f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                bad["bad_lines"] += 1  # a line cut short by SIGKILL
                continue
            if isinstance(row, list) and row:
                yield row
            else:
                bad["bad_lines"] += 1


def merge_traces(sources: list[TraceSource], origin: float, out_dir: str | Path) -> dict[str, Any]:
    """Write the trace tables into ``out_dir``; returns merge statistics for the summary."""
    out_dir = Path(out_dir)
    addresses = _Addresses(sources)
    w = TraceWriter(out_dir)
    stats: Counter = Counter()
    sent_by_pair: dict[tuple[int, int], list[int]] = defaultdict(list)
    sent: list[list] = []  # [type, src, dst, bytes, sent_at, received_at, cause (sender-local id), event, sub]
    received: dict[int, list[tuple[int, float, str, int, str]]] = {}  # node -> [(lid, t, ip, port, type)]
    subs: dict[str, list] = {}
    installs: list[tuple[int, str, float, int | None]] = []
    deliveries: list[tuple[int, list]] = []
    by_type: Counter = Counter()
    bytes_by_type: Counter = Counter()
    for src in sorted(sources, key=lambda s: s.index):
        recv = received[src.index] = []
        for row in _rows(src.path, stats):
            kind = row[0]
            if kind == "s":
                _, lid, t, ip, port, typ, nbytes, cause, event_id, sub_id = row
                dst = addresses.node(ip, port, t)
                sent_by_pair[(src.index, dst)].append(len(sent))
                sent.append([typ, src.index, dst, int(nbytes), t - origin, None, cause, event_id, sub_id])
                by_type[typ] += 1
                bytes_by_type[typ] += int(nbytes)
            elif kind == "r":
                recv.append((row[1], row[2], row[3], row[4], row[5]))
            elif kind == "h":
                _, _node_id, ip, port, _pid, _t = row
                if src.address is not None and (ip, port) != tuple(src.address):
                    stats["header_mismatches"] += 1
            elif kind == "sub":
                if row[1] not in subs:
                    subs[row[1]] = [src.index, row[2] - origin, None, None]
            elif kind == "ins":
                installs.append((src.index, row[1], row[2] - origin, row[3]))
            elif kind == "pub":
                w.event(row[1], src.index, row[2] - origin)
            elif kind == "dlv":
                deliveries.append((src.index, row))
            else:
                stats["unknown_rows"] += 1
    # k-th sent from A to B = k-th received by B from A
    recv_id: dict[int, dict[int, int]] = {}
    taken: Counter = Counter()
    for node, rows in received.items():
        ids = recv_id[node] = {}
        for lid, t, ip, port, typ in rows:
            sender = addresses.node(ip, port, t)
            pair = (sender, node)
            k = taken[pair]
            queue = sent_by_pair.get(pair)
            if queue is None or k >= len(queue):
                stats["unmatched_received"] += 1
                continue
            taken[pair] = k + 1
            mid = queue[k]
            sent[mid][5] = t - origin
            ids[lid] = mid
            if sent[mid][0] != typ:
                stats["type_mismatches"] += 1
    for typ, node, dst, nbytes, sent_at, received_at, cause, event_id, sub_id in sent:
        parent = None
        if cause is not None:
            parent = recv_id.get(node, {}).get(cause)
            stats["parent_linked" if parent is not None else "parent_unlinked"] += 1
        w.message(typ, node, dst, nbytes, sent_at, received_at, parent, event_id, sub_id)
    for sub_id, (node, requested, _, _) in subs.items():
        w.subscription(sub_id, node, requested)
    seen_install: set[str] = set()
    for node, sub_id, at, cause in installs:
        if sub_id in subs and sub_id not in seen_install:
            seen_install.add(sub_id)
            w.installed(sub_id, at, recv_id.get(node, {}).get(cause) if cause is not None else None)
    for node, row in deliveries:
        _, sub_id, event_id, t, cause, pub_ip, pub_port, published_at = row
        publisher = addresses.node(pub_ip, pub_port, published_at)
        cause_id = recv_id.get(node, {}).get(cause) if cause is not None else None
        w.delivery(event_id, sub_id, node, publisher, published_at - origin, t - origin, cause_id)
    for s in sources:
        w.node(s.index, s.index)
    tables = w.tables()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        pq.write_table(table, out_dir / FILES[name], compression="zstd")
    n = tables["messages"].num_rows
    lost = tables["messages"].column("received_at").null_count
    return {
        "files": len(sources),
        "messages": n,
        "received": n - lost,
        "never_received": lost,
        "unmatched_received": stats["unmatched_received"],
        "type_mismatches": stats["type_mismatches"],
        "parent_linked": stats["parent_linked"],
        "parent_unlinked": stats["parent_unlinked"],
        "bad_lines": stats["bad_lines"],
        "missing_files": stats["missing_files"],
        "header_mismatches": stats["header_mismatches"],
        "unknown_rows": stats["unknown_rows"],
        "subscriptions": tables["subscriptions"].num_rows,
        "events": tables["events"].num_rows,
        "deliveries": tables["deliveries"].num_rows,
        "bytes": int(sum(bytes_by_type.values())),
        "by_type": dict(sorted(by_type.items())),
        "bytes_by_type": dict(sorted(bytes_by_type.items())),
    }


def sources_of(nodes: Iterable[Any], origin: float) -> list[TraceSource]:
    """Trace sources from the runner's node processes (experiment times -> monotonic)."""
    out = []
    for n in nodes:
        if n.trace_path is None:
            continue
        start = origin + (n.spawned_at if n.spawned_at is not None else 0.0)
        end = origin + n.exited_at if n.exited_at is not None else math.inf
        out.append(TraceSource(n.index, Path(n.trace_path), n.dht, start, end))
    return out
