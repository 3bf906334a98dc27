"""spark-submit entry point for the evaluation report.

    spark-submit --master yarn spark/report_job.py hdfs:///runs/n1000 hdfs:///runs/n5000 --out report/

Run directories may be local paths or URLs the cluster can read (hdfs://, s3a://); the report is written on
the driver. Executors need only PySpark: every job is Spark SQL (no Python UDFs), so our packages are needed
on the driver alone (``pip install -e .`` there, or this file finds them beside it).
"""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    # run as a script, sys.path[0] is spark/ itself; use the checkout root instead so `spark` is the package
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(here))
    from spark.report import main

    sys.exit(main())
