"""Workload generators: the thesis' synthetic subscriptions and events (§4.1) and PADRES stock quotes (seed 001)."""

from __future__ import annotations

from .base import Pub, Sub, Workload
from .stocks import stocks_workload
from .thesis import THESIS_ATTRIBUTES, AttrSpec, thesis_workload

__all__ = ["THESIS_ATTRIBUTES", "AttrSpec", "Pub", "Sub", "Workload", "stocks_workload", "thesis_workload"]
