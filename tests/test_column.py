"""ArrowColumn: building from every kind of producer, the export protocols, slicing, structure,
conversions and ``requested_schema``. PyArrow is the reference for values and null counts."""

from __future__ import annotations

import ctypes
import re

import nanoarrow as na
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev import _capsules
from support.cabi import ArrowArray, ArrowArrayStream, ArrowDeviceArray, ArrowDeviceArrayStream, capsule_pointer
from support.counting_producer import CountingProducer

INTS = pa.array([1, None, 3, None, 5, 6, None, 8, 9, 10, 11, None, 13])
STRUCT = pa.StructArray.from_arrays(
    [pa.array(range(10)), pa.array([None if i % 3 == 0 else f"s{i}" for i in range(10)])],
    names=["a", "b"], mask=pa.array([i == 4 for i in range(10)]))
TABLE = pa.Table.from_batches([pa.record_batch({"x": [1, 2], "y": ["a", None]})] * 3)


def _addresses(arr) -> list[int]:
    return [b.address for b in arr.buffers() if b is not None]


def _data_addresses(col: ad.ArrowColumn) -> list[int]:
    return [b.address for b in col.buffers if b.address]


# ---- producers ---------------------------------------------------------------------------------


def _producers() -> dict:
    """name -> (make producer, the PyArrow data it must equal, expected number of chunks)."""
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4, 5), INTS.slice(9)])
    struct_of_table = pa.chunked_array([pa.StructArray.from_arrays(b.columns, names=b.schema.names)
                                        for b in TABLE.to_batches()])
    return {
        "pa.Array": (lambda: INTS, INTS, 1),
        "pa.ChunkedArray": (lambda: chunked, chunked, 3),
        "pa.RecordBatch": (lambda: TABLE.to_batches()[0], struct_of_table.chunks[0], 1),
        "pa.Table": (lambda: TABLE, struct_of_table, 3),
        "pa.RecordBatchReader": (lambda: pa.RecordBatchReader.from_batches(TABLE.schema, TABLE.to_batches()),
                                 struct_of_table, 3),
        "polars.Series": (lambda: pl.Series("v", [1, None, 3]), pa.array([1, None, 3]), 1),
        "nanoarrow.Array": (lambda: na.Array(INTS), INTS, 1),
        "nanoarrow.CArray": (lambda: na.c_array(INTS), INTS, 1),
        "capsule pair": (lambda: INTS.__arrow_c_array__(), INTS, 1),
        "device capsule pair": (lambda: INTS.__arrow_c_device_array__(), INTS, 1),
        "stream capsule": (lambda: chunked.__arrow_c_stream__(), chunked, 3),
        "list": (lambda: [1, None, 3], pa.array([1, None, 3]), 1),
        "numpy": (lambda: np.arange(5, dtype=np.int16), pa.array(np.arange(5, dtype=np.int16)), 1),
    }


PRODUCERS = _producers()


@pytest.mark.parametrize("kind", list(PRODUCERS))
def test_column_from_every_producer(kind):
    make, expected, n_chunks = PRODUCERS[kind]
    col = ad.column(make())
    assert isinstance(col, ad.ArrowColumn)
    assert col.num_chunks == n_chunks
    assert len(col) == len(expected)
    assert col.type == ad.DataType.from_arrow(expected.type)
    assert col.null_count == expected.null_count
    assert pa.chunked_array(col).equals(expected if isinstance(expected, pa.ChunkedArray) else pa.chunked_array([expected]))


def test_pyarrow_producers_are_held_zero_copy():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4)])
    for i, chunk in enumerate(chunked.chunks):
        assert [b.address for b in ad.column(chunked).buffers if b.chunk == i and b.address] == _addresses(chunk)
    arr = np.arange(6, dtype=np.int64)
    assert ad.column(arr).buffers[1].address == arr.ctypes.data  # via pa.array, zero-copy too


