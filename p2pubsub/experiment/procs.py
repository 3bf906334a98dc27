"""Node processes: ``python -m p2pubsub node`` on loopback, started, watched, stopped (SIGTERM) and killed (SIGKILL).

A node is ready when it prints ``p2pubsub node <id> ready: dht udp HOST:PORT, api URL`` on stdout; its stderr goes
to a log file (``DIR/logs/node-<i>.log``) so that nothing can block on a full pipe, and a node that fails to start
raises :class:`ExperimentError` naming the node, its command and the tail of that log. Every process started is
kept in a :class:`Fleet`, whose :meth:`Fleet.teardown` kills whatever is still running, whatever happened, and
reports each straggler's exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..scenario import Scenario

__all__ = ["ExperimentError", "Fleet", "NodeProcess", "node_arguments", "supported_node_options"]

READY = " ready: dht udp "


class ExperimentError(RuntimeError):
    """The experiment could not be carried out (as opposed to a result that shows a fault of the system)."""


def supported_node_options() -> set[str]:
    """The long options ``p2pubsub node`` accepts in this installation (the processes run the same code)."""
    from ..cli import add_node_arguments

    p = argparse.ArgumentParser(add_help=False)
    add_node_arguments(p)
    return {s for a in p._actions for s in a.option_strings if s.startswith("--")}


def node_arguments(scenario: Scenario, capacity: int, supported: set[str]) -> tuple[list[str], dict[str, Any]]:
    """Node options carrying the scenario's protocol knobs: ``(args, {"passed": ..., "unsupported": ...})``.

    A knob whose option the node does not have (yet) is left out and listed under ``unsupported`` (e.g.
    ``protocol.replicas`` before replication lands), so the same scenario runs before and after.
    """
    p = scenario.protocol
    wanted: list[tuple[str, str, list[str]]] = [  # (scenario key, option, args)
        ("protocol.leaf_capacity", "--capacity", ["--capacity", str(capacity)]),
        ("protocol.min_probe_level", "--min-probe-level", ["--min-probe-level", str(p.min_probe_level)]),
        ("protocol.max_probe_level", "--max-probe-level", ["--max-probe-level", str(p.max_probe_level)]),
        ("protocol.probe_p", "--probe-p", ["--probe-p", repr(p.probe_p)]),
        ("protocol.cutoff_fraction", "--cutoff-fraction", ["--cutoff-fraction", repr(p.cutoff_fraction)]),
        ("protocol.replicas", "--replicas", ["--replicas", str(p.replicas)]),
        ("protocol.seen_ttl_s", "--seen-ttl", ["--seen-ttl", repr(p.seen_ttl_s)]),
        ("protocol.tick_interval_s", "--tick-interval", ["--tick-interval", repr(p.tick_interval_s)]),
    ]
    if not p.multicast:
        wanted.append(("protocol.multicast", "--unicast", ["--unicast"]))
    if not p.cutoff:
        wanted.append(("protocol.cutoff", "--no-cutoff", ["--no-cutoff"]))
    args: list[str] = []
    passed: dict[str, str] = {}
    unsupported: dict[str, str] = {}
    for key, option, extra in wanted:
        if option in supported:
            args += extra
            passed[key] = " ".join(extra)
        else:
            unsupported[key] = option
    return args, {"passed": passed, "unsupported": unsupported}


@dataclass
class NodeProcess:
    """One node process and what happened to it. Times are seconds on the experiment's clock."""

    index: int
    command: list[str]
    log_path: Path
    trace_path: Path | None
    bootstrap: int | None  # index of the node it joined through
    proc: asyncio.subprocess.Process | None = None
    node_id: str | None = None  # full hex id (from GET /v1/node), the ready line's prefix until then
    dht: tuple[str, int] | None = None
    url: str | None = None
    spawned_at: float | None = None
    ready_at: float | None = None
    state: str = "new"  # new | starting | alive | leaving | crashing | gone | failed
    signal_name: str | None = None  # "SIGTERM" (leave) or "SIGKILL" (crash), when we stopped it
    signalled_at: float | None = None
    exited_at: float | None = None
    exit_code: int | None = None
    unexpected_exit: bool = False
    _drain: asyncio.Task | None = field(default=None, repr=False)
    _wait: asyncio.Task | None = field(default=None, repr=False)

    @property
    def alive(self) -> bool:
        return self.state == "alive"

    @property
    def gone_at(self) -> float:
        """When it stopped being a node its clients can rely on: the time of the churn step's signal, or of an
        exit nobody asked for; inf for a node that lived until the teardown."""
        if self.signal_name is not None:
            return self.signalled_at
        if self.unexpected_exit:
            return self.exited_at
        return float("inf")

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        tail = text.strip().splitlines()[-lines:]
        return "\n".join(tail) if tail else "(empty)"

    def describe(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "node_id": self.node_id,
            "dht": f"{self.dht[0]}:{self.dht[1]}" if self.dht else None,
            "api": self.url,
            "bootstrap": self.bootstrap,
            "pid": self.proc.pid if self.proc else None,
            "spawned_at": self.spawned_at,
            "ready_at": self.ready_at,
            "state": self.state,
            "signal": self.signal_name,
            "signalled_at": self.signalled_at,
            "exited_at": self.exited_at,
            "exit_code": self.exit_code,
            "unexpected_exit": self.unexpected_exit,
        }


