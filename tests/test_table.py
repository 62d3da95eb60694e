"""ArrowTable: building from producers, the table operations (none copies column data), and the
exports. PyArrow (and Polars) are the reference for values, batch boundaries and metadata."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad

# Three columns chunked three different ways.
A = pa.chunked_array([[1, 2, 3], [4, None, 6, 7]])
B = pa.chunked_array([["x"], ["y", None, "w"], ["a string longer than twelve", "u", "t"]])
C = pa.chunked_array([[1.5, None, 3.5, 4.5, 5.5, 6.5, 7.5]])
METADATA = {b"origin": b"test", b"rows": b"7"}
SOURCE = pa.Table.from_arrays([A, B, C], names=["a", "b", "c"]).replace_schema_metadata(METADATA)


def _addresses(arr) -> set[int]:
    """Non-null buffer addresses of a PyArrow array or chunked array."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return {b.address for c in chunks for b in c.buffers() if b is not None}


def _col_addresses(col: ad.ArrowColumn) -> set[int]:
    return {b.address for b in col.buffers if b.address and b.role != "variadic_sizes"}


def test_from_table_with_differently_chunked_columns():
    tbl = ad.table(SOURCE)
    assert (tbl.num_rows, tbl.num_columns, len(tbl)) == (SOURCE.num_rows, SOURCE.num_columns, SOURCE.num_rows)
    assert tbl.column_names == SOURCE.column_names
    assert tbl.schema == ad.DataType.from_arrow(pa.struct(SOURCE.schema))
    for name in SOURCE.column_names:
        assert pa.chunked_array(tbl[name]).equals(SOURCE[name])
        assert tbl[name].null_count == SOURCE[name].null_count
        assert _col_addresses(tbl[name]) <= _addresses(SOURCE[name])  # the same buffers
    back = pa.table(tbl)
    assert back.equals(SOURCE) and back.schema.metadata == METADATA


def test_dict_of_columns_keeps_each_chunking_and_exports_aligned_batches():
    tbl = ad.table({"a": A, "b": B, "c": C})
    assert [tbl[n].num_chunks for n in "abc"] == [A.num_chunks, B.num_chunks, C.num_chunks]
    reader = pa.RecordBatchReader._import_from_c_capsule(tbl.__arrow_c_stream__())
    batches = list(reader)
    expected = SOURCE.to_batches()  # PyArrow's own split at every column's chunk boundary
    assert [len(b) for b in batches] == [len(b) for b in expected]
    for got, want in zip(batches, expected):
        assert got.equals(want.replace_schema_metadata(None))
        for i, name in enumerate("abc"):
            assert _addresses(got.column(i)) <= _addresses(SOURCE[name])  # zero-copy slices


@pytest.mark.parametrize("kind", ["RecordBatch", "RecordBatchReader", "polars", "struct array", "dict of producers"])
def test_table_from_other_producers(kind):
    batch = pa.record_batch({"x": [1, None, 3], "s": ["a", None, "c"]})
    make = {
        "RecordBatch": lambda: batch,
        "RecordBatchReader": lambda: pa.RecordBatchReader.from_batches(batch.schema, [batch, batch]),
        "polars": lambda: pl.DataFrame({"x": [1, None, 3], "s": ["a", None, "c"]}),
        "struct array": lambda: pa.StructArray.from_arrays(batch.columns, names=batch.schema.names),
        "dict of producers": lambda: {"x": [1, None, 3], "s": pl.Series(["a", None, "c"])},
    }[kind]
    expected = pa.table(batch) if kind != "RecordBatchReader" else pa.Table.from_batches([batch, batch])
    tbl = ad.table(make())
    assert tbl.column_names == ["x", "s"] and tbl.num_rows == expected.num_rows
    assert pa.table(tbl).cast(expected.schema).equals(expected)
    assert ad.table(tbl) is tbl


def test_record_batch_and_struct_array_are_held_zero_copy():
    batch = pa.record_batch({"x": [1, None, 3], "s": ["a", None, "c"]})
    for producer in (batch, pa.StructArray.from_arrays(batch.columns, names=batch.schema.names)):
        tbl = ad.table(producer)
        for i, name in enumerate(batch.schema.names):
            assert _col_addresses(tbl[name]) == _addresses(batch.column(i))


