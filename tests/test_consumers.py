"""Every CPU consumer takes arrowdev data the obvious way (PyArrow, Polars, DuckDB, nanoarrow, arro3),
for every type in tests/support/samples.py: pinned host memory (what ``to_host()`` gives) included, and chunks kept.

The reference for each consumer is the same consumer on the PyArrow data: what it makes of that,
it must make of arrowdev's (and where it refuses that, it must refuse ours the same way).
Pinned host memory is tested twice: on the CPU, as CPU memory under the CUDA_HOST label (the label
is all that differs from what ``to_host()`` returns), and on a GPU through ``to_host()`` itself.
"""

from __future__ import annotations

import arro3.core as a3
import duckdb
import nanoarrow as na
import polars as pl
import pyarrow as pa
import pytest
from support.samples import CASES, source_of

import arrowdev as ad
from arrowdev import _capsules
from arrowdev.core import chunks as _chunked, layout
from arrowdev.interop.pyarrow import empty_chunks

HOW = ["host label", pytest.param("to_host", marks=pytest.mark.gpu)]
# nanoarrow 0.9's Array segfaults on view arrays from any producer (PyArrow's too): not run there
NANOARROW_CRASHES = {"string_view", "binary_view"}
# arro3 0.9 reads a sparse union's children without the union's offset: a slice of PyArrow's own data comes
# back as the parent's first rows, so arro3 reading PyArrow is no reference for an offset sparse union.
ARRO3_IGNORES_UNION_OFFSET = {"sparse_union"}


def _known_consumer_bug(consumer: str, name: str) -> bool:
    return ((consumer == "nanoarrow.Array" and name in NANOARROW_CRASHES)
            or (consumer.startswith("arro3") and name in ARRO3_IGNORES_UNION_OFFSET))


def _host_labelled(col: ad.ArrowColumn) -> ad.ArrowColumn:
    """``col``'s chunks (CPU memory) labelled ARROW_DEVICE_CUDA_HOST, as ``to_host()`` labels its output."""
    chunks = []
    for i, held in enumerate(_chunked.chunks(col)):
        node = layout.Node.of(held)
        chunks.append(_capsules.build(col.type, node.length, _chunked.chunk_null_count(col, i), node.offset, list(node.buffers),
                                      [held.child(j) for j in range(len(node.children))], held.dictionary(),
                                      device_type=3, device_id=0, keepalive=held))
    return ad.ArrowColumn(col.type, chunks)


def _pinned(how: str, source) -> ad.ArrowColumn:
    col = ad.column(source)
    out = _host_labelled(col) if how == "host label" else col.to_device().to_host()
    assert out.device.type == "cuda_host"
    return out


def _duckdb(obj) -> pa.Table:
    data = obj  # noqa: F841  (DuckDB finds it by name)
    return duckdb.connect().sql("select * from data").to_arrow_table()


def _as_pyarrow(result):
    """A consumer's result as a PyArrow ChunkedArray or Table, to compare."""
    if isinstance(result, (pl.Series, pl.DataFrame)):
        result = result.to_arrow()
    if isinstance(result, (pa.Table, pa.RecordBatch, a3.Table)):
        return pa.table(result)
    return pa.chunked_array(result)


COLUMN_CONSUMERS = {
    "pa.array": pa.array,
    "pa.chunked_array": pa.chunked_array,
    "pl.Series": pl.Series,
    "nanoarrow.Array": na.Array,
    "arro3.ChunkedArray": a3.ChunkedArray.from_arrow,
}
TABLE_CONSUMERS = {
    "pa.record_batch": pa.record_batch,
    "pa.table": pa.table,
    "pl.DataFrame": pl.DataFrame,
    "duckdb": _duckdb,
    "nanoarrow.Array": na.Array,
    "arro3.Table": a3.Table.from_arrow,
}


