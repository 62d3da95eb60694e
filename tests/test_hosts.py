"""arrowdev UDFs where users already are: real Polars (eager, lazy, streaming, groups), DuckDB and pandas
(arrowdev/integrations/polars.py, duckdb.py, pandas.py, on batches.py). Every result is checked against the
same function run row by row in plain Python; GPU paths carry the gpu marker."""

from __future__ import annotations

import decimal

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad
import arrowdev.duckdb
import arrowdev.pandas
import arrowdev.polars
from support.samples import reference


# a few UDFs, shared by the tests so that each compiles once per input types
def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def weighted(a, b):
    return a * b if a > 0 else b


def shout(s):
    return s.upper() + "!"


def or_minus_one(x):
    return -1.0 if x is ad.NA else x


def _rows(series) -> list:
    return series.to_list() if hasattr(series, "to_list") else list(series)


FRAME = pl.DataFrame({
    "a": [1.0, -2.0, None, 4.0, 0.25, 3.0],
    "b": [10, 20, 30, None, 50, 60],
    "s": ["ab", None, "été", "x", "", "q"],
    "k": [1, 1, 2, 2, 1, 2],
})


# ---- Polars ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lazy", [False, True])
def test_polars_expression_of_two_columns_eager_and_lazy(lazy):
    frame = FRAME.lazy() if lazy else FRAME
    out = frame.with_columns(y=ad.polars.udf(weighted, "a", pl.col("b")))
    if lazy:
        assert out.collect_schema()["y"] == pl.Float64  # planned without the data
        out = out.collect()
    assert out["y"].to_list() == reference(weighted, FRAME["a"].to_list(), FRAME["b"].to_list())


def test_polars_map_batches_one_column_and_a_struct():
    one = FRAME.with_columns(y=pl.col("a").map_batches(ad.polars.udf(piecewise)))
    assert one["y"].to_list() == reference(piecewise, FRAME["a"].to_list())
    both = FRAME.with_columns(y=pl.struct("a", "b").map_batches(ad.polars.udf(weighted)))
    assert both["y"].to_list() == reference(weighted, FRAME["a"].to_list(), FRAME["b"].to_list())


def test_polars_strings_come_back_as_polars_strings():
    out = FRAME.lazy().with_columns(y=ad.polars.udf(shout, "s")).collect()
    assert out.schema["y"] == pl.String
    assert out["y"].to_list() == reference(shout, FRAME["s"].to_list())


def test_polars_group_by_agg_gives_a_list_per_group():
    got = FRAME.group_by("k", maintain_order=True).agg(ad.polars.udf(piecewise, "a").alias("y"),
                                                       pl.col("a").map_batches(ad.polars.udf(piecewise)).alias("z"))
    for key, ys, zs in got.iter_rows():
        want = reference(piecewise, FRAME.filter(pl.col("k") == key)["a"].to_list())
        assert ys == want and zs == want


def test_polars_streaming_engine_and_chunked_series():
    big = pl.concat([FRAME, FRAME, FRAME], rechunk=False)
    assert big["a"].n_chunks() == 3
    out = big.lazy().with_columns(y=ad.polars.udf(weighted, "a", "b")).collect(engine="streaming")
    assert out["y"].to_list() == reference(weighted, big["a"].to_list(), big["b"].to_list())


def test_polars_out_type_null_aware_and_options():
    out = FRAME.with_columns(
        f32=ad.polars.udf(piecewise, "a", out_type=pl.Float32),
        i16=ad.polars.udf(lambda b: b * 2, "b", out_type="int16"),
        na=ad.polars.udf(or_minus_one, "a", null_aware=True))
    assert out.schema["f32"] == pl.Float32 and out.schema["i16"] == pl.Int16
    assert out["na"].to_list() == reference(or_minus_one, [ad.NA if v is None else v for v in FRAME["a"]])
    assert out["i16"].to_list() == [20, 40, 60, None, 100, 120]


def test_polars_plans_with_the_compiled_type_not_the_stand_in_values():
    def not_one(x):
        if x == 1:  # Polars plans with a call on [1, 1]
            raise ValueError("one")
        return x * 0.5

    frame = pl.DataFrame({"x": [2, 3, None]})
    lazy = frame.lazy().with_columns(y=ad.polars.udf(not_one, "x"))
    assert lazy.collect_schema()["y"] == pl.Float64
    assert lazy.collect()["y"].to_list() == [1.0, 1.5, None]
    with pytest.raises(ValueError, match="one"):
        pl.DataFrame({"x": [2, 1]}).with_columns(y=ad.polars.udf(not_one, "x"))


