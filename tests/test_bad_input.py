"""C9 (docs/architecture.md): bad input gets a clear error, never a crash, and nothing valid is lost.

Malformed arrays are built by hand (tests/support/cabi.py), with release callbacks that count their calls:
when arrowdev refuses an import, the producer's release must still run exactly once (at the
latest when the capsule is garbage collected), and the error must name the problem."""

from __future__ import annotations

import ctypes
import errno
import gc

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import arrowdev as ad
from support.cabi import (RELEASE_ARRAY, RELEASE_SCHEMA, ArrayProducer, ArrowArray, ArrowArrayStream, ArrowSchema,
                          SchemaProducer, capsule_pointer, make_capsule)

I32 = pa.int32()


def _int32s(values) -> bytes:
    return np.array(values, np.int32).tobytes()


def _ints(length: int = 3, **kwargs) -> ArrayProducer:
    return ArrayProducer(length, [0, _int32s(range(max(length, 0)))], **kwargs)


def _released(producer: ArrayProducer) -> ArrayProducer:
    producer.array.release = RELEASE_ARRAY()
    return producer


def _list_of(child: ArrayProducer | None, offsets, **kwargs) -> ArrayProducer:
    children = kwargs.pop("children", [child])
    return ArrayProducer(len(offsets) - 1, [0, _int32s(offsets)], children, **kwargs)


# name -> (type, make the producer's top node, what the error message must say)
MALFORMED = {
    "negative length": (I32, lambda: _ints(-1), "negative length -1"),
    "negative offset": (I32, lambda: _ints(offset=-2), "negative offset -2"),
    "null_count above length": (I32, lambda: ArrayProducer(3, [b"\x00", _int32s([1, 2, 3])], null_count=5),
                                "null_count 5 exceeds length 3"),
    "null_count below -1": (I32, lambda: _ints(null_count=-3), "null_count -3 is below -1"),
    "too many buffers": (I32, lambda: ArrayProducer(3, [0, _int32s([1, 2, 3]), 0]), "2 buffers, got 3"),
    "too few buffers": (I32, lambda: ArrayProducer(3, [0]), "2 buffers, got 1"),
    "string without data buffer": (pa.string(), lambda: ArrayProducer(1, [0, _int32s([0, 1])]), "3 buffers, got 2"),
    "NULL buffers pointer": (I32, lambda: ArrayProducer(3, None, n_buffers=2), "buffers is NULL"),
    "NULL children pointer": (pa.list_(I32), lambda: _list_of(None, [0, 1], children=None, n_children=1),
                              "children is NULL"),
    "NULL child": (pa.list_(I32), lambda: _list_of(None, [0, 1], children=(), n_children=1),
                   r"children\[0\]: node pointer is NULL"),
    "released child": (pa.list_(I32), lambda: _list_of(_released(_ints(1)), [0, 1]),
                       r"children\[0\]: struct is released"),
    "child count": (pa.struct([("a", I32), ("b", I32)]), lambda: ArrayProducer(1, [0], [_ints(1)]),
                    "2 children, got 1"),
    "missing dictionary": (pa.dictionary(pa.int8(), I32), lambda: ArrayProducer(1, [0, b"\x00"]),
                           "needs a dictionary, got none"),
    "unexpected dictionary": (pa.int8(), lambda: ArrayProducer(1, [0, b"\x00"], dictionary=_ints(1)),
                              "no dictionary"),
    "short struct child": (pa.struct([("a", I32)]), lambda: ArrayProducer(3, [0], [_ints(2)]),
                           r"children\[0\].*needs length >= 3, got 2"),
    "bad child buffers": (pa.list_(I32), lambda: _list_of(ArrayProducer(1, [0]), [0, 1]),
                          r"children\[0\]: a 'i' array has 2 buffers, got 1"),
}


