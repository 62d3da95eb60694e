"""Received frames are untrusted (issue 30): every class of malformed frames and headers the frame fuzzer found
against main, each from its smallest reproducer, refused on receipt with ``InvalidArrowError`` naming the frame,
the node path and what was expected; and the copy planner, which read outside buffers when an array's offsets
pointed past its child (class 6), for data from any producer. docs/validation.md ("Received frames") says what is
checked; tests/test_fuzz_frames.py runs the fuzzer."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pyarrow as pa
import pytest

import arrowdev as ad
from arrowdev.serialize import frames as _serialize
from support.scripts import run_script


def _sent(data, **options) -> tuple[dict, list[bytes]]:
    """(header, frames) of a column or table as a sender makes them, the frames as bytes of their own."""
    obj = data if isinstance(data, (ad.ArrowColumn, ad.ArrowTable)) else ad.column(data)
    header, frames = _serialize.host_frames(obj, **options)
    return copy.deepcopy(header), [bytes(f) for f in frames]


def _refused(header: dict, frames: list, *patterns: str) -> str:
    with pytest.raises(ad.InvalidArrowError) as caught:
        _serialize.from_frames(header, frames)
    message = str(caught.value)
    for pattern in patterns:
        assert pattern in message, message
    return message


def _node(header: dict, column: int = 0, chunk: int = 0) -> list:
    return header["columns"][column][chunk]


def _frame_of(header: dict, buffer: int) -> int:
    """The frame index of a buffer of the first node."""
    return _node(header)[3][buffer][0]


# ---- class 1: a frame shorter than its node needs --------------------------------------------------------------


def test_class1_a_truncated_fixed_width_frame_is_refused():
    header, frames = _sent(pa.array([1, None, 3], pa.int64()))
    frames[1] = frames[1][:16]
    _refused(header, frames, "frame 1", "columns[0][0]", "data", "at least 24 bytes", "got 16")


def test_class1_a_longer_node_or_a_larger_offset_is_refused():
    header, frames = _sent(pa.array([1, None, 3], pa.int64()))
    longer = copy.deepcopy(header)
    _node(longer)[0] = 4
    longer["rows"] = 4
    _refused(longer, frames, "frame 1", "at least 32 bytes", "got 24")
    shifted = copy.deepcopy(header)
    _node(shifted)[2] = 1
    _refused(shifted, frames, "frame 1", "at least 32 bytes")


def test_class1_a_wider_type_over_the_same_frames_is_refused():
    header, frames = _sent(pa.array([1, None, 3], pa.int32()))
    header["schema"] = _sent(pa.array([1], pa.int64()))[0]["schema"]
    _refused(header, frames, "frame 1", "int64", "at least 24 bytes", "got 12")


def test_class1_a_truncated_string_data_frame_is_refused():
    header, frames = _sent(pa.array(["hello", None, "1"]))
    frames[2] = frames[2][:3]
    _refused(header, frames, "frame 2", "columns[0][0]", "at least 6 bytes", "got 3")


def test_class1_a_dropped_frame_is_refused():
    header, frames = _sent(pa.array(["hello", None, "1"]))
    del frames[2]
    header["frames"] = 2
    _refused(header, frames, "columns[0][0].buffers[2]", "frame index in [0, 2)", "got 2")
    header, frames = _sent(pa.array(["hello", None, "1"]))
    del frames[1]  # the offsets: the data's frame takes their place
    header["frames"] = 2
    _refused(header, frames, "columns[0][0].buffers[1]", "frame 1", "offsets", "at least 16 bytes", "got 6")


def test_class1_nbytes_of_a_received_column_never_reads_past_a_frame():
    header, frames = _sent(ad.table({"s": pa.array(["x" * 100, None, "y"])}))
    frames[2] = frames[2][:10]
    _refused(header, frames, "frame 2")


# ---- class 2: a negative or non-integer frame index -----------------------------------------------------------


@pytest.mark.parametrize("index", [-1, 1.0, True, "1", None])
def test_class2_a_frame_index_that_is_not_a_frame_is_refused(index):
    header, frames = _sent(pa.array([1, None, 3]))
    _node(header)[3][1] = [index]
    _refused(header, frames, "columns[0][0].buffers[1]", "frame index")


# ---- class 3: bad values inside frames of the right size ---------------------------------------------------------


@pytest.mark.parametrize("offsets", [[0, 5, 2, 7], [0, 1, 2, 100], [-3, 1, 2, 7]])
def test_class3_string_offsets_out_of_order_or_past_the_data_are_refused(offsets):
    header, frames = _sent(pa.array(["hello", "", "1x"]))
    frames[_frame_of(header, 1)] = np.array(offsets, np.int32).tobytes()
    message = _refused(header, frames, "columns[0][0].buffers[")
    # past the data: the data frame is too short for the last offset (host frames read it first)
    assert ("offsets in order" in message) != ("data of a string node" in message), message


def test_class3_list_offsets_past_the_child_are_refused():
    header, frames = _sent(pa.array([[1, 2], [3], None]))
    frames[_frame_of(header, 1)] = np.array([0, 2, 9, 9], np.int32).tobytes()
    _refused(header, frames, f"frame {_frame_of(header, 1)}", "offsets", "child")


@pytest.mark.parametrize("index", [3, -1, 127])
def test_class3_dictionary_indices_out_of_range_are_refused(index):
    header, frames = _sent(pa.array(["a", "b", "c", "a"]).dictionary_encode())
    at = _node(header)[3][1][0]  # the indices' frame
    data = np.frombuffer(frames[at], np.int32).copy()
    data[1] = index
    frames[at] = data.tobytes()
    _refused(header, frames, "columns[0][0]", "dictionary ind")


def test_class3_a_string_view_pointing_past_its_buffer_is_refused():
    header, frames = _sent(pa.array(["a" * 20, "short", "b" * 30], pa.string_view()))
    at = _frame_of(header, 1)
    views = np.frombuffer(frames[at], np.int32).copy().reshape(-1, 4)
    views[2, 3] += 5  # the third string's offset into its data buffer
    frames[at] = views.tobytes()
    _refused(header, frames, f"frame {at}", "views")


def test_class3_union_type_ids_and_offsets_out_of_range_are_refused():
    types = pa.array([0, 1, 0], pa.int8())
    dense = pa.UnionArray.from_dense(types, pa.array([0, 0, 1], pa.int32()), [pa.array([1, 2]), pa.array(["s"])])
    header, frames = _sent(dense)
    ids, offsets = _frame_of(header, 0), _frame_of(header, 1)
    bad_id = copy.deepcopy(frames)
    bad_id[ids] = bytes([0, 5, 0])
    _refused(header, bad_id, f"frame {ids}", "type id")
    bad_offset = copy.deepcopy(frames)
    bad_offset[offsets] = np.array([0, 0, 2], np.int32).tobytes()
    _refused(header, bad_offset, f"frame {offsets}", "offset")


def test_class3_run_ends_out_of_order_or_short_are_refused():
    ree = pa.RunEndEncodedArray.from_arrays(pa.array([2, 4, 6], pa.int32()), pa.array([1, 2, 3]))
    header, frames = _sent(ree)
    index = _node(header)[4][0][3][1][0]
    for ends in ([2, 1, 6], [2, 4, 5], [0, 4, 6]):
        bad = list(frames)
        bad[index] = np.array(ends, np.int32).tobytes()
        _refused(header, bad, f"frame {index}", "run end")


# ---- class 4: rebase entries --------------------------------------------------------------------------------------


def _sliced_strings() -> tuple[dict, list[bytes]]:
    arr = pa.array(["aa", "bbb", None, "x" * 50, "c", "dddd", None, "ee", "fff", "g", "hh", "iii"])
    header, frames = _sent(arr.slice(9, 2))
    assert _node(header)[3][1] == [1, 4, 62]
    return header, frames


@pytest.mark.parametrize("entry", [[1, 4, 63], [1, 4, 61], [1, 4, -1], [1, 4, 2**40], [1, 8, 62], [1, 2, 62],
                                   [1, 3, 62], [1, "4", 62], [1, 4, 62.0], [1, 4, 62, 0]])
def test_class4_rebase_entries_out_of_range_or_of_another_width_are_refused(entry):
    header, frames = _sliced_strings()
    _node(header)[3][1] = entry
    _refused(header, frames, "columns[0][0].buffers[")


def test_class4_a_rebase_is_only_for_offsets():
    header, frames = _sliced_strings()
    _node(header)[3][2] = [2, 4, 0]
    _refused(header, frames, "columns[0][0].buffers[2]", "rebase")


# ---- class 5: the header's null count ---------------------------------------------------------------------------


def test_class5_a_null_count_that_disagrees_with_the_bitmap_is_refused():
    header, frames = _sent(pa.array([1.0, None, 3.0]))
    _node(header)[1] = 0
    _refused(header, frames, "columns[0][0]", "null count", "bitmap", "1")


@pytest.mark.parametrize("count", [2, 4, -2])
def test_class5_other_wrong_null_counts_are_refused(count):
    header, frames = _sent(pa.array([1.0, None, 3.0]))
    _node(header)[1] = count
    _refused(header, frames, "columns[0][0]", "null count")


def test_class5_an_unknown_null_count_is_computed_from_the_bitmap():
    header, frames = _sent(pa.array([1.0, None, 3.0]))
    _node(header)[1] = -1
    assert _serialize.from_frames(header, frames).null_count == 1


def test_class5_nulls_without_a_bitmap_are_refused():
    header, frames = _sent(pa.array([1.0, 2.0, 3.0]))
    assert _node(header)[3][0] is None
    _node(header)[1] = 1
    _refused(header, frames, "columns[0][0]", "null count")


# ---- class 6: the planner never reads outside a buffer (any producer) -------------------------------------------


def test_class6_an_empty_list_whose_offset_points_far_past_its_child_pickles():
    """PyArrow's full validation accepts an empty list array whose single offset is 2^30; pickling it read the
    child's offsets at row 2^30 (a segfault). In a child process, so that a crash fails this test only."""
    out = run_script("""
        import pickle, numpy as np, pyarrow as pa, arrowdev as ad, arrowdev.dask
        far = pa.py_buffer(np.array([2**30], np.int32))
        for child in (pa.array([], pa.string()), pa.array([], pa.list_(pa.int32())), pa.array([], pa.int32())):
            arr = pa.Array.from_buffers(pa.list_(child.type), 0, [None, far], children=[child])
            arr.validate(full=True)
            col = ad.column(arr)
            got = pickle.loads(pickle.dumps(col, protocol=5))
            assert got.to_pylist() == [] and ad.dask.nbytes(col) >= 0
            print(got.type, got.to_pylist(), len(pickle.loads(pickle.dumps(got, protocol=5))))
    """)
    assert out.splitlines() == ["list<item: string> [] 0", "list<item: list<item: int32>> [] 0",
                                "list<item: int32> [] 0"]


