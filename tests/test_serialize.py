"""Serialization of columns and tables (arrowdev.serialize.frames): pickle protocol 5 with out-of-band buffers,
distributed's ``dask`` and ``cuda`` families; every sample type, whole, sliced at odd offsets, chunked
and empty; frames are views of the source memory, and a slice sends about its own rows."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from dask.sizeof import sizeof
from distributed.protocol import deserialize, dumps, loads, serialize, to_serialize

import arrowdev as ad
import arrowdev.dask as add
from arrowdev.core import chunks as _chunked, layout
from arrowdev.serialize import frames as _serialize
from support.samples import CASES, LAYOUTS, source_of

# Layouts whose children are referenced out of order are sent from their buffers' start (as copied).
WHOLE_EXTENT = {"null", "run_end_encoded", "dense_union", "list_view", "large_list_view", "string_view",
                "binary_view"}
ALL_LAYOUTS = LAYOUTS + ["empty"]


def _source(name: str, layout: str):
    if layout == "empty":
        return CASES[name].slice(5, 0)
    return source_of(name, layout)


def _expected(source) -> pa.ChunkedArray:
    return source if isinstance(source, pa.ChunkedArray) else pa.chunked_array([source])


def _pickle5(obj):
    buffers = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=buffers), data, buffers


def _as_table(source) -> ad.ArrowTable:
    chunked = _expected(source)
    return ad.table(pa.table({"v": chunked, "n": pa.chunked_array([pa.array(range(len(c)), pa.int64()) for c in chunked.chunks],
                                                                 pa.int64())}))


def _check_column(got: ad.ArrowColumn, source) -> None:
    assert isinstance(got, ad.ArrowColumn)
    assert got.type == ad.column(source).type
    assert got.to_pyarrow().equals(_expected(source))
    assert got.null_count == _expected(source).null_count
    if len(got):  # PyArrow's C import gives an empty view array at an offset a 0-byte views buffer
        got.validate(full=True)


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_pickle_round_trip(name, layout):
    source = _source(name, layout)
    col = ad.column(source)
    got, _, buffers = _pickle5(col)
    _check_column(got, source)
    assert got.num_chunks == col.num_chunks
    in_band = pickle.loads(pickle.dumps(col, protocol=5))
    _check_column(in_band, source)
    _check_column(pickle.loads(pickle.dumps(col, protocol=4)), source)
    table = _as_table(source)
    got_table, _, _ = _pickle5(table)
    assert got_table.equals(table) and got_table.column_names == ["v", "n"]


@pytest.mark.parametrize("layout", ALL_LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_distributed_round_trip(name, layout):
    """Through the whole wire format (msgpack header, frames packed as TCP sends them), then the
    family's serialize / deserialize alone: the ``dask`` family, and the ``cuda`` family's planner
    host to host."""
    source = _source(name, layout)
    col, table = ad.column(source), _as_table(source)
    for family in ("dask", "cuda"):
        got = loads(dumps({"x": to_serialize(col)}, serializers=(family,)), deserializers=(family,))["x"]
        _check_column(got, source)
        header, frames = serialize(table, serializers=(family,))
        assert header["serializer"] == family
        assert all(isinstance(f, memoryview) for f in frames)
        got_table = deserialize(header, frames, deserializers=(family,))
        assert got_table.equals(table)


def _inside(frames, buffers) -> bool:
    spans = [(b.address, b.address + b.size) for b in buffers if b.address]
    for f in frames:
        view = np.frombuffer(f, np.uint8)
        if view.size and not any(lo <= view.ctypes.data and view.ctypes.data + view.size <= hi for lo, hi in spans):
            return False
    return True


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_frames_are_views_of_the_source(name, layout):
    col = ad.column(_source(name, layout))
    _, _, buffers = _pickle5(col)
    assert _inside(buffers, col.buffers)
    _, frames = _serialize.host_frames(col)
    assert _inside(frames, col.buffers)


def _big(name: str) -> pa.Array:
    return pa.concat_arrays([CASES[name]] * 500)  # 10,000 rows


@pytest.mark.parametrize("name", sorted(set(CASES) - WHOLE_EXTENT))
def test_a_slice_sends_about_its_own_rows(name):
    big = _big(name)
    piece = big.slice(4_321, 10)
    compact = pa.concat_arrays([piece]).get_total_buffer_size()  # what 10 rows take
    col = ad.column(piece)
    _, data, buffers = _pickle5(col)
    sent = sum(memoryview(b).nbytes for b in buffers)
    # at most 7 rows before the slice (a bitmap's first byte; the data from that row) per buffer
    slack = 7 * max(16, compact // 10) * 4 + 64 * ("dictionary" in name)
    assert sent <= compact + slack, (sent, compact)
    assert sent < big.get_total_buffer_size() / 20
    assert len(data) < 1500  # the header, in band


@pytest.mark.parametrize("name", sorted(WHOLE_EXTENT))
def test_out_of_order_layouts_round_trip_when_sliced(name):
    piece = _big(name).slice(4_321, 10)
    got, _, _ = _pickle5(ad.column(piece))
    _check_column(got, piece)


def test_a_sliced_string_column_rebases_its_offsets_on_the_receiver():
    arr = pa.array(["aa", "bbb", None, "x" * 50, "c", "dddd", None, "ee", "fff", "g", "hh", "iii"])
    col = ad.column(arr.slice(9, 2))
    header, frames = _serialize.host_frames(col)
    (node,) = header["columns"][0]
    assert node[2] == 1  # the slice starts at bit 1 of the bitmap's second byte; frames start at row 8
    assert node[3][1][1:] == [4, 62]  # int32 offsets, lowered by the 62 bytes before row 8
    # one bitmap byte, offsets of rows 8..10 and the end, the bytes of "fff", "g", "hh"
    assert [f.nbytes for f in frames] == [1, 16, 6]
    got = _serialize.from_frames(header, frames)
    assert got.to_pylist() == ["g", "hh"]
    assert np.frombuffer(frames[1], np.int32)[0] == 62  # the sender's memory is untouched


def test_unaligned_frames_are_copied_aligned():
    col = ad.column(pa.array([1, 2, None, 4], pa.int64()))
    header, frames = _serialize.host_frames(col)
    shifted = []
    for f in frames:
        raw = bytearray(len(f) + 1)
        raw[1:] = bytes(f)
        shifted.append(memoryview(raw)[1:])
    got = _serialize.from_frames(header, shifted)
    assert got.to_pylist() == [1, 2, None, 4]
    assert all(b.address % 8 == 0 for b in got.buffers if b.address)


def test_wrong_number_of_frames_is_an_error():
    header, frames = _serialize.host_frames(ad.column(pa.array([1, None, 3])))
    with pytest.raises(ad.InvalidArrowError, match="expected 2 frames"):
        _serialize.from_frames(header, frames[:1])


def _packed(header: dict, frames: list) -> tuple[dict, list]:
    """The frames copied into one, each at a 256-byte boundary, as device_frames packs small buffers."""
    places, data = [], bytearray()
    for f in frames:
        data += bytes(-len(data) % 256)
        places.append([0, len(data), memoryview(f).nbytes])
        data += bytes(f)
    return {**header, "frames": 1, "packed": places}, [memoryview(bytes(data))]


@pytest.mark.parametrize("container", [list, tuple])  # msgpack hands lists back as tuples
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_packed_frame_rebuilds_every_case(name, container):
    """The receiver of packed frames (the cuda family's small buffers), checked on host frames: the
    same column, its buffers views of the one received frame."""
    source = source_of(name, "slice(3,11)")
    header, frames = _serialize.host_frames(_as_table(source))
    packed_header, packed = _packed(header, frames)
    packed_header["packed"] = container(container(place) for place in packed_header["packed"])
    got = _serialize.from_frames(packed_header, packed)
    assert got.column("v").to_pyarrow().equals(_expected(source))
    start = np.frombuffer(packed[0], np.uint8).ctypes.data
    assert all(start <= b.address < start + packed[0].nbytes for b in got.column("n").buffers if b.address)


@pytest.mark.parametrize("places", [[[1, 0, 8]], [[0, 0, 10**9]], [[0, -1, 8]], [[0, 0]], "x"])
def test_bad_packed_places_are_an_error(places):
    header, frames = _serialize.host_frames(ad.column(pa.array([1, None, 3])))
    header, packed = _packed(header, frames)
    header["packed"] = places if places == "x" else places * len(frames)
    with pytest.raises(ad.InvalidArrowError, match="packed"):
        _serialize.from_frames(header, packed)


def test_round_trips_of_every_case_balance_in_leak_check():
    with ad.debug.leak_check():
        for name in CASES:
            for layout in ("slice(3,11)", "chunked"):
                source = _source(name, layout)
                for obj in (ad.column(source), _as_table(source)):
                    got, _, buffers = _pickle5(obj)
                    header, frames = serialize(obj, serializers=("dask",))
                    again = deserialize(header, frames)
                    assert got.to_pyarrow().equals(again.to_pyarrow())
                    del got, again, buffers, frames, obj


def test_the_source_stays_alive_while_frames_are_held():
    header, frames = _serialize.host_frames(ad.column(pa.array(["kept", "alive", None])))
    import gc

    gc.collect()
    assert _serialize.from_frames(header, frames).to_pylist() == ["kept", "alive", None]


def test_shared_buffers_are_sent_once():
    col = ad.column(pa.array(np.arange(1000, dtype=np.int64)))
    tbl = ad.table({"a": col, "b": col})
    header, frames = _serialize.host_frames(tbl)
    assert header["frames"] == 1 and frames[0].nbytes == 8000


def _chunked_table() -> ad.ArrowTable:
    """benchmarks/bench_dask.py's table in small: a nullable float64 column in one chunk, a float64
    column, and a string column in three chunks (as PyArrow converts a large NumPy string array)."""
    rng = np.random.default_rng(0)
    strings = pa.chunked_array([pa.array([f"k{i}" for i in range(lo, hi)]) for lo, hi in ((0, 333), (333, 833),
                                                                                         (833, 1000))])
    return ad.table({"a": pa.array(rng.random(1000), mask=rng.random(1000) < 0.1), "b": pa.array(rng.random(1000)),
                     "s": strings})


def _spans(table: ad.ArrowTable) -> list[tuple[int, int]]:
    """(address, bytes used) of every buffer of every chunk of every column."""
    return sorted({(b.address, b.size) for col in table.columns for b in col.buffers if b.address})


def _frame_spans(frames) -> list[tuple[int, int]]:
    return sorted((np.frombuffer(f, np.uint8).ctypes.data, memoryview(f).nbytes) for f in frames)


_CUT = {"binary", "bool", "large_binary", "large_string", "string"} | {
    name for name in CASES if name.split("[")[0] in ("date32", "date64", "decimal32", "decimal64", "decimal128",
                                                       "decimal256", "duration", "fixed_size_binary", "float16",
                                                       "float32", "float64", "int8", "int16", "int32", "int64",
                                                       "month_day_nano_interval", "time32", "time64", "timestamp",
                                                       "uint8", "uint16", "uint32", "uint64")}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_buffers_past_the_piece_size_travel_in_row_pieces(name, layout):
    """``host_frames(piece_bytes=...)`` (the dask family, under TCP's shard size): nodes of numbers, bools and
    strings go in row ranges whose frames stay under the piece size (at least 8 rows), each a chunk on the
    receiving side; other types go whole; the values and null counts are the same, whole, sliced, chunked."""
    long = pa.concat_arrays([CASES[name]] * 12)
    source = {"whole": long, "slice(3)": long.slice(3), "slice(3,11)": long.slice(3, 150),
              "chunked": pa.chunked_array([long.slice(0, 7), long.slice(0, 0), long.slice(7)])}[layout]
    col = ad.column(source)
    header, frames = _serialize.host_frames(col, piece_bytes=256)
    got = _serialize.from_frames(header, frames)
    assert got.to_pyarrow().equals(col.to_pyarrow())
    assert got.null_count == col.null_count
    whole = _serialize._plan(col, col.device, ready=True)[1]
    if name in _CUT and max(size for _, size in whole) > 256:
        assert max(memoryview(f).nbytes for f in frames) <= 256
        assert got.num_chunks > col.num_chunks
    elif name not in _CUT:
        assert len(frames) == len(whole) and got.num_chunks == col.num_chunks


def test_an_unsliced_table_is_sent_as_its_own_buffers():
    """Zero-copy, in the table's own chunks: every frame is exactly one buffer of the source (the validity
    bitmap and the string offsets included), none cut where another column's chunk ends."""
    tbl = _chunked_table()
    header, frames = serialize(tbl, serializers=("dask",))
    assert all(isinstance(f, memoryview) and f.readonly for f in frames)
    assert _frame_spans(frames) == _spans(tbl)
    _, _, buffers = _pickle5(tbl)
    assert _frame_spans(buffers) == _spans(tbl)


def test_a_received_table_uses_the_frames_in_place_in_the_same_chunks():
    tbl = _chunked_table()
    header, frames = serialize(tbl, serializers=("dask",))
    got = deserialize(header, frames)
    assert got.equals(tbl) and got.column_names == tbl.column_names
    assert [col.num_chunks for col in got.columns] == [1, 1, 3]
    assert _spans(got) == _frame_spans(frames)  # the received buffers are the frames: nothing copied


def test_sizeof_counts_the_rows_in_range():
    big = ad.column(pa.array(np.arange(100_000, dtype=np.float64)))
    assert 800_000 <= sizeof(big) < 801_000
    assert sizeof(big.slice(10, 100)) < 2_000
    tbl = ad.table({"a": big, "s": pa.array(["abc"] * 100_000)})
    assert sizeof(tbl) >= add.nbytes(tbl) == 800_000 + 400_004 + 300_000


def test_serialize_time_does_not_grow_with_size():
    import time

    def best(obj):
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            serialize(obj, serializers=("dask",))
            times.append(time.perf_counter() - t0)
        return min(times)

    small = ad.table({"a": pa.array(np.arange(10, dtype=np.int64)), "s": pa.array(["x"] * 10)})
    large = ad.table({"a": pa.array(np.arange(2_000_000, dtype=np.int64)), "s": pa.array(["x"] * 2_000_000)})
    assert best(large) < 1e-3
    assert best(large) < 5 * best(small) + 2e-4


def test_device_data_received_without_a_gpu_stays_in_cpu_memory():
    """Host frames of device data land on the receiver's current GPU; a receiver without one keeps them
    in CPU memory (CI has no GPU: the header says the data came from GPU 0)."""
    if ad.cuda.is_available():
        pytest.skip("this receiver has a GPU")  # the GPU side is test_dask.py's GPU tests
    header, frames = _serialize.host_frames(ad.column(pa.array(["a", None, "bc"])))
    header["device"] = [ad.Device("cuda", 0).code, 0]
    got = _serialize.from_frames(header, frames)
    assert got.device == ad.Device.cpu() and got.to_pylist() == ["a", None, "bc"]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["whole", "slice(3,11)", "chunked"])