def test_a_column_is_its_own_column_and_keeps_names():
    col = ad.column(INTS)
    assert ad.column(col) is col
    assert ad.column(pl.Series("v", [1])).name == "v"
    assert ad.column(TABLE).type.field_names == TABLE.schema.names


def test_bare_array_capsule_with_schema():
    _, array = INTS.__arrow_c_array__()
    col = ad.column(array, schema=pa.int64())
    assert pa.array(col).equals(INTS)
    _, device = INTS.__arrow_c_device_array__()
    assert ad.column(device, schema=pa.int64().__arrow_c_schema__()).to_pylist() == INTS.to_pylist()


def test_list_with_schema_gets_that_type():
    col = ad.column([1, None, 3], schema=pa.int8())
    assert col.type == ad.DataType.from_arrow(pa.int8())
    assert pa.array(col).equals(pa.array([1, None, 3], pa.int8()))


# ---- protocol preference -----------------------------------------------------------------------


class _Recorder:
    """Speaks the protocols named in ``protocols`` by delegating to ``data``; records the calls."""

    def __init__(self, data, protocols):
        self.data, self.calls = data, []
        for name in protocols:
            setattr(self, name, self._recording(name))

    def _recording(self, name):
        def method(requested_schema=None, **kwargs):
            self.calls.append((name, requested_schema is not None))
            return getattr(self.data, name)(requested_schema, **kwargs)
        return method


ALL = ["__arrow_c_device_stream__", "__arrow_c_device_array__", "__arrow_c_stream__", "__arrow_c_array__"]


@pytest.mark.parametrize("first", range(4))
def test_protocol_preference_device_first_stream_before_array(first):
    offered = ALL[first:]
    fake = _Recorder(ad.column(INTS), offered)  # any producer of all four will do
    col = ad.column(fake)
    assert fake.calls == [(offered[0], False)]
    assert col.to_pylist() == INTS.to_pylist()


def test_device_array_is_preferred_over_cpu_array():
    fake = _Recorder(INTS, ["__arrow_c_array__", "__arrow_c_device_array__"])
    ad.column(fake)
    assert fake.calls == [("__arrow_c_device_array__", False)]


def test_schema_argument_is_passed_as_requested_schema():
    fake = _Recorder(pa.array(["a", None]), ["__arrow_c_array__"])
    col = ad.column(fake, schema=pa.large_string())
    assert fake.calls == [("__arrow_c_array__", True)]
    assert col.type == ad.DataType.from_arrow(pa.large_string())  # PyArrow honoured the request


# ---- exports -----------------------------------------------------------------------------------


def _capsule_name(capsule) -> str:
    return re.match(r'<capsule object "(\w+)"', repr(capsule)).group(1)


@pytest.mark.parametrize("protocol, names", [
    ("__arrow_c_schema__", "arrow_schema"),
    ("__arrow_c_array__", ("arrow_schema", "arrow_array")),
    ("__arrow_c_device_array__", ("arrow_schema", "arrow_device_array")),
    ("__arrow_c_stream__", "arrow_array_stream"),
    ("__arrow_c_device_stream__", "arrow_device_array_stream"),
])
def test_exports_have_the_protocol_capsule_names(protocol, names):
    out = getattr(ad.column(INTS), protocol)()
    assert (tuple(map(_capsule_name, out)) if isinstance(out, tuple) else _capsule_name(out)) == names
    for capsule, name in zip(out if isinstance(out, tuple) else (out,), names if isinstance(names, tuple) else (names,)):
        assert capsule_pointer(capsule, name)


@pytest.mark.parametrize("protocol", ["__arrow_c_array__", "__arrow_c_device_array__", "__arrow_c_stream__",
                                      "__arrow_c_device_stream__"])