def test_class6_a_received_column_with_such_an_offset_sliced_and_sent_on():
    """Frames of an empty list of strings whose single offset is 2^30 (valid: an empty array's offsets say
    nothing) are received; the column, sliced and sent on, pickles."""
    out = run_script("""
        import copy, pickle, numpy as np, pyarrow as pa, arrowdev as ad, arrowdev.dask
        from arrowdev.serialize import frames as _serialize
        header, frames = _serialize.host_frames(ad.column(pa.array([], pa.list_(pa.string()))))
        frames = [bytes(f) for f in frames]
        at = header["columns"][0][0][3][1][0]  # the list's offsets frame
        frames[at] = np.array([2**30], np.int32).tobytes()
        got = _serialize.from_frames(copy.deepcopy(header), frames)
        for piece in (got, got[0:0], got.slice(0)):
            print(pickle.loads(pickle.dumps(piece, protocol=5)).to_pylist(), ad.dask.nbytes(piece) >= 0)
    """)
    assert out.splitlines() == ["[] True"] * 3


def test_class6_offsets_past_the_child_in_a_nonempty_array_are_refused_when_sent():
    """Data PyArrow's full validation refuses (offsets past the child) is refused by the planner with a clear
    error, instead of read past the child's buffers."""
    out = run_script("""
        import pickle, numpy as np, pyarrow as pa, arrowdev as ad, arrowdev.dask
        offsets = np.array([0, 1], np.int32)
        arr = pa.Array.from_buffers(pa.list_(pa.string()), 1, [None, pa.py_buffer(offsets)], children=[pa.array(["a"])])
        offsets[1] = 2**30  # after PyArrow's checks
        try:
            pickle.dumps(ad.column(arr), protocol=5)
        except ad.InvalidArrowError as e:
            print("refused:", e)
    """)
    assert out.startswith("refused:") and "offsets" in out and "child" in out


