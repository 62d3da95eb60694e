"""Spark: the Python workers of an executor share one GPU copy of a table, zero-copy, by name.

    python examples/ipc_spark.py          # needs PySpark (>= 3.3), Java, CuPy and a CUDA GPU

Each Python worker of a Spark executor is a process of its own, so a table every task needs on the GPU (a
lookup table, model weights) is usually copied there once per worker. Here the first worker that needs it
copies it and publishes it (``ad.cuda.publish``, ``namespace=`` the Spark application's id); every other
worker of the node gets it (``ad.cuda.get``): zero-copy, each holding a lease while it uses it. The
publishing worker keeps the table while it lives (Spark reuses its Python workers: ``spark.python.worker.reuse``,
on by default); should it go, the leases keep the memory for the workers still reading, and the next
worker to need the table publishes it again. Local mode with 4 tasks at a time; the same holds per
executor on a cluster (CUDA IPC works within one node).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

import arrowdev as ad

KEYS, ROWS, PARTITIONS = 1000, 400_000, 8


def shared(name: str, namespace: str, make) -> tuple[object, str]:  # noqa: ANN001 - a function making the table
    """The table published as ``name`` on this node, published here first if no live worker has; with how it
    was had ('published' or 'got')."""
    while True:
        try:
            return ad.cuda.get(name, namespace=namespace), "got"
        except (KeyError, ad.InvalidArrowError):  # not published yet, or its publisher has gone
            pass
        table = make()
        try:
            ad.cuda.publish(name, table, namespace=namespace)
            return table, "published"
        except ValueError:  # another worker published it first: get theirs
            continue


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's workers: this interpreter, which has arrowdev
    spark = (SparkSession.builder.master("local[4]").config("spark.ui.enabled", "false")
             .config("spark.python.worker.reuse", "true").getOrCreate())
    try:
        namespace = spark.sparkContext.applicationId

        def per_partition(batches):  # noqa: ANN001, ANN202 - runs in Spark's Python workers
            import cupy

            lookup, how = shared("weights", namespace,
                                 lambda: ad.table({"w": pa.array(np.arange(KEYS, dtype=np.float64))}).to_device())
            weights = cupy.asarray(lookup.column("w"))
            for batch in batches:
                keys = cupy.asarray(ad.column(batch.column("k")).to_device())
                yield pa.record_batch({"total": [float(weights[keys].sum())], "pid": [os.getpid()],
                                       "how": [how]})

        df = spark.range(0, ROWS, numPartitions=PARTITIONS).selectExpr("id % 1000 as k")
        rows = df.mapInArrow(per_partition, "total double, pid long, how string").collect()
        want = float(sum(i % KEYS for i in range(ROWS)))
        assert sum(r["total"] for r in rows) == want, (sum(r["total"] for r in rows), want)
        published = {r["pid"] for r in rows if r["how"] == "published"}
        got = {r["pid"] for r in rows if r["how"] == "got"} - published
        print(f"{len(rows)} batches in Python workers {sorted({r['pid'] for r in rows})}: the table was copied to "
              f"the GPU by {sorted(published)} and read zero-copy by {sorted(got)}; published now: "
              f"{ad.cuda.names(namespace)}")
        assert len(published) == 1, "one worker copies the table to the GPU; the others get it"
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