def test_unknown_keywords_raise_and_none_keywords_are_accepted(protocol):
    col = ad.column(INTS)
    with pytest.raises(NotImplementedError, match="future_option"):
        getattr(col, protocol)(future_option=1)
    with pytest.raises(NotImplementedError):
        getattr(col, protocol)(None, future_option="x", other=None)
    out = getattr(col, protocol)(None, future_option=None)
    assert ad.column(out).to_pylist() == INTS.to_pylist()


def test_combine_chunks_is_the_one_copy_into_a_single_array():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4, 5), INTS.slice(9)])
    col = ad.column(chunked)
    assert col.num_chunks == 3
    got = pa.Array._import_from_c_capsule(*col.combine_chunks().__arrow_c_array__())
    assert got.equals(chunked.combine_chunks())
    across = col[2:11]  # spans all three chunks
    assert across.num_chunks == 3
    one = across.combine_chunks()
    assert one.num_chunks == 1 and one.combine_chunks() is one
    assert pa.Array._import_from_c_capsule(*one.__arrow_c_array__()).equals(chunked.combine_chunks()[2:11])
    assert ad.column(one.__arrow_c_device_array__()).to_pylist() == chunked.combine_chunks()[2:11].to_pylist()


@pytest.mark.parametrize("protocol", ["__arrow_c_array__", "__arrow_c_device_array__"])
def test_several_chunks_offer_only_the_streams(protocol):
    """As PyArrow's ChunkedArray: consumers that check the array protocols first take the stream."""
    col = ad.column(pa.chunked_array([INTS.slice(0, 4), INTS.slice(4)]))
    assert not hasattr(col, protocol)
    assert hasattr(col, "__arrow_c_stream__") and hasattr(col, "__arrow_c_device_stream__")
    with pytest.raises(AttributeError, match="combine_chunks"):
        getattr(col, protocol)
    assert isinstance(col, ad.ArrowColumn)
    for fewer in (col.chunks[0], col[:3], col[5:5], col.combine_chunks(), ad.ArrowColumn(col.type, [])):
        assert fewer.num_chunks <= 1 and hasattr(fewer, protocol)


def test_streams_keep_the_chunks_zero_copy():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4)])
    back = pa.ChunkedArray._import_from_c_capsule(ad.column(chunked).__arrow_c_stream__())
    assert [_addresses(c) for c in back.chunks] == [_addresses(c) for c in chunked.chunks]
    assert back.equals(chunked)


# ---- null_count == -1 --------------------------------------------------------------------------

_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ArrowArray))
_GET_NEXT_DEVICE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ArrowDeviceArray))


def _exported_null_counts(col: ad.ArrowColumn) -> dict[str, list[int]]:
    """The null_count field of every array each protocol exports, read from the raw structs."""
    one = col.combine_chunks()  # several chunks offer only the streams
    _, array = one.__arrow_c_array__()
    _, device = one.__arrow_c_device_array__()
    out = {"array": [ArrowArray.from_address(capsule_pointer(array, "arrow_array")).null_count],
           "device": [ArrowDeviceArray.from_address(capsule_pointer(device, "arrow_device_array")).array.null_count]}
    for key, name, struct, get_next, item in [
            ("stream", "arrow_array_stream", ArrowArrayStream, _GET_NEXT, ArrowArray),
            ("device_stream", "arrow_device_array_stream", ArrowDeviceArrayStream, _GET_NEXT_DEVICE, ArrowDeviceArray)]:
        capsule = getattr(col, f"__arrow_c_{key}__")()
        address = capsule_pointer(capsule, name)
        counts = []
        while True:
            got = item()
            assert get_next(struct.from_address(address).get_next)(address, ctypes.byref(got)) == 0
            node = got.array if item is ArrowDeviceArray else got
            if not node.release:
                break
            counts.append(node.null_count)
            node.release(ctypes.pointer(node))
        out[key] = counts
    return out