@pytest.mark.parametrize("device", [False, True], ids=["arrow_array", "arrow_device_array"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_arrays_are_refused_and_released_once(case, device):
    dtype, make, message = MALFORMED[case]
    producer = make()
    owned_children = [1 if child.array.release else 0 for child in producer.children]
    capsule = producer.device_capsule() if device else producer.capsule()
    with pytest.raises(ad.InvalidArrowError, match=message):
        ad.column((dtype.__arrow_c_schema__(), capsule))
    gc.collect()
    assert producer.releases <= 1
    del capsule
    gc.collect()
    assert producer.releases == 1
    assert [child.releases for child in producer.children] == owned_children


def test_refused_import_leaves_every_counter_balanced(balanced):
    for dtype, make, message in MALFORMED.values():
        producer = make()
        with pytest.raises(ad.InvalidArrowError, match=message):
            ad.column((dtype.__arrow_c_schema__(), producer.capsule()))


def test_released_struct():
    producer = _released(_ints())
    capsule = producer.capsule()
    with pytest.raises(ad.InvalidArrowError, match="consumed or released"):
        ad.column((I32.__arrow_c_schema__(), capsule))
    del capsule
    gc.collect()
    assert producer.releases == 0  # it was released before: nobody may call release again


@pytest.mark.parametrize("device", [False, True])
def test_consumed_capsule(device):
    producer = _ints()
    capsule = producer.device_capsule() if device else producer.capsule()
    col = ad.column((I32.__arrow_c_schema__(), capsule))
    for again in (lambda: ad.column((I32.__arrow_c_schema__(), capsule)), lambda: ad.column(capsule, schema=I32)):
        with pytest.raises(ad.InvalidArrowError, match="consumed or released"):
            again()
    assert col.to_pylist() == [0, 1, 2]  # the first import is untouched
    del capsule
    gc.collect()
    assert producer.releases == 0
    del col
    gc.collect()
    assert producer.releases == 1


def test_consumed_stream_capsule():
    stream = pa.chunked_array([[1, 2], [3]]).__arrow_c_stream__()
    assert ad.column(stream).to_pylist() == [1, 2, 3]
    with pytest.raises(ad.InvalidArrowError, match="consumed or released"):
        ad.column(stream)


def test_wrong_capsule_names_leave_the_capsule_usable():
    schema, array = pa.array([1, None]).__arrow_c_array__()
    stream = pa.chunked_array([[1, None]]).__arrow_c_stream__()
    with pytest.raises(ValueError, match="'arrow_array'.*'arrow_array_stream'"):
        ad.column((schema, stream))  # a stream where the array belongs
    with pytest.raises(ValueError, match="'arrow_schema'"):
        ad.column(schema)  # a schema alone
    odd = make_capsule(ArrowArray(), "my_array")
    with pytest.raises(ValueError, match="my_array"):
        ad.column(odd)
    with pytest.raises(ValueError, match="my_array"):
        ad.column((pa.int64().__arrow_c_schema__(), odd))
    # nothing was consumed: PyArrow can still import every one of them
    assert pa.ChunkedArray._import_from_c_capsule(stream).to_pylist() == [1, None]
    assert pa.Array._import_from_c_capsule(schema, array).to_pylist() == [1, None]


def _bad_format_schema(calls: list) -> tuple[ArrowSchema, object]:
    """An ArrowSchema with the bogus format "+q", and its release callback (keep it alive)."""
    @RELEASE_SCHEMA
    def release(ptr):
        calls.append("released")
        ptr.contents.release = RELEASE_SCHEMA()

    return ArrowSchema(format=b"+q", name=b"x", metadata=None, flags=2, n_children=0, children=None,
                       dictionary=None, release=release), release


def test_malformed_format_string():
    calls: list = []
    struct, keep = _bad_format_schema(calls)
    schema = make_capsule(struct, "arrow_schema")
    producer = _ints()
    array = producer.capsule()
    with pytest.raises(ad.InvalidArrowError, match=r"malformed Arrow schema.*\+q"):
        ad.column((schema, array))
    assert ArrowArray.from_address(capsule_pointer(array, "arrow_array")).release  # not moved
    assert ad.column(array, schema=I32).to_pylist() == [0, 1, 2]  # so the data is not lost
    del schema, array
    gc.collect()
    assert calls == ["released"] and producer.releases == 1


def test_malformed_format_string_in_a_data_type():
    calls: list = []
    struct, keep = _bad_format_schema(calls)
    schema = make_capsule(struct, "arrow_schema")
    # DataType.from_arrow may parse lazily, but whatever first touches the format must raise
    # arrowdev's error naming it (not another library's exception).
    with pytest.raises(ad.InvalidArrowError, match=r"\+q"):
        dtype = ad.DataType.from_arrow(schema)
        repr(dtype)


def test_offsets_past_the_child_data_fail_full_validation():
    col = ad.column((pa.list_(I32).__arrow_c_schema__(), _list_of(_ints(3), [0, 2, 10]).capsule()))
    col.validate()  # the structure is fine
    with pytest.raises(ad.InvalidArrowError, match="out of bounds"):
        col.validate(full=True)
    decreasing = ad.column((pa.list_(I32).__arrow_c_schema__(), _list_of(_ints(3), [0, 3, 1]).capsule()))
    with pytest.raises(ad.InvalidArrowError, match="non-monotonic"):
        decreasing.validate(full=True)
    ad.column(pa.array([[1], None, [2, 3]])[1:]).validate(full=True)  # valid data passes


# ids by type: a repr with an address would differ between pytest-xdist's workers, which must collect alike
@pytest.mark.parametrize("obj", [object(), 3.5, "text", b"bytes", {1, 2}, None], ids=lambda o: type(o).__name__)
def test_unsupported_objects(obj):
    with pytest.raises(TypeError, match="expected"):
        ad.column(obj)
    with pytest.raises(TypeError):
        ad.table(obj)


@pytest.mark.parametrize("values,error,match", [
    (np.zeros((2, 3)), ValueError, r"expected a 1-D NumPy array \(one column\), got shape \(2, 3\): pass one column"),
    (np.array(5), ValueError, r"got shape \(\)"),
    ([1, "a"], ValueError, "expected a list .* of values of one type.* it refused this list: Could not convert 'a'"),
    (["a", 1], TypeError, "of values of one type"),
    ([[1], 2], ValueError, "of values of one type"),
], ids=["2-D array", "0-D array", "int then str", "str then int", "list then int"])
def test_lists_and_arrays_pyarrow_refuses_say_what_makes_a_column(values, error, match):
    with pytest.raises(error, match=match) as info:
        ad.column(values)
    assert not type(info.value).__module__.startswith("pyarrow")  # arrowdev's wording, PyArrow's as the cause


def test_bare_array_capsule_needs_a_schema():
    _, array = pa.array([1, 2]).__arrow_c_array__()
    with pytest.raises(TypeError, match="schema"):
        ad.column(array)
    assert ad.column(array, schema=pa.int64()).to_pylist() == [1, 2]  # still there afterwards


def test_producers_returning_nonsense():
    class NoTuple:
        def __arrow_c_array__(self, requested_schema=None):
            return None

    class Swapped:
        def __arrow_c_array__(self, requested_schema=None):
            schema, array = pa.array([1]).__arrow_c_array__()
            return array, schema

    class ArrayForStream:
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.array([1]).__arrow_c_array__()

    for producer in (NoTuple(), Swapped(), ArrayForStream()):
        with pytest.raises((TypeError, ValueError)):
            ad.column(producer)


def test_null_arrays_with_one_null_buffer_are_tolerated_and_two_refused():
    # Polars exports a null array with one (NULL) buffer; the format has none. PyArrow accepts
    # that, and so does arrowdev; a second buffer is refused.
    series = pl.Series([None, None, None])
    col = ad.column(series)
    assert col.to_pylist() == series.to_list() and col.null_count == 3
    assert pa.array(col).equals(pa.nulls(3))
    with pytest.raises(ad.InvalidArrowError, match="'n' array has 0 buffers, got 2"):
        ad.column((pa.null().__arrow_c_schema__(), ArrayProducer(3, [0, 0]).capsule()))


def test_unknown_device_type_is_named():
    producer = _ints()
    capsule = producer.device_capsule(device_type=99)
    held = []  # arrowdev may refuse the import, or hold it and refuse to use it
    with pytest.raises(ad.InvalidArrowError, match="99"):
        held.append(ad.column((I32.__arrow_c_schema__(), capsule)))
        held[0].device
    del capsule, held
    gc.collect()
    assert producer.releases == 1


# ---- streams that fail -------------------------------------------------------------------------

_GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ArrowSchema))
_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ArrowArray))
_GET_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_RELEASE_STREAM = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class FailingStream:
    """An ArrowArrayStream of int32 that yields ``good`` arrays, then fails with EIO; with
    ``bad_schema`` its schema has the format "+q"."""

    MESSAGE = ctypes.create_string_buffer(b"the disk caught fire")

    def __init__(self, good: int = 1, bad_schema: bool = False) -> None:
        self.releases, self.good, self.bad_schema = 0, good, bad_schema
        self.arrays: list[ArrayProducer] = []
        self.schema_releases: list[str] = []
        self._callbacks = [_GET_SCHEMA(self._get_schema), _GET_NEXT(self._get_next),
                           _GET_LAST_ERROR(lambda _: ctypes.addressof(self.MESSAGE)), _RELEASE_STREAM(self._release)]
        pointers = [ctypes.cast(f, ctypes.c_void_p).value for f in self._callbacks]
        self.struct = ArrowArrayStream(*pointers, None)

    def _get_schema(self, _, out):
        if self.bad_schema:
            self._schema = _bad_format_schema(self.schema_releases)  # kept: the copy points into it
            ctypes.memmove(out, ctypes.addressof(self._schema[0]), ctypes.sizeof(ArrowSchema))
            return 0
        capsule = I32.__arrow_c_schema__()
        source = ArrowSchema.from_address(capsule_pointer(capsule, "arrow_schema"))
        ctypes.memmove(out, ctypes.addressof(source), ctypes.sizeof(ArrowSchema))
        source.release = RELEASE_SCHEMA()  # moved
        return 0

    def _get_next(self, _, out):
        if len(self.arrays) == self.good:
            return errno.EIO
        producer = _ints()
        self.arrays.append(producer)
        ctypes.memmove(out, ctypes.addressof(producer.array), ctypes.sizeof(ArrowArray))
        producer.array.release = RELEASE_ARRAY()  # moved
        return 0

    def _release(self, address):
        self.releases += 1
        ArrowArrayStream.from_address(address).release = None

    def capsule(self):
        return make_capsule(self.struct, "arrow_array_stream")


