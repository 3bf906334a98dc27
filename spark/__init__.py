"""PySpark evaluation jobs: replay simulator traces against latency matrices, metrics, plots, report."""