class Fleet:
    """The node processes of one experiment. ``clock()`` is the experiment's clock (seconds)."""

    def __init__(self, out: Path, clock, *, ready_timeout: float = 30.0, trace: bool = True,
                 log_level: str = "warning") -> None:
        self.out = out
        self.clock = clock
        self.ready_timeout = ready_timeout
        self.trace = trace
        self.log_level = log_level
        self.nodes: list[NodeProcess] = []
        self.problems: list[str] = []
        (out / "logs").mkdir(parents=True, exist_ok=True)
        if trace:
            (out / "traces").mkdir(parents=True, exist_ok=True)

    def live(self) -> list[NodeProcess]:
        return [n for n in self.nodes if n.alive]

    def by_index(self, i: int) -> NodeProcess:
        return self.nodes[i]

    def new(self, extra_args: list[str], bootstrap: NodeProcess | None) -> NodeProcess:
        """The next node (index ``len(nodes)``), to join through ``bootstrap`` (which must be ready); not started."""
        i = len(self.nodes)
        trace = self.out / "traces" / f"node-{i}.jsonl" if self.trace else None
        cmd = [sys.executable, "-m", "p2pubsub", "node", "--dht-port", "0", "--http-port", "0",
               "--log-level", self.log_level, *extra_args]
        if bootstrap is not None:
            cmd += ["--bootstrap", f"{bootstrap.dht[0]}:{bootstrap.dht[1]}"]
        if trace is not None:
            cmd += ["--trace", str(trace)]
        node = NodeProcess(i, cmd, self.out / "logs" / f"node-{i}.log", trace,
                           None if bootstrap is None else bootstrap.index)
        self.nodes.append(node)
        return node

    async def launch(self, node: NodeProcess) -> NodeProcess:
        """Start ``node``'s process and wait for its ready line; raise :class:`ExperimentError` on failure."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        node.state = "starting"
        node.spawned_at = self.clock()
        with open(node.log_path, "wb") as log:
            node.proc = await asyncio.create_subprocess_exec(
                *node.command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=log,
                env=env, start_new_session=True,  # a Ctrl-C at the terminal goes to the runner, which tears down
            )
        try:
            line = await asyncio.wait_for(self._ready_line(node), self.ready_timeout)
        except TimeoutError:
            node.state = "failed"
            raise ExperimentError(
                f"node {node.index} printed no ready line within {self.ready_timeout:g} s\n"
                f"  command: {' '.join(node.command)}\n  stderr ({node.log_path}):\n{_indent(node.log_tail())}"
            ) from None
        if line is None:
            node.state = "failed"
            code = await node.proc.wait()
            raise ExperimentError(
                f"node {node.index} exited with status {code} before it was ready\n"
                f"  command: {' '.join(node.command)}\n  stderr ({node.log_path}):\n{_indent(node.log_tail())}"
            )
        head, _, rest = line.partition(READY)
        dht, _, api = rest.partition(", api ")
        host, _, port = dht.strip().rpartition(":")
        node.node_id = head.split()[-1]
        node.dht = (host, int(port))
        node.url = api.strip()
        node.ready_at = self.clock()
        node.state = "alive"
        node._drain = asyncio.create_task(self._drain_stdout(node))
        node._wait = asyncio.create_task(self._watch(node))
        return node

    async def _ready_line(self, node: NodeProcess) -> str | None:
        while True:
            raw = await node.proc.stdout.readline()
            if not raw:
                return None
            line = raw.decode("utf-8", "replace").strip()
            if READY in line and ", api " in line:
                return line

    async def _drain_stdout(self, node: NodeProcess) -> None:
        with contextlib.suppress(Exception):
            while await node.proc.stdout.read(65536):
                pass

    async def _watch(self, node: NodeProcess) -> None:
        code = await node.proc.wait()
        node.exit_code = code
        node.exited_at = self.clock()
        if node.state == "alive":  # nobody asked it to stop
            node.unexpected_exit = True
            self.problems.append(f"node {node.index} exited by itself with status {code} at "
                                 f"{node.exited_at:.2f} s; stderr:\n{_indent(node.log_tail())}")
        node.state = "gone"

    async def leave(self, node: NodeProcess, timeout: float = 30.0) -> int | None:
        """Graceful leave: SIGTERM, then wait for the exit (status 0 expected: anything else is a problem)."""
        return await self._stop(node, signal.SIGTERM, "leaving", timeout)

    async def crash(self, node: NodeProcess, timeout: float = 10.0) -> int | None:
        """Crash: SIGKILL (the node gets no chance to hand anything over)."""
        return await self._stop(node, signal.SIGKILL, "crashing", timeout)

    async def _stop(self, node: NodeProcess, sig: signal.Signals, state: str, timeout: float) -> int | None:
        if node.state != "alive":
            raise ExperimentError(f"node {node.index} cannot be stopped: it is {node.state}")
        node.state = state
        node.signal_name = sig.name
        node.signalled_at = self.clock()
        with contextlib.suppress(ProcessLookupError):
            node.proc.send_signal(sig)
        try:
            await asyncio.wait_for(asyncio.shield(node._wait), timeout)
        except TimeoutError:
            self.problems.append(f"node {node.index} did not exit within {timeout:g} s of {sig.name}: killed")
            with contextlib.suppress(ProcessLookupError):
                node.proc.kill()
            await node._wait
        expected = 0 if sig == signal.SIGTERM else -signal.SIGKILL
        if node.exit_code != expected:
            self.problems.append(f"node {node.index} exited with status {node.exit_code} after {sig.name} "
                                 f"(expected {expected}); stderr:\n{_indent(node.log_tail())}")
        return node.exit_code

    async def teardown(self, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Stop every node still running (SIGTERM, then SIGKILL after ``timeout``); their exit codes."""
        running = [n for n in self.nodes if n.proc is not None and n.proc.returncode is None]
        for n in running:
            if n.state in ("alive", "starting"):
                n.state = "teardown"  # not an unexpected exit
            with contextlib.suppress(ProcessLookupError):
                n.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        out = []
        for n in running:
            try:
                await asyncio.wait_for(n.proc.wait(), max(0.1, deadline - time.monotonic()))
                killed = False
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    n.proc.kill()
                await n.proc.wait()
                killed = True
            if n.exit_code is None:
                n.exit_code = n.proc.returncode
            if n.exited_at is None:
                n.exited_at = self.clock()
            n.state = "gone"
            out.append({"index": n.index, "exit_code": n.proc.returncode, "killed": killed})
            if killed or n.proc.returncode != 0:
                self.problems.append(f"node {n.index} at teardown: exit status {n.proc.returncode}"
                                     + (" (killed after the SIGTERM timeout)" if killed else ""))
        for n in self.nodes:
            for task in (n._drain, n._wait):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        return out


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())