def test_gpu_cuda_family_sends_device_frames_zero_copy(layout, monkeypatch):
    """The cuda family on GPU data: frames are CUDA arrays over the source's device buffers; received,
    they are used in place (a slice's offsets rebased into a new device buffer) on the frames' GPU."""
    from arrowdev.serialize.frames import DeviceFrame

    source = pa.table({name.replace("[", "_").replace("]", "_"): source_of(name, layout) for name in CASES})
    gpu = ad.table(source).to_device()
    monkeypatch.setattr(_serialize, "PACK_BELOW", 0)  # every buffer a frame of its own
    header, frames = serialize(gpu, serializers=("cuda",))
    assert header["serializer"] == "cuda" and all(isinstance(f, DeviceFrame) for f in frames)
    # frames of no bytes (an empty chunk's buffers) have nothing to share: only the others must be views
    addresses = {f.__cuda_array_interface__["data"][0] for f in frames if f.nbytes}
    spans = [(b.address, b.address + b.size) for col in gpu.columns for b in col.buffers if b.address]
    assert all(any(lo <= a < hi for lo, hi in spans) for a in addresses if a)  # views of the source
    got = deserialize(header, frames, deserializers=("cuda",))
    assert got.device.type == "cuda" and got.to_pyarrow().equals(source)
    pickled = pickle.loads(pickle.dumps(gpu, protocol=5))  # through host memory, back on this GPU
    assert pickled.device.type == "cuda" and pickled.to_pyarrow().equals(source)
    del got, pickled, frames