def test_table_from_a_sliced_struct_array_exports_to_pyarrow():
    struct = pa.StructArray.from_arrays([pa.array(range(10)), pa.array([f"s{i}" for i in range(10)])],
                                        names=["x", "y"])
    sliced = struct.slice(3, 4)
    expected = pa.Table.from_struct_array(sliced)
    tbl = ad.table(sliced)
    assert tbl.num_rows == 4 and tbl["x"].to_pylist() == sliced.field("x").to_pylist()
    assert pa.table(tbl).equals(expected)
    batch = pa.RecordBatch._import_from_c_capsule(*tbl.__arrow_c_array__())
    assert pa.Table.from_batches([batch]).equals(expected)
    assert pl.DataFrame(tbl).equals(pl.DataFrame(expected))


def test_polars_dataframe_round_trip():
    df = pl.DataFrame({"i": [1, None, 3], "f": [0.5, 1.5, None], "s": ["a", None, "c"]})
    tbl = ad.table(df)
    assert tbl.column_names == df.columns
    assert pl.DataFrame(tbl).equals(df)
    numbers = ad.table(pl.DataFrame(tbl))
    for name in ("i", "f"):  # fixed-width columns travel zero-copy both ways
        assert _col_addresses(numbers[name]) == _col_addresses(tbl[name])
    assert pl.DataFrame(ad.table(SOURCE)).equals(pl.DataFrame(SOURCE))


def test_bad_tables_raise():
    with pytest.raises(ValueError, match="rows"):
        ad.table({"a": [1, 2], "b": [1]})
    with pytest.raises(TypeError, match="struct"):
        ad.table(pa.array([1, 2]))
    with_nulls = pa.StructArray.from_arrays([pa.array([1, 2])], names=["x"], mask=pa.array([False, True]))
    with pytest.raises(ad.InvalidArrowError, match="top-level nulls"):
        ad.table(with_nulls)
    assert ad.table(with_nulls.slice(0, 1)).to_pylist() == [{"x": 1}]  # the null row is not in this slice


def test_column_access():
    tbl = ad.table(SOURCE)
    assert tbl[0] is tbl["a"] is tbl.column("a") is tbl.column(0)
    assert tbl[-1] is tbl["c"]
    assert tbl[1].name == "b"
    with pytest.raises(KeyError, match="nope"):
        tbl["nope"]
    with pytest.raises(IndexError):
        tbl[3]
    with pytest.raises(IndexError):
        tbl.column(-4)


def test_select_drop_append_share_the_columns():
    tbl = ad.table(SOURCE)
    picked = tbl.select(["c", 0])
    assert picked.column_names == ["c", "a"]
    assert pa.table(picked).equals(SOURCE.select(["c", "a"]))
    assert picked["a"] is tbl["a"] and _col_addresses(picked["c"]) == _col_addresses(tbl["c"])
    dropped = tbl.drop_columns("b")
    assert pa.table(dropped).equals(SOURCE.drop_columns("b"))
    assert tbl.drop_columns(["a", 2]).column_names == ["b"]
    assert tbl.drop_columns([]).column_names == tbl.column_names
    with pytest.raises(KeyError):
        tbl.drop_columns("nope")
    extra = np.arange(7)
    appended = tbl.append_column("d", extra)
    assert pa.table(appended).equals(SOURCE.append_column("d", pa.array(extra)))
    assert appended["a"] is tbl["a"] and tbl.num_columns == 3
    with pytest.raises(ValueError):
        tbl.append_column("short", [1, 2])


def test_rename_columns():
    tbl = ad.table(SOURCE)
    renamed = tbl.rename_columns(["x", "y", "z"])
    assert pa.table(renamed).equals(SOURCE.rename_columns(["x", "y", "z"]))
    assert _col_addresses(renamed["x"]) == _col_addresses(tbl["a"])
    mapped = tbl.rename_columns({"b": "bee"})
    assert mapped.column_names == SOURCE.rename_columns({"b": "bee"}).column_names == ["a", "bee", "c"]
    assert tbl.column_names == ["a", "b", "c"]
    with pytest.raises(KeyError, match="nope"):
        tbl.rename_columns({"nope": "x"})
    with pytest.raises(ValueError, match="3 names"):
        tbl.rename_columns(["x"])