# ---- class 7: memory blow-up from an empty offsets frame -----------------------------------------------------------


def test_class7_an_empty_offsets_frame_under_a_long_node_is_refused():
    header, frames = _sent(pa.array(["a", "b"]))
    at = _node(header)[3][1][0]  # the offsets' frame
    frames[at] = b""
    _node(header)[0] = 80
    header["rows"] = 80
    _refused(header, frames, f"frame {at}", "offsets", "at least 324 bytes", "got 0")


# ---- class 8: a column header's rows --------------------------------------------------------------------------


def test_class8_rows_that_disagree_with_the_chunks_are_refused():
    header, frames = _sent(pa.array([1, 2, 3]))
    header["columns"][0] = header["columns"][0] * 2  # a duplicated chunk: 6 rows under rows=3
    _refused(header, frames, "rows", "3", "6")


def test_class8_a_table_whose_columns_disagree_with_rows_is_refused():
    header, frames = _sent(ad.table({"a": pa.array([1, 2, 3]), "b": pa.array([4, 5, 6])}))
    header["columns"][1] = header["columns"][1] * 2
    _refused(header, frames, "columns[1]", "rows")


# ---- the header itself -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", [
    {"kind": "tables"}, {"kind": None}, {"rows": -1}, {"rows": "3"}, {"columns": None}, {"columns": [[]] * 2},
    {"device": None}, {"device": [99, 0]}, {"device": [1]}, {"schema": b"garbage"}, {"schema": None},
    {"frames": "2"}, {"packed": {"a": 1}},
])
def test_malformed_header_fields_are_refused(change):
    header, frames = _sent(pa.array([1, None, 3]))
    header.update(change)
    _refused(header, frames)


