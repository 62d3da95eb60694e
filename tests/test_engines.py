"""arrowdev with Ray and Spark, for real (``-m integration``: too heavy for CI, deselected there).
The batch helpers themselves are tested without the engines (plain PyArrow batches)."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
import arrowdev.ray as ar
import arrowdev.spark as sp


def _f(a, b):
    return a * 10.0 + b if a > 0 else b


def _want(batch) -> list:
    return [None if a is None or b is None else _f(a, b)
            for a, b in zip(batch.column("a").to_pylist(), batch.column("b").to_pylist())]


BATCH = pa.table({"a": pa.array([1, -2, None, 4], pa.int64()), "b": pa.array([0.5, 1.5, 2.5, None])})


def test_batch_udf_on_tables_and_record_batches():
    out = ar.batch_udf(_f, columns=["a", "b"], out="y")(BATCH)
    assert out.column_names == ["a", "b", "y"] and out.column("y").to_pylist() == _want(BATCH)
    [batch] = BATCH.to_batches()
    [got] = list(sp.arrow_udf(_f, columns=["a", "b"], out="y")(iter([batch])))
    assert isinstance(got, pa.RecordBatch) and got.column(2).to_pylist() == _want(BATCH)
    with pytest.raises(ValueError, match="expected device 'cpu' or 'cuda'"):
        ar.batch_udf(_f, ["a"], "y", device="gpu")


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray's own, under warnings-as-errors
def test_ray_put_is_zero_copy_and_map_batches():
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import tests/
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True)
    try:
        tbl = ad.table({"x": pa.array(np.arange(1_000_000, dtype=np.float64)), "s": pa.array(["a", None] * 500_000)})
        ref = ray.put(tbl)
        got, again = ray.get(ref), ray.get(ref)
        assert got.equals(tbl)
        # two gets see the same bytes: views of the object store's shared memory, not copies
        assert got.column("x").buffers[-1].address == again.column("x").buffers[-1].address
        assert got.column("x").buffers[-1].address != tbl.column("x").buffers[-1].address
        assert ray.get(ray.remote(lambda t: t.num_rows).remote(ray.put(tbl))) == 1_000_000
        ds = ray.data.from_arrow(BATCH).map_batches(ar.batch_udf(_f, columns=["a", "b"], out="y"),
                                                     batch_format="pyarrow")
        assert [row["y"] for row in ds.take_all()] == _want(BATCH)
    finally:
        ray.shutdown()


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_map_in_arrow():
    pytest.importorskip("pyspark")
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Spark's workers cannot import tests/

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        df = spark.createDataFrame(list(zip(*BATCH.to_pydict().values())), "a long, b double")
        out = sp.with_column(df, _f, columns=["a", "b"], out="y", out_type="double")
        rows = sorted(out.collect(), key=lambda r: str(r["a"]))
        want = {str(a): y for a, y in zip(BATCH.column("a").to_pylist(), _want(BATCH))}
        assert all(r["y"] == want[str(r["a"])] or (r["y"] is None and want[str(r["a"])] is None) for r in rows)
    finally:
        spark.stop()


@pytest.mark.integration
@pytest.mark.gpu
@pytest.mark.parametrize("engine, example", [("ray", "ipc_ray.py"), ("pyspark", "ipc_spark.py")])
def test_gpu_tables_handed_between_engine_workers_by_name(engine, example):
    """The recipes of docs/memory.md, run as users run them (each example checks its own results)."""
    import pathlib
    import subprocess

    pytest.importorskip(engine)
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / example
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    print(result.stdout)