@pytest.mark.gpu
@pytest.mark.multi_gpu
def test_gpu_frames_of_the_second_gpu_are_checked_there():
    """Received device frames are checked on their own GPU (the checks' CuPy work once ran on the current one,
    where CuPy refuses another GPU's arrays), and a bad null count there is still refused."""
    if ad.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    source = pa.table({"s": pa.array([None if i % 7 == 3 else "x" * (i % 9) for i in range(5000)]),
                       "n": pa.array([None if i % 5 == 1 else i for i in range(5000)], pa.int64())})
    on_second = ad.table(source).to_device(1)
    header, frames = serialize(on_second, serializers=("cuda",))
    got = deserialize(header, frames, deserializers=("cuda",))  # GPU 0 is the current one
    assert got.device == ad.Device("cuda", 1) and got.to_pyarrow().equals(source)
    header["sub-header"]["columns"][1][0][1] += 1  # the int column's null count, one more than its bitmap says
    with pytest.raises(ad.InvalidArrowError, match="null count"):
        deserialize(header, frames, deserializers=("cuda",))
    del got, frames


@pytest.mark.gpu
def test_gpu_cuda_family_packs_small_buffers_into_one_frame(monkeypatch):
    """Buffers of at least PACK_BELOW bytes travel as frames over the source; the others copied into one
    frame (a transport pays per frame). Received, the columns equal the source and hold the frames."""
    monkeypatch.setattr(_serialize, "PACK_BELOW", 3000)
    # buffers that happen to lie back to back in one allocation (a pool's neighbours) would travel as one
    # frame over them: here every buffer is an allocation of its own
    monkeypatch.setattr(_serialize, "_allocation_range", lambda address: (address, 0))
    source = pa.table({"big": pa.array(np.arange(1000, dtype=np.int64)), "s": _chunked_table().column("s").to_pyarrow(),
                       "a": _chunked_table().column("a").to_pyarrow()})
    gpu = ad.table(source).to_device()
    spans = _serialize._plan(gpu, gpu.device, ready=True)[1]
    large = sorted(address for address, size in spans if size >= 3000)
    header, frames = serialize(gpu, serializers=("cuda",))
    assert len(header["sub-header"]["packed"]) == len(spans) and large and len(large) < len(spans)
    assert len(frames) == len(large) + 1
    assert sorted(f.__cuda_array_interface__["data"][0] for f in frames[:-1]) == large  # sent in place
    assert frames[-1].nbytes < sum(size + 256 for _, size in spans if size < 3000)
    got = deserialize(header, frames, deserializers=("cuda",))
    del frames
    assert got.device.type == "cuda" and got.to_pyarrow().equals(source)
    assert [c.num_chunks for c in got.columns] == [c.num_chunks for c in gpu.columns]