def test_polars_errors_name_the_column_and_its_type():
    frame = pl.DataFrame({"d": [decimal.Decimal("1.50")], "x": [1.0]})
    with pytest.raises(TypeError, match=r"Polars passes column 'd' of type Decimal.*cast the column"):
        frame.with_columns(y=ad.polars.udf(piecewise, "d"))
    with pytest.raises(Exception, match=r"Unknown attribute 'upper' of type float64 \(Polars passed 'x': Float64\)"):
        frame.with_columns(y=ad.polars.udf(shout, "x"))
    with pytest.raises(Exception, match=r"takes 2 argument\(s\), but Polars passes 1 column\(s\): 'x'"):
        frame.with_columns(y=ad.polars.udf(weighted, "x"))
    with pytest.raises(ValueError, match="expected device None, 'cpu', 'cuda' or a GPU index"):
        ad.polars.udf(piecewise, "x", device="gpu")


@pytest.mark.gpu
def test_polars_on_the_gpu_matches_the_cpu():
    frame = pl.DataFrame({"a": np.linspace(-1, 1, 5000), "b": np.arange(5000)})
    frame = frame.with_columns(pl.when(pl.col("b") % 7 == 0).then(None).otherwise(pl.col("a")).alias("a"))
    cpu = frame.with_columns(y=ad.polars.udf(weighted, "a", "b"))
    gpu = frame.lazy().with_columns(y=ad.polars.udf(weighted, "a", "b", device="cuda")).collect()
    assert gpu["y"].to_list() == cpu["y"].to_list()
    strings = pl.DataFrame({"s": ["ab", None, "été"] * 100})
    assert strings.with_columns(y=ad.polars.udf(shout, "s", device="cuda"))["y"].to_list() == \
        reference(shout, strings["s"].to_list())


# ---- DuckDB ------------------------------------------------------------------------------------------------

@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def _duck(con, sql: str) -> list:
    return [row[0] for row in con.sql(sql).fetchall()]


def test_duckdb_function_over_many_vectors_with_nulls(con):
    ad.duckdb.register(con, "piecewise", piecewise, ["DOUBLE"])
    con.sql("CREATE TABLE t AS SELECT CASE WHEN range % 9 = 4 THEN NULL ELSE (range % 100) / 100 END::DOUBLE x "
            "FROM range(10000)")  # five vectors of 2048 rows, the last one short
    xs = _duck(con, "SELECT x FROM t")
    assert _duck(con, "SELECT piecewise(x) FROM t") == reference(piecewise, xs)
    [(total, native)] = con.sql("SELECT sum(piecewise(x)), sum(CASE WHEN x > 0.5 THEN x * 2 + 1 ELSE x - 1 END) "
                                "FROM t").fetchall()
    assert total == pytest.approx(native)


def test_duckdb_types_from_annotations_python_and_arrow_types(con):
    def scaled(x: float, n: int):
        return x * n

    ad.duckdb.register(con, "scaled", scaled)
    ad.duckdb.register(con, "weighted", weighted, [pa.float64(), int])
    ad.duckdb.register(con, "narrow", lambda b: b + 1, ["INTEGER"], "SMALLINT")
    assert con.sql("SELECT scaled(1.5, 4), typeof(scaled(1.5, 4))").fetchall() == [(6.0, "DOUBLE")]
    assert _duck(con, "SELECT weighted(a, b) FROM (VALUES (2.0, 3), (-1.0, 5), (NULL, 1)) v(a, b)") == [6.0, 5.0, None]
    assert con.sql("SELECT narrow(41), typeof(narrow(41))").fetchall() == [(42, "SMALLINT")]


def test_duckdb_strings_and_null_aware(con):
    ad.duckdb.register(con, "shout", shout, ["VARCHAR"])
    ad.duckdb.register(con, "or_minus_one", or_minus_one, ["DOUBLE"], null_aware=True)
    assert _duck(con, "SELECT shout(s) FROM (VALUES ('ab'), (NULL), ('été')) v(s)") == ["AB!", None, "ÉTÉ!"]
    assert con.sql("SELECT typeof(shout('a'))").fetchall() == [("VARCHAR",)]
    assert _duck(con, "SELECT or_minus_one(x) FROM (VALUES (NULL), (2.5)) v(x)") == [-1.0, 2.5]


