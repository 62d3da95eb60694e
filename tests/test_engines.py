"""arrowdev with Ray and Spark, for real (``-m integration``: too heavy for CI, deselected there; the ``ray`` and
``spark`` extras install the tested versions). The batch functions themselves are tested without the engines:
plain PyArrow batches, and the dicts of NumPy arrays and pandas DataFrames of Ray's other batch formats."""

from __future__ import annotations

import os
import pathlib
import pickle
import re
import subprocess
import sys
from types import SimpleNamespace

import cloudpickle
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import arrowdev as ad
import arrowdev.ray as ar
import arrowdev.spark as sp

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


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


def test_one_string_is_one_column():
    batch = pa.table({"ab": [1, 2], "a": [10, 20], "b": [100, 200]})
    assert ar.batch_udf(lambda x: x * 2, columns="ab", out="y")(batch).column("y").to_pylist() == [2, 4]
    with pytest.raises(TypeError, match="expected column names .str. in columns, got 1"):
        ar.batch_udf(_f, columns=["a", 1], out="y")
    with pytest.raises(TypeError, match="expected out as the new column's name"):
        ar.batch_udf(_f, columns=["a", "b"], out=["y"])


@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.to_batches()[0], lambda t: t.to_pydict(),
                                  lambda t: t.to_pandas()], ids=["table", "record_batch", "numpy", "pandas"])
def test_out_must_be_a_new_column(make):
    with pytest.raises(ValueError, match=r"the batch already has a column 'b' \(columns: \['a', 'b'\]\).*another out="):
        ar.batch_udf(_f, columns=["a", "b"], out="b")(make(BATCH))


def test_ray_numpy_and_pandas_batches_come_back_in_their_format():
    udf = ar.batch_udf(_f, columns=["a", "b"], out="y")
    numpy_batch = {"a": np.array([1, -2, 4]), "b": np.array([0.5, 1.5, np.nan]), "s": np.array(["x", "y", "z"])}
    out = udf(numpy_batch)
    assert list(out) == ["a", "b", "s", "y"] and out["s"] is numpy_batch["s"] and "y" not in numpy_batch
    assert isinstance(out["y"], np.ndarray) and out["y"][:2].tolist() == [10.5, 1.5] and np.isnan(out["y"][2])
    frame = BATCH.to_pandas().set_axis([10, 11, 12, 13])  # a frame's index is kept
    got = udf(frame)
    assert isinstance(got, pd.DataFrame) and list(got.columns) == ["a", "b", "y"] and "y" not in frame
    assert list(got.index) == [10, 11, 12, 13] and got["y"].tolist()[:2] == [10.5, 1.5] and got["y"][12:].isna().all()
    with pytest.raises(KeyError, match="column 'b' is not in the batch"):
        udf({"a": np.array([1])})
    with pytest.raises(TypeError, match=r"column 'b' of the batch is a 2-D array .*batch_format='pyarrow'"):
        udf({"a": np.array([1, 2]), "b": np.ones((2, 3))})
    with pytest.raises(TypeError, match=r"expected a Ray Data batch: a pyarrow.Table .*got builtins.list"):
        udf([1, 2])


def test_result_is_cast_to_the_declared_type_or_refused_naming_both():
    [batch] = pa.table({"a": pa.array([1, 2**40], pa.int64())}).to_batches()
    run = sp.arrow_udf(lambda a: a + 1, columns="a", out="y", result_type=pa.float64())
    [got] = list(run(iter([batch])))
    assert got.schema.field("y").type == pa.float64() and got.column("y").to_pylist() == [2.0, 2.0**40 + 1]
    overflow = sp.arrow_udf(lambda a: a + 1, columns="a", out="y", result_type=pa.int32())
    with pytest.raises(ValueError, match=r"result for column 'y' is int64, but the column is declared int32.*udf_out_type"):
        list(overflow(iter([batch])))
    no_cast = sp.arrow_udf(lambda a: a + 1, columns="a", out="y", result_type=pa.list_(pa.int64()))
    with pytest.raises(TypeError, match=r"column 'y' is int64, but the column is declared list<item: int64>"):
        list(no_cast(iter([batch])))
    with pytest.raises(TypeError, match="expected result_type as a pyarrow.DataType"):
        sp.arrow_udf(_f, columns=["a", "b"], out="y", result_type="double")


def _worker_script(block: str) -> str:
    """A Python that stands for a Spark worker: ``block`` makes arrowdev unimportable, then the function
    arrow_udf made is unpickled from stdin and called, as Spark's worker does."""
    return f"import pickle, sys\n{block}\nrun = pickle.loads(sys.stdin.buffer.read())\nrun(iter([]))\n"