@pytest.mark.parametrize("start, stop", [(None, None), (1, 5), (2, 3), (3, None), (-3, None), (0, 0), (5, 100),
                                         (100, None), (-100, 2)])
def test_slices_match_pyarrow(start, stop):
    tbl = ad.table(SOURCE)
    got, want = tbl[start:stop], SOURCE[start:stop]
    assert got.num_rows == want.num_rows
    assert pa.table(got).equals(want)
    length = None if stop is None else max(stop - (start or 0), 0)
    if start is not None and start >= 0:
        assert pa.table(tbl.slice(start, length)).equals(SOURCE.slice(start, length))


def test_negative_offset_raises():
    tbl = ad.table(SOURCE)
    with pytest.raises(ValueError):
        tbl.slice(-1)


def test_zero_column_and_empty_tables():
    no_columns = SOURCE.select([])
    tbl = ad.table(no_columns)
    assert (tbl.num_rows, tbl.num_columns, tbl.column_names) == (no_columns.num_rows, 0, [])
    assert pa.table(tbl).num_rows == no_columns.num_rows and pa.table(tbl).num_columns == 0
    assert ad.table({}).num_rows == 0 and pa.table(ad.table({})).num_columns == 0
    empty = SOURCE.slice(0, 0)
    tbl = ad.table(empty)
    assert tbl.num_rows == 0 and tbl.column_names == empty.column_names
    assert pa.table(tbl).equals(empty) and pa.table(tbl).schema.metadata == METADATA
    assert pl.DataFrame(tbl).equals(pl.DataFrame(empty))


def test_metadata_survives_table_operations():
    tbl = ad.table(SOURCE)
    for got, want in [(tbl.select(["a"]), SOURCE.select(["a"])), (tbl[1:3], SOURCE[1:3])]:
        assert pa.table(got).schema.metadata == want.schema.metadata == METADATA
    # (PyArrow's rename_columns drops the metadata; arrowdev keeps it, as for every operation)
    for got in (tbl.rename_columns(["p", "q", "r"]), tbl.drop_columns("a"), tbl.append_column("d", range(7))):
        assert pa.table(got).schema.metadata == METADATA


def test_columns_are_shared_between_tables():
    first = ad.table(SOURCE)
    second = ad.table({"again": first["a"], "b": first["b"]})
    third = second.slice(2)
    assert _col_addresses(second["again"]) == _col_addresses(first["a"])
    assert _col_addresses(third["b"]) <= _col_addresses(first["b"])
    assert pa.table(third).column(1).equals(SOURCE["b"][2:])


def test_single_record_batch_export():
    one = pa.table({"x": [1, None, 3], "s": ["a", None, "c"]}).combine_chunks()
    batch = pa.RecordBatch._import_from_c_capsule(*ad.table(one).__arrow_c_array__())
    assert batch.equals(one.to_batches()[0])
    for i in range(one.num_columns):  # a single batch goes out as it came in
        assert _addresses(batch.column(i)) == _addresses(one.column(i))
    several = ad.table(SOURCE)  # several batches: only the streams (as pyarrow.Table); one copy on request
    assert not hasattr(several, "__arrow_c_array__") and not hasattr(several, "__arrow_c_device_array__")
    combined = pa.record_batch(several.combine_chunks())
    assert combined.equals(SOURCE.combine_chunks().to_batches()[0].replace_schema_metadata(METADATA))


