"""A one-line progress bar for `p2pubsub sim` on a terminal (stderr); silent when stderr is not a TTY.

It shows the phase, the virtual time, how far the phase has got, and the wall time. It never schedules anything
on the simulation's loop (that could change the order of same-instant timers between a terminal and a pipe):
the simulator calls `advance` as work gets done, and the bar redraws at most every ``interval`` wall seconds.
Reading the wall clock here does not touch the simulation.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None, interval: float = 0.25) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.interval = interval
        self.clock: Callable[[], float] = lambda: 0.0
        self._start = time.monotonic()
        self._last = 0.0
        self._phase = ""
        self._done = 0
        self._total: int | None = None
        self._note = ""
        self._width = 0

    def attach(self, clock: Callable[[], float]) -> None:
        """Read virtual time from ``clock`` (the loop's ``time``)."""
        self.clock = clock

    def phase(self, name: str, total: int | None = None) -> None:
        self._phase, self._done, self._total, self._note = name, 0, total, ""
        self._draw(force=True)

    def advance(self, _what: str = "", n: int = 1) -> None:
        self._done += n
        if self.enabled:
            self._draw()

    def note(self, text: str) -> None:
        self._note = text
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self._total:
            frac = min(1.0, self._done / self._total)
            bar = "#" * int(frac * 24)
            count = f"[{bar:<24}] {self._done}/{self._total}"
        else:
            count = f"{self._done}" if self._done else ""
        line = f"sim {self._phase:<9} virtual {self.clock():9.1f} s  {count}  wall {now - self._start:6.1f} s"
        if self._note:
            line += f"  ({self._note})"
        pad = max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
