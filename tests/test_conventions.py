"""ArrowColumn and ArrowTable follow PyArrow's and NumPy's conventions: ``==`` compares values,
``__array__`` / ``to_numpy`` view or copy under NumPy 2's rules, iteration, dict conversions, batches,
sizes, reprs with rows, and types printed as PyArrow prints them. PyArrow is the reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from support.samples import CASES

import arrowdev as ad

INTS = pa.array([1, 2, 3, 4], pa.int64())
WITH_NULLS = pa.array([1, None, 3], pa.int64())


# ---- equality -------------------------------------------------------------------------------------


def test_equality_compares_values_as_pyarrow_does():
    col = ad.column(INTS)
    assert col == ad.column(pa.chunked_array([INTS[:1], INTS[1:]]))  # chunking does not matter
    assert col == INTS and col == pa.chunked_array([INTS])
    assert not col == ad.column(INTS[:3]) and col != ad.column(INTS.cast(pa.int32()))
    assert (col == 3) is False and col != "text"  # not Arrow data: not equal, no error
    with pytest.raises(TypeError, match="unhashable"):
        hash(col)
    tbl = ad.table({"a": INTS})
    assert tbl == pa.table({"a": INTS}) and tbl != pa.table({"b": INTS}) and not tbl == 5
    with pytest.raises(TypeError, match="unhashable"):
        {tbl}


@pytest.mark.parametrize("layout", [pa.string(), pa.large_string(), pa.string_view()], ids=str)
def test_equality_compares_strings_across_layouts_as_across_chunkings(layout):
    """Polars hands strings over as string_view and lists as large_list: ``tbl == pl.DataFrame(tbl)`` holds.
    PyArrow's ``==`` says False across layouts; arrowdev compares values, as it does across chunkings."""
    import polars as pl

    values = ["a", None, "a string longer than twelve bytes"]
    col = ad.column(pa.chunked_array([values[:1], values[1:]], layout))
    for other in (pa.array(values, pa.string()), pa.array(values, pa.large_string()), pa.array(values, pa.string_view()),
                  pl.Series(values)):
        assert col == other and ad.column(other) == col
    assert col != pa.array(["a", None, "another"], pa.string_view()) and col != pa.array([1, None, 3])
    nested = ad.column(pa.array([[v] for v in values], pa.list_(layout)))
    assert nested == pa.array([[v] for v in values], pa.large_list(pa.string_view()))
    tbl = ad.table({"s": col, "n": INTS[:3], "l": nested, "b": pa.array([b"x", None, b"y"])})
    assert tbl == pl.DataFrame(tbl) and pl.DataFrame(tbl).equals(pl.DataFrame(pa.table(tbl)))
    assert tbl != pl.DataFrame(tbl).with_columns(pl.col("s").str.to_uppercase())


# ---- NumPy -------------------------------------------------------------------------------------------


def test_numpy_views_cpu_fixed_width_data_without_nulls():
    col = ad.column(INTS[1:])
    out = np.asarray(col)
    assert out.tolist() == [2, 3, 4] and out.dtype == np.int64
    assert out.ctypes.data == col.buffers[1].address + 8  # a view of arrowdev's buffer, at the slice
    assert np.asarray(col, copy=False).ctypes.data == out.ctypes.data
    copied = np.asarray(col, copy=True)
    assert copied.tolist() == [2, 3, 4] and copied.ctypes.data != out.ctypes.data
    assert col.to_numpy().ctypes.data == out.ctypes.data and not col.to_numpy().flags.writeable
    assert col.to_numpy(writable=False).base is not None
    assert np.asarray(col, dtype=np.float64).tolist() == [2.0, 3.0, 4.0]


@pytest.mark.parametrize("source", [WITH_NULLS, pa.chunked_array([INTS[:2], INTS[2:]]), pa.array([True, False]),
                                    pa.array(["a", None])], ids=["nulls", "chunks", "bool", "string"])
def test_numpy_copies_what_it_cannot_view(source):
    col = ad.column(source)
    expected = pa.chunked_array(source).to_numpy()
    got = np.asarray(col)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(col.to_numpy(zero_copy_only=False), expected)
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(col, copy=False)
    with pytest.raises(ValueError, match="zero_copy_only=False"):
        col.to_numpy()


def test_numpy_copy_false_refuses_a_dtype_change():
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(ad.column(INTS), dtype=np.float32, copy=False)


def test_numpy_writable_copies():
    col = ad.column(INTS)
    out = col.to_numpy(zero_copy_only=False, writable=True)
    assert out.flags.writeable
    out[0] = 99
    assert col.to_pylist()[0] == 1


def test_a_table_becomes_a_two_dimensional_array():
    tbl = ad.table({"a": INTS, "b": pa.array([5.0, 6.0, 7.0, 8.0])})
    np.testing.assert_array_equal(np.asarray(tbl), pa.table(tbl).to_pandas().to_numpy())
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(tbl, copy=False)


