"""Where the shared data sets live: ``$P2PUBSUB_DATA``, else ``../shared/data`` beside the repository.

The project never copies these files into its own tree (licences, size); code that needs them asks here and
falls back (latency: synthetic model) or skips (tests) when they are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "P2PUBSUB_DATA"


def data_dir() -> Path | None:
    """The data folder, or None when it does not exist (outside this workplace)."""
    env = os.environ.get(ENV_VAR)
    # the package sits in <repo>/p2pubsub/, the data in <repo>/../shared/data
    path = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return path if path.is_dir() else None


def data_path(*parts: str) -> Path | None:
    """A file or folder inside the data folder, or None when it (or the folder) is absent."""
    root = data_dir()
    if root is None:
        return None
    path = root.joinpath(*parts)
    return path if path.exists() else None


def describe_missing(*parts: str) -> str:
    """A message naming where the data was looked for, for skips and warnings."""
    where = os.environ.get(ENV_VAR) or "../shared/data (beside the repository)"
    return f"data {'/'.join(parts)!r} not found under {where}; set {ENV_VAR} to the shared data folder"
