"""``p2pubsub demo``: the live network of real nodes (default) and the in-memory one (``--in-memory``).

The live demo is small (a few nodes on loopback, ports from the OS, a seeded workload), so it runs whole here and
its verdict is asserted; so is what it says when a node delivers wrongly.
"""

import io
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from p2pubsub.api.delivery import SubscriptionRegistry
from p2pubsub.cli import main
from p2pubsub.client import Client
from p2pubsub.demo import inmemory
from p2pubsub.demo.live import LiveOptions, curl_examples, run_live
from p2pubsub.demo.stocks import FILTERS

REPO = Path(__file__).resolve().parents[1]


def _api_ports(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"api http://127\.0\.0\.1:(\d+)", text)]


def _refused(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


async def test_live_demo_delivers_exactly_the_matching_quotes_and_shuts_down():
    out = io.StringIO()
    assert await run_live(LiveOptions(nodes=5, events=24, seed=1), out) == 0
    text = out.getvalue()
    for phase in range(1, 7):
        assert f"[{phase}/6]" in text, text
    m = re.search(r"verdict: OK, every quote reached exactly its subscribers: (\d+) of (\d+) expected", text)
    assert m and m[1] == m[2] and int(m[2]) > 0, text
    assert len(re.findall(r"^      s\d+ +node \d", text, re.M)) == len(FILTERS)  # every subscription installed
    assert len(re.findall(r"^      node \d publishes ", text, re.M)) == 24
    ports = _api_ports(text)
    assert len(ports) == 5 and len(set(ports)) == 5
    assert all(_refused(p) for p in ports)  # every API is closed again
    assert text.rstrip().splitlines()[-1].startswith("demo OK in ")


async def test_live_demo_on_a_single_node():
    out = io.StringIO()
    assert await run_live(LiveOptions(nodes=1, events=8, seed=2), out) == 0
    assert "verdict: OK" in out.getvalue()


async def test_live_demo_reports_duplicates_as_a_wrong_delivery(monkeypatch):
    real = SubscriptionRegistry.deliver_many

    def twice(self, sub_ids, event):
        real(self, sub_ids, event)
        return real(self, sub_ids, event)

    monkeypatch.setattr(SubscriptionRegistry, "deliver_many", twice)
    out = io.StringIO()
    assert await run_live(LiveOptions(nodes=3, events=12, seed=1), out) == 1
    text = out.getvalue()
    assert "verdict: WRONG DELIVERY" in text and "DUPLICATE x2" in text, text
    assert "demo FAILED" in text


async def test_live_demo_reports_missing_notifications_after_its_deadline(monkeypatch):
    real = SubscriptionRegistry.deliver_many

    def no_apple(self, sub_ids, event):
        return 0 if event["attributes"]["symbol"] == "AAPL" else real(self, sub_ids, event)

    monkeypatch.setattr(SubscriptionRegistry, "deliver_many", no_apple)
    out = io.StringIO()
    assert await run_live(LiveOptions(nodes=2, events=12, seed=1, timeout=1.5), out) == 1
    text = out.getvalue()
    assert "MISSING" in text and "timed out after 1.5 s waiting for the expected notifications" in text, text


def test_in_memory_demo():
    out = io.StringIO()
    assert inmemory.run(hosts=32, events=12, seed=3, out=out)
    assert "oracle: every event reached exactly its subscribers" in out.getvalue()


def test_cli_keeps_the_in_memory_options_and_rejects_mixed_ones(capsys):
    assert main(["demo", "--in-memory", "--hosts", "16", "--events", "6", "--seed", "2"]) == 0
    assert "16 in-memory hosts" in capsys.readouterr().out
    assert main(["demo", "--in-memory", "--nodes", "3"]) == 2
    assert main(["demo", "--hosts", "16"]) == 2
    assert main(["demo", "--nodes", "0"]) == 2
    assert "--nodes" in capsys.readouterr().err


def test_curl_examples_use_the_running_network():
    lines = curl_examples(["http://127.0.0.1:1", "http://127.0.0.1:2"], 1, "abc")
    assert "curl -s 'http://127.0.0.1:2/v1/subscriptions/abc/events?wait=30'" in lines
    assert any(line.startswith("curl -s -X POST http://127.0.0.1:1/v1/events") for line in lines)


def test_keep_running_serves_the_api_until_sigint():
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "p2pubsub", "demo", "--keep-running", "--nodes", "2", "--events", "6"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
    seen: list[str] = []

    def read_until(pattern: str, timeout: float = 30.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n{''.join(seen)}") from None
            assert line is not None, f"the demo ended before {pattern!r}:\n{''.join(seen)}"
            seen.append(line)
            if m := re.search(pattern, line):
                return m

    try:
        read_until(r"verdict: OK")
        url = read_until(r"curl -s (http://127\.0\.0\.1:\d+)/v1/node")[1]
        read_until(r"v1/subscriptions -H")  # the last example: everything is printed
        with Client(url, timeout=10) as c:
            assert c.node()["ready"] is True
            assert c.get_schema("stocks") is not None
        proc.send_signal(signal.SIGINT)
        read_until(r"stopped in")
        assert proc.wait(timeout=20) == 0, "".join(seen)
        assert _refused(int(url.rsplit(":", 1)[1]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("argv", [["demo", "--in-memory", "--keep-running"]])
def test_live_only_options_are_refused_with_in_memory(argv, capsys):
    assert main(argv) == 2
    assert "--keep-running" in capsys.readouterr().err