def test_stream_error_is_reported_and_everything_released():
    stream = FailingStream(good=2)
    capsule = stream.capsule()
    with pytest.raises(ad.InvalidArrowError, match="get_next failed.*the disk caught fire"):
        ad.column(capsule)
    gc.collect()
    assert stream.releases == 1
    assert [a.releases for a in stream.arrays] == [1, 1]  # the arrays pulled before the error
    del capsule
    gc.collect()
    assert stream.releases == 1


def test_stream_with_malformed_schema():
    stream = FailingStream(bad_schema=True)
    capsule = stream.capsule()
    with pytest.raises(ad.InvalidArrowError, match=r"\+q"):
        ad.column(capsule)
    gc.collect()
    assert stream.releases == 1 and stream.arrays == []
    assert stream.schema_releases == ["released"]


# ---- issue 12: lenient before, refused now; valid schemas PyArrow accepts, accepted ------------

def _one_int32() -> ArrayProducer:
    return ArrayProducer(1, [0, _int32s([7])])


@pytest.mark.parametrize("make, message", [
    (lambda: SchemaProducer(b"+s", [SchemaProducer(b"+q", name=b"a")]), r"schema.children\[0\]: unknown format string '\+q'"),
    (lambda: SchemaProducer(b"+s", [SchemaProducer(b"i", name=b"a")], flags=2, n_children=1), None),
    (lambda: SchemaProducer(b"\xff\xfe"), "the format string is not valid UTF-8"),
    (lambda: SchemaProducer(b"i", name=b"caf\xe9"), "the name is not valid UTF-8"),
    (lambda: SchemaProducer(b"+l", [SchemaProducer(b"i"), SchemaProducer(b"i")]), "'\\+l' schema has 1 children, got 2"),
    (lambda: SchemaProducer(b"u", dictionary=SchemaProducer(b"u")), "needs an integer index format, got 'u'"),
    (lambda: SchemaProducer(b"+m", [SchemaProducer(b"i")]), "a map's child must be a struct of two"),
    (lambda: SchemaProducer(b"+us:0,1", [SchemaProducer(b"i")]), "'\\+us:0,1' schema has 2 children, got 1"),
    (lambda: SchemaProducer(b"d:0,2"), "unknown format string 'd:0,2'"),
    (lambda: SchemaProducer(b"tsu"), "unknown format string 'tsu'"),
], ids=["nested format", "valid struct", "non-UTF-8 format", "non-UTF-8 name", "list of two", "string index",
        "map child", "union ids", "decimal precision", "timestamp without colon"])