@pytest.mark.gpu
def test_gpu_planning_reads_device_offsets_in_one_batch(monkeypatch):
    """Serializing (and sizing) a device table of many string chunks reads every offset it needs in one
    batch of copies, not one synchronous read each."""
    from arrowdev.gpu import runtime

    batches, single = [], []
    read_many = runtime.read_many
    monkeypatch.setattr(runtime, "read_many", lambda requests, device: batches.append(len(requests)) or
                        read_many(requests, device))
    monkeypatch.setattr(runtime, "read_bytes", lambda *a: single.append(a) or pytest.fail("a read of its own"))
    strings = pa.chunked_array([pa.array([f"v{i}" for i in range(k, k + 50)]) for k in range(0, 1000, 50)])
    copied = ad.table({"s": strings, "n": pa.array(np.arange(1000))}).to_device(rechunk=False)  # 20 chunks
    assert batches == [] and not single  # fixed sizes on the host: nothing read from the device
    assert add.nbytes(copied) == sum(size for _, size in _serialize._plan(copied, copied.device, True)[1])
    assert batches == [] and not single  # the offsets the copy wrote are remembered: nothing read either
    monkeypatch.setattr(layout, "_remembered", {})  # as for device tables arrowdev did not write (cuDF's)
    gpu = ad.table({"s": copied.column("s"), "n": copied.column("n")})  # a new table: no plan kept
    header, frames = serialize(gpu, serializers=("cuda",))
    assert batches == [2 * 20]  # each chunk: its first and last offsets
    assert add.nbytes(gpu) == sum(size for _, _, size in header["sub-header"]["packed"])
    assert batches == [40] and not single  # sized from the plan kept when it was serialized
    got = deserialize(header, frames, deserializers=("cuda",))
    assert got.to_pyarrow().equals(gpu.to_pyarrow())