class _Producer:
    """PyArrow data behind exactly the protocols ``like`` offers: the reference any PyCapsule producer
    of the same data gives (some consumers read PyArrow objects by other routes, e.g. Polars)."""

    def __init__(self, data, like) -> None:
        self._data = data
        for name in ("__arrow_c_schema__", "__arrow_c_array__", "__arrow_c_device_array__", "__arrow_c_stream__",
                     "__arrow_c_device_stream__"):
            method = self._forward(name) if hasattr(like, name) else None
            if method is not None:  # PyArrow has no device stream
                setattr(self, name, method)

    def _forward(self, name):
        data = self._data
        if name == "__arrow_c_schema__":
            return getattr(data.schema if isinstance(data, (pa.Table, pa.RecordBatch)) else data.type, name)
        whole = pa.table(data) if isinstance(data, pa.RecordBatch) else pa.chunked_array(data)
        return getattr(data, name, getattr(whole, name, None))


def _same_as_on_pyarrow(consume, ours, reference) -> None:
    reference = _Producer(reference, ours)
    try:
        expected = _as_pyarrow(consume(reference))
    except BaseException as e:  # the consumer refuses the type (Rust consumers panic): it must refuse ours
        if not isinstance(e, Exception) and type(e).__name__ != "PanicException":
            raise
        with pytest.raises(BaseException) as refused:
            _as_pyarrow(consume(ours))
        assert isinstance(refused.value, Exception) or type(refused.value).__name__ == "PanicException"
        return
    got = _as_pyarrow(consume(ours))
    assert got.type == expected.type if isinstance(got, pa.ChunkedArray) else got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist()  # values: consumers may merge dictionaries differently


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("layout", ["whole", "slice(3,11)", "chunked"])
@pytest.mark.parametrize("name", list(CASES))
def test_pinned_host_columns_reach_every_cpu_consumer(name, layout, how):
    source = source_of(name, layout)
    col = _pinned(how, source)
    # pa.array: PyArrow's own pa.array(ChunkedArray) fails on nested types; ours keeps the chunks
    got = pa.array(col)
    assert isinstance(got, pa.ChunkedArray if layout == "chunked" else pa.Array)
    assert got.type == source.type and got.equals(source)
    for consumer, consume in COLUMN_CONSUMERS.items():
        if consumer != "pa.array" and not _known_consumer_bug(consumer, name):
            _same_as_on_pyarrow(consume, col, source)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("layout", ["whole", "chunked"])
@pytest.mark.parametrize("name", list(CASES))
def test_pinned_host_tables_reach_every_cpu_consumer(name, layout, how):
    source = source_of(name, layout)
    ints = pa.chunked_array([pa.array(range(len(source)))])
    if how == "host label":
        tbl = ad.table({"x": _pinned(how, source), "i": _pinned(how, ints)})
    else:
        tbl = ad.table({"x": source, "i": ints}).to_device().to_host()
    assert tbl.device.type == "cuda_host"
    reference = pa.table({"x": source, "i": ints})
    for consumer, consume in TABLE_CONSUMERS.items():
        if _known_consumer_bug(consumer, name):
            continue
        if consumer == "pa.record_batch":  # a record batch is one batch: PyArrow's table has no array protocol
            _same_as_on_pyarrow(consume, tbl.combine_chunks(), reference.combine_chunks().to_batches()[0])
        else:
            _same_as_on_pyarrow(consume, tbl, reference)


def test_pinned_host_exports_say_cpu_and_imports_keep_their_label():
    from support.cabi import ArrowDeviceArray, ArrowDeviceArrayStream, capsule_pointer

    col = _pinned("host label", pa.array([1, None, 3]))
    _, capsule = col.__arrow_c_device_array__()
    exported = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    assert (exported.device_type, exported.device_id, exported.sync_event) == (1, -1, None)
    stream = col.__arrow_c_device_stream__()
    assert ArrowDeviceArrayStream.from_address(capsule_pointer(stream, "arrow_device_array_stream")).device_type == 1
    # a producer's CUDA_HOST array is held as it came (arrowdev labels only what it exports)
    raw = _chunked.chunks(col)[0].export_pair(True)  # the chunk carries its type
    assert ad.column(raw).device == ad.Device("cuda_host", 0)
    assert col[1:1].device == ad.Device("cuda_host", 0)  # an empty slice keeps the device