def test_schema_trees_are_checked_at_every_node(make, message):
    schema = make()
    if message is None:  # the control: the same tree, well formed, is taken
        assert ad.DataType.from_arrow(schema.capsule()) == ad.DataType.from_arrow(pa.struct([("a", I32)]))
        return
    with pytest.raises(ad.InvalidArrowError, match=message):
        ad.DataType.from_arrow(schema.capsule())
    gc.collect()
    assert schema.releases == 1


def test_released_top_schema_is_an_invalid_arrow_error():
    schema = SchemaProducer(b"i")
    schema.schema.release = RELEASE_SCHEMA()
    for attempt in (lambda: ad.DataType.from_arrow(schema.capsule()),
                    lambda: ad.column((schema.capsule(), _one_int32().capsule()))):
        with pytest.raises(ad.InvalidArrowError, match="released|consumed"):
            attempt()


@pytest.mark.parametrize("flags", [1, 4, 5, 7], ids=["dictionary-ordered", "map-keys-sorted", "both", "all"])
@pytest.mark.parametrize("pa_type", [pa.int32(), pa.string(), pa.list_(pa.int64()), pa.struct([("a", I32)])], ids=str)
def test_flags_pyarrow_accepts_on_other_types_are_accepted(flags, pa_type):
    data = pa.array([None, *pa.array([{"a": 1}] if pa.types.is_struct(pa_type) else [[1]] if pa.types.is_list(pa_type)
                                     else ["x"] if pa_type == pa.string() else [1], pa_type).to_pylist()], pa_type)
    schema, array = data.__arrow_c_array__()
    ArrowSchema.from_address(capsule_pointer(schema, "arrow_schema")).flags = flags
    pa_imported = pa.Array._import_from_c_capsule(*data.__arrow_c_array__())  # PyArrow's view of the same
    col = ad.column((schema, array))
    assert col.to_pyarrow().equals(pa.chunked_array([pa_imported]))
    assert col.type == ad.DataType.from_arrow(pa_type)


