"""Rows by position on columns and tables: ``c[::k]`` (any step), ``c[[i, j]]`` / tuples / integer NumPy
arrays / integer Arrow columns, and ``take``, against PyArrow's ``take`` (and Polars' ``gather`` where the two
agree); on a GPU, fixed-width types are gathered there (marker ``gpu``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from support.samples import CASES, DEVICES, on

import arrowdev as ad

VALUES = pa.chunked_array([[1.5, None, 3.0], [4.0, 5.5, None, 7.0]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", [slice(None, None, 2), slice(None, None, -1), slice(5, 1, -2), slice(1, None, 3),
                                 slice(6, 0, 1)], ids=str)
def test_slices_with_steps_take_rows_as_pyarrow_does(device, key):
    col = on(device, VALUES)
    expected = VALUES.to_pylist()[key]
    assert col[key].to_pylist() == expected == pa.array(VALUES.to_pylist())[key].to_pylist()
    assert col[key].type == col.type and col[key].device == col.device


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", [[1, 2], (6, 0, 0), np.array([3, 1], np.int32), np.array([], np.int64), [],
                                 pa.array([4, 2], pa.int8())], ids=lambda k: type(k).__name__ + str(len(k)))
def test_integer_sequences_take_rows_as_pyarrow_take_and_polars_gather(device, key):
    col = on(device, VALUES)
    indices = list(np.asarray(key, dtype=np.int64)) if not isinstance(key, pa.Array) else key.to_pylist()
    expected = VALUES.take(pa.array(indices, pa.int64())).to_pylist()
    assert col[key].to_pylist() == expected == col.take(key).to_pylist()
    assert pl.Series(VALUES.to_pylist()).gather(indices).to_list() == expected
    assert col[key].type == col.type


@pytest.mark.parametrize("name", list(CASES))
def test_every_type_is_taken_as_pyarrow_takes_it(name):
    arr = CASES[name]
    col = ad.column(arr)
    picks = [len(arr) - 1, 0, 3, 3]
    assert col[picks].to_pylist() == col.take(picks).to_pylist()
    assert col[::3].to_pylist() == [col[i] for i in range(0, len(arr), 3)]
    assert col[picks].type == col.type
    values = col.to_pylist()
    assert col[picks].to_pylist() == [values[i] for i in picks]
    if name not in ("interval_months", "interval_day_time", "string_view", "binary_view", "run_end_encoded"):
        # (PyArrow 26 has no arrays of the first two and cannot take the others: arrowdev takes those through
        # the large layouts and through decoding)
        assert col[picks].to_pylist() == arr.take(pa.array(picks)).to_pylist()


@pytest.mark.parametrize("key,error,match", [
    ([0, -1], IndexError, "row index -1 out of range"),  # PyArrow's take refuses it (Polars would count from the end)
    ([7], IndexError, "row index 7 out of range for 7 rows"),
    ([1.0], TypeError, "expected integer row indices, got float"),
    ([True], TypeError, "expected integer row indices, got bool"),
    (np.array([True, False]), TypeError, "bools"),
    (np.zeros((2, 1), np.int64), ValueError, "1-D"),
    ("ab", KeyError, None),
    (pa.array([1, None]), ValueError, "without nulls"),
])
def test_bad_row_indices_say_what_is_expected(key, error, match):
    col = ad.column(VALUES)
    if isinstance(key, str):
        with pytest.raises(TypeError, match="expected an int, a slice or a sequence of ints, got str"):
            col[key]
        return
    with pytest.raises(error, match=match):
        col[key]
    with pytest.raises(error, match=match):
        col.take(key)


def test_a_step_of_one_stays_a_zero_copy_slice():
    col = ad.column(VALUES)
    assert col[1:4:1].to_pylist() == col[1:4].to_pylist()
    assert {b.address for b in col[1:4:1].buffers if b.address} <= {b.address for b in col.buffers if b.address}


@pytest.mark.parametrize("device", DEVICES)
def test_tables_take_rows_in_every_column(device):
    source = pa.table({"x": VALUES, "s": pa.array(list("abcdefg")), "n": pa.array(range(7), pa.int32())})
    tbl = ad.table(source) if device == "cpu" else ad.table({"x": VALUES, "n": source["n"]}).to_device()
    for key in ([5, 0, 2], (1, 1), np.array([6]), slice(None, None, 2), slice(None, None, -3)):
        indices = np.arange(7)[key] if isinstance(key, slice) else np.asarray(key)
        expected = source.select(tbl.column_names).take(pa.array(indices, pa.int64()))
        got = tbl[key]
        assert got.num_rows == len(indices) and got.column_names == tbl.column_names
        assert got.to_host().to_pydict() == expected.to_pydict() == tbl.take(key).to_host().to_pydict()
    assert tbl[0].to_pylist() == VALUES.to_pylist()  # an int is a column, as in PyArrow
    with pytest.raises(TypeError, match=r"select columns with tbl.select\(names\)"):
        tbl[["x", "n"]]


@pytest.mark.gpu
def test_gpu_columns_of_other_types_are_refused_with_the_copy_to_make():
    col = ad.column(pa.array(["a", "b"])).to_device()
    with pytest.raises(TypeError, match=r"to_host\(\).take"):
        col[[1, 0]]