def test_a_column_header_called_a_table_is_refused():
    """A table's schema is a struct of its columns: a column of another type sent as a table is refused (its
    child's nodes would otherwise pass as the table's columns)."""
    header, frames = _sent(pa.array([[1, 2, 3], [4, 5, 6]], pa.list_(pa.int16(), 3)))
    header["kind"] = "table"
    _refused(header, frames, "kind", "struct")


def test_a_header_that_is_not_a_dict_is_refused():
    _refused(["column"], [])


@pytest.mark.parametrize("field, value", [(0, -1), (0, "3"), (2, -1), (2, 2**70), (1, None), (3, None), (3, [None]),
                                          (4, None), (4, [[3, 0, 0, [], [], None]]), (5, [0, 0, 0, [], [], None])])
def test_malformed_node_fields_are_refused(field, value):
    header, frames = _sent(pa.array([1, None, 3]))
    _node(header)[field] = value
    _refused(header, frames, "columns[0][0]")


def test_a_short_node_is_refused():
    header, frames = _sent(pa.array([1, None, 3]))
    header["columns"][0][0] = _node(header)[:4]
    _refused(header, frames, "columns[0][0]", "6 fields")


def test_every_refusal_of_a_frame_is_a_value_error():
    assert issubclass(ad.InvalidArrowError, ValueError)


