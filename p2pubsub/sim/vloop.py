"""A deterministic asyncio event loop that runs on virtual time.

`VirtualTimeLoop.time()` starts at 0.0 and only moves when the loop has nothing ready to run: instead of
sleeping until the next timer, it jumps the clock straight to that timer. Callbacks therefore take zero
virtual time, `asyncio.sleep(3600)` costs no wall time, and `call_at`/`call_later`/`wait_for`/`timeout`
all measure virtual seconds.

There is no real I/O: methods that would open sockets, pipes, subprocesses or threads raise
`RealIOForbidden`. Datagram endpoints are delegated to an attached in-memory network (`SimNetwork`).

Determinism: the loop draws no randomness and reads no wall clock, so the same program with the same seeds
produces the same schedule. Timers due at the same instant run in the order they were scheduled (asyncio itself
promises no order for them, so code must not rely on it).

Speed: the timer heap holds ``(when, sequence, TimerHandle)`` tuples, compared in C, instead of asyncio's
`TimerHandle` objects, whose ``__lt__`` is Python; and `_run_once` is a leaner version of asyncio's for a loop
that never polls. A simulation spends much of its time scheduling and running timers (every datagram is one).
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Awaitable, Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

__all__ = ["DatagramNetwork", "RealIOForbidden", "SimulationStalled", "VirtualTimeLoop", "run"]


class SimulationStalled(RuntimeError):
    """The loop was asked to keep running but nothing is ready or scheduled: virtual time cannot advance.

    A real loop would block forever here (typically an awaited future that nothing will ever resolve).
    """


class RealIOForbidden(RuntimeError):
    """Real sockets, pipes, threads or subprocesses were requested inside the simulation."""


class DatagramNetwork(Protocol):
    """What the loop needs from a simulated network to open datagram endpoints."""

    async def create_datagram_endpoint(
        self, protocol_factory: Any, local_addr: tuple[str, int] | None, remote_addr: tuple[str, int] | None
    ) -> tuple[asyncio.DatagramTransport, asyncio.DatagramProtocol]: ...


class _JumpingSelector:
    """Stands in for the OS selector: `select(timeout)` never blocks, it advances the virtual clock."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list:
        self._loop._advance(timeout)
        return []

    def close(self) -> None:
        pass


def _forbidden(name: str):
    def method(self, *args: Any, **kwargs: Any):
        raise RealIOForbidden(
            f"{name}() would use real I/O, which the virtual-time simulation forbids; "
            "use the simulated network (SimNetwork) instead"
        )

    method.__name__ = name
    method.__doc__ = "Forbidden in the simulation: raises RealIOForbidden."
    return method


def _forbidden_async(name: str):
    sync = _forbidden(name)

    async def method(self, *args: Any, **kwargs: Any):
        sync(self)

    method.__name__ = name
    method.__doc__ = sync.__doc__
    return method