@pytest.mark.gpu
def test_gpu_sending_a_table_waits_on_each_producer_event_once(monkeypatch):
    """The chunks of a table copied in one batch share the copy's sync event: a send waits on it once, not
    once per chunk (host synchronisations cost microseconds each, and a large table has hundreds of chunks);
    chunks with events of their own are each waited on."""
    from arrowdev.gpu import runtime

    api = runtime.cupy().cuda.runtime
    waited = []
    synchronize = api.eventSynchronize
    monkeypatch.setattr(api, "eventSynchronize", lambda handle: waited.append(handle) or synchronize(handle))
    strings = pa.chunked_array([pa.array([f"v{i}" for i in range(k, k + 50)]) for k in range(0, 1000, 50)])
    copied = ad.table({"s": strings, "n": pa.array(np.arange(1000))}).to_device()
    events = {c.sync_event for col in copied.columns for c in _chunked.chunks(col)}
    serialize(copied, serializers=("cuda",))
    assert len(waited) == len(events) == 1
    waited.clear()
    apart = ad.table({"s": copied.column("s"), "n": ad.column(pa.array(np.arange(1000))).to_device()})
    serialize(apart, serializers=("cuda",))
    assert len(waited) == len(set(waited)) == 2  # the two copies' events, each once


def test_a_received_table_is_sized_and_sent_on_without_planning(monkeypatch):
    """What the receiver holds is what the header described: sizing it and sending it on reuse that
    (planning a table of many chunks costs milliseconds), and what is sent on is the received buffers,
    rebased offsets included."""
    source = _chunked_table().slice(3, 990)  # string offsets that do not start at 0: rebased on receipt
    header, frames = serialize(source, serializers=("dask",))
    got = deserialize(header, frames)
    monkeypatch.setattr(_serialize, "_make_plan", lambda *a: pytest.fail("planned again"))
    assert add.nbytes(got) == add.nbytes(source)
    header2, frames2 = serialize(got, serializers=("dask",))
    assert _frame_spans(frames2) == _spans(got)  # the received (and rebased) buffers, in place
    again = deserialize(header2, frames2)
    assert again.to_pyarrow().equals(source.to_pyarrow())