def test_pickle_of_mutated_frames_is_refused_through_pickle():
    col = ad.column(pa.array([1, None, 3], pa.int64()))
    buffers: list = []
    data = pickle.dumps(col, protocol=5, buffer_callback=buffers.append)
    short = [memoryview(b.raw()).tobytes()[:8] for b in buffers]
    with pytest.raises(ad.InvalidArrowError, match="frame"):
        pickle.loads(data, buffers=short)


# ---- device frames (the cuda family): the values are checked on the GPU ------------------------------------------


def _device_sent(data, monkeypatch, pack: bool):
    """(distributed's header, the cuda family's device frames as CuPy arrays of their own) of a device column."""
    import cupy
    from distributed.protocol import serialize

    import arrowdev.dask  # noqa: F401

    if not pack:
        monkeypatch.setattr(_serialize, "PACK_BELOW", 0)  # a frame per buffer
    header, frames = serialize(ad.column(data).to_device(), serializers=("cuda",))
    return copy.deepcopy(header), [cupy.asarray(f).copy() for f in frames]


def _device_buffer(header: dict, frames: list, buffer: int, dtype):
    """A CuPy view of a buffer of the first node, in its frame or its place in a packed frame."""
    span = _node(header["sub-header"])[3][buffer][0]
    packed = header["sub-header"].get("packed")
    frame, start, size = packed[span] if packed else (span, 0, frames[span].nbytes)
    return frames[frame][start:start + size].view(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("pack", [False, True])
def test_gpu_device_frames_with_bad_values_are_refused(monkeypatch, pack):
    import cupy
    from distributed.protocol import deserialize

    header, frames = _device_sent(pa.array(["ab", None, "cde"]), monkeypatch, pack)
    good = deserialize(header, frames, deserializers=("cuda",))
    assert good.device.type == "cuda" and good.to_pylist() == ["ab", None, "cde"]
    _device_buffer(header, frames, 1, cupy.int32)[2] = 10**6  # an offset past the data
    with pytest.raises(ad.InvalidArrowError, match="offsets"):
        deserialize(header, frames, deserializers=("cuda",))
    header, frames = _device_sent(pa.array([1.5, None, 2.5]), monkeypatch, pack)
    _node(header["sub-header"])[1] = 0  # the bitmap has a null
    with pytest.raises(ad.InvalidArrowError, match="null count"):
        deserialize(header, frames, deserializers=("cuda",))
    header, frames = _device_sent(pa.array(["x", "y", "x"]).dictionary_encode(), monkeypatch, pack)
    _device_buffer(header, frames, 1, cupy.int32)[1] = 7  # an index past the dictionary
    with pytest.raises(ad.InvalidArrowError, match="dictionary ind"):
        deserialize(header, frames, deserializers=("cuda",))


@pytest.mark.gpu
@pytest.mark.parametrize("pack", [False, True])
def test_gpu_device_frames_still_written_on_cupys_stream_are_read_after_it(monkeypatch, pack):
    """Device frames name no stream: their checks, and every read of the received column on arrowdev's stream,
    wait for the work queued on the device's current stream (CuPy's; CUDA's legacy stream here), where these
    frames are still being copied in behind ~0.1 s of spinning. arrowdev's stream is non-blocking and does not
    wait for that stream by itself: the checks read the frames before the copy (a bitmap of zeros, refused as
    valid data with more nulls than its header says)."""
    import cupy
    from distributed.protocol import deserialize
    from support.slow_write import slow_write

    data = pa.array([None if i % 7 == 3 else "x" * (i % 11) for i in range(5000)])
    header, frames = _device_sent(data, monkeypatch, pack)
    originals = [f.copy() for f in frames]
    for f in frames:
        f.fill(0)
    cupy.cuda.Device().synchronize()
    legacy = cupy.cuda.Stream.null
    slow_write(cupy, cupy.empty(1, dtype=cupy.int64), legacy)
    with legacy:
        for f, original in zip(frames, originals):
            cupy.copyto(f, original)  # queued behind the spinning kernel; the host goes on at once
    got = deserialize(header, frames, deserializers=("cuda",))
    assert got.to_pylist() == data.to_pylist()


@pytest.mark.gpu
def test_gpu_a_device_frame_too_short_is_refused_before_any_read(monkeypatch):
    from distributed.protocol import deserialize

    header, frames = _device_sent(pa.array([1, None, 3], pa.int64()), monkeypatch, pack=False)
    sub = header["sub-header"]
    at = _node(sub)[3][1][0]
    if sub.get("packed"):  # the buffers lie in one allocation: one frame over them, and each buffer's place in it
        sub["packed"][at][2] = 16
    else:
        frames[at] = frames[at][:16]
    with pytest.raises(ad.InvalidArrowError, match="at least 24 bytes"):
        deserialize(header, frames, deserializers=("cuda",))


# ---- found by the frame fuzzer -----------------------------------------------------------------------------------


def test_map_entries_with_nulls_are_refused():
    """PyArrow's map import aborts the process (a failed Check) on null entries: a receipt refuses them."""
    header, frames = _sent(pa.array([[("a", 1)], [("b", 2), ("c", 3)]], pa.map_(pa.string(), pa.int64())))
    entries = _node(header)[4][0]
    assert entries[3][0] is None
    frames.append(bytes([0b101]))  # a bitmap with a null entry
    header["frames"] += 1
    entries[3][0] = [len(frames) - 1]
    entries[1] = -1
    _refused(header, frames, "columns[0][0].children[0]", "map entries")
    entries[1] = 1
    _refused(header, frames, "columns[0][0].children[0]", "map entries without nulls")


def test_dense_union_offsets_of_a_child_that_go_down_are_refused():
    types = pa.array([0, 0, 1], pa.int8())
    header, frames = _sent(pa.UnionArray.from_dense(types, pa.array([0, 1, 0], pa.int32()),
                                                    [pa.array([1, 2]), pa.array(["s"])]))
    frames[_frame_of(header, 1)] = np.array([1, 0, 0], np.int32).tobytes()
    _refused(header, frames, "in order")


def test_a_received_object_whose_header_names_fewer_frames_is_planned_from_what_it_holds():
    """A header that no longer names every frame (a chunk dropped from it): the frames no node names are not kept
    by the received object, so sizing it and sending it on plan from its own buffers, never from those frames (on
    the GPU, a zero-chunk column planned over its freed device frames crashed the process: fuzz seed 330000387)."""
    col = ad.column(pa.chunked_array([["hello", None], ["a" * 40]]))
    header, frames = _sent(col)
    dropped = copy.deepcopy(header)
    del dropped["columns"][0][1]
    dropped["rows"] = 2
    got = _serialize.from_frames(dropped, frames)
    assert got.to_pylist() == ["hello", None]
    kept_only = ad.column(pa.array(["hello", None]))
    assert _serialize.nbytes(got) == _serialize.nbytes(kept_only) < _serialize.nbytes(col)
    again = pickle.loads(pickle.dumps(got, protocol=5))
    assert again.to_pylist() == ["hello", None] and _serialize.nbytes(again) == _serialize.nbytes(kept_only)
    header, frames = _sent(col)
    header["columns"][0] = []  # every chunk dropped: a column of none
    header["rows"] = 0
    empty = _serialize.from_frames(header, frames)
    assert len(empty) == 0 and _serialize.nbytes(empty) == 0
    assert pickle.loads(pickle.dumps(empty, protocol=5)).to_pylist() == []