class VirtualTimeLoop(asyncio.BaseEventLoop):
    """An asyncio event loop whose clock is virtual and which never sleeps.

    It builds on `asyncio.BaseEventLoop` (the scheduler, tasks, futures, timers are asyncio's own); only the
    clock and the I/O poll are replaced.
    """

    def __init__(self, start: float = 0.0) -> None:
        super().__init__()
        self._now = float(start)
        self._selector = _JumpingSelector(self)
        self._network: DatagramNetwork | None = None
        self._timer_seq = 0

    # -- clock -------------------------------------------------------------------------------------------

    def time(self) -> float:
        """Current virtual time in seconds (starts at `start`, 0.0 by default)."""
        return self._now

    def _advance(self, timeout: float | None) -> None:
        """Called where a real loop would poll for I/O with `timeout`."""
        if timeout is None:
            # Nothing ready, nothing scheduled, not stopping: a real loop would block forever.
            raise SimulationStalled(
                f"nothing is scheduled at virtual time {self._now:.6f} s, but the loop was asked to keep "
                "running (is something awaiting a future that nothing will resolve?)"
            )
        if timeout > 0:
            # Jump exactly to the earliest timer rather than adding `timeout` (asyncio caps it at one day,
            # and now + (when - now) may miss `when` by a rounding error). `_scheduled` is BaseEventLoop's
            # timer heap; by the time select() is called its head is a live timer.
            self._now = max(self._now, self._scheduled[0][0])

    # BaseEventLoop runs timers due before `time() + _clock_resolution`. With a fixed resolution (1 ns) that
    # sum rounds back to `time()` once virtual time passes ~2**23 s, and a timer due exactly now would never
    # run; never let the resolution fall below one unit in the last place of the current time.
    @property
    def _clock_resolution(self) -> float:
        return max(self._base_resolution, math.ulp(self._now))

    @_clock_resolution.setter
    def _clock_resolution(self, value: float) -> None:
        self._base_resolution = value

    # -- scheduling --------------------------------------------------------------------------------------

    def call_at(self, when, callback, *args, context=None):
        """As asyncio's, but the heap entry is a ``(when, sequence, handle)`` tuple (see the module docstring)."""
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()
        timer = asyncio.TimerHandle(when, callback, args, self, context)
        self._timer_seq += 1
        heapq.heappush(self._scheduled, (when, self._timer_seq, timer))
        timer._scheduled = True
        return timer

    def _run_once(self) -> None:
        """One iteration: jump to the next timer if nothing is ready, move due timers to the ready queue, run it."""
        sched = self._scheduled
        if len(sched) > 100 and self._timer_cancelled_count * 2 > len(sched):
            live = []
            for entry in sched:
                if entry[2]._cancelled:
                    entry[2]._scheduled = False
                else:
                    live.append(entry)
            heapq.heapify(live)
            self._scheduled = sched = live
            self._timer_cancelled_count = 0
        else:
            while sched and sched[0][2]._cancelled:
                self._timer_cancelled_count -= 1
                heapq.heappop(sched)[2]._scheduled = False
        ready = self._ready
        if not ready and not self._stopping:
            if not sched:
                self._advance(None)  # raises SimulationStalled
            when = sched[0][0]
            if when > self._now:
                self._now = when
        end = self._now + self._clock_resolution
        pop = heapq.heappop
        while sched and sched[0][0] < end:
            handle = pop(sched)[2]
            handle._scheduled = False
            ready.append(handle)
        for _ in range(len(ready)):
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()

    # -- running -----------------------------------------------------------------------------------------

    def run_until(self, when: float) -> None:
        """Run every callback due up to virtual time `when`, then return with `time() == when`.

        Callbacks made ready at exactly `when` by those callbacks run on the next call.
        """
        if when < self._now:
            raise ValueError(f"cannot run until {when}: virtual time is already {self._now}")
        handle = self.call_at(when, self.stop)
        try:
            self.run_forever()
        finally:
            handle.cancel()

    def run_for(self, duration: float) -> None:
        """Run for `duration` virtual seconds (see `run_until`)."""
        self.run_until(self._now + duration)

    def run_with_deadline(self, main: Awaitable[T], timeout: float) -> T:
        """Run `main` to completion; raise `TimeoutError` if it takes more than `timeout` virtual seconds."""
        return self.run_until_complete(asyncio.wait_for(main, timeout))

    # -- simulated network -------------------------------------------------------------------------------

    def attach_network(self, network: DatagramNetwork) -> None:
        """Route `create_datagram_endpoint` to `network` (done by `SimNetwork` itself)."""
        if self._network is not None and self._network is not network:
            raise RuntimeError("a network is already attached to this loop")
        self._network = network

    async def create_datagram_endpoint(
        self,
        protocol_factory,
        local_addr=None,
        remote_addr=None,
        *,
        family=0,
        proto=0,
        flags=0,
        reuse_port=None,
        allow_broadcast=None,
        sock=None,
    ):
        """Open an in-memory datagram endpoint on the attached network.

        `local_addr` must be a simulated host address, e.g. `(net.ip_of(host), 0)`; port 0 picks a free port.
        """
        if sock is not None:
            raise RealIOForbidden("create_datagram_endpoint(sock=...) would use a real socket")
        if self._network is None:
            raise RealIOForbidden(
                "create_datagram_endpoint() needs a simulated network: create SimNetwork(loop, ...) first"
            )
        return await self._network.create_datagram_endpoint(protocol_factory, local_addr, remote_addr)

    # -- no real I/O -------------------------------------------------------------------------------------

    def _process_events(self, event_list: list) -> None:
        pass  # the jumping selector never reports I/O events

    def _write_to_self(self) -> None:
        pass  # nothing ever blocks, so there is no poll to wake up

    run_in_executor = _forbidden("run_in_executor")
    add_reader = _forbidden("add_reader")
    add_writer = _forbidden("add_writer")
    remove_reader = _forbidden("remove_reader")
    remove_writer = _forbidden("remove_writer")
    add_signal_handler = _forbidden("add_signal_handler")
    getaddrinfo = _forbidden_async("getaddrinfo")
    getnameinfo = _forbidden_async("getnameinfo")
    create_connection = _forbidden_async("create_connection")
    create_server = _forbidden_async("create_server")
    create_unix_connection = _forbidden_async("create_unix_connection")
    create_unix_server = _forbidden_async("create_unix_server")
    connect_accepted_socket = _forbidden_async("connect_accepted_socket")
    connect_read_pipe = _forbidden_async("connect_read_pipe")
    connect_write_pipe = _forbidden_async("connect_write_pipe")
    subprocess_exec = _forbidden_async("subprocess_exec")
    subprocess_shell = _forbidden_async("subprocess_shell")
    start_tls = _forbidden_async("start_tls")
    sendfile = _forbidden_async("sendfile")
    sock_recv = _forbidden_async("sock_recv")
    sock_recv_into = _forbidden_async("sock_recv_into")
    sock_recvfrom = _forbidden_async("sock_recvfrom")
    sock_recvfrom_into = _forbidden_async("sock_recvfrom_into")
    sock_sendall = _forbidden_async("sock_sendall")
    sock_sendto = _forbidden_async("sock_sendto")
    sock_connect = _forbidden_async("sock_connect")
    sock_accept = _forbidden_async("sock_accept")
    sock_sendfile = _forbidden_async("sock_sendfile")