def test_null_count_minus_one_is_computed_and_never_exported():
    held = _capsules.import_array(INTS.__arrow_c_array__()[1])
    unknown = held.slice(2, 9, -1)  # a producer that does not know its null count
    capsule = unknown.export_array()
    assert ArrowArray.from_address(capsule_pointer(capsule, "arrow_array")).null_count == -1
    col = ad.column((pa.int64().__arrow_c_schema__(), capsule))
    expected = INTS.slice(2, 9).null_count
    assert col.null_count == expected
    counts = _exported_null_counts(col)
    assert counts == {"array": [expected], "device": [expected], "stream": [expected], "device_stream": [expected]}


def test_slices_export_their_own_null_counts():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4)])
    col = ad.column(chunked)[3:11]
    expected = chunked.slice(3, 8)
    counts = _exported_null_counts(col)
    assert counts["array"] == counts["device"] == [expected.null_count]
    assert counts["stream"] == counts["device_stream"] == [c.null_count for c in expected.chunks]


def _node_null_counts(node) -> list[int]:
    """null_count of every node of an exported struct tree: top, children depth first, dictionary."""
    counts = [node.null_count]
    for i in range(node.n_children):
        counts += _node_null_counts(node.children[i].contents)
    if node.dictionary:
        counts += _node_null_counts(node.dictionary.contents)
    return counts


@pytest.mark.parametrize("protocol", ["array", "device_array", "stream", "table"])
def test_nested_null_counts_minus_one_are_computed_on_export(protocol):
    """C6 below the top: a producer's -1 on children and dictionaries (tests/support/counting_producer.py:
    a, b and c say -1) leaves every export with the counted values."""
    col = ad.column(CountingProducer().capsules())
    if protocol == "stream":
        capsule = col.__arrow_c_stream__()
        stream = ArrowArrayStream.from_address(capsule_pointer(capsule, "arrow_array_stream"))
        node = ArrowArray()
        assert _GET_NEXT(stream.get_next)(capsule_pointer(capsule, "arrow_array_stream"), ctypes.byref(node)) == 0
    elif protocol == "table":
        _, capsule = ad.table(col).__arrow_c_device_array__()
        node = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array")).array
    else:
        _, capsule = getattr(col, f"__arrow_c_{protocol}__")()
        name = f"arrow_{protocol}"
        node = ArrowArray.from_address(capsule_pointer(capsule, name)) if protocol == "array" else \
            ArrowDeviceArray.from_address(capsule_pointer(capsule, name)).array
    # top (struct), a (one null), b (one null), b.item, c (one null), c.dictionary
    assert _node_null_counts(node) == [0, 1, 1, 0, 1, 0]
    if protocol == "stream":
        node.release(ctypes.pointer(node))


def test_nested_null_counts_of_device_data_are_not_read():
    """On device memory a bitmap is not read for a nested count: -1 stays (the C Data interface
    allows it); counts the type decides (a struct's children without a bitmap) are filled in."""
    producer = CountingProducer()
    schema, capsule = producer.capsules()
    src = ArrowDeviceArray.from_address(capsule_pointer(capsule, "arrow_device_array"))
    src.device_type, src.device_id = 2, 0  # buffers are host memory: reading them as CUDA would fail
    producer.nodes["c.dictionary"].array.null_count = -1  # it has no bitmap: 0 nulls, known without reading
    col = ad.column((schema, capsule))
    _, out = col.__arrow_c_device_array__()
    exported = ArrowDeviceArray.from_address(capsule_pointer(out, "arrow_device_array")).array
    assert _node_null_counts(exported) == [0, -1, -1, 0, -1, 0]


# ---- slicing and indexing ----------------------------------------------------------------------

BOUNDS = [None, 0, 1, 3, 12, 13, 20, -1, -4, -13, -20]


