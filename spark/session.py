"""Java check and the SparkSession the jobs run in.

PySpark 4 runs on Java 17 or newer. :func:`check_java` finds ``java`` (``$JAVA_HOME/bin/java``, else on
``PATH``) and fails with a clear message before Spark would print a JVM stack trace.
``python -m spark.session`` runs the check on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MIN_JAVA", "JavaNotFoundError", "check_java", "get_session", "java_version"]

MIN_JAVA = 17

_HELP = (
    "PySpark needs Java {min} or newer{found}. Install a JDK or JRE {min} (e.g. "
    "`apt-get install openjdk-17-jre-headless`, or Temurin 17 from adoptium.net) and put `java` on PATH "
    "or set JAVA_HOME."
)


class JavaNotFoundError(RuntimeError):
    """No suitable Java runtime for Spark."""


def _java_binary() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def java_version(binary: str) -> int | None:
    """The major version of the Java at `binary` (8 for "1.8.0_x"), or None if it cannot be read."""
    try:
        out = subprocess.run([binary, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_java(min_version: int = MIN_JAVA) -> int:
    """Return the Java major version, or raise :class:`JavaNotFoundError` with what to do."""
    binary = _java_binary()
    if binary is None:
        raise JavaNotFoundError(_HELP.format(min=min_version, found=" (no `java` found)"))
    version = java_version(binary)
    if version is None or version < min_version:
        found = f" (found {binary}: version {version if version is not None else 'unknown'})"
        raise JavaNotFoundError(_HELP.format(min=min_version, found=found))
    return version


def _local_heap_gb() -> int:
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: Spark's default
        return 1
    return max(1, min(8, ram // 3 // 2**30))


def get_session(
    master: str | None = None, app_name: str = "p2pubsub-report", conf: dict[str, Any] | None = None
) -> SparkSession:
    """Check Java, then get or create the SparkSession.

    `master` None leaves the choice to Spark: ``local[*]`` when run with ``python``, whatever
    ``spark-submit --master`` says on a cluster. In local mode the shuffle partitions default to twice
    the cores (Spark's 200 is meant for clusters) unless `conf` sets them.
    """
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("the evaluation needs PySpark: pip install -e '.[spark]'") from e

    builder = SparkSession.builder.appName(app_name)
    conf = dict(conf or {})
    if master:
        builder = builder.master(master)
    local = (master or "local").startswith("local") and "PYSPARK_GATEWAY_PORT" not in os.environ
    if local:
        conf.setdefault("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 2)))
        # Spark's 1 GB driver heap overflows caching a 1,000-node run's 8 M messages; local mode runs everything
        # in the driver, so give it a third of the machine (at most 8 GB)
        conf.setdefault("spark.driver.memory", f"{_local_heap_gb()}g")
    conf.setdefault("spark.ui.showConsoleProgress", "false")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


if __name__ == "__main__":
    try:
        print(f"Java {check_java()}: OK for PySpark")
    except JavaNotFoundError as err:
        print(err, file=sys.stderr)
        sys.exit(1)
