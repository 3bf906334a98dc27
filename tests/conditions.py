"""Waiting on a condition with a deadline, never a fixed sleep (for the node and SCOT cluster helpers).

``tests/`` is on ``sys.path`` because of its ``conftest.py``, so helpers in any test folder import this as
``conditions``.
"""

import asyncio


async def until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    """Wait for ``predicate()`` with a deadline: a condition, never a fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)