def test_kept_plans_go_with_their_objects():
    import gc

    tbl = _chunked_table()
    add.nbytes(tbl)
    kept = len(_serialize._kept_plans)
    del tbl
    gc.collect()
    assert len(_serialize._kept_plans) == kept - 1


@pytest.mark.parametrize("spans, runs", [
    ([(0, 100), (256, 100), (1000, 8)], [[0, 1], [2]]),  # gaps under 256 bytes join
    ([(512, 8), (0, 100)], [[1], [0]]),  # in address order
    ([(0, 1000), (100, 50), (1100, 8)], [[0, 1, 2]]),  # overlapping spans join, the run ends at the furthest
    ([(0, 0), (0, 8)], [[0], [1]]),  # an empty span stands alone
])
def test_adjacent_spans_form_runs(spans, runs):
    assert _serialize._adjacent_runs(spans) == runs


def test_a_run_of_adjacent_spans_is_cut_where_an_allocation_ends(monkeypatch):
    """Separate CUDA allocations can lie back to back (the driver places small ones so): a run of adjacent
    spans becomes one frame per allocation, not one frame over two allocations, nor none at all."""
    allocations = [(0, 1024), (1024, 2048), (3584, 256)]  # (base, size); 3072-3584 is no allocation

    def allocation_range(address):
        return next(((b, n) for b, n in allocations if b <= address < b + n), (address, 0))
    monkeypatch.setattr(_serialize, "_allocation_range", allocation_range)
    spans = [(0, 500), (512, 500), (1024, 1000), (2048, 1000), (3200, 8), (3328, 100), (3584, 100)]
    [run] = _serialize._adjacent_runs(spans)
    assert _serialize._allocation_groups(run, spans) == [[0, 1], [2, 3], [4], [5], [6]]