def test_shared_children_are_refused_in_linear_time():
    import time

    leaf = SchemaProducer(b"i", name=b"x")
    node = leaf
    for _ in range(24):  # 2^24 paths through 25 structs
        node = SchemaProducer(b"+s", [node, node])
    start = time.perf_counter()
    with pytest.raises(ad.InvalidArrowError, match=r"children\[1\]: this ArrowSchema struct appears twice"):
        ad.DataType.from_arrow(node.capsule())
    assert time.perf_counter() - start < 1.0


def test_shared_array_children_are_refused():
    child = _one_int32()
    top = ArrayProducer(1, [0], [child, child])
    with pytest.raises(ad.InvalidArrowError, match=r"array.children\[1\]: this ArrowArray struct appears twice"):
        ad.column((pa.struct([("a", I32), ("b", I32)]).__arrow_c_schema__(), top.capsule()))


@pytest.mark.parametrize("device_type, device_id, message", [
    (99, -1, "unknown ArrowDeviceType 99"), (0, -1, "unknown ArrowDeviceType 0"),
    (2, -1, "device_id -1 does not name a device of type 2"), (1, -7, "device_id -7")])
def test_device_fields_are_checked_at_import(device_type, device_id, message):
    producer = _one_int32()
    capsule = producer.device_capsule(device_type=device_type, device_id=device_id)
    with pytest.raises(ad.InvalidArrowError, match=message):
        ad.column((I32.__arrow_c_schema__(), capsule))
    del capsule
    gc.collect()
    assert producer.releases == 1