@pytest.mark.parametrize("chunked", [False, True])
def test_slices_match_pyarrow(chunked):
    source = pa.chunked_array([INTS.slice(0, 5), INTS.slice(5)]) if chunked else INTS
    col = ad.column(source)
    for start in BOUNDS:
        for stop in BOUNDS:
            got, want = col[start:stop], source[start:stop]
            assert got.to_pylist() == want.to_pylist(), (start, stop)
            assert got.null_count == want.null_count and len(got) == len(want)
    for offset, length in [(0, 0), (5, 100), (13, 2), (100, None), (4, None), (2, 6)]:
        got, want = col.slice(offset, length), source.slice(offset, length)
        assert got.to_pylist() == want.to_pylist() and got.null_count == want.null_count


def test_slices_share_the_buffers():
    sliced = ad.column(INTS)[3:9]
    back = pa.array(sliced)
    assert back.offset == 3 and _addresses(back) == _addresses(INTS)



@pytest.mark.parametrize("args", [(-1, None), (0, -1)])
def test_negative_slice_arguments_raise(args):
    with pytest.raises(ValueError):
        ad.column(INTS).slice(*args)


def test_indexing_gives_python_scalars_like_pyarrow():
    col = ad.column(pa.chunked_array([INTS.slice(0, 5), INTS.slice(5)]))
    for i in range(-len(INTS), len(INTS)):
        assert col[i] == INTS[i].as_py()
    for i in (len(INTS), -len(INTS) - 1, 10**6):
        with pytest.raises(IndexError):
            INTS[i]
        with pytest.raises(IndexError, match="out of range"):
            col[i]
    with pytest.raises(TypeError):
        col["a"]


# ---- structure ---------------------------------------------------------------------------------


def test_numpy_integers_index_like_pyarrow():
    col = ad.column(pa.chunked_array([INTS.slice(0, 5), INTS.slice(5)]))
    for i in (np.int64(2), np.int32(-1), np.uint8(4)):
        assert col[i] == INTS[i].as_py()
    assert col[np.int64(1):np.int64(6)].to_pylist() == INTS[np.int64(1):np.int64(6)].to_pylist()


def test_chunks_are_columns_over_the_same_buffers():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4, 5), INTS.slice(9)])
    chunks = ad.column(chunked).chunks
    assert [c.num_chunks for c in chunks] == [1, 1, 1]
    for got, want in zip(chunks, chunked.chunks):
        back = pa.array(got)
        assert back.equals(want) and back.offset == want.offset and _addresses(back) == _addresses(want)
        assert got.null_count == want.null_count


def test_struct_children_and_fields_of_a_slice():
    sliced = STRUCT.slice(3)
    col = ad.column(sliced)
    assert col.null_count == sliced.null_count == 1
    for i, child in enumerate(col.children):  # as stored: the whole children
        assert pa.array(child).equals(STRUCT.field(i))
        assert _data_addresses(child) == _addresses(STRUCT.field(i))
    for key in (0, 1, "a", "b"):
        field = col.field(key)
        assert pa.array(field).equals(sliced.field(key))  # offset applied, struct validity not
        assert field.null_count == sliced.field(key).null_count
    assert col.field("b").name == "b"
    with pytest.raises(KeyError):
        col.field("nope")
    with pytest.raises(KeyError):
        col.field(2)
    with pytest.raises(TypeError):
        ad.column(INTS).field(0)


def test_dictionary_values():
    arr = pa.array(["x", None, "y", "x"]).dictionary_encode().slice(1)
    col = ad.column(arr)
    assert pa.array(col.dictionary).equals(arr.dictionary)
    assert _data_addresses(col.dictionary) == _addresses(arr.dictionary)
    assert ad.column(INTS).dictionary is None


def test_rename_shares_data():
    col = ad.column(INTS)
    renamed = col.rename("speed")
    assert renamed.name == "speed" and col.name != "speed"
    assert pa.field(renamed).name == "speed"
    assert renamed.type == col.type and renamed.null_count == col.null_count
    assert _data_addresses(renamed) == _data_addresses(col)


