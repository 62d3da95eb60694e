"""arrowdev UDFs in Polars (arrowdev/integrations/polars.py), for real: eager and lazy frames, map_batches over a
Series or a struct, groups, the streaming engine; results against the same function run row by row in Python."""

from __future__ import annotations

import decimal

import numpy as np
import pytest

import arrowdev as ad
import arrowdev.polars
from support.host_udfs import or_minus_one, piecewise, shout, weighted
from support.samples import reference

pl = pytest.importorskip("polars")  # the GPU machine may lack it; CI has it (the test extra)


FRAME = pl.DataFrame({
    "a": [1.0, -2.0, None, 4.0, 0.25, 3.0],
    "b": [10, 20, 30, None, 50, 60],
    "s": ["ab", None, "été", "x", "", "q"],
    "k": [1, 1, 2, 2, 1, 2],
})


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


def test_polars_expressions_built_per_query_share_one_prepared_udf():
    """``df.select(ad.polars.udf(f, "x"))`` written inline builds a new expression for every query: they share
    f's one HostUDF (its prepared calls and planned types), and an option that differs gets its own."""
    def halve(x):
        return x * 0.5

    first, again = ad.polars.udf(halve), ad.polars.udf(halve)
    assert first.udf is again.udf and first is again  # the call Polars gets too, kept while halve lives
    assert ad.polars.udf(halve, null_aware=True).udf is not first.udf
    datetimes = ad.polars.udf(halve, out_type=pl.Datetime("ms")), ad.polars.udf(halve, out_type=pl.Datetime("us"))
    assert datetimes[0].return_dtype() == pl.Datetime("ms") and datetimes[1].return_dtype() == pl.Datetime("us")
    assert ad.polars.udf(halve, out_type=pl.Float32).udf is not first.udf
    frame = pl.DataFrame({"x": [2, 3, None]})
    for _ in range(3):  # planned and run each time, by the one HostUDF
        assert frame.with_columns(y=ad.polars.udf(halve, "x"))["y"].to_list() == [1.0, 1.5, None]
    float32 = frame.with_columns(y=ad.polars.udf(halve, "x", out_type=pl.Float32))["y"]
    assert float32.dtype == pl.Float32 and float32.to_list() == [1.0, 1.5, None]

    class Halve:  # a callable that cannot be weakly referenced: a HostUDF of its own each time
        __slots__ = ()

        def __call__(self, x):
            return x * 0.5

    halver = Halve()
    assert ad.polars.udf(halver).udf is not ad.polars.udf(halver).udf


def test_polars_columns_of_different_lengths_are_refused_naming_them():
    frame = pl.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"one length from Polars, got 'a': 3 rows, 'a': 2 rows"):
        frame.select(ad.polars.udf(lambda x, y: x + y, pl.col("a"), pl.col("a").head(2)))
    both = frame.select(ad.polars.udf(lambda x, y: x * y, pl.col("a"), pl.col("a") + 1))["a"]
    assert both.to_list() == [2.0, 6.0, 12.0]


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