def test_a_spark_worker_without_arrowdev_says_which_python_and_the_fix():
    """Spark's worker unpickles the mapInArrow function before it runs: the function must unpickle without
    arrowdev, then say so (before the fix: ModuleNotFoundError: No module named 'nanoarrow', from unpickling)."""
    payload = cloudpickle.dumps(sp.arrow_udf(_f, columns=["a", "b"], out="y"))
    script = _worker_script("sys.modules['nanoarrow'] = None  # this Python lacks arrowdev's dependencies")
    result = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True, timeout=120)
    err = result.stderr.decode()
    assert result.returncode != 0
    assert f"Spark's Python worker runs {sys.executable} (Python {sys.version.split()[0]}), which cannot import " \
           "arrowdev (ModuleNotFoundError: import of nanoarrow halted" in err, err
    assert f"set PYSPARK_PYTHON={sys.executable} (the driver's interpreter)" in err and "spark.pyspark.python" in err


def _python_without_arrowdev(tmp_path: pathlib.Path) -> pathlib.Path:
    """An interpreter that lacks arrowdev's dependencies, as the issue's system ``python3`` did: this one, with
    nanoarrow hidden by a sitecustomize."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['nanoarrow'] = None\n")
    python = tmp_path / "python-without-arrowdev"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={hide}:$PYTHONPATH exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


def _local_dataframe(python: str) -> SimpleNamespace:
    """What with_column reads of a DataFrame before it calls Spark: its columns and, in local mode, the
    interpreter its session's workers run (SparkContext.pythonExec)."""
    context = SimpleNamespace(master="local[1]", pythonExec=python, environment={})
    return SimpleNamespace(columns=["a"], sparkSession=SimpleNamespace(sparkContext=context))


def test_with_column_in_local_mode_checks_the_workers_python_first(tmp_path):
    """The workers' interpreter is started once on the driver; one without arrowdev stops with_column
    before any job (it would fail in PySpark's own worker code without PyArrow, before any UDF runs)."""
    python = _python_without_arrowdev(tmp_path)
    with pytest.raises(ImportError, match=re.escape(
            f"Spark's Python workers will run '{python}' ({sys.executable}, Python {sys.version.split()[0]}), "
            f"which cannot import arrowdev (ModuleNotFoundError: import of nanoarrow halted; None in sys.modules). "
            f"Spark's workers run $PYSPARK_PYTHON as it was when the SparkSession started, else the python3 on the "
            f"PATH: set PYSPARK_PYTHON={sys.executable} (the driver's interpreter) before the session starts")):
        sp.with_column(_local_dataframe(str(python)), _f, ["a"], "y", "double")
    with pytest.raises(ImportError, match="will run '/nonexistent/python3', which cannot be started"):
        sp.with_column(_local_dataframe("/nonexistent/python3"), _f, ["a"], "y", "double")


