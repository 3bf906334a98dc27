"""A one-line progress display while Spark works: step, detail, active stage and its tasks, elapsed time.

On a terminal a background thread redraws the line a few times a second from Spark's status tracker;
elsewhere (pipes, CI, tests) it stays quiet. Disabled, every method is a no-op.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["Progress"]


class Progress:
    """Status line for the report job. Use :meth:`step` around each phase and :meth:`note` for details."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, interval: float = 0.25) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval
        self._sc: SparkContext | None = None
        self._step = ""
        self._detail = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 0
        self._lock = threading.Lock()
        self.steps_done: list[tuple[str, float]] = []

    def attach(self, sc: SparkContext) -> None:
        """Start following a SparkContext's stages."""
        self._sc = sc
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="report-progress", daemon=True)
            self._thread.start()

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        """Mark a step of the job (timed; shown while it runs)."""
        self._step, self._detail = label, ""
        t0 = time.monotonic()
        self._draw()
        try:
            yield
        finally:
            self.steps_done.append((label, time.monotonic() - t0))

    def note(self, detail: str) -> None:
        """Detail of the current step, e.g. the round of an iteration."""
        self._detail = detail
        self._draw()

    def close(self, final: str | None = None) -> None:
        """Stop the display and clear the line (print `final` instead, if given)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.enabled:
            self._write("")
            if final:
                self.stream.write(final + "\n")
                self.stream.flush()

    def _stages(self) -> str:
        if self._sc is None:
            return ""
        try:
            tracker = self._sc.statusTracker()
            parts = []
            for sid in tracker.getActiveStageIds()[:2]:
                info = tracker.getStageInfo(sid)
                if info is not None:
                    parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            return ", ".join(parts)
        except Exception:  # the context may be stopping; the display is best effort
            return ""

    def _line(self) -> str:
        elapsed = time.monotonic() - self._started
        fields = [f"[{elapsed:6.1f}s] {self._step}"]
        if self._detail:
            fields.append(self._detail)
        stages = self._stages()
        if stages:
            fields.append(stages)
        return " · ".join(fields)

    def _write(self, text: str) -> None:
        with self._lock:
            text = text[: max(20, shutil.get_terminal_size().columns - 1)]
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\r" if not text else ""))
            self.stream.flush()
            self._width = len(text)

    def _draw(self) -> None:
        if self.enabled:
            self._write(self._line())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()