def run(main: Coroutine[Any, Any, T], *, timeout: float | None = None, start: float = 0.0) -> T:
    """Run `main` on a fresh `VirtualTimeLoop` and close the loop; like `asyncio.run` in virtual time.

    With `timeout`, raise `TimeoutError` once `main` has taken that many virtual seconds. `main` can reach
    the loop with `asyncio.get_running_loop()` (e.g. to attach a `SimNetwork`).
    """
    loop = VirtualTimeLoop(start=start)
    try:
        if timeout is None:
            return loop.run_until_complete(main)
        return loop.run_with_deadline(main, timeout)
    finally:
        _cancel_leftover_tasks(loop)
        loop.close()


def _cancel_leftover_tasks(loop: VirtualTimeLoop) -> None:
    """Cancel tasks still pending after the main coroutine (as asyncio.run does), in virtual time."""
    # all_tasks() is a set ordered by memory address; cancel in creation order to stay deterministic.
    pending = sorted((t for t in asyncio.all_tasks(loop) if not t.done()), key=_creation_order)
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _creation_order(task: asyncio.Task) -> tuple[int, int, str]:
    """Sort key: unnamed tasks ("Task-<n>", n from a global counter) by n, then named tasks by name."""
    prefix, _, number = task.get_name().rpartition("-")
    if prefix == "Task" and number.isdigit():
        return (0, int(number), "")
    return (1, 0, task.get_name())
