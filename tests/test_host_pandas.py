"""arrowdev UDFs over pandas data (arrowdev/integrations/pandas.py): NumPy-, nullable- and Arrow-backed Series and
frames, zero-copy in, results of the input's kind; against the same function run row by row in Python."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
import arrowdev.pandas
from support.host_udfs import piecewise, shout, weighted

pd = pytest.importorskip("pandas")  # the GPU machine may lack it; CI has it (the test extra)


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