def test_repr_shows_type_length_device_and_first_values():
    text = repr(ad.column(pa.chunked_array([INTS.slice(0, 5), INTS.slice(5)])))
    assert str(INTS.type) in text and f"length={len(INTS)}" in text and "cpu" in text
    assert repr(INTS.to_pylist()[:5])[1:-1] in text
    short = repr(ad.column(pa.array(["alpha", None])))
    assert "string" in short and "length=2" in short and "'alpha', None" in short


def test_repr_of_a_type_pyarrow_cannot_wrap_still_works():
    # PyArrow has no Python class for month_interval arrays; repr must not fail because of it.
    text = repr(ad.column(na.c_array([1, None, 3], na.interval_months())))
    assert "month_interval" in text and "length=3" in text and "[1, None, 3]" in text


def test_conversions_and_equality():
    chunked = pa.chunked_array([INTS.slice(0, 4), INTS.slice(4)])
    col = ad.column(chunked)
    assert col.to_pylist() == chunked.to_pylist()
    out = col.to_pyarrow()
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2 and out.equals(chunked)
    assert col.equals(INTS) and col.equals(ad.column(INTS)) and col.equals(pl.Series(INTS))
    assert not col.equals(INTS.cast(pa.int32()))
    assert not col.equals(pa.array([1, None, 3]))
    assert not col.equals(pa.array(INTS.to_pylist()[:-1] + [0]))


# ---- requested_schema --------------------------------------------------------------------------

TEXT = ["a", None, "a string longer than twelve bytes", ""]
CHEAP = [
    (pa.string(), pa.large_string()), (pa.string(), pa.string_view()), (pa.large_string(), pa.string()),
    (pa.large_string(), pa.string_view()), (pa.string_view(), pa.string()), (pa.string_view(), pa.large_string()),
    (pa.binary(), pa.large_binary()), (pa.binary(), pa.binary_view()), (pa.large_binary(), pa.binary()),
    (pa.binary_view(), pa.binary()), (pa.binary_view(), pa.large_binary()),
    (pa.list_(pa.int32()), pa.large_list(pa.int32())), (pa.large_list(pa.int32()), pa.list_(pa.int32())),
    (pa.dictionary(pa.int8(), pa.string()), pa.string()),
]


def _sample(t: pa.DataType) -> pa.Array:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.array([[1, None], None, [], [4]], t)
    if pa.types.is_dictionary(t):
        return pa.array(TEXT + TEXT, t)
    values = [None if v is None else v.encode() for v in TEXT] if "binary" in str(t) else TEXT
    return pa.array(values, t)


@pytest.mark.parametrize("native, wanted", CHEAP, ids=[f"{a}->{b}" for a, b in CHEAP])
def test_requested_schema_cheap_changes(native, wanted):
    source = _sample(native).slice(1)
    col = ad.column(source)
    expected = source.cast(wanted)
    got = pa.Array._import_from_c_capsule(*col.__arrow_c_array__(requested_schema=wanted.__arrow_c_schema__()))
    assert got.type == wanted and got.equals(expected)
    device = col.__arrow_c_device_array__(wanted.__arrow_c_schema__())
    assert ad.column(device).type == ad.DataType.from_arrow(wanted)
    stream = pa.ChunkedArray._import_from_c_capsule(col.__arrow_c_stream__(wanted.__arrow_c_schema__()))
    assert stream.type == wanted and stream.equals(pa.chunked_array([expected]))
    via_pyarrow = pa.array(col, type=wanted)
    assert via_pyarrow.type == wanted and via_pyarrow.equals(expected)


@pytest.mark.parametrize("native, wanted", [
    (pa.int32(), pa.int64()), (pa.string(), pa.int64()), (pa.list_(pa.int32()), pa.large_list(pa.int64())),
    (pa.float64(), pa.string()), (pa.string(), pa.binary()),
])
def test_requested_schema_other_changes_return_the_native_type(native, wanted):
    source = _sample(native) if native not in (pa.int32(), pa.float64()) else pa.array([1, None, 3], native)
    col = ad.column(source)
    got = pa.Array._import_from_c_capsule(*col.__arrow_c_array__(requested_schema=wanted.__arrow_c_schema__()))
    assert got.type == native and got.equals(source)
    assert _addresses(got) == _addresses(source)  # nothing was copied either