# ---- iteration, dicts, batches, sizes ----------------------------------------------------------------


def test_iteration_gives_values_of_every_chunk():
    col = ad.column(pa.chunked_array([WITH_NULLS, INTS]))
    assert list(col) == WITH_NULLS.to_pylist() + INTS.to_pylist()
    tbl = ad.table({"a": INTS, "b": INTS})
    assert [c.name for c in tbl] == ["a", "b"]


def test_pydict_round_trip():
    data = {"a": [1, None, 3], "s": ["x", "y", None]}
    tbl = ad.ArrowTable.from_pydict(data)
    assert tbl.to_pydict() == pa.Table.from_pydict(data).to_pydict()
    assert tbl.to_pylist() == pa.Table.from_pydict(data).to_pylist()
    schema = pa.schema([("a", pa.int32()), ("s", pa.large_string())])
    assert ad.ArrowTable.from_pydict(data, schema=schema).schema == ad.DataType.from_arrow(schema)


def test_to_batches_are_the_exported_record_batches():
    source = pa.Table.from_batches([pa.record_batch({"a": [1, 2]}), pa.record_batch({"a": pa.array([], pa.int64())}),
                                    pa.record_batch({"a": [3]})])
    batches = ad.table(source).to_batches()
    assert [b.num_rows for b in batches] == [b.num_rows for b in source.to_batches()]
    for got, want in zip(batches, source.to_batches()):
        assert pa.record_batch(got).equals(want)
        assert pa.record_batch(got).column(0).buffers()[1].address == want.column(0).buffers()[1].address
    assert ad.table(source).combine_chunks().to_batches()[0] == source.combine_chunks()


@pytest.mark.parametrize("name", list(CASES))
def test_nbytes_counts_the_bytes_the_rows_use(name):
    """Whole arrays: every byte of their buffers, as PyArrow's get_total_buffer_size (PyArrow's
    ``nbytes`` leaves out the last offset of offsets buffers); a slice uses fewer."""
    source = CASES[name]
    assert ad.column(source).nbytes == source.get_total_buffer_size()
    assert ad.column(source[:5]).nbytes <= source.get_total_buffer_size()


def test_table_shape_and_nbytes():
    source = pa.table({"a": INTS, "s": pa.array(["a", "bb", None, "d"])})
    tbl = ad.table(source)
    assert tbl.shape == source.shape and tbl.nbytes == source.get_total_buffer_size()


# ---- printing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_types_print_as_pyarrow_prints_them(name):
    col = ad.column(CASES[name])
    assert str(col.type) == repr(col.type) == str(CASES[name].type)
    assert f"type={CASES[name].type} " in repr(col)


def test_table_repr_shows_schema_and_rows():
    text = repr(ad.table({"a": pa.array(range(8)), "s": pa.array(["x", None] * 4)}))
    assert "rows=8 columns=2 batches=1" in text
    assert "a: int64\ns: string\n----\na: [0, 1, 2, 3, 4] ...\ns: ['x', None, 'x', None, 'x'] ..." in text


# ---- types -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_types_equal_the_pyarrow_types_they_stand_for(name):
    """``col.type == pa.float64()`` either way round, and ``pa.types.is_*`` read arrowdev's types: ``id``
    is PyArrow's integer id (and still its name)."""
    import pyarrow.types as pt

    col, native = ad.column(CASES[name]), CASES[name].type
    assert col.type == native and native == col.type and not col.type != native
    assert col.type.id == native.id and hash(col.type.id) == hash(native.id) and col.type.id in {native.id}
    predicates = [getattr(pt, p) for p in dir(pt) if p.startswith("is_") and p.endswith(tuple("abcdefghijklmnopqrstuvwxyz"))
                  and p not in ("is_boolean_value", "is_integer_value", "is_float_value")]
    assert [p(col.type) for p in predicates] == [p(native) for p in predicates]
    other = pa.int8() if native != pa.int8() else pa.int16()
    assert col.type != other and other != col.type


def test_type_ids_are_pyarrow_s_and_keep_their_names():
    from pyarrow.types import TypesEnum

    from arrowdev.core.types import _PYARROW_TYPE_IDS, TypeId

    assert {name: TypesEnum[name.upper()].value for name in _PYARROW_TYPE_IDS if name != "extension"} == \
        {name: i for name, i in _PYARROW_TYPE_IDS.items() if name != "extension"}
    t = ad.column(pa.array([1.5])).type
    assert t.id == "double" and str(t.id) == "double" and repr(t.id) == "'double'" and t.id == pa.float64().id
    assert t.id != "int64" and isinstance(t.id, TypeId) and int(t.id) == 12
    assert t == "float64" and t == "double" and t != "int64" and not t == "no such type" and t != 12