def test_a_spark_worker_with_another_arrowdev_says_so(monkeypatch):
    run = pickle.loads(cloudpickle.dumps(sp.arrow_udf(_f, columns=["a", "b"], out="y")))
    monkeypatch.setattr("arrowdev._version.__version__", "0.0.0.other")
    with pytest.raises(ImportError, match=r"which has arrowdev 0.0.0.other .*the UDF was made with arrowdev .*PYSPARK_PYTHON"):
        run(iter([]))


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
        udf = ar.batch_udf(_f, columns=["a", "b"], out="y")
        ds = ray.data.from_arrow(BATCH)
        assert [row["y"] for row in ds.map_batches(udf, batch_format="pyarrow").take_all()] == _want(BATCH)
        # Ray's default batch format (NumPy) has no nulls: Ray hands the nullable int column "a" over as
        # float64 with NaN, a value to the UDF (NaN > 0 is False: y = b); pandas' NaN is a null, as in Arrow
        for batch_format in ("default", "numpy"):
            rows = ds.map_batches(udf, batch_format=batch_format).take_all()
            assert [r["y"] for r in rows][:3] == [10.5, 1.5, 2.5] and np.isnan(rows[3]["y"]), batch_format
        assert [r["y"] for r in ds.map_batches(udf, batch_format="pandas").take_all()] == _want(BATCH)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def spark():
    """A local Spark whose Python workers run this interpreter (PYSPARK_PYTHON, read as the session starts)."""
    pytest.importorskip("pyspark")
    from pyspark import cloudpickle as spark_cloudpickle
    from pyspark.sql import SparkSession

    spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Spark's workers cannot import tests/
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSPARK_PYTHON", sys.executable)
        session = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            yield session
        finally:
            session.stop()


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_map_in_arrow(spark):
    df = spark.createDataFrame(list(zip(*BATCH.to_pydict().values())), "a long, b double")
    out = sp.with_column(df, _f, columns=["a", "b"], out="y", out_type="double")
    rows = sorted(out.collect(), key=lambda r: str(r["a"]))
    want = {str(a): y for a, y in zip(BATCH.column("a").to_pylist(), _want(BATCH))}
    assert all(r["y"] == want[str(r["a"])] or (r["y"] is None and want[str(r["a"])] is None) for r in rows)


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_out_types_by_sql_name_ddl_and_arrow(spark):
    from pyspark.errors import PythonException
    from pyspark.sql.types import FloatType, LongType

    df = spark.createDataFrame([(1, 2), (3, None)], "a bigint, b bigint")
    add = lambda a, b: a + b  # noqa: E731
    for out_type in ("bigint", "long", "BIGINT", LongType(), pa.int64(), ad.column(pa.array([1])).type):
        out = sp.with_column(df, add, ["a", "b"], "y", out_type)
        assert isinstance(out.schema["y"].dataType, LongType), out_type
        assert sorted(r["y"] for r in out.collect() if r["y"] is not None) == [3], out_type
    # an int64 result into columns declared otherwise: cast on the Python side
    assert [r["y"] for r in sp.with_column(df, add, ["a", "b"], "y", "double").collect()][0] == 3.0
    assert [r["y"] for r in sp.with_column(df, add, ["a", "b"], "y", "decimal(21,2)").collect()][0] == 3
    # arrowdev's own out_type: udf_out_type
    halves = sp.with_column(df, lambda a: a / 2, "a", "h", "float", udf_out_type=pa.float32())
    assert isinstance(halves.schema["h"].dataType, FloatType) and [r["h"] for r in halves.collect()] == [0.5, 1.5]
    with pytest.raises(PythonException, match=r"result for column 'y' is double, but the column is declared int64"):
        sp.with_column(df, lambda a: a / 2, "a", "y", "bigint").collect()
    with pytest.raises(ValueError, match=r"expected out_type as a Spark SQL type name .*cannot parse 'notatype'"):
        sp.with_column(df, add, ["a", "b"], "y", "notatype")
    with pytest.raises(TypeError, match="expected out_type as a Spark SQL type name"):
        sp.with_column(df, add, ["a", "b"], "y", 3)
    with pytest.raises(ValueError, match=r"the DataFrame already has a column 'b' \(columns: \['a', 'b'\]\)"):
        sp.with_column(df, add, ["a", "b"], "b", "bigint")


@pytest.mark.integration
def test_spark_worker_without_arrowdev_fails_naming_its_python(tmp_path):
    """A real Spark whose workers run a Python without arrowdev, in a process of its own (its session is the
    first): with_column stops on the driver; mapInArrow(arrow_udf(...)) fails in the worker, saying so."""
    pytest.importorskip("pyspark")
    script = ("from pyspark.sql import SparkSession\nimport arrowdev.spark as sp\n"
              "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
              "df = spark.createDataFrame([(1,)], 'a bigint')\n"
              "try:\n    sp.with_column(df, lambda a: a + 1, 'a', 'y', 'bigint')\n"
              "except ImportError as e:\n    print('DRIVER:', e)\n"
              "try:\n    df.mapInArrow(sp.arrow_udf(lambda a: a + 1, 'a', 'y'), 'a bigint, y bigint').collect()\n"
              "except Exception as e:\n    print('WORKER:', e)\n")
    python = _python_without_arrowdev(tmp_path)
    env = {**os.environ, "PYSPARK_PYTHON": str(python)}
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", script], env=env, capture_output=True,
                            text=True, timeout=300)
    out = result.stdout
    assert f"DRIVER: Spark's Python workers will run '{python}' ({sys.executable}" in out, result.stderr[-4000:]
    assert f"WORKER: An exception was thrown from the Python worker" in out
    assert f"Spark's Python worker runs {sys.executable} (Python {sys.version.split()[0]}), which cannot import " \
           f"arrowdev (ModuleNotFoundError: import of nanoarrow halted" in out
    assert out.count(f"set PYSPARK_PYTHON={sys.executable}") == 2


@pytest.mark.integration
@pytest.mark.parametrize("example", ["ray_udf.py", "spark_udf.py"])
def test_engine_recipes_of_the_docs_run(example):
    """docs/distributed.md's recipes, run as users run them (each example checks its own results)."""
    pytest.importorskip("ray" if example.startswith("ray") else "pyspark")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYSPARK_PYTHON", None)  # the recipe sets it
    result = subprocess.run([sys.executable, str(EXAMPLES / example)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith(f"{example[:-3]}: ok")


@pytest.mark.integration
@pytest.mark.gpu
@pytest.mark.parametrize("engine, example", [("ray", "ipc_ray.py"), ("pyspark", "ipc_spark.py")])
def test_gpu_tables_handed_between_engine_workers_by_name(engine, example):
    """The recipes of docs/memory.md, run as users run them (each example checks its own results)."""
    pytest.importorskip(engine)
    result = subprocess.run([sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    print(result.stdout)
