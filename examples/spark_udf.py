"""Spark: an arrowdev UDF as a new column of a DataFrame, through mapInArrow (CPU; numba compiles it).

    pip install -e ".[udf,spark]"         # PySpark 4.3, and Java 17 or 21 on the PATH
    python examples/spark_udf.py

Spark's Python workers run the interpreter in ``$PYSPARK_PYTHON`` (else the ``python3`` on the PATH), read when
the SparkSession starts: set it to the interpreter that has arrowdev, as below (on a cluster:
``spark-submit --conf spark.pyspark.python=/path/to/python``). A worker without arrowdev fails with an error
naming its interpreter and this fix. The example checks its own results.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa
from pyspark.sql import SparkSession

import arrowdev.spark

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # before the session starts


def score(a, b):  # noqa: ANN001, ANN201 - a UDF: numba types it from the columns
    return a * 10 + b if a > 0 else b


def main() -> None:
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        df = spark.createDataFrame([(1, 5), (-2, 7), (None, 1), (4, None)], "a bigint, b bigint")
        # a Spark SQL type name ("bigint", "long", "decimal(12,2)", ...), a pyspark DataType or a PyArrow type
        out = arrowdev.spark.with_column(df, score, columns=["a", "b"], out="y", out_type="bigint")
        # the declared type may differ from the UDF's (int64 here): the result is cast safely on the Python side
        ratio = arrowdev.spark.with_column(df, score, columns=["a", "b"], out="y", out_type=pa.float64())
        # arrowdev's own apply options: udf_out_type (the type the UDF computes), null_aware, string_type
        floats = arrowdev.spark.with_column(df.select("a"), lambda a: a / 4, columns="a", out="q",
                                            out_type="double", udf_out_type=pa.float32())
        out.show()
        rows = {r["a"]: r["y"] for r in out.collect()}
        assert rows == {1: 15, -2: 7, None: None, 4: None}, rows
        assert str(out.schema["y"].dataType) == "LongType()" and str(ratio.schema["y"].dataType) == "DoubleType()"
        assert sorted(r["y"] for r in ratio.collect() if r["y"] is not None) == [7.0, 15.0]
        assert sorted(r["q"] for r in floats.collect() if r["q"] is not None) == [-0.5, 0.25, 1.0]
    finally:
        spark.stop()
    print("spark_udf: ok")


if __name__ == "__main__":
    main()
