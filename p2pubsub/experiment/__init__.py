"""Scripted churn experiments with real node processes: ``p2pubsub experiment SCENARIO.toml --out DIR``.

* :mod:`.procs` — node processes (start, ready line, SIGTERM leave, SIGKILL crash, teardown);
* :mod:`.runner` — :class:`Experiment`: network, workload through the REST API, churn timeline, drain;
* :mod:`.oracle` — the brute-force delivery oracle; :mod:`.verify` — are acknowledged subscriptions still
  installed (``subscriptions_lost``); :mod:`.summary` — ``summary.json`` (incl. ``recovery_s``);
* :mod:`.traces` — merge of the per-node traces (:mod:`p2pubsub.node.tracefile`) into ``messages.parquet``.
"""

from .oracle import Oracle, Verdict
from .procs import ExperimentError
from .runner import Experiment, ExperimentOptions, run_experiment

__all__ = ["Experiment", "ExperimentError", "ExperimentOptions", "Oracle", "Verdict", "run_experiment"]