def test_stream_export_yields_the_batches_zero_copy():
    source = pa.Table.from_batches([pa.record_batch({"x": [1, 2], "s": ["a", None]}),
                                    pa.record_batch({"x": [None, 4, 5], "s": ["d", "e", "f"]})])
    tbl = ad.table(source)
    for _ in range(2):  # every export stands alone
        batches = list(pa.RecordBatchReader._import_from_c_capsule(tbl.__arrow_c_stream__()))
        assert [len(b) for b in batches] == [len(b) for b in source.to_batches()]
        for got, want in zip(batches, source.to_batches()):
            assert got.equals(want)
            for i in range(want.num_columns):
                assert [b and b.address for b in got.column(i).buffers()] == [
                    b and b.address for b in want.column(i).buffers()]
    device = ad.table(tbl.__arrow_c_device_stream__())
    assert pa.table(device).equals(source)


def test_conversions():
    tbl = ad.table(SOURCE)
    assert tbl.to_pyarrow().equals(SOURCE)
    assert tbl.to_pylist() == SOURCE.to_pylist()
    assert tbl.equals(SOURCE) and not tbl.equals(SOURCE.slice(1))
    text = repr(tbl)
    assert "rows=7" in text and "columns=3" in text and "a: int64" in text


def test_struct_array_round_trip_keeps_the_record_batches_zero_copy():
    source = pa.table({"a": pa.chunked_array([[1, 2], [3]]), "s": pa.chunked_array([["x", None], ["z"]])},
                      metadata={"k": "v"})
    tbl = ad.table(source)
    struct = tbl.to_struct_array()
    assert struct.type.storage_id == "struct" and struct.num_chunks == 2
    assert struct.to_pyarrow().equals(source.to_struct_array())  # PyArrow's own Table.to_struct_array
    again = ad.ArrowTable.from_struct_array(struct)
    assert again.equals(tbl) and pa.table(again).schema.metadata == {b"k": b"v"}
    assert [b.address for b in again.columns[1].buffers] == [b.address for b in tbl.columns[1].buffers]
    assert ad.ArrowTable.from_struct_array(source.to_struct_array()).to_pyarrow().equals(source.replace_schema_metadata())
    with pytest.raises(TypeError, match="expected a struct column, got int64"):
        ad.ArrowTable.from_struct_array(pa.array([1, 2]))


# ---- names: strings, and repeated names as PyArrow has them -------------------------------------------


def test_a_repeated_name_is_kept_and_looking_it_up_raises_as_in_pyarrow():
    """PyArrow allows a name twice in a table (append_column adds it) and raises KeyError where the name is
    looked up; arrowdev does the same, naming the positions to use instead."""
    tbl = ad.table({"n": pa.array([1, 2]), "s": pa.array(["a", "b"])}).append_column("n", pa.array([3, 4]))
    reference = pa.table({"n": [1, 2], "s": ["a", "b"]}).append_column("n", pa.array([3, 4]))
    assert tbl.column_names == reference.column_names == ["n", "s", "n"]
    for lookup in (lambda t: t["n"], lambda t: t.column("n"), lambda t: t.select(["n"]), lambda t: t.drop_columns("n")):
        with pytest.raises(KeyError):
            lookup(reference)
        with pytest.raises(KeyError, match=r"column 'n' is ambiguous: 2 columns have that name \(at \[0, 2\]\)"):
            lookup(tbl)
    with pytest.raises(KeyError, match="ambiguous"):
        tbl.apply(lambda n: n + 1, columns=["n"])
    assert tbl.column(2).to_pylist() == [3, 4] and tbl["s"].to_pylist() == ["a", "b"]
    assert tbl.to_pydict() == reference.to_pydict() == {"n": [3, 4], "s": ["a", "b"]}  # the later one wins
    assert pa.table(tbl).equals(reference)


@pytest.mark.parametrize("name", [1, 2.5, True, (1,)], ids=repr)
def test_column_names_must_be_strings(name):
    with pytest.raises(TypeError):  # PyArrow refuses them too
        pa.table({name: [1]})
    with pytest.raises(TypeError, match=f"expected column names that are strings, got {type(name).__name__}"):
        ad.table({name: [1]})


@pytest.mark.parametrize("name", [b"n", None, "n"], ids=repr)
def test_bytes_and_none_names_are_read_as_pyarrow_reads_them(name):
    assert ad.table({name: [1]}).column_names == pa.table({name: [1]}).column_names