def test_pinned_host_record_batches_take_the_cpu_label_too():
    """A table of pinned record batches (what a GPU table's to_host() gives) leaves as CPU memory,
    the one-batch fast path included."""
    source = pa.record_batch({"a": [1, None, 3], "s": ["x", None, "z"]})
    batches = _host_labelled(ad.column(source))
    tbl = ad.ArrowTable.from_struct_array(batches)
    assert tbl.device.type == "cuda_host"
    assert pa.record_batch(tbl).equals(source) and pa.table(tbl).equals(pa.table(source))
    assert pl.DataFrame(tbl).to_arrow().to_pylist() == source.to_pylist()


# ---- chunks stay chunks ----------------------------------------------------------------------------

CHUNKS = [pa.array([1, None, 3]), pa.array([4]), pa.array([5, 6, None, 8])]


def _data_addresses(chunked) -> list[int]:
    return [c.buffers()[1].address for c in pa.chunked_array(chunked).chunks]


@pytest.mark.parametrize("consumer", ["pa.chunked_array", "pa.array", "pl.Series", "nanoarrow.Array",
                                      "arro3.ChunkedArray"])
def test_several_chunks_reach_consumers_zero_copy(consumer):
    source = pa.chunked_array(CHUNKS)
    got = COLUMN_CONSUMERS[consumer](ad.column(source))
    assert pa.chunked_array(got).num_chunks == 3
    assert _data_addresses(got) == _data_addresses(source)


@pytest.mark.parametrize("consumer", ["pa.table", "pl.DataFrame", "nanoarrow.Array", "arro3.Table"])
def test_several_record_batches_reach_consumers_zero_copy(consumer):
    source = pa.Table.from_batches([pa.record_batch({"a": c}) for c in CHUNKS])
    got = pa.table(_as_pyarrow(TABLE_CONSUMERS[consumer](ad.table(source))))
    assert got.equals(source) and got.column(0).num_chunks == 3
    assert _data_addresses(got.column(0)) == _data_addresses(source.column(0))


def test_pandas_reads_columns_and_tables():
    import pandas as pd

    source = pa.Table.from_batches([pa.record_batch({"a": c, "s": pa.array(["x"] * len(c))}) for c in CHUNKS])
    pd.testing.assert_frame_equal(pd.DataFrame.from_arrow(ad.table(source)), pd.DataFrame.from_arrow(source))
    ours = ad.column(source.column("a"))
    reference = _Producer(source.column("a"), ours)  # pandas names a PyArrow ChunkedArray by other routes
    pd.testing.assert_series_equal(pd.Series.from_arrow(ours), pd.Series.from_arrow(reference))
    one = ad.column(pa.array([1, 2, 3]))  # pd.Series(col) takes __array__: a view where NumPy can view
    assert pd.Series(one).to_numpy().ctypes.data == one.buffers[1].address


def test_duckdb_reads_every_chunk():
    source = pa.Table.from_batches([pa.record_batch({"a": c}) for c in CHUNKS])
    assert _duckdb(ad.table(source)).equals(_duckdb(source))
    assert _duckdb(ad.column(source.column(0))).column(0).to_pylist() == source.column(0).to_pylist()


# ---- GPU columns --------------------------------------------------------------------------------


@pytest.mark.gpu
def test_pyarrow_array_of_a_gpu_column_is_a_host_copy():
    """PyPI PyArrow has no CUDA: pa.array takes __arrow_array__ first, which copies to host."""
    source = pa.array(["a", None, "ccc"])
    g = ad.column(source).to_device()
    assert pa.array(g).equals(source)
    assert pa.array(g, type=pa.large_string()).equals(source.cast(pa.large_string()))
    chunked = ad.column(pa.chunked_array([source, source])).to_device()
    assert pa.array(chunked).equals(pa.chunked_array([source, source]))
    assert pa.table({"x": g}).column(0).equals(pa.chunked_array([source]))
    assert g.__arrow_c_device_array__() is not None  # device consumers still get the device array


@pytest.mark.gpu
def test_gpu_record_batches_go_through_the_host():
    tbl = ad.table({"a": pa.array([1, 2, None])}).to_device()
    assert pa.record_batch(tbl.to_host()).equals(pa.record_batch({"a": pa.array([1, 2, None])}))
    assert pa.table(tbl).equals(pa.table({"a": pa.array([1, 2, None])}))