def test_duckdb_errors_name_the_argument_and_its_type(con):
    with pytest.raises(TypeError, match=r"DuckDB passes argument 'x' of type DECIMAL\(10,2\) \(Arrow decimal128"):
        ad.duckdb.register(con, "bad", piecewise, ["DECIMAL(10,2)"])
    with pytest.raises(ad.UDFCompileError, match=r"\(DuckDB passed 's': DOUBLE\)"):
        ad.duckdb.register(con, "bad", shout, ["DOUBLE"])
    with pytest.raises(TypeError, match=r"expected parameters=\[...\].*annotations.*\['x'\]"):
        ad.duckdb.register(con, "bad", piecewise)
    with pytest.raises(TypeError, match="takes 2 argument"):
        ad.duckdb.register(con, "bad", weighted, ["DOUBLE"])
    with pytest.raises(TypeError, match="expected a DuckDB type name, got 'NOT_A_TYPE'"):
        ad.duckdb.register(con, "bad", piecewise, ["NOT_A_TYPE"])


@pytest.mark.gpu
def test_duckdb_on_the_gpu_matches_the_cpu(con):
    ad.duckdb.register(con, "cpu_piecewise", piecewise, ["DOUBLE"])
    ad.duckdb.register(con, "gpu_piecewise", piecewise, ["DOUBLE"], device="cuda")
    con.sql("CREATE TABLE t AS SELECT (range % 100) / 100 x FROM range(5000)")
    assert _duck(con, "SELECT gpu_piecewise(x) FROM t") == _duck(con, "SELECT cpu_piecewise(x) FROM t")


# ---- pandas ------------------------------------------------------------------------------------------------

def test_pandas_numpy_series_keeps_index_name_and_reads_in_place():
    values = np.linspace(0, 1, 11)
    s = pd.Series(values, index=np.arange(100, 111), name="x")
    got = ad.pandas.apply(s, piecewise)
    assert got.dtype == np.float64 and got.name == "x" and got.index.equals(s.index)
    assert got.tolist() == [piecewise(v) for v in values]
    from arrowdev.integrations.pandas import _to_arrow

    assert ad.column(_to_arrow(s)).buffers[1].address == s.to_numpy().ctypes.data  # zero-copy in
    nan = ad.pandas.apply(pd.Series([np.nan, 1.0]), piecewise)  # NaN is a value, as Series.map passes it
    assert np.isnan(nan[0]) and nan[1] == 3.0


def test_pandas_results_are_of_the_inputs_kind():
    nullable = pd.DataFrame({"a": [1, -2, 3], "b": [10, 20, None]}, dtype="Int64")
    got = ad.pandas.apply(nullable, weighted, columns=["a", "b"])
    assert str(got.dtype) == "Int64" and got.tolist() == [10, 20, pd.NA]
    arrow = pd.Series(pa.array([1.5, None, 0.25]), dtype=pd.ArrowDtype(pa.float64()))
    got = ad.pandas.apply(arrow, piecewise)
    assert got.dtype == pd.ArrowDtype(pa.float64()) and got.tolist() == [4.0, pd.NA, -0.75]
    numpy_ints = ad.pandas.apply(pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4]}), weighted)  # all columns
    assert numpy_ints.dtype == np.float64 and numpy_ints.tolist() == [3.0, 8.0]


@pytest.mark.parametrize("dtype", ["str", "object", "string[python]"])
def test_pandas_strings(dtype):
    s = pd.Series(["ab", None, "été"], dtype=dtype)
    got = ad.pandas.apply(s, shout)
    assert got.tolist()[0::2] == ["AB!", "ÉTÉ!"] and pd.isna(got[1])
    lengths = ad.pandas.apply(s, lambda v: len(v))
    assert lengths.tolist()[0::2] == [2, 3] and pd.isna(lengths[1])


def test_pandas_errors_name_the_column_and_its_type():
    with pytest.raises(TypeError, match=r"pandas passes column 'c' of type category \(Arrow dictionary"):
        ad.pandas.apply(pd.DataFrame({"c": pd.Series(["a"], dtype="category")}), shout)
    with pytest.raises(TypeError, match=r"pandas passes column 'o' of type object whose values Arrow cannot type"):
        ad.pandas.apply(pd.DataFrame({"o": [1, "a"]}), piecewise)
    with pytest.raises(KeyError, match=r"expected columns of the DataFrame, got \['z'\]"):
        ad.pandas.apply(pd.DataFrame({"a": [1.0]}), piecewise, columns=["z"])
    with pytest.raises(TypeError, match="expected a pandas Series or DataFrame, got list"):
        ad.pandas.apply([1.0], piecewise)


@pytest.mark.gpu
def test_pandas_on_the_gpu_matches_the_cpu():
    frame = pd.DataFrame({"a": np.linspace(-1, 1, 3000), "b": np.arange(3000)})
    cpu = ad.pandas.apply(frame, weighted)
    gpu = ad.pandas.apply(frame, weighted, device="cuda")
    assert gpu.index.equals(cpu.index) and gpu.tolist() == cpu.tolist()