@pytest.mark.gpu
def test_gpu_a_received_table_travels_on_as_its_frames_without_copies():
    """Received as one packed frame, a table's buffers lie back to back in one allocation: sent on,
    they travel as that one frame again, not copied."""
    from arrowdev.cuda import memory_stats

    gpu = ad.table(_chunked_table().to_pyarrow()).to_device()
    header, frames = serialize(gpu, serializers=("cuda",))
    assert "packed" in header["sub-header"]  # fewer frames than buffers
    got = deserialize(header, frames, deserializers=("cuda",))
    received = [(f.__cuda_array_interface__["data"][0], f.nbytes) for f in frames]
    del frames
    allocations = memory_stats()["allocations"]
    header2, frames2 = serialize(got, serializers=("cuda",))
    assert memory_stats()["allocations"] == allocations
    sent_on = [(f.__cuda_array_interface__["data"][0], f.nbytes) for f in frames2]
    assert len(sent_on) <= len(received)
    # each frame sent on lies inside a received frame: nothing was copied into a packed frame
    assert all(any(lo <= a and a + n <= lo + size for lo, size in received) for a, n in sent_on)
    again = deserialize(header2, frames2, deserializers=("cuda",))
    del frames2
    assert again.to_pyarrow().equals(gpu.to_pyarrow())


@pytest.mark.gpu
@pytest.mark.parametrize("chunking", ["columns chunked apart", "record batches"])
def test_gpu_a_table_copied_to_the_device_travels_as_a_frame_per_column_without_copies(chunking):
    """``to_device`` lays each column's buffers (every chunk's) back to back in one allocation of the
    column's own: sent over the cuda family, the table is a frame per column over those, nothing copied (or
    fewer frames: blocks that the pool cut from one allocation, back to back, travel in one frame)."""
    from arrowdev.cuda import memory_stats

    source = _chunked_table().to_pyarrow()
    if chunking == "record batches":
        source = pa.Table.from_batches(source.to_batches(max_chunksize=300))
    gpu = ad.table(source).to_device()
    allocations = memory_stats()["allocations"]
    header, frames = serialize(gpu, serializers=("cuda",))
    assert memory_stats()["allocations"] == allocations  # no packed frame
    assert len(frames) <= gpu.num_columns
    extents = [(f.__cuda_array_interface__["data"][0], f.nbytes) for f in frames]
    for col in gpu.columns:  # each column inside one frame
        inside = {i for i, (start, nbytes) in enumerate(extents)
                  if all(start <= b.address and b.address + b.size <= start + nbytes for b in col.buffers if b.address)}
        assert len(inside) == 1, (col, extents)
    got = deserialize(header, frames, deserializers=("cuda",))
    del frames
    assert got.to_pyarrow().equals(source)
    assert [c.num_chunks for c in got.columns] == [c.num_chunks for c in gpu.columns]


@pytest.mark.gpu
def test_gpu_a_column_of_a_table_copied_column_by_column_frees_its_memory_alone():
    """Columns chunked apart are copied column by column, each into an allocation of its own: dropping
    the others gives their memory back. (A table copied as record batches keeps its batches, each column
    a child of them, alive while any of its columns lives, as PyArrow's record batches do.)"""
    from arrowdev.cuda import memory_stats

    a = pa.chunked_array([np.arange(1 << 19), np.arange(1 << 19, 1 << 20)])
    before = memory_stats()["bytes_in_use"]
    gpu = ad.table({"a": a, "b": pa.array(np.arange(1 << 20, dtype=np.float64))}).to_device()  # from columns
    assert memory_stats()["bytes_in_use"] - before >= 16 << 20
    kept = gpu.column("a")
    del gpu
    assert (8 << 20) <= memory_stats()["bytes_in_use"] - before < (9 << 20)
    assert kept.num_chunks == 2 and kept.to_pylist()[-1] == (1 << 20) - 1
    del kept


@pytest.mark.gpu
def test_packed_frames_come_from_rmm_only_where_its_resource_was_set_up():
    """RMM's default resource would cudaMalloc and cudaFree (a wait for the whole device) at every send."""
    rmm = pytest.importorskip("rmm")
    import rmm.mr

    from arrowdev.gpu import memory, runtime

    stream = runtime.stream_for(0)
    before = rmm.mr.get_per_device_resource(0)
    try:
        rmm.mr.set_per_device_resource(0, rmm.mr.CudaMemoryResource())
        address, owner = memory.transport_buffer(1 << 20, 0, stream)
        assert isinstance(owner, memory.DeviceBuffer) and address == owner.ptr
        pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=1 << 24)
        rmm.mr.set_per_device_resource(0, pool)
        address, owner = memory.transport_buffer(1 << 20, 0, stream)
        assert isinstance(owner, rmm.DeviceBuffer) and address == owner.ptr and owner.size == 1 << 20
        del owner
    finally:
        rmm.mr.set_per_device_resource(0, before)