def test_column_of_a_column_with_a_schema_asks_for_it():
    source = pa.array(TEXT)
    col = ad.column(source)
    wide = ad.column(col, schema=pa.large_string())
    assert wide is not col and wide.type == ad.DataType.from_arrow(pa.large_string())
    assert pa.array(wide).equals(source.cast(pa.large_string()))
    assert col.type == ad.DataType.from_arrow(pa.string())


def test_requested_schema_equal_to_native_is_zero_copy():
    source = pa.array(TEXT)
    got = pa.Array._import_from_c_capsule(*ad.column(source).__arrow_c_array__(pa.string().__arrow_c_schema__()))
    assert _addresses(got) == _addresses(source)


# ---- ArrowColumn's native base (capsules/py_column.c) -----------------------------------------------


def test_the_native_import_makes_a_column_that_behaves_as_any(balanced):
    import gc
    import weakref

    col = ad.column(INTS)  # PyArrow's __arrow_c_device_array__, a known type: made natively
    col = ad.column(INTS)
    assert type(col) is ad.ArrowColumn and col._nulls is None and isinstance(col._chunks, list)
    assert col.null_count == INTS.null_count and col.to_pylist() == INTS.to_pylist()
    ref = weakref.ref(col)
    del col
    gc.collect()
    assert ref() is None


def test_native_exports_fall_back_to_python_for_requests_and_several_chunks(balanced):
    col = ad.column(pa.array(["a", None, "bc"]))
    got = pa.array(col, type=pa.large_string())  # a requested schema: the Python path casts
    assert got.type == pa.large_string() and got.to_pylist() == ["a", None, "bc"]
    two = ad.column(pa.chunked_array([["a"], [None, "bc"]]))
    assert two._arrow_c_array()[1] is not None and two._arrow_c_device_array(None)[1] is not None
    assert pa.Array._import_from_c_capsule(*two._arrow_c_array()).to_pylist() == ["a", None, "bc"]
    assert pa.Array._import_from_c_device_capsule(*two._arrow_c_device_array(None)).to_pylist() == ["a", None, "bc"]
    with pytest.raises(TypeError):
        col.__arrow_c_device_array__(None, None)  # too many arguments: Python's own error


def test_setting_the_type_sets_what_native_exports_carry(balanced):
    col = ad.column(INTS)
    renamed = col.rename("x")
    schema, array = renamed.__arrow_c_array__()
    assert pa.Field._import_from_c_capsule(schema).name == "x"
    assert ad.column(INTS).__arrow_c_schema__() is not None
    with pytest.raises(AttributeError):
        del col._type


def test_native_exports_of_unknown_null_counts_count_them_first(balanced):
    held = ad.column(INTS)._chunks[0]
    sliced = ad.ArrowColumn(ad.column(INTS).type, [held.slice(1, 3, -1)])  # null_count -1
    out = pa.Array._import_from_c_capsule(*sliced.__arrow_c_array__())
    assert out.null_count == INTS.slice(1, 3).null_count and out.to_pylist() == INTS.slice(1, 3).to_pylist()


def test_the_class_of_a_chunked_column_makes_a_one_chunk_column_that_offers_the_array_protocols():
    from arrowdev.core import chunks as _chunked

    two = ad.column(pa.chunked_array([[1], [2, None]]))
    one = type(two)(two.type, _chunked.chunks(two.combine_chunks()))  # as udf/ makes its results
    assert type(one) is ad.ArrowColumn and pa.array(one).to_pylist() == [1, 2, None]
    assert type(_chunked.derive(two, _chunked.chunks(two)[:1])) is ad.ArrowColumn