class MalformedArrayStream(FailingStream):
    """A stream of int32 whose second array has a NULL data buffer."""

    def _get_next(self, _, out):
        if len(self.arrays) == 2:
            return 0  # end: out stays released
        producer = _ints() if not self.arrays else ArrayProducer(3, [0, 0])
        self.arrays.append(producer)
        ctypes.memmove(out, ctypes.addressof(producer.array), ctypes.sizeof(ArrowArray))
        producer.array.release = RELEASE_ARRAY()
        return 0


def test_stream_yielding_a_malformed_array_is_refused_and_everything_released():
    stream = MalformedArrayStream()
    with pytest.raises(ad.InvalidArrowError, match="buffer 1 \\(data\\) is NULL"):
        ad.column(stream.capsule())
    gc.collect()
    assert stream.releases == 1 and [a.releases for a in stream.arrays] == [1, 1]


# ---- GPU: out of device memory, and a producer's bogus sync event (run by the lead on a GPU) ----
# Each runs inside ad.debug.leak_check() (conftest.py): an error must leave nothing allocated.

@pytest.fixture
def small_pool():
    """arrowdev's device pool limited to 1 MiB for the test, then unlimited again."""
    from arrowdev.gpu import memory

    pool = memory.pool()
    pool.free_all_blocks()
    pool.set_limit(size=1 << 20)
    yield pool
    pool.set_limit(size=0)  # CuPy: 0 is no limit
    pool.free_all_blocks()


@pytest.mark.gpu
def test_to_device_out_of_memory_is_a_memory_error_and_loses_nothing(small_pool):
    data = pa.array(np.arange(1 << 20, dtype=np.int64))  # 8 MiB
    col = ad.column(data)
    with pytest.raises(MemoryError, match="(?i)out of memory"):
        col.to_device()
    assert col.to_pyarrow().equals(pa.chunked_array([data]))  # the source is untouched
    small_pool.set_limit(size=0)
    assert col.to_device().to_host().to_pyarrow().equals(pa.chunked_array([data]))  # and works once memory is there


@pytest.mark.gpu
def test_udf_output_out_of_memory_is_a_memory_error_and_loses_nothing(small_pool):
    small_pool.set_limit(size=0)
    data = np.arange(1 << 18, dtype=np.float64)  # 2 MiB in, 2 MiB out
    gcol = ad.column(pa.array(data)).to_device()
    small_pool.free_all_blocks()  # no cached block may serve the output
    small_pool.set_limit(size=small_pool.total_bytes() + (1 << 16))
    with pytest.raises(MemoryError):
        gcol.apply(lambda x: x * 2 + 1)
    small_pool.set_limit(size=0)
    assert gcol.to_pylist() == data.tolist()
    assert gcol.apply(lambda x: x * 2 + 1).to_pylist() == (data * 2 + 1).tolist()


@pytest.mark.gpu
def test_string_arena_out_of_memory_is_a_memory_error_and_loses_nothing(small_pool):
    small_pool.set_limit(size=0)
    words = ["arrow", None, "développeur", "x" * 40] * 20000
    gcol = ad.column(pa.array(words)).to_device()
    small_pool.free_all_blocks()  # no cached block may serve the output
    small_pool.set_limit(size=small_pool.total_bytes() + (1 << 16))
    with pytest.raises(MemoryError):
        gcol.apply(lambda s: s.upper() + "!")
    small_pool.set_limit(size=0)
    assert gcol.to_pylist() == words
    assert gcol.apply(lambda s: s.upper() + "!").to_pylist() == [None if w is None else w.upper() + "!" for w in words]
