"""VirtualTimeLoop: exact virtual timer times, no real waiting, virtual timeouts, determinism, no real I/O."""

import asyncio
import random
import time

import pytest

from p2pubsub.sim import RealIOForbidden, SimulationStalled, VirtualTimeLoop, run


def test_clock_starts_at_zero_and_configurable_start():
    loop = VirtualTimeLoop()
    assert loop.time() == 0.0
    loop.close()
    loop = VirtualTimeLoop(start=100.0)
    assert loop.time() == 100.0
    loop.close()


def test_timers_fire_in_time_order_at_exact_virtual_times(vloop):
    log = []

    def mark(label):
        log.append((vloop.time(), label))

    vloop.call_at(5.0, mark, "at5")
    vloop.call_later(1.0, mark, "later1")
    vloop.call_at(3.0, mark, "at3")
    vloop.call_soon(mark, "soon")
    cancelled = vloop.call_at(2.0, mark, "cancelled")
    cancelled.cancel()
    vloop.run_until(10.0)
    assert log == [(0.0, "soon"), (1.0, "later1"), (3.0, "at3"), (5.0, "at5")]
    assert vloop.time() == 10.0


def test_awkward_float_deadlines_are_hit_exactly(vloop):
    # now + (when - now) is not always `when` in floating point; the loop must land on `when` itself.
    whens = [0.1 + 0.2, 1 / 3, 2 / 3, 1e5 + 0.1, 1e7 + 1 / 7, 3e9 + 0.3]
    seen = []
    for when in whens:
        vloop.call_at(when, lambda w=when: seen.append((w, vloop.time())))
    vloop.run_until(4e9)
    assert seen == [(w, w) for w in sorted(whens)]


def test_long_sleep_takes_virtual_time_only(vloop):
    async def main():
        await asyncio.sleep(3600)
        await asyncio.sleep(30 * 24 * 3600)  # longer than asyncio's one-day cap on a single poll
        return vloop.time()

    wall = time.perf_counter()
    assert vloop.run_until_complete(main()) == 3600 + 30 * 24 * 3600
    print(f"slept 31 virtual days in {time.perf_counter() - wall:.4f} s wall time")


def test_wait_for_times_out_in_virtual_time(vloop):
    async def main():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(10), timeout=2.5)
        t_wait_for = vloop.time()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.25):
                await asyncio.sleep(10)
        return t_wait_for, vloop.time()

    assert vloop.run_until_complete(main()) == (2.5, 3.75)


def test_run_with_deadline(vloop):
    async def slow():
        await asyncio.sleep(5)
        return "done"

    assert vloop.run_with_deadline(slow(), timeout=6) == "done"
    assert vloop.time() == 5.0
    with pytest.raises(TimeoutError):
        vloop.run_with_deadline(slow(), timeout=4)
    assert vloop.time() == 9.0


def test_run_until_includes_events_at_the_deadline_and_run_for_resumes(vloop):
    log = []
    vloop.call_at(2.0, log.append, "at2")
    vloop.call_at(2.000001, log.append, "after2")
    vloop.run_until(2.0)
    assert log == ["at2"]
    vloop.run_for(1.0)
    assert log == ["at2", "after2"]
    assert vloop.time() == 3.0
    with pytest.raises(ValueError):
        vloop.run_until(1.0)


def test_tasks_futures_and_gather(vloop):
    async def worker(delay, fut):
        await asyncio.sleep(delay)
        fut.set_result(vloop.time())

    async def main():
        futs = [vloop.create_future() for _ in range(3)]
        tasks = [asyncio.create_task(worker(d, f)) for d, f in zip((3, 1, 2), futs, strict=True)]
        results = await asyncio.gather(*futs)
        await asyncio.gather(*tasks)
        return results

    assert vloop.run_until_complete(main()) == [3.0, 1.0, 2.0]


def _seeded_program(seed):
    """Many tasks with seeded random sleeps and queue hand-offs; returns the event log."""
    log = []

    async def main():
        rng = random.Random(seed)
        queue = asyncio.Queue()

        async def producer(name):
            for i in range(20):
                await asyncio.sleep(rng.random())
                await queue.put((name, i))
                log.append((asyncio.get_running_loop().time(), "put", name, i))

        async def consumer():
            while True:
                item = await queue.get()
                await asyncio.sleep(rng.choice([0.0, 0.01, 0.5]))
                log.append((asyncio.get_running_loop().time(), "got", *item))
                queue.task_done()

        consumers = [asyncio.create_task(consumer()) for _ in range(3)]
        await asyncio.gather(*(producer(p) for p in "abcde"))
        await queue.join()
        for c in consumers:
            c.cancel()

    run(main())
    return log


def test_same_seed_gives_identical_event_log():
    first, second = _seeded_program(7), _seeded_program(7)
    assert len(first) == 200
    assert first == second
    assert _seeded_program(8) != first


def test_stall_is_reported_instead_of_hanging(vloop):
    async def main():
        await vloop.create_future()  # nothing will ever resolve it

    with pytest.raises(SimulationStalled, match="nothing is scheduled"):
        vloop.run_until_complete(main())


@pytest.mark.parametrize(
    "call",
    [
        lambda loop: loop.create_connection(asyncio.Protocol, "127.0.0.1", 80),
        lambda loop: loop.create_server(asyncio.Protocol, "127.0.0.1", 0),
        lambda loop: loop.getaddrinfo("example.org", 80),
        lambda loop: loop.sock_recv(None, 10),
        lambda loop: loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("10.0.0.0", 1)),
        lambda loop: loop.run_in_executor(None, print),
        lambda loop: asyncio.open_connection("127.0.0.1", 80),
    ],
)
def test_real_io_is_forbidden(vloop, call):
    async def main():
        result = call(vloop)
        if asyncio.iscoroutine(result):
            await result

    with pytest.raises(RealIOForbidden):
        vloop.run_until_complete(main())


def test_run_helper_returns_result_cancels_leftovers_and_honours_timeout():
    cancelled = []

    async def background():
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            cancelled.append(asyncio.get_running_loop().time())
            raise

    async def main():
        task = asyncio.create_task(background())
        await asyncio.sleep(1)
        assert not task.done()
        return asyncio.get_running_loop().time()

    assert run(main()) == 1.0
    assert cancelled == [1.0]
    with pytest.raises(TimeoutError):
        run(asyncio.sleep(10), timeout=5)


def test_run_helper_cancels_leftover_tasks_in_creation_order():
    order = []

    async def sleeper(label):
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            order.append(label)
            raise

    async def main():
        tasks = [asyncio.create_task(sleeper(i)) for i in range(50)]
        await asyncio.sleep(0)
        return len(tasks)

    assert run(main()) == 50
    assert order == list(range(50))
