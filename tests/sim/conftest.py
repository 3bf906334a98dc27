"""Fixtures for virtual-time tests: a fresh loop per test that fails the test on unhandled errors."""

import pytest

from p2pubsub.sim import VirtualTimeLoop


@pytest.fixture
def vloop():
    """A `VirtualTimeLoop` at virtual time 0; exceptions nobody retrieved fail the test."""
    loop = VirtualTimeLoop()
    errors = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    loop.close()
    assert not errors, f"unhandled errors in the loop: {errors}"