@pytest.mark.gpu
def test_cudf_takes_gpu_columns_zero_copy():
    plc = pytest.importorskip("pylibcudf")  # where cuDF can be installed (../shared/gpu/fetch-cudf)
    g = ad.column(pa.array([1, None, 3])).to_device()
    out = plc.Column.from_arrow(g)
    assert out.size() == 3 and out.null_count() == 1
    assert out.data().ptr == g.buffers[1].address


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_empty_gpu_slices_and_empty_columns_stay_on_the_device(name):
    g = ad.column(CASES[name]).to_device()
    for empty in (g[5:5], g[len(g):], g.slice(3, 0)):
        assert empty.device == g.device and len(empty) == 0 and empty.to_pylist() == []
    empty = ad.column(pa.chunked_array([], CASES[name].type)).to_device()
    assert empty.device.type == "cuda" and empty.to_pylist() == []
    assert ad.column(CASES[name].slice(0, 0)).to_device().device.type == "cuda"


@pytest.mark.gpu
def test_to_device_keeps_record_batch_boundaries():
    batches = [pa.record_batch({"a": [1, 2]}), pa.record_batch({"a": pa.array([], pa.int64())}),
               pa.record_batch({"a": [3]})]
    tbl = ad.table(pa.Table.from_batches(batches))
    g = tbl.to_device()
    assert g.device.type == "cuda"
    assert [len(b) for b in g.to_batches()] == [2, 0, 1]
    assert [b.num_rows for b in pa.table(g).to_batches()] == [2, 0, 1]
    assert [len(b) for b in g.to_host().to_batches()] == [2, 0, 1]
    empty = ad.table(pa.table({"a": pa.array([], pa.int64())})).to_device()
    assert empty.device.type == "cuda" and empty.num_rows == 0


@pytest.mark.gpu
def test_to_device_keeps_each_columns_chunks_where_columns_are_chunked_apart():
    """A copy as record batches would cut every column at every other column's chunk boundary."""
    strings = pa.chunked_array([["x", None, "yz"], ["w"] * 5, []])
    tbl = ad.table({"a": pa.array(range(8)), "s": strings,
                    "b": pa.chunked_array([pa.array([1.5] * 4), pa.array([None, 2.5, 3.5, 4.5])])})
    expected = pa.table(tbl.to_host())
    g = tbl.to_device()
    assert g.device.type == "cuda" and g.column_names == ["a", "s", "b"]
    assert [c.num_chunks for c in g.columns] == [1, 3, 2]
    assert [[len(c) for c in col.chunks] for col in g.columns] == [[8], [3, 5, 0], [4, 4]]
    back = g.to_host()
    assert [c.num_chunks for c in back.columns] == [1, 3, 2]
    assert pa.table(back).equals(expected) and pa.table(g).schema == expected.schema
    assert g.column("b").null_count == 1 and g.slice(2, 4).to_pydict() == tbl.slice(2, 4).to_pydict()


@pytest.mark.parametrize("name", list(CASES))
def test_copies_of_empty_slices_plan_for_every_type(name):
    """What to_device() does with an empty slice, run host to host (the planner, checked without a GPU)."""
    from arrowdev.cuda import transfer

    col = ad.column(CASES[name])
    no_chunks = ad.column(pa.chunked_array([], CASES[name].type))
    with_a_chunk = ad.ArrowColumn(no_chunks.type, empty_chunks(no_chunks.type))  # what to_device() copies
    for empty in (col[5:5], col[len(col):], with_a_chunk):
        items = [(empty.type, chunk, _chunked.chunk_null_count(empty, i), _chunked.read(empty), 0)
                 for i, chunk in enumerate(_chunked.chunks(empty))]
        copied = ad.ArrowColumn(empty.type, transfer.copy_chunks(items, ad.Device.cpu(), ad.Device.cpu()))
        assert copied.num_chunks == 1 and copied.to_pylist() == []
        got = pa.array(copied)
        assert got.type == CASES[name].type and len(got) == 0
        got.validate(full=True)
