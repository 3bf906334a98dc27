"""Pure cores stay pure: no asyncio, sockets, clock reads, cbor2 (ARCHITECTURE.md, "Pure cores")."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = ["p2pubsub/model", "p2pubsub/tree", "overlays"]
FORBIDDEN_MODULES = {"asyncio", "socket", "cbor2", "time", "datetime", "selectors", "threading", "aiohttp"}
FORBIDDEN_CALLS = {"random.random", "random.randint", "random.choice", "random.shuffle", "random.uniform"}


def sources():
    for folder in PURE:
        yield from sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", list(sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [(node.module or "").split(".")[0]]
        else:
            names = []
        bad = FORBIDDEN_MODULES.intersection(names)
        assert not bad, f"{path.name}:{node.lineno} imports {bad}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            dotted = f"{getattr(node.func.value, 'id', '')}.{node.func.attr}"
            assert dotted not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} uses the global random ({dotted})"
