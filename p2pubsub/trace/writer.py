"""`TraceWriter`: buffer a run's trace rows in memory, write the Parquet files of :mod:`.schema` on close.

Made for millions of message rows: every column is a typed buffer (``array.array``: 8 bytes per float or
id, 4 per int32; strings stay Python lists of shared objects), an append is a handful of ``array.append``
calls, and `close` hands the buffers to pyarrow without a Python loop. Nulls are sentinels while buffered:
-1 for ids (ids are never negative), NaN for times.

Message ids are row numbers, allocated by the writer: :meth:`TraceWriter.message` returns the new message's
id, which the simulator carries as the message's causal id (``parent_id`` of what it causes, ``cause_id``
of a delivery). A message can be logged at send time with ``received_at=None`` and completed later with
:meth:`TraceWriter.received`; one never completed stays lost (null).
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .schema import FILES, SCENARIO_FILE, SCHEMAS
from .summary import summarize, write_summary

__all__ = ["TraceWriter", "scenario_toml"]

_NAN = math.nan


def _ids(buf: array) -> pa.Array:
    a = np.frombuffer(buf, dtype=np.int64) if len(buf) else np.zeros(0, np.int64)
    return pa.array(a, type=pa.int64(), mask=a < 0)


def _times(buf: array) -> pa.Array:
    a = np.frombuffer(buf, dtype=np.float64) if len(buf) else np.zeros(0, np.float64)
    return pa.array(a, type=pa.float64(), mask=np.isnan(a))


_INT32 = pa.int32()


def _ints(buf: array, type_: pa.DataType = _INT32) -> pa.Array:
    dtype = np.int64 if buf.typecode == "q" else np.int32
    a = np.frombuffer(buf, dtype=dtype) if len(buf) else np.zeros(0, dtype)
    return pa.array(a, type=type_)


def _strings(values: list[str | None]) -> pa.Array:
    return pa.array(values, type=pa.string())


class TraceWriter:
    """Collects one run's trace and writes it to `run_dir` on :meth:`close` (also as a context manager)."""

    def __init__(self, run_dir: str | Path, *, scenario: str | Mapping[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self._scenario = scenario
        self._closed = False
        # messages
        self._m_parent = array("q")
        self._m_type: list[str] = []
        self._m_src = array("i")
        self._m_dst = array("i")
        self._m_bytes = array("i")
        self._m_sent = array("d")
        self._m_recv = array("d")
        self._m_event: list[str | None] = []
        self._m_sub: list[str | None] = []
        # subscriptions
        self._s_id: list[str] = []
        self._s_row: dict[str, int] = {}
        self._s_subscriber = array("i")
        self._s_requested = array("d")
        self._s_installed = array("d")
        self._s_cause = array("q")
        # events
        self._e_id: list[str] = []
        self._e_publisher = array("i")
        self._e_published = array("d")
        # deliveries
        self._d_event: list[str] = []
        self._d_sub: list[str] = []
        self._d_subscriber = array("i")
        self._d_publisher = array("i")
        self._d_published = array("d")
        self._d_delivered = array("d")
        self._d_cause = array("q")
        # nodes and latency
        self._n_node = array("i")
        self._n_host = array("i")
        self._n_country: list[str | None] = []
        self._l_src = array("i")
        self._l_dst = array("i")
        self._l_ms = array("d")

    # -- rows ---------------------------------------------------------------------------------------------

    def message(
        self,
        type: str,
        src: int,
        dst: int,
        nbytes: int,
        sent_at: float,
        received_at: float | None = None,
        parent_id: int | None = None,
        event_id: str | None = None,
        subscription_id: str | None = None,
    ) -> int:
        """Log a network message; returns its id. ``received_at=None``: not (yet) received."""
        mid = len(self._m_type)
        self._m_parent.append(-1 if parent_id is None else parent_id)
        self._m_type.append(type)
        self._m_src.append(src)
        self._m_dst.append(dst)
        self._m_bytes.append(nbytes)
        self._m_sent.append(sent_at)
        self._m_recv.append(_NAN if received_at is None else received_at)
        self._m_event.append(event_id)
        self._m_sub.append(subscription_id)
        return mid

    def received(self, message_id: int, received_at: float) -> None:
        """Record the receipt time of a message logged earlier without one."""
        self._m_recv[message_id] = received_at

    def subscription(
        self,
        subscription_id: str,
        subscriber: int,
        requested_at: float,
        installed_at: float | None = None,
        cause_id: int | None = None,
    ) -> None:
        """Log a subscribe call (and its install, if already known)."""
        if subscription_id in self._s_row:
            raise ValueError(f"duplicate subscription id {subscription_id!r}")
        self._s_row[subscription_id] = len(self._s_id)
        self._s_id.append(subscription_id)
        self._s_subscriber.append(subscriber)
        self._s_requested.append(requested_at)
        self._s_installed.append(_NAN if installed_at is None else installed_at)
        self._s_cause.append(-1 if cause_id is None else cause_id)

    def installed(self, subscription_id: str, installed_at: float, cause_id: int | None) -> None:
        """Record that a logged subscription finished installing."""
        row = self._s_row[subscription_id]
        self._s_installed[row] = installed_at
        self._s_cause[row] = -1 if cause_id is None else cause_id

    def event(self, event_id: str, publisher: int, published_at: float) -> None:
        """Log a publish call."""
        self._e_id.append(event_id)
        self._e_publisher.append(publisher)
        self._e_published.append(published_at)

    def delivery(
        self,
        event_id: str,
        subscription_id: str,
        subscriber: int,
        publisher: int,
        published_at: float,
        delivered_at: float,
        cause_id: int | None = None,
    ) -> None:
        """Log a notification delivered to a subscriber."""
        self._d_event.append(event_id)
        self._d_sub.append(subscription_id)
        self._d_subscriber.append(subscriber)
        self._d_publisher.append(publisher)
        self._d_published.append(published_at)
        self._d_delivered.append(delivered_at)
        self._d_cause.append(-1 if cause_id is None else cause_id)

    def node(self, node: int, host: int, country: str | None = None) -> None:
        """Log a node and the latency-model host it runs on."""
        self._n_node.append(node)
        self._n_host.append(host)
        self._n_country.append(country)

    def latency(self, src_host: int, dst_host: int, one_way_ms: float) -> None:
        """Log one entry of the one-way latency matrix (ms)."""
        self._l_src.append(src_host)
        self._l_dst.append(dst_host)
        self._l_ms.append(one_way_ms)

    def latency_matrix(self, hosts: Any, one_way_ms: Any) -> None:
        """Log a dense matrix: ``one_way_ms[i][j]`` is the latency from ``hosts[i]`` to ``hosts[j]``."""
        hosts = np.asarray(hosts, dtype=np.int32)
        ms = np.asarray(one_way_ms, dtype=np.float64)
        if ms.shape != (hosts.size, hosts.size):
            raise ValueError(f"matrix shape {ms.shape} does not match {hosts.size} hosts")
        self._l_src.extend(np.repeat(hosts, hosts.size).tolist())
        self._l_dst.extend(np.tile(hosts, hosts.size).tolist())
        self._l_ms.extend(ms.ravel().tolist())

    # -- output -------------------------------------------------------------------------------------------

    def tables(self) -> dict[str, pa.Table]:
        """The buffered rows as pyarrow tables with the trace schemas (checks non-null columns)."""
        n = len(self._m_type)
        columns: dict[str, list[pa.Array]] = {
            "messages": [
                pa.array(np.arange(n, dtype=np.int64)),
                _ids(self._m_parent),
                _strings(self._m_type),
                _ints(self._m_src),
                _ints(self._m_dst),
                _ints(self._m_bytes),
                _times(self._m_sent),
                _times(self._m_recv),
                _strings(self._m_event),
                _strings(self._m_sub),
            ],
            "subscriptions": [
                _strings(self._s_id),
                _ints(self._s_subscriber),
                _times(self._s_requested),
                _times(self._s_installed),
                _ids(self._s_cause),
            ],
            "events": [_strings(self._e_id), _ints(self._e_publisher), _times(self._e_published)],
            "deliveries": [
                _strings(self._d_event),
                _strings(self._d_sub),
                _ints(self._d_subscriber),
                _ints(self._d_publisher),
                _times(self._d_published),
                _times(self._d_delivered),
                _ids(self._d_cause),
            ],
            "nodes": [_ints(self._n_node), _ints(self._n_host), _strings(self._n_country)],
            "latency": [_ints(self._l_src), _ints(self._l_dst), _times(self._l_ms)],
        }
        out = {}
        for name, arrays in columns.items():
            schema = SCHEMAS[name]
            table = pa.Table.from_arrays(arrays, schema=schema)
            for field, col in zip(schema, table.columns, strict=True):
                if not field.nullable and col.null_count:
                    raise ValueError(
                        f"{name}.{field.name}: {col.null_count} null value(s) in a required column"
                    )
            out[name] = table
        return out

    def close(self, summary_extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write every file of the run directory; returns the summary written to ``summary.json``.

        `summary_extra` (the simulator's own fields, e.g. wall time) is merged into the summary.
        """
        if self._closed:
            raise RuntimeError("TraceWriter already closed")
        tables = self.tables()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            pq.write_table(table, self.run_dir / FILES[name], compression="zstd")
        if self._scenario is not None:
            text = self._scenario if isinstance(self._scenario, str) else scenario_toml(self._scenario)
            (self.run_dir / SCENARIO_FILE).write_text(text)
        summary = summarize(tables)
        if summary_extra:
            summary.update(summary_extra)
        write_summary(self.run_dir, summary)
        self._closed = True
        return summary

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None and not self._closed:
            self.close()


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def scenario_toml(scenario: Mapping[str, Any]) -> str:
    """A scenario mapping (scalars and one level of tables) as TOML text."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in scenario.items() if not isinstance(v, Mapping)]
    for k, v in scenario.items():
        if isinstance(v, Mapping):
            lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
