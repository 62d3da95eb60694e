"""Held arrays carry their type (capsules/py_array.c, py_build.c): ``_capsules.build`` takes a
DataType and checks the node it makes against it, exports need no schema from Python, and parsed
types live in one cache, the native core's."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev import _capsules
from arrowdev.core import chunks as _chunked
from arrowdev.core import types as ad_types


def _int32s(values: list[int]) -> tuple[ad.DataType, np.ndarray]:
    return ad.DataType.from_arrow(pa.int32()), np.asarray(values, dtype=np.int32)


def test_a_built_array_exports_its_own_schema_to_pyarrow():
    dtype, data = _int32s([4, 5, 6])
    held = _capsules.build(dtype, 3, 0, 0, [0, data.ctypes.data], [], keepalive=data)
    assert held.dtype is dtype
    array = pa.Array._import_from_c_capsule(*held.export_pair(False))  # no schema passed in
    assert array.type == pa.int32()
    assert array.to_pylist() == [4, 5, 6]


def test_a_built_struct_exports_its_field_names_and_children():
    source = pa.record_batch({"x": pa.array([1, 2], pa.int64()), "y": pa.array(["a", None])})
    col = ad.column(pa.StructArray.from_arrays(source.columns, names=source.schema.names))
    kids = [_chunked.chunks(col.field(name))[0] for name in ("x", "y")]
    held = _capsules.build(col.type, 2, 0, 0, [0], kids)
    array = pa.Array._import_from_c_device_capsule(*held.export_pair(True))
    assert array.type == pa.struct([("x", pa.int64()), ("y", pa.string())])
    assert array.to_pylist() == [{"x": 1, "y": "a"}, {"x": 2, "y": None}]


@pytest.mark.parametrize("buffers", [[0], [0, 1, 2]], ids=["too few", "too many"])
def test_a_wrong_buffer_count_for_the_type_raises_value_error(buffers):
    dtype, _ = _int32s([])
    before = ad.debug.ownership_stats()
    with pytest.raises(ValueError, match=rf"'i' array has 2 buffers, got {len(buffers)}"):
        _capsules.build(dtype, 0, 0, 0, buffers, [])
    after = ad.debug.ownership_stats()
    assert (after["live_built_nodes"], after["live_node_blocks"]) == (before["live_built_nodes"], before["live_node_blocks"])


def test_a_wrong_child_count_for_the_type_raises_value_error():
    col = ad.column(pa.array([{"a": 1, "b": 2}]))
    only_a = [_chunked.chunks(col.field("a"))[0]]
    with pytest.raises(ValueError, match="'[+]s' array has 2 children, got 1"):
        _capsules.build(col.type, 1, 0, 0, [0], only_a)


def test_a_dictionary_type_needs_a_dictionary():
    col = ad.column(pa.array(["a", "b", "a"]).dictionary_encode())
    node = _chunked.chunks(col)[0]
    with pytest.raises(ValueError, match="needs a dictionary, got none"):
        _capsules.build(col.type, 3, 0, 0, list(node.buffers), [])
    rebuilt = _capsules.build(col.type, 3, 0, 0, list(node.buffers), [], node.dictionary(), keepalive=node)
    assert pa.array(ad.ArrowColumn(col.type, [rebuilt])).to_pylist() == ["a", "b", "a"]


@pytest.mark.parametrize("length, null_count, offset", [(-1, 0, 0), (2, 0, -1), (2, -2, 0), (2, 3, 0)])
def test_negative_lengths_offsets_and_impossible_null_counts_raise_value_error(length, null_count, offset):
    dtype, data = _int32s([1, 2])
    with pytest.raises(ValueError, match="expected length >= 0, offset >= 0 and -1 <= null_count <= length"):
        _capsules.build(dtype, length, null_count, offset, [0, data.ctypes.data], [])


def test_build_takes_a_data_type_not_a_format_or_address():
    _, data = _int32s([1])
    for wrong in ("i", ad.DataType.from_arrow(pa.int32()).c_schema._addr(), pa.int32()):
        with pytest.raises(TypeError, match="expected a DataType, got"):
            _capsules.build(wrong, 1, 0, 0, [0, data.ctypes.data], [])


def test_a_failed_build_lets_its_keepalive_go():
    dtype, _ = _int32s([])

    class Owner:
        dropped = 0

        def __del__(self):
            Owner.dropped += 1

    with pytest.raises(ValueError):
        _capsules.build(dtype, 0, 0, 0, [0], [], keepalive=Owner())
    gc.collect()
    assert Owner.dropped == 1


def test_imported_arrays_slices_and_children_carry_their_types():
    col = ad.column(pa.array([{"a": 1, "s": "x"}, None]))
    held = _chunked.chunks(col)[0]
    assert held.dtype == col.type
    assert held.slice(1, 1).dtype == col.type
    assert [held.child(i).dtype for i in range(2)] == col.type.children
    encoded = _chunked.chunks(ad.column(pa.array(["a", "b"]).dictionary_encode()))[0]
    assert encoded.dictionary().dtype == ad.DataType.from_arrow(pa.string())


def test_an_array_imported_without_a_schema_is_typed_by_with_type_after_a_check():
    source = pa.array([1, 2, 3], pa.int64())
    _, array_capsule = source.__arrow_c_array__()
    held = _capsules.import_array(array_capsule)
    assert held.dtype is None
    with pytest.raises(TypeError, match="expected a DataType to export an array that carries none"):
        held.export_pair(False)
    with pytest.raises(ad.InvalidArrowError, match="has 3 buffers, got 2"):
        held.with_type(ad.DataType.from_arrow(pa.string()))
    typed = held.with_type(ad.DataType.from_arrow(pa.int64()))
    assert pa.Array._import_from_c_capsule(*typed.export_pair(False)).equals(source)


def test_one_type_cache_in_the_native_core():
    assert not hasattr(ad_types, "KNOWN_TYPES")  # no Python cache beside the native one
    fresh = pa.struct([("cache_probe_field", pa.int16())])  # a type no other test imports
    before = _capsules.type_cache_size()
    first = ad.column(pa.array([{"cache_probe_field": 1}], fresh)).type
    grown = _capsules.type_cache_size()
    assert grown == before + 1 or grown == 1  # 1: the cache was full and started over
    again = ad.column(pa.array([{"cache_probe_field": 2}], fresh)).type
    assert again is first
    assert ad_types.type_of_schema(fresh.__arrow_c_schema__()) is first
    assert _capsules.type_cache_size() == grown


@pytest.mark.gpu
def test_gpu_imports_and_copies_are_built_typed():
    import cupy

    col = ad.column(cupy.arange(4, dtype=cupy.int32))  # interop/cuda_arrays.py builds it
    assert _chunked.chunks(col)[0].dtype == ad.DataType.from_arrow(pa.int32())
    assert col.to_pylist() == [0, 1, 2, 3]
    rows = [{"a": 1, "s": "x"}, None, {"a": 3, "s": None}]
    on_gpu = ad.column(pa.array(rows)).to_device(0)  # cuda/transfer.py builds every node
    assert [chunk.dtype for chunk in _chunked.chunks(on_gpu)] == [on_gpu.type]
    assert on_gpu.to_host().to_pylist() == rows
